/* The background checkpoints (sched/store/checkpointer.h) on a real sqlite file in
 * WAL mode: the log is copied once it is long, and a log that keeps growing
 * while commits come is copied again every CHECKPOINT_PAGES_AGAIN pages, not
 * after every commit (each copy costs two fsyncs: one per three submissions,
 * before, on a steady stream). */
#include "checkpointer.h"
#include "tap.h"
#include "util.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

TAP_STATE;

/* Pages of one commit: about what a submission writes. */
#define COMMIT_PAGES 15

static int exec(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

/* The log's size in pages, as sqlite counts it for the wal hook. */
static int log_pages(const char *path)
{
	char *wal = xasprintf("%s-wal", path);
	FILE *f = fopen(wal, "rb");
	long size = 0;

	if (f && fseek(f, 0, SEEK_END) == 0)
		size = ftell(f);
	if (f)
		fclose(f);
	free(wal);
	return (int)(size / (4096 + 24));
}

static size_t wait_copies(struct checkpointer *cp, size_t want)
{
	size_t n = 0;

	for (int i = 0; i < 500 && (n = checkpointer_copies(cp)) < want; i++)
		nanosleep(&(struct timespec){ 0, 10 * 1000000L }, NULL);
	return n;
}

int main(void)
{
	char dir[] = "/tmp/parsa-test-checkpointer.XXXXXX", *path, *err = NULL;
	struct checkpointer *cp;
	sqlite3 *db = NULL, *reader = NULL;
	sqlite3_stmt *ins = NULL;
	int commits, total_pages, max_log = 0;
	size_t copies;
	static char blob[COMMIT_PAGES * 4000];

	if (!mkdtemp(dir))
		return ok(0, "mkdtemp"), done_testing();
	path = xasprintf("%s/t.db", dir);
	ok(sqlite3_open(path, &db) == SQLITE_OK, "a database");
	ok(exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
		    "CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB)") == 0, "in WAL mode, with a table");
	cp = checkpointer_create(db, path, &err);
	ok(cp != NULL, "the checkpoint thread starts%s%s", err ? ": " : "", err ? err : "");
	if (!cp)
		return done_testing();
	ok(sqlite3_prepare_v2(db, "INSERT INTO t(b) VALUES(?1)", -1, &ins, NULL) == SQLITE_OK,
	   "an insert");
	memset(blob, 'x', sizeof blob);

	/* Up to the threshold: nothing is copied. */
	commits = (CHECKPOINT_PAGES - 200) / COMMIT_PAGES;
	for (int i = 0; i < commits; i++) {
		sqlite3_bind_blob(ins, 1, blob, (int)sizeof blob, SQLITE_STATIC);
		sqlite3_step(ins);
		sqlite3_reset(ins);
	}
	is_int((int)checkpointer_copies(cp), 0, "a log shorter than %d pages is not copied",
	       CHECKPOINT_PAGES);

	/* A reader that stays keeps the log from being reset (as a long
	 * listing does in the scheduler): every commit from now on finds it
	 * past the threshold. */
	ok(sqlite3_open(path, &reader) == SQLITE_OK && exec(reader, "BEGIN") == 0 &&
	   exec(reader, "SELECT count(*) FROM t") == 0, "a reader holds a snapshot");
	total_pages = 3 * CHECKPOINT_PAGES;
	commits = total_pages / COMMIT_PAGES;
	for (int i = 0; i < commits; i++) {
		sqlite3_bind_blob(ins, 1, blob, (int)sizeof blob, SQLITE_STATIC);
		sqlite3_step(ins);
		sqlite3_reset(ins);
		if (i % 50 == 0) {
			int n = log_pages(path);

			if (n > max_log)
				max_log = n;
		}
	}
	copies = wait_copies(cp, 1);
	ok(copies >= 1, "a longer log is copied (%zu copies)", copies);
	ok(copies <= (size_t)(total_pages / CHECKPOINT_PAGES_AGAIN + 1),
	   "every %d pages at most while it cannot be reset, not at each of the %d commits "
	   "(%zu copies)", CHECKPOINT_PAGES_AGAIN, commits, copies);
	diag("the log grew to %d pages meanwhile", max_log);

	/* The reader gone, the next copy resets the log. */
	exec(reader, "COMMIT");
	sqlite3_close(reader);
	for (int i = 0; i < CHECKPOINT_PAGES_AGAIN / COMMIT_PAGES + 2; i++) {
		sqlite3_bind_blob(ins, 1, blob, (int)sizeof blob, SQLITE_STATIC);
		sqlite3_step(ins);
		sqlite3_reset(ins);
	}
	wait_copies(cp, copies + 1);
	{
		int before = log_pages(path), after;

		for (int i = 0; i < 3; i++) {
			sqlite3_bind_blob(ins, 1, blob, (int)sizeof blob, SQLITE_STATIC);
			sqlite3_step(ins);
			sqlite3_reset(ins);
		}
		after = 0;
		{
			sqlite3_stmt *s = NULL;

			/* The frames in use, not the file's size: a reset log
			 * is written again from its start. */
			if (sqlite3_prepare_v2(db, "PRAGMA wal_checkpoint(PASSIVE)", -1, &s, NULL) == SQLITE_OK &&
			    sqlite3_step(s) == SQLITE_ROW)
				after = sqlite3_column_int(s, 1);
			sqlite3_finalize(s);
		}
		ok(after < before, "without the reader the log starts over (%d frames in use, file %d)",
		   after, before);
	}

	sqlite3_finalize(ins);
	checkpointer_destroy(cp);
	sqlite3_close(db);
	{
		char *cmd = xasprintf("rm -rf '%s'", dir);

		if (system(cmd) != 0)
			diag("cannot remove %s", dir);
		free(cmd);
	}
	free(path);
	free(err);
	return done_testing();
}
