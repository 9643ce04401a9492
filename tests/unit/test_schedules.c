/* Recurring pipelines through their narrow interface to the engine: a fake
 * engine gives the ops (a lock that counts, a clock the test moves, a submit
 * that records), ticks with schedules_due() and tells the outcome with
 * schedules_ran(). Runs due, late runs, failures, run-now, and that every op
 * is called with the lock held. */
#include "schedules.h"
#include "store.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TAP_STATE;

struct fake_engine {
	int depth;              /* the lock: held when 1 */
	int locks;              /* times it was taken */
	int unlocked_calls;     /* submit or job_state called without it */
	int64_t now;
	int submits;
	int fail_errno;         /* the next submit fails with this (0: succeeds) */
	int64_t next_job;
	char last_note[256];
	int64_t last_next_ms;
};

static void fake_lock(void *arg)
{
	struct fake_engine *f = arg;

	f->depth++;
	f->locks++;
}

static void fake_unlock(void *arg)
{
	((struct fake_engine *)arg)->depth--;
}

static int64_t fake_now(void *arg)
{
	return ((struct fake_engine *)arg)->now;
}

static int fake_submit(void *arg, const struct schedule_run *run, int64_t *job, char **err)
{
	struct fake_engine *f = arg;

	if (f->depth != 1)
		f->unlocked_calls++;
	f->submits++;
	snprintf(f->last_note, sizeof f->last_note, "%s", run->note);
	f->last_next_ms = run->row.next_ms;
	if (f->fail_errno) {
		errno = f->fail_errno;
		f->fail_errno = 0;
		return errprintf(err, "cannot submit: the disk is full");
	}
	*job = f->next_job++;
	return 0;
}

static const char *fake_job_state(void *arg, int64_t id)
{
	struct fake_engine *f = arg;

	if (f->depth != 1)
		f->unlocked_calls++;
	return id == 42 ? "succeeded" : NULL;
}

static int64_t json_int(json_t *json, const char *key)
{
	return json_integer_value(json_object_get(json, key));
}

/* The engine's tick: what the pass does with the runs due. */
static size_t tick(struct schedules *s, struct fake_engine *f)
{
	struct schedule_run *runs = NULL;
	size_t n;

	fake_lock(f);
	n = schedules_due(s, f->now, &runs);
	for (size_t i = 0; i < n; i++) {
		char *err = NULL;
		int64_t job = 0;
		int failed = fake_submit(f, &runs[i], &job, &err) < 0 ? errno : 0;

		schedules_ran(s, &runs[i], failed, job, err);
		free(err);
	}
	schedules_runs_free(runs, n);
	fake_unlock(f);
	return n;
}

