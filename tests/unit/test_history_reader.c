/* The history reader (sched/engine/history_reader.h) over a real database
 * the store wrote: an old job read whole on its read-only connection, none
 * for an unknown id, the copy kept for the views that follow until the
 * engine's count of changes moves, a bounded number kept, and the lists and
 * counts of every job. */
#include "history_reader.h"
#include "spec.h"
#include "tap.h"
#include "util.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TAP_STATE;

static const char spec_text[] = "[stage s]\nrun = true\n";

/* Job id, ended (succeeded), of uid 1000 (uid 2000 for even ids). */
static void write_job(struct store *st, int64_t id)
{
	char *err = NULL, name[32];
	struct job *job = model_job_new(id, spec_parse(spec_text, sizeof spec_text - 1, "o.conf", &err));

	snprintf(name, sizeof name, "old-%lld", (long long)id);
	job->name = xstrdup(name);
	job->spec_file = xstrdup("o.conf");
	job->spec_text = xstrdup(spec_text);
	job->spec_len = sizeof spec_text - 1;
	job->user = xstrdup("u");
	job->team = xstrdup("t");
	job->uid = id % 2 ? 1000 : 2000;
	job->state = JOB_SUCCEEDED;
	job->submitted_ms = 1000 * id;
	job->ended_ms = 1000 * id + 500;
	if (store_insert_job(st, job, &err) < 0)
		diag("job %lld: %s", (long long)id, err);
	free(err);
	model_job_free(job);
}

/* What the views saw of the job. */
struct seen {
	int calls;
	char name[32];
	enum job_state state;
};

static void look(void *arg, struct model *m, const struct job *job)
{
	struct seen *s = arg;

	(void)m;
	s->calls++;
	snprintf(s->name, sizeof s->name, "%s", job->name);
	s->state = job->state;
}

static int count_row(void *arg, const struct store_job_row *row)
{
	(void)row;
	++*(int *)arg;
	return 0;
}

int main(void)
{
	char dir[] = "/tmp/parsa-test-history-reader.XXXXXX", *path, *err = NULL;
	struct history_reader *r;
	struct store *st;
	struct seen seen = { 0 };
	int64_t counts[5] = { 0 }, last = 0;
	sqlite3 *db;
	int rc, n = 0;

	if (!mkdtemp(dir))
		return 1;
	path = xasprintf("%s/parsa.db", dir);
	st = store_open(path, &err);
	ok(st != NULL, "the store opens (%s)", err ? err : "ok");
	if (!st)
		return done_testing();
	for (int64_t id = 1; id <= 12; id++)
		write_job(st, id);
	r = history_reader_open(st, &err);
	ok(r != NULL, "a reader opens on the store's file (%s)", err ? err : "ok");
	if (!r)
		return done_testing();

	rc = history_reader_job(r, 3, 0, look, &seen, &err);
	ok(rc == 1 && seen.calls == 1 && strcmp(seen.name, "old-3") == 0 && seen.state == JOB_SUCCEEDED,
	   "an old job is read whole (%d: %s)", rc, seen.name);
	seen.calls = 0;
	is_int(history_reader_job(r, 99, 0, look, &seen, &err), 0, "no job 99");
	is_int(seen.calls, 0, "and nothing is shown for it");

	/* Its rows go behind the reader's back: the copy kept serves the views
	 * that follow while the engine's count stays, and is read again once it
	 * moves. */
	ok(sqlite3_open(path, &db) == SQLITE_OK &&
	   sqlite3_exec(db, "DELETE FROM jobs WHERE id = 3", NULL, NULL, NULL) == SQLITE_OK,
	   "job 3's row deleted");
	sqlite3_close(db);
	is_int(history_reader_job(r, 3, 0, look, &seen, &err), 1, "the kept copy serves the next view");
	is_int(history_reader_job(r, 3, 1, look, &seen, &err), 0,
	       "under a new count it is read again: gone");

	/* More old jobs than are kept: each still reads right. */
	for (int64_t id = 1; id <= 12; id++) {
		char want[32];

		snprintf(want, sizeof want, "old-%lld", (long long)id);
		if (id != 3 && (history_reader_job(r, id, 1, look, &seen, &err) != 1 ||
				strcmp(seen.name, want) != 0))
			n++;
	}
	is_int(n, 0, "eleven old jobs in turn, each read right");
	is_int(history_reader_job(r, 1, 1, look, &seen, &err), 1, "and the first again");

	n = 0;
	ok(history_reader_list(r, 0, 1000, count_row, &n, &err) == 0, "the listing (%s)",
	   err ? err : "ok");
	is_int(n, 5, "uid 1000's jobs, without the deleted one");
	ok(history_reader_last(r, 2000, &last, &err) == 1 && last == 12, "uid 2000's last job: 12");
	rc = history_reader_counts(r, counts, &err);
	ok(rc == 0 && counts[JOB_SUCCEEDED] == 11, "the counts of every job (%lld succeeded)",
	   (long long)counts[JOB_SUCCEEDED]);
	ok(history_reader_job(r, 4, 1, look, &seen, &err) == 1, "the connection still reads after them");

	history_reader_close(r);
	store_close(st);
	free(err);
	{
		char *cmd = xasprintf("rm -rf %s", dir);

		ok(system(cmd) == 0, "the test's folder removed");
		free(cmd);
	}
	free(path);
	return done_testing();
}
