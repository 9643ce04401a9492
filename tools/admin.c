/* parsa admin: the operator's commands on a scheduler's state folder.
 * backup copies the live database with sqlite's online backup API from a
 * connection of our own: under WAL that reader sees one committed snapshot
 * and never blocks the scheduler's writes, and the copy is written with the
 * caller's permissions, not the scheduler's (see docs/operators.md, Backup).
 * restore puts a copy back while no scheduler holds the folder's lock. */
#include "cli.h"
#include "paths.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* How long to wait for sqlite's locks (a checkpoint, a WAL recovery). */
#define BUSY_MS 10000

struct admin_args {
	char *state; /* absolute, malloc'ed */
	const char *file;
	bool replaced; /* restore: a database was there and is kept aside */
};

/* Copy every page of src's "main" to dst in one step: one read transaction,
 * so one snapshot, however the scheduler writes meanwhile. */
static int copy_db(sqlite3 *src, sqlite3 *dst, char **err)
{
	sqlite3_backup *b = sqlite3_backup_init(dst, "main", src, "main");
	int rc;

	if (!b)
		return errprintf(err, "%s", sqlite3_errmsg(dst));
	rc = sqlite3_backup_step(b, -1);
	sqlite3_backup_finish(b);
	if (rc != SQLITE_DONE)
		return errprintf(err, "%s", sqlite3_errstr(rc));
	return 0;
}

static sqlite3 *open_db(const char *path, int flags, char **err)
{
	sqlite3 *db = NULL;

	if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) {
		errprintf(err, "cannot open %s: %s", path, db ? sqlite3_errmsg(db) : "out of memory");
		sqlite3_close(db);
		return NULL;
	}
	sqlite3_busy_timeout(db, BUSY_MS);
	return db;
}

/* A parsa database in good order: integrity_check says ok and it has jobs. */
static int check_db(sqlite3 *db, const char *path, char **err)
{
	sqlite3_stmt *st = NULL;
	int ret = -1;

	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		errprintf(err, "%s is not an sqlite database: %s", path, sqlite3_errmsg(db));
		goto out;
	}
	if (strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0) {
		errprintf(err, "%s is damaged: %s", path, (const char *)sqlite3_column_text(st, 0));
		goto out;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM jobs", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		errprintf(err, "%s is not a parsa database (no jobs table)", path);
		goto out;
	}
	ret = sqlite3_column_int(st, 0);
out:
	sqlite3_finalize(st);
	return ret;
}

/* src into a new file at path (through path.tmp, renamed once complete and
 * synced, so that a half-written copy never has the final name). Returns the
 * number of jobs in the copy. */
static int write_copy(sqlite3 *src, const char *path, mode_t mode, char **err)
{
	char *tmp = xasprintf("%s.tmp", path);
	sqlite3 *dst = NULL;
	int fd = -1, jobs = -1;

	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0) {
		errprintf(err, "cannot create %s: %s", tmp, strerror(errno));
		goto out;
	}
	close(fd);
	fd = -1;
	dst = open_db(tmp, SQLITE_OPEN_READWRITE, err);
	if (!dst || copy_db(src, dst, err) < 0)
		goto out;
	/* A file of its own, not in WAL mode: one file to keep or carry. */
	sqlite3_exec(dst, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
	jobs = check_db(dst, path, err);
	if (jobs < 0)
		goto out;
	sqlite3_close(dst);
	dst = NULL;
	fd = open(tmp, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0 || rename(tmp, path) < 0) {
		errprintf(err, "cannot put the copy at %s: %s", path, strerror(errno));
		jobs = -1;
		goto out;
	}
out:
	if (fd >= 0)
		close(fd);
	sqlite3_close(dst);
	if (jobs < 0)
		unlink(tmp);
	free(tmp);
	return jobs;
}

static int admin_backup(struct admin_args *a, char **err)
{
	char *db_path = xasprintf("%s/parsa.db", a->state);
	sqlite3 *src = NULL;
	int jobs = -1;

	if (access(db_path, F_OK) < 0) {
		errprintf(err, "no database at %s: is %s a scheduler's state folder (--state DIR)?",
			  db_path, a->state);
		goto out;
	}
	/* Read-write without create: a reader of a WAL database needs its -shm. */
	src = open_db(db_path, SQLITE_OPEN_READWRITE, err);
	if (!src)
		goto out;
	jobs = write_copy(src, a->file, 0600, err);
out:
	sqlite3_close(src);
	free(db_path);
	return jobs;
}

