/* The floor under parsa's submission figures on this machine: a FUSE file
 * system that does nothing but take files (no scheduler, no spec, no JSON),
 * whose close optionally commits one row to sqlite the way the scheduler
 * does (WAL, synchronous=NORMAL). bench/fuse-floor runs the same loops as
 * bench/submit against it, so that a figure of parsa's can be read against
 * what the kernel's FUSE round trips and one durable commit cost alone.
 *
 *   bench_fuse_floor serve MOUNTPOINT [DB]   serve in the foreground until unmounted
 *   bench_fuse_floor loop FOLDER N           open/write/close N files, print per_s */
#include "fuse_serve.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A file being written: its path, for getattr; fi->fh of its open. */
struct open_name {
	struct open_name *next;
	char path[];
};

/* What the mount's handlers share: the optional database, one writer at a time. */
struct floor_fs {
	sqlite3 *db;
	sqlite3_stmt *insert;
	struct open_name *open;   /* what getattr finds: the files being written */
	pthread_mutex_t lock;
};

static struct floor_fs *floor_of_context(void)
{
	return fuse_get_context()->private_data;
}

static bool is_open_locked(struct floor_fs *fs, const char *path)
{
	for (struct open_name *o = fs->open; o; o = o->next)
		if (strcmp(o->path, path) == 0)
			return true;
	return false;
}

/* A file lives only while it is open, as a spec in parsa's queue/. */
static int floor_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct floor_fs *fs = floor_of_context();
	bool found;

	memset(st, 0, sizeof *st);
	if (strcmp(path, "/") == 0) {
		st->st_mode = S_IFDIR | 01777;
		st->st_nlink = 2;
		return 0;
	}
	pthread_mutex_lock(&fs->lock);
	found = fi || is_open_locked(fs, path);
	pthread_mutex_unlock(&fs->lock);
	if (!found)
		return -ENOENT;
	st->st_mode = S_IFREG | 0666;
	st->st_nlink = 1;
	st->st_uid = getuid();
	st->st_gid = getgid();
	return 0;
}

static int floor_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct floor_fs *fs = floor_of_context();
	size_t len = strlen(path) + 1;
	struct open_name *o = malloc(sizeof *o + len);

	(void)mode;
	if (!o)
		return -ENOMEM;
	memcpy(o->path, path, len);
	pthread_mutex_lock(&fs->lock);
	o->next = fs->open;
	fs->open = o;
	pthread_mutex_unlock(&fs->lock);
	/* Its release, which the kernel sends after close() returned, may come
	 * after the next create of the same name: it takes out this one. */
	fi->fh = (uint64_t)(uintptr_t)o;
	fi->direct_io = 1; /* as parsa's queue/ files */
	return 0;
}

/* A name written again (cp onto it, O_TRUNC) is opened again: it lives
 * until that open's release too. */
static int floor_open(const char *path, struct fuse_file_info *fi)
{
	return floor_create(path, 0644, fi);
}

static int floor_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	(void)path;
	(void)size;
	(void)fi;
	return 0;
}

static int floor_write(const char *path, const char *buf, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)path;
	(void)buf;
	(void)off;
	(void)fi;
	return (int)size;
}

/* The close: with a database, one committed row per file, as a submission. */
static int floor_flush(const char *path, struct fuse_file_info *fi)
{
	struct floor_fs *fs = floor_of_context();
	int rc = 0;

	(void)fi;
	if (!fs->db)
		return 0;
	pthread_mutex_lock(&fs->lock);
	sqlite3_bind_text(fs->insert, 1, path, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(fs->insert, 2, (sqlite3_int64)time(NULL));
	if (sqlite3_step(fs->insert) != SQLITE_DONE)
		rc = -EIO;
	sqlite3_reset(fs->insert);
	pthread_mutex_unlock(&fs->lock);
	return rc;
}

static int floor_release(const char *path, struct fuse_file_info *fi)
{
	struct floor_fs *fs = floor_of_context();
	const struct open_name *mine = (const struct open_name *)(uintptr_t)fi->fh;

	(void)path;
	pthread_mutex_lock(&fs->lock);
	for (struct open_name **p = &fs->open; *p; p = &(*p)->next) {
		if (*p == mine) {
			struct open_name *gone = *p;

			*p = gone->next;
			free(gone);
			break;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return 0;
}

static void *floor_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	/* parsa's own settings (fs/ops.c), so that the same requests come. */
	cfg->negative_timeout = 0;
	cfg->entry_timeout = 1.0;
	cfg->attr_timeout = 1.0;
	return fuse_get_context()->private_data;
}

static const struct fuse_operations floor_ops = {
	.init = floor_init,
	.getattr = floor_getattr,
	.create = floor_create,
	.open = floor_open,
	.truncate = floor_truncate,
	.write = floor_write,
	.flush = floor_flush,
	.release = floor_release,
};

static int open_db(struct floor_fs *fs, const char *file)
{
	if (sqlite3_open(file, &fs->db) != SQLITE_OK ||
	    sqlite3_exec(fs->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
			 "CREATE TABLE IF NOT EXISTS files(id INTEGER PRIMARY KEY, name TEXT, ms INTEGER)",
			 NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(fs->db, "INSERT INTO files(name, ms) VALUES(?, ?)", -1, &fs->insert,
			       NULL) != SQLITE_OK) {
		fprintf(stderr, "bench_fuse_floor: %s: %s\n", file, sqlite3_errmsg(fs->db));
		return -1;
	}
	return 0;
}

static int serve(const char *mountpoint, const char *db)
{
	static const char *const opts[] = { "-odefault_permissions", NULL };
	struct floor_fs fs = { 0 };
	int ret = 1;

	pthread_mutex_init(&fs.lock, NULL);
	if (!db || open_db(&fs, db) == 0)
		ret = fuse_serve("bench_fuse_floor", &floor_ops, &fs, mountpoint, opts);
	while (fs.open) {
		struct open_name *next = fs.open->next;

		free(fs.open);
		fs.open = next;
	}
	sqlite3_finalize(fs.insert);
	sqlite3_close(fs.db);
	pthread_mutex_destroy(&fs.lock);
	return ret;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* bench_submit's own loop: open(O_CREAT|O_TRUNC), write, close. */
static int loop(const char *folder, long n)
{
	static const char spec[] = "[job]\nstart = +1h\n[stage t]\nrun = true\n";
	char path[4096];
	int64_t t0 = now_ns();

	for (long i = 0; i < n; i++) {
		int fd;

		snprintf(path, sizeof path, "%s/floor-%ld.conf", folder, i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0 || write(fd, spec, sizeof spec - 1) != (ssize_t)(sizeof spec - 1) ||
		    close(fd) < 0) {
			perror(path);
			return 1;
		}
	}
	printf("%.1f\n", (double)n / ((double)(now_ns() - t0) / 1e9));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "serve") == 0)
		return serve(argv[2], argc > 3 ? argv[3] : NULL);
	if (argc == 4 && strcmp(argv[1], "loop") == 0)
		return loop(argv[2], strtol(argv[3], NULL, 10));
	fprintf(stderr, "usage: bench_fuse_floor serve MOUNTPOINT [DB] | loop FOLDER N\n");
	return 2;
}