int main(void)
{
	static const char spec[] = "[job]\nevery = 1h\n\n[stage a]\nrun = x\n";
	char dir[] = "/tmp/test_schedules.XXXXXX", *db, *err = NULL, *status;
	struct fake_engine f = { .now = 1700000000000, .next_job = 42 };
	struct schedules_ops ops = { fake_lock, fake_unlock, fake_now, fake_submit, fake_job_state, &f };
	struct caller me = { getuid(), getgid(), NULL, 0 };
	struct schedules *s;
	struct store *st;
	int64_t id = 0, next, next2;
	json_t *json;

	if (!mkdtemp(dir))
		return 1;
	db = xasprintf("%s/state.db", dir);
	st = store_open(db, &err);
	ok(st != NULL, "the store opens");
	s = schedules_create(st, &ops, &err);
	ok(s != NULL, "schedules are created from an empty store");

	is_int(schedules_put(s, &me, "hourly.conf", spec, strlen(spec), &id, &err), 0, "put");
	ok(id > 0, "the schedule has an id");
	is_int(f.depth, 0, "put let the lock go");
	ok(f.locks > 0, "put took the lock");
	json = schedules_json(s, "hourly");
	next = json_int(json, "next_ms");
	json_decref(json);
	ok(next > f.now, "its next run is after now");

	/* Named after its file as a job is by default (spec_file_stem): no
	 * folder, no .conf/.ini/.spec; a name that is left empty is refused. */
	is_int(schedules_put(s, &me, "team/daily.spec", spec, strlen(spec), &id, &err), 0,
	       "put team/daily.spec");
	json = schedules_json(s, "daily");
	ok(json != NULL, "it is schedule daily");
	json_decref(json);
	is_int(schedules_remove(s, &me, "daily", &err), 0, "and goes");
	is_int(schedules_put(s, &me, "team/.conf", spec, strlen(spec), &id, &err), -1,
	       "a file that names nothing is refused");
	ok(err && strstr(err, "team/.conf: a schedule is named after its file"), "saying why: %s",
	   err ? err : "");
	free(err);
	err = NULL;

	f.now = next - 1;
	is_int(tick(s, &f), 0, "nothing is due before its time");
	f.now = next;
	is_int(tick(s, &f), 1, "the run is due on time");
	is_str(f.last_note, "", "a run on time has no note");
	ok(f.last_next_ms > next, "the run commits the schedule's next run, moved on");
	json = schedules_json(s, "hourly");
	is_int(json_int(json, "runs_total"), 1, "the run is remembered");
	is_int(json_int(json, "next_ms"), f.last_next_ms, "the schedule's next run moved");
	is_int(json_int(json_array_get(json_object_get(json, "runs"), 0), "job"), 42, "with its job");
	is_str(json_string_value(json_object_get(json_array_get(json_object_get(json, "runs"), 0),
						 "state")), "succeeded", "and the job's state from the engine");
	json_decref(json);
	is_int(tick(s, &f), 0, "not due twice");

	/* A commit that failed: tried again at the next tick, said once. */
	next = f.last_next_ms;
	f.now = next;
	f.fail_errno = EAGAIN;
	is_int(tick(s, &f), 1, "due again");
	json = schedules_json(s, "hourly");
	is_int(json_int(json, "next_ms"), next, "a failed commit keeps the next run");
	is_str(json_string_value(json_object_get(json, "last_error")), "cannot submit: the disk is full",
	       "and says why");
	is_int(json_int(json, "runs_total"), 1, "nothing is remembered");
	json_decref(json);
	/* A refused spec: the run waits for the next period. */
	f.fail_errno = EINVAL;
	is_int(tick(s, &f), 1, "due at the next tick");
	json = schedules_json(s, "hourly");
	next2 = json_int(json, "next_ms");
	ok(next2 > next, "a refused run waits for the next period");
	json_decref(json);
	status = schedules_status(s, "hourly");
	ok(status && strstr(status, "run: job 42 submitted ") && strstr(status, " succeeded"),
	   "status lists the run");
	free(status);

	/* Found late: made once, with a note. */
	f.now = next2 + 3 * 3600 * 1000 + 60 * 1000;
	is_int(tick(s, &f), 1, "a late run is made once");
	ok(strncmp(f.last_note, "late: due at ", 13) == 0 && strstr(f.last_note, "3 later runs missed"),
	   "and says it was late (%s)", f.last_note);
	ok(f.last_next_ms > f.now, "its next run is after now");
	is_int(tick(s, &f), 0, "and only once");

	/* run-now goes through the same submit, under the lock. */
	json = schedules_json(s, "hourly");
	next = json_int(json, "next_ms");
	json_decref(json);
	is_int(schedules_ctl(s, &me, "hourly", "run-now", &err), 0, "run-now");
	is_str(f.last_note, "run-now", "its note");
	is_int(f.last_next_ms, next, "the regular runs keep their times");
	f.fail_errno = EIO;
	free(err);
	err = NULL;
	is_int(schedules_ctl(s, &me, "hourly", "run-now", &err), -1, "a run-now that fails");
	is_str(err, "cannot submit: the disk is full", "says why to the caller");
	json = schedules_json(s, "hourly");
	is_int(json_int(json, "runs_total"), 3, "and is not remembered");
	json_decref(json);

	is_int(f.unlocked_calls, 0, "every op is called with the lock held");
	is_int(f.depth, 0, "and the lock is let go");

	free(err);
	schedules_destroy(s);
	store_close(st);
	unlink(db);
	free(db);
	{
		char *wal = xasprintf("%s/state.db-wal", dir), *shm = xasprintf("%s/state.db-shm", dir);

		unlink(wal);
		unlink(shm);
		free(wal);
		free(shm);
	}
	rmdir(dir);
	return done_testing();
}