/* The scheduler's lock, taken for the whole restore: no scheduler runs on
 * the folder, and none starts on it halfway. */
static int lock_state(const char *state, char **err)
{
	char *path = xasprintf("%s/sched.lock", state);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);

	if (fd < 0) {
		errprintf(err, "cannot open %s: %s", path, strerror(errno));
	} else if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		errprintf(err, "a scheduler runs on %s (its lock %s is held): stop it first "
			  "(parsa down, or systemctl stop parsa-sched)", state, path);
		close(fd);
		fd = -1;
	}
	free(path);
	return fd;
}

/* The database being replaced, with its -wal and -shm (the -wal belongs to
 * it: left beside the restored file it would be replayed into it). *moved
 * tells whether there was a database to move. */
static int move_aside(const char *state, bool *moved, char **err)
{
	static const char *const suffixes[] = { "", "-wal", "-shm" };

	for (size_t i = 0; i < ARRAY_LEN(suffixes); i++) {
		char *from = xasprintf("%s/parsa.db%s", state, suffixes[i]);
		char *to = xasprintf("%s/parsa.db.before-restore%s", state, suffixes[i]);
		int rc = rename(from, to);

		if (rc < 0 && errno != ENOENT)
			errprintf(err, "cannot move %s aside: %s", from, strerror(errno));
		free(from);
		free(to);
		if (rc < 0 && errno != ENOENT)
			return -1;
		if (rc == 0 && i == 0)
			*moved = true;
	}
	return 0;
}

static int admin_restore(struct admin_args *a, char **err)
{
	char *db_path = xasprintf("%s/parsa.db", a->state);
	sqlite3 *src = NULL;
	int lock = -1, jobs = -1;

	src = open_db(a->file, SQLITE_OPEN_READONLY, err);
	if (!src || check_db(src, a->file, err) < 0)
		goto out;
	lock = lock_state(a->state, err);
	if (lock < 0 || move_aside(a->state, &a->replaced, err) < 0)
		goto out;
	jobs = write_copy(src, db_path, 0644, err);
out:
	sqlite3_close(src);
	if (lock >= 0)
		close(lock);
	free(db_path);
	return jobs;
}

static const struct admin_cmd {
	const char *name;
	int (*run)(struct admin_args *a, char **err);
	const char *done; /* printf: the file, the state folder, the number of jobs */
	const char *done_fresh; /* the same where nothing was replaced; NULL: done */
} admin_cmds[] = {
	{ "backup", admin_backup, "%s: a copy of %s/parsa.db with %d jobs\n", NULL },
	{ "restore", admin_restore, "%s is now %s/parsa.db (%d jobs); the one it replaced is "
				    "parsa.db.before-restore: start the scheduler\n",
	  "%s is now %s/parsa.db (%d jobs); there was no database to replace: start the "
	  "scheduler\n" },
};

int cmd_admin(const struct cli_cmd *self, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "state", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	const struct admin_cmd *cmd = NULL;
	struct admin_args a = { 0 };
	struct up_env env;
	char cwd[PATH_MAX], *err = NULL;
	const char *state = NULL;
	int c, jobs, rc;

	optind = 1;
	opterr = 0;
	while ((c = cli_next_option(self, argc, argv, longopts, &rc)) > 0)
		if (c == 's')
			state = optarg;
	if (c < 0)
		return rc;
	if (argc - optind != 2)
		return cli_usage_error(self, "expected backup FILE or restore FILE");
	for (size_t i = 0; i < ARRAY_LEN(admin_cmds); i++)
		if (strcmp(argv[optind], admin_cmds[i].name) == 0)
			cmd = &admin_cmds[i];
	if (!cmd)
		return cli_usage_error(self, "no admin command '%s' (backup, restore)", argv[optind]);
	up_env_from_process(&env, cwd, sizeof cwd);
	a.state = state ? path_absolute(state, env.cwd) : paths_default_state(&env);
	a.file = argv[optind + 1];
	jobs = cmd->run(&a, &err);
	if (jobs < 0)
		rc = cli_fail("admin %s: %s", cmd->name, err ? err : strerror(errno));
	else
		rc = (printf(a.replaced || !cmd->done_fresh ? cmd->done : cmd->done_fresh, a.file,
			     a.state, jobs), CLI_OK);
	free(err);
	free(a.state);
	return rc;
}
