/* The engine with a real store and a local storage volume, driven the way the
 * API drives it: dependencies and foreach expansion, roll-up of stage and job
 * states, retries, cancel, hold, job dependencies, and restart from the store;
 * a stage's on_failure (finish, stop, ignore), max_failed and max_running; and
 * status that tells the truth (a job runs from its first assignment, an ended
 * stage's rate, no reservation from a time gone by, a failed notification in
 * the job's events); a submission retried with its token commits once; a
 * queued job nothing changes rests in the pass, and wakes at any change; a
 * job whose folders the volume refused waits for them, and a retry makes
 * missing ones again. */
#include "engine_internal.h"
#include "engine_test.h"
#include "stage_progress.h"
#include "tap.h"
#include "util.h"
#include "views.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

struct world {
	char dir[64];
	char *db, *vol;
	struct store *store;
	struct backend *storage;
	struct model *model;
	struct engine *engine;
	struct caller me;
	struct engine_config burst;   /* its burst_* fields, for test_burst */
};

static void world_start(struct world *w)
{
	struct engine_config cfg = { .host_timeout_ms = 10000, .lost_after_ms = 300, .timer_ms = 100,
				     .sendmail = "/nonexistent/sendmail",
				     .start_bursts_at_once = w->burst.start_bursts_at_once,
				     .burst_gap_ms = w->burst.burst_gap_ms,
				     .burst_quiet_ms = w->burst.burst_quiet_ms,
				     .burst_max_ms = w->burst.burst_max_ms,
				     /* Retries at once: the back-off has its own test
				      * (test_storage_retry.c). */
				     .retry_backoff_ms = 1 };
	char *err = NULL;

	w->store = store_open(w->db, &err);
	w->storage = backend_create(w->vol, &err);
	w->model = model_create();
	if (!w->store || !w->storage || store_load(w->store, w->model, 0, &err) < 0)
		diag("setup: %s", err ? err : "?");
	w->engine = engine_create(&cfg, w->store, w->storage, w->model, &err);
	if (!w->engine || engine_start(w->engine, &err) < 0)
		diag("engine: %s", err ? err : "?");
	free(err);
}

static void world_stop(struct world *w)
{
	engine_destroy(w->engine);
	model_destroy(w->model);
	backend_destroy(w->storage);
	store_close(w->store);
}

static int64_t submit(struct world *w, const char *text, char **err)
{
	int64_t id = 0;

	if (engine_submit(w->engine, &w->me, "test.conf", NULL, text, strlen(text), &id, NULL, err) < 0)
		return -1;
	return id;
}

static void host_up(struct world *w, const char *name, int cpus, double cpu_pct)
{
	struct host_info info = { .name = name, .cpus = cpus, .mem = 16ULL << 30,
				  .scratch_total = 100ULL << 30, .scratch_free = 100ULL << 30,
				  .cpu_limit = 90, .mem_limit = 90, .mount = "/parsa" };
	/* Without the split (a runner that does not measure its instances): the
	 * whole use counts as outside. */
	struct heartbeat hb = { .cpu_pct = cpu_pct, .mem_pct = 10, .scratch_free = -1,
				.parsa_cpu_pct = -1, .outside_cpu_pct = -1, .parsa_mem_pct = -1,
				.outside_mem_pct = -1, .outside_cores = -1, .outside_mem = -1 };

	engine_register_host(w->engine, &info, NULL);
	engine_heartbeat(w->engine, name, &hb, NULL);
}

/* A heartbeat with the live use split: outside_cores of cpu_pct is not parsa's. */
static void host_split(struct world *w, const char *name, double cpu_pct, double outside_pct,
		       double outside_cores)
{
	struct heartbeat hb = { .cpu_pct = cpu_pct, .mem_pct = 10, .scratch_free = -1,
				.parsa_cpu_pct = cpu_pct - outside_pct, .outside_cpu_pct = outside_pct,
				.parsa_mem_pct = 5, .outside_mem_pct = 5, .outside_cores = outside_cores,
				.outside_mem = 1 << 20 };

	engine_heartbeat(w->engine, name, &hb, NULL);
}

/* A heartbeat of h1 that lists one instance as running (the runner confirms it). */
static void confirm(struct world *w, int64_t id, int attempt)
{
	struct heartbeat_entry entry = { .id = id, .attempt = attempt, .pid = 77 };
	struct heartbeat hb = { .cpu_pct = 1, .mem_pct = 1, .scratch_free = -1, .instances = &entry,
				.ninstances = 1 };

	engine_heartbeat(w->engine, "h1", &hb, NULL);
}

/* The ids of the assignments in the next work answer, up to max. */
static size_t work(struct world *w, const char *host, int64_t *ids, int *attempts, size_t max,
		   size_t *ncancel)
{
	json_t *answer = engine_work(w->engine, host, 2000, NULL), *a;
	size_t i, n = 0;

	*ncancel = 0;
	if (!answer)
		return 0;
	json_array_foreach(json_object_get(answer, "start"), i, a) {
		if (n < max) {
			ids[n] = json_integer_value(json_object_get(a, "id"));
			attempts[n] = (int)json_integer_value(json_object_get(a, "attempt"));
			n++;
		}
	}
	*ncancel = json_array_size(json_object_get(answer, "cancel"));
	json_decref(answer);
	return n;
}

static int report(struct world *w, int64_t id, int attempt, enum report_kind kind, int code,
		  int sig)
{
	struct report r = { .attempt = attempt, .kind = kind, .pid = 100 + (int)id,
			    .exit_code = code, .signal = sig, .usage = INSTANCE_USAGE_UNKNOWN };

	return engine_report(w->engine, id, &r, NULL);
}

static const char *wait_job(struct world *w, int64_t id, const char *stage, int64_t ms)
{
	const char *state = "?";
	int done = 0;

	engine_wait(w->engine, id, stage, ms, &done, &state, NULL);
	return done ? state : "not done";
}

/* The job's why or status, through the door the API uses. */
static char *job_text(struct world *w, int64_t id, int why)
{
	return engine_job_text(w->engine, id, why ? JOB_VIEW_WHY : JOB_VIEW_STATUS, NULL);
}

/* ok() that text contains needle, showing the text when it does not. */
static void has(const char *text, const char *needle, const char *what)
{
	if (!ok(text && strstr(text, needle), "%s", what))
		diag("no '%s' in:\n%s", needle, text ? text : "(null)");
}

static void touch(struct world *w, const char *rel)
{
	char *path = xasprintf("%s/%s", w->vol, rel);
	int fd = open(path, O_WRONLY | O_CREAT, 0644);

	if (fd >= 0)
		close(fd);
	free(path);
}

static void test_pipeline(struct world *w)
{
	int64_t ids[8], id;
	int att[8];
	size_t n, nc;
	char *text;

	id = submit(w, "[stage warm]\nrun = w\ninstances = 1\n\n"
		    "[stage timing]\nafter = warm\nforeach = warm/ck-*\nrun = t\n\n"
		    "[stage gather]\nafter = timing\nrun = g\n", NULL);
	ok(id > 0, "pipeline submitted as job %lld", (long long)id);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "warm is assigned at once");
	is_int(att[0], 1, "attempt 1");
	n = work(w, "h1", ids + 1, att + 1, 8, &nc);
	is_int(n, 1, "an unconfirmed assignment is sent again");
	is_int(ids[1], ids[0], "the same one");
	ok(report(w, ids[0], 1, REPORT_RUNNING, 0, 0) == 0, "running");
	touch(w, "jobs/1/out/warm/ck-2");
	touch(w, "jobs/1/out/warm/ck-1");
	touch(w, "jobs/1/out/warm/other");
	touch(w, "jobs/1/out/warm/ck-3");
	ok(report(w, ids[0], 1, REPORT_EXITED, 0, 0) == 0, "warm exited 0");
	is_str(wait_job(w, id, "warm", 2000), "succeeded", "stage warm succeeded");
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 2, "two timing instances fit two cpus");
	text = job_text(w, id, 0);
	has(text, "stage timing: running (2 running, 0 done, 1 queued, 0 failed of 3)", "status counts the foreach expansion");
	free(text);
	engine_test_hold(w->engine);
	is_str(model_instance(engine_test_model(w->engine), ids[0])->item, "warm/ck-1", "items sorted");
	engine_test_release(w->engine);
	for (size_t i = 0; i < n; i++) {
		report(w, ids[i], 1, REPORT_RUNNING, 0, 0);
		report(w, ids[i], 1, REPORT_EXITED, 0, 0);
	}
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "the third follows");
	report(w, ids[0], 1, REPORT_RUNNING, 0, 0);
	report(w, ids[0], 1, REPORT_EXITED, 0, 0);
	is_int(report(w, ids[0], 1, REPORT_EXITED, 3, 0), 0, "a report sent again is ignored");
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "gather starts");
	/* A short instance's start comes with its end (runner/instances.c). */
	is_int(report(w, ids[0], 1, REPORT_EXITED, 0, 0), 0, "gather's end, with its pid, and no start");
	engine_test_hold(w->engine);
	{
		const struct instance *g = model_instance(engine_test_model(w->engine), ids[0]);

		ok(g && g->started_ms > 0 && g->pid == 100 + (int)ids[0], "its start is taken from the end");
	}
	engine_test_release(w->engine);
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "the pipeline succeeded");
	text = job_text(w, id, 0);
	has(text, "stage timing: succeeded 3/3", "status: timing 3/3");
	free(text);
}

static void test_retry_and_fail(struct world *w)
{
	int64_t ids[8], id;
	int att[8];
	size_t n, nc;
	char *text;

	id = submit(w, "[stage flaky]\nretries = 1\nrun = x\n\n[stage next]\nafter = flaky\nrun = y\n",
		    NULL);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "flaky assigned");
	report(w, ids[0], 1, REPORT_RUNNING, 0, 0);
	report(w, ids[0], 1, REPORT_EXITED, 3, 0);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "requeued");
	is_int(att[0], 2, "as attempt 2");
	is_int(report(w, ids[0], 1, REPORT_EXITED, 0, 0), 0, "a report for attempt 1 is ignored");
	report(w, ids[0], 2, REPORT_FAILED, -1, 0);
	is_str(wait_job(w, id, NULL, 2000), "failed", "out of retries: the job failed");
	text = job_text(w, id, 0);
	has(text, "stage next: cancelled", "the dependent stage is cancelled");
	has(text, "reason: stage flaky failed", "the reason names the stage");
	free(text);

	is_int(engine_ctl(w->engine, &w->me, id, "retry", NULL), 0, "retry");
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "flaky runs again");
	is_int(att[0], 3, "attempt 3");
	report(w, ids[0], 3, REPORT_RUNNING, 0, 0);
	report(w, ids[0], 3, REPORT_EXITED, 0, 0);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "next runs");
	report(w, ids[0], 1, REPORT_RUNNING, 0, 0);
	report(w, ids[0], 1, REPORT_EXITED, 0, 0);
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "after retry: succeeded");
}

static void test_ctl(struct world *w)
{
	struct caller other = { .uid = w->me.uid + 4242, .gid = w->me.gid };
	int64_t ids[8], id, dep;
	int att[8];
	size_t n, nc;
	char *err = NULL, *text;

	id = submit(w, "[stage long]\ninstances = 2\nrun = sleep\n\n[stage after]\nafter = long\nrun = z\n",
		    NULL);
	dep = submit(w, "[job]\nafter = 999\n[stage s]\nrun = x\n", &err);
	is_int(dep, -1, "after = a job that does not exist is refused");
	ok(err && strstr(err, "after = 999: no such job"), "with a message: %s", err ? err : "");
	free(err);
	err = NULL;
	{
		char spec[64];

		snprintf(spec, sizeof spec, "[job]\nafter = %lld\n[stage s]\nrun = x\n", (long long)id);
		dep = submit(w, spec, NULL);
		ok(dep > 0, "a job waiting for job %lld", (long long)id);
	}
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 2, "both instances assigned");
	report(w, ids[0], 1, REPORT_RUNNING, 0, 0);
	report(w, ids[1], 1, REPORT_RUNNING, 0, 0);
	text = job_text(w, dep, 1);
	has(text, "waiting for job", "why: waiting for the job");
	free(text);

	errno = 0;
	is_int(engine_ctl(w->engine, &other, id, "cancel", &err), -1, "another user cannot cancel");
	is_int(errno, EACCES, "EACCES");
	free(err);
	err = NULL;
	is_int(engine_ctl(w->engine, &w->me, id, "frobnicate", &err), -1, "unknown command");
	is_int(errno, EINVAL, "EINVAL");
	ok(err && strstr(err, "cancel, hold, release, retry, priority N"), "lists the commands");
	free(err);
	err = NULL;
	is_int(engine_ctl(w->engine, &w->me, id, "release", NULL), -1, "release of a job not held");
	is_int(errno, EBUSY, "EBUSY");
	is_int(engine_ctl(w->engine, &w->me, id, "priority 7", NULL), 0, "priority 7");
	is_int(engine_ctl(w->engine, &w->me, id, "priority", NULL), -1, "priority without N");

	is_int(engine_ctl(w->engine, &w->me, id, "cancel", NULL), 0, "cancel");
	n = work(w, "h1", ids + 2, att + 2, 8, &nc);
	is_int(nc, 2, "both running instances get a cancel");
	is_str(wait_job(w, id, NULL, 100), "not done", "not ended while they run");
	report(w, ids[0], 1, REPORT_EXITED, -1, 15);
	report(w, ids[1], 1, REPORT_EXITED, -1, 9);
	is_str(wait_job(w, id, NULL, 2000), "cancelled", "cancelled once they ended");
	is_str(wait_job(w, id, "after", 100), "cancelled", "the dependent stage is cancelled");
	is_str(wait_job(w, dep, NULL, 2000), "failed", "the job that waited for it fails");
	text = job_text(w, dep, 0);
	has(text, "dependency job", "because of the dependency");
	free(text);
}

static void test_hold_and_limits(struct world *w)
{
	int64_t ids[8], id, big, none;
	int att[8];
	size_t n, nc;
	char *text;

	id = submit(w, "[stage s]\nrun = x\n", NULL);
	engine_ctl(w->engine, &w->me, id, "hold", NULL);
	big = submit(w, "[stage huge]\ncpus = 64\nrun = x\n", NULL);
	/* Held and oversized jobs wait; the assignment of id may have happened
	 * before the hold: drain it if so. */
	n = work(w, "h1", ids, att, 8, &nc);
	if (n) {
		report(w, ids[0], att[0], REPORT_RUNNING, 0, 0);
		report(w, ids[0], att[0], REPORT_EXITED, 0, 0);
		diag("the job started before the hold");
	} else {
		text = job_text(w, id, 1);
		has(text, "held", "why says held");
		free(text);
		engine_ctl(w->engine, &w->me, id, "release", NULL);
		n = work(w, "h1", ids, att, 8, &nc);
		is_int(n, 1, "released: it starts");
		report(w, ids[0], 1, REPORT_RUNNING, 0, 0);
		report(w, ids[0], 1, REPORT_EXITED, 0, 0);
	}
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "held job ran after release");
	text = job_text(w, big, 1);
	has(text, "no host has 64 cpus", "why: no host has 64 cpus");
	has(text, "h1: needs 64 cpus, host has 2", "per host too");
	free(text);
	engine_ctl(w->engine, &w->me, big, "cancel", NULL);
	is_str(wait_job(w, big, NULL, 2000), "cancelled", "a queued job cancels at once");

	/* A busy host holds back work; the next heartbeat below the limit lets it go. */
	host_up(w, "h1", 2, 97);
	id = submit(w, "[stage s]\nrun = x\n", NULL);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 0, "nothing starts while the CPU is over the limit");
	text = job_text(w, id, 1);
	has(text, "h1: CPU used outside parsa 97% >= limit 90%", "why names the limit");
	free(text);
	host_up(w, "h1", 2, 3);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "it starts once the CPU is free");
	report(w, ids[0], 1, REPORT_RUNNING, 0, 0);
	report(w, ids[0], 1, REPORT_EXITED, 0, 0);
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "and succeeds");

	/* Parsa's own work is not load: a host busy at 100% with parsa's
	 * instances alone refills as each ends. One core busy outside parsa
	 * leaves one; both busy, or outside use past the limit, leave none. */
	id = submit(w, "[stage s]\ninstances = 5\nrun = x\n", NULL);
	host_split(w, "h1", 100, 1, 0.02);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 2, "a host busy with parsa's work only: both cores");
	report(w, ids[0], 1, REPORT_RUNNING, 0, 0);
	report(w, ids[1], 1, REPORT_RUNNING, 0, 0);
	host_split(w, "h1", 100, 2, 0.04);
	report(w, ids[0], 1, REPORT_EXITED, 0, 0);
	n = work(w, "h1", ids + 2, att + 2, 6, &nc);
	is_int(n, 1, "one ends, one refills although the host reads 100%% busy");
	host_split(w, "h1", 100, 50, 1.0);
	report(w, ids[1], 1, REPORT_EXITED, 0, 0);
	report(w, ids[2], 1, REPORT_RUNNING, 0, 0);
	report(w, ids[2], 1, REPORT_EXITED, 0, 0);
	/* The pass may already have placed the next one: why is about the one
	 * after it then, and shows the split either way. */
	text = job_text(w, id, 1);
	has(text, "parsa 50%, outside 50%", "why shows the live use split");
	free(text);
	n = work(w, "h1", ids + 3, att + 3, 5, &nc);
	is_int(n, 1, "one core busy outside parsa: one instance");
	text = job_text(w, id, 1);
	has(text, "h1: needs 1 cpus, 0 of 2 free (1 reserved, 1 busy outside parsa)",
	    "why counts the core busy outside parsa");
	free(text);
	host_split(w, "h1", 100, 95, 1.9);
	report(w, ids[3], 1, REPORT_EXITED, 0, 0);
	text = job_text(w, id, 1);
	has(text, "h1: CPU used outside parsa 95% >= limit 90%", "outside use past the limit: nothing new");
	free(text);
	host_split(w, "h1", 5, 3, 0.06);
	n = work(w, "h1", ids + 4, att + 4, 4, &nc);
	is_int(n, 1, "outside load gone: the last instance starts");
	report(w, ids[4], 1, REPORT_EXITED, 0, 0);
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "the fan-out ends");

	none = submit(w, "[stage a]\nrun = x\n[stage b]\nafter = a\nforeach = a/*\nrun = y\n", NULL);
	n = work(w, "h1", ids, att, 8, &nc);
	report(w, ids[0], 1, REPORT_RUNNING, 0, 0);
	report(w, ids[0], 1, REPORT_EXITED, 0, 0);
	is_str(wait_job(w, none, NULL, 2000), "succeeded", "a foreach over nothing succeeds");
}

static void test_lost_and_restart(struct world *w)
{
	struct heartbeat hb = { .cpu_pct = 1, .mem_pct = 1, .scratch_free = -1 };
	int64_t ids[8], id;
	int att[8];
	size_t n, nc;

	id = submit(w, "[stage s]\nretries = 1\nrun = x\n", NULL);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "assigned");
	report(w, ids[0], 1, REPORT_RUNNING, 0, 0);
	/* Heartbeats that do not list it, for longer than lost_after (300 ms). */
	for (int i = 0; i < 5; i++) {
		engine_heartbeat(w->engine, "h1", &hb, NULL);
		usleep(100 * 1000);
	}
	engine_heartbeat(w->engine, "h1", &hb, NULL);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "the lost instance is requeued");
	is_int(att[0], 2, "as attempt 2");

	/* Restart: the assignment survives and is sent again; the runner's
	 * heartbeat confirms it. */
	world_stop(w);
	world_start(w);
	host_up(w, "h1", 2, 1);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "after a restart the unconfirmed assignment is sent again");
	is_int(att[0], 2, "same attempt: nothing starts twice");
	confirm(w, ids[0], 2);
	report(w, ids[0], 2, REPORT_EXITED, 0, 0);
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "the job ends after the restart");
}

/* Jobs ever made: a forgotten job keeps its slot. */
static size_t job_slots(struct world *w)
{
	size_t n;

	engine_test_hold(w->engine);
	n = model_njobs(w->model);
	engine_test_release(w->engine);
	return n;
}

/* The same submission sent again with its token (its answer was lost) gives
 * the job it committed, also after a restart; a fresh token is a new job, and
 * another user's token is refused. */
static void test_token(struct world *w)
{
	const char *text = "[stage s]\nrun = x\n";
	struct caller other = w->me;
	int64_t id1 = 0, id2 = 0, id3 = 0;
	bool existed = true;
	char *err = NULL;
	size_t before = job_slots(w);

	ok(engine_submit(w->engine, &w->me, "t.conf", "tok-A1", text, strlen(text), &id1, &existed,
			 &err) == 0 && !existed, "a new token commits a job");
	ok(engine_submit(w->engine, &w->me, "t.conf", "tok-A1", text, strlen(text), &id2, &existed,
			 &err) == 0 && existed, "the same token again is answered as existing");
	is_int(id2, id1, "with the same id");
	is_int(job_slots(w), before + 1, "and one job, not two");
	/* A later write of the job's row (its state) leaves the token alone. */
	is_int(engine_ctl(w->engine, &w->me, id1, "hold", &err), 0, "the job's row is written again");
	world_stop(w);
	world_start(w);
	host_up(w, "h1", 2, 1);
	ok(engine_submit(w->engine, &w->me, "t.conf", "tok-A1", text, strlen(text), &id3, &existed,
			 &err) == 0 && existed && id3 == id1, "after a restart the token still finds it");
	is_int(job_slots(w), before + 1, "still one job");
	ok(engine_submit(w->engine, &w->me, "t.conf", "tok-B2", text, strlen(text), &id2, &existed,
			 &err) == 0 && !existed && id2 != id1, "another token is another job");
	other.uid = w->me.uid + 1;
	ok(engine_submit(w->engine, &other, "t.conf", "tok-A1", text, strlen(text), &id3, &existed,
			 &err) < 0 && errno == EACCES, "another user's token is refused");
	free(err);
	err = NULL;
	engine_ctl(w->engine, &w->me, id1, "cancel", NULL);
	engine_ctl(w->engine, &w->me, id2, "cancel", NULL);
}

struct poller {
	struct world *w;
	size_t n;
};

static void *stale_poll(void *arg)
{
	struct poller *p = arg;
	int64_t ids[4];
	int att[4];
	size_t nc;

	p->n = work(p->w, "h1", ids, att, 4, &nc);
	return NULL;
}

static void *late_submit(void *arg)
{
	struct world *w = arg;

	usleep(200 * 1000);
	submit(w, "[stage s]\nrun = x\n", NULL);
	return NULL;
}

/* A poll left by a runner that restarted must not take the news from the new
 * runner's poll. */
static void test_superseded_poll(struct world *w)
{
	struct poller stale = { .w = w };
	pthread_t a, b;
	int64_t ids[4];
	int att[4];
	size_t n, nc;

	pthread_create(&a, NULL, stale_poll, &stale);
	usleep(100 * 1000);
	pthread_create(&b, NULL, late_submit, w);
	n = work(w, "h1", ids, att, 4, &nc);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	is_int(n, 1, "the newest poll gets the assignment");
	is_int(stale.n, 0, "the superseded one gets nothing");
	report(w, ids[0], att[0], REPORT_RUNNING, 0, 0);
	report(w, ids[0], att[0], REPORT_EXITED, 0, 0);
}

/* Reports stamped on the host: the scheduler keeps the runner's times and
 * usage, not when the reports arrived (both come in one go here). */
static char *events_text(struct world *w, int64_t id);

static void test_true_times(struct world *w)
{
	int64_t ids[8], id, t0 = time_now_ms() - 5000;
	struct instance *inst;
	char *status, *events;
	json_t *json;
	int att[8];
	size_t n, nc;

	id = submit(w, "[stage s]\nrun = x\n", NULL);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "assigned");
	{
		struct report r = { .attempt = 1, .kind = REPORT_EXITED, .pid = 99, .exit_code = 0,
				    .started_ms = t0, .ended_ms = t0 + 300,
				    .usage = { .cpu_ms = 12, .rss = -1, .max_rss = 3 << 20 },
				    .cpu_list = "1", .gpu_list = NULL };

		ok(engine_report(w->engine, ids[0], &r, NULL) == 0, "a short instance's one report");
	}
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "it succeeded");
	engine_test_hold(w->engine);
	inst = model_instance(engine_test_model(w->engine), ids[0]);
	status = views_instance_status(inst);
	json = views_instance_json(inst);
	events = views_job_events(inst->job);
	ok(inst->started_ms == t0 && inst->ended_ms == t0 + 300, "the host's start and end stamps");
	engine_test_release(w->engine);
	has(status, "duration: 0.300 s", "status: the duration");
	has(status, "cpu: 0.012 s", "status: cpu seconds");
	has(status, "max mem: 3M", "status: peak memory");
	has(status, "cores: 1", "status: the cores it had");
	has(events, "started on h1 (pid 99)", "events: the start");
	has(events, "succeeded on h1 (0.300 s)", "events: the true duration");
	ok(json_integer_value(json_object_get(json, "started_ms")) == t0 &&
	   json_integer_value(json_object_get(json, "ended_ms")) == t0 + 300 &&
	   json_integer_value(json_object_get(json, "cpu_ms")) == 12 &&
	   json_integer_value(json_object_get(json, "max_rss_bytes")) == 3 << 20 &&
	   json_integer_value(json_object_get(json, "exit_code")) == 0 &&
	   json_is_null(json_object_get(json, "signal")) &&
	   strcmp(json_string_value(json_object_get(json, "host")), "h1") == 0,
	   "status.json: times, usage, host and exit");
	json_decref(json);
	free(status);
	free(events);

	/* Killed for passing its mem: the runner's reason as it is, in events,
	 * status and the why of its retry (the host held full meanwhile). */
	id = submit(w, "[stage s]\nretries = 1\nmem = 1G\nrun = x\n", NULL);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "assigned");
	host_split(w, "h1", 100, 99, 2.0);
	{
		struct report r = { .attempt = 1, .kind = REPORT_EXITED, .pid = 98, .signal = 9,
				    .reason = "out of memory: used 1.2G of mem = 1G",
				    .usage = INSTANCE_USAGE_UNKNOWN };

		ok(engine_report(w->engine, ids[0], &r, NULL) == 0, "killed for its memory");
	}
	status = job_text(w, id, 1);
	has(status, "instance 0 is retried after attempt 1: out of memory: used 1.2G of mem = 1G",
	    "why of the retry gives the reason");
	free(status);
	events = events_text(w, id);
	has(events, "failed on h1 (out of memory: used 1.2G of mem = 1G); retrying", "events too");
	free(events);
	host_split(w, "h1", 1, 1, 0.02);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "the retry starts once the host has room");
	report(w, ids[0], 2, REPORT_EXITED, 0, 0);
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "and succeeds");
}

/* ---- on_failure, max_failed, max_running ---- */

/* The id of instance index of job id's first stage. */
static int64_t inst_id(struct world *w, int64_t id, int index)
{
	int64_t inst;

	engine_test_hold(w->engine);
	inst = model_job(engine_test_model(w->engine), id)->stages[0].inst[index]->id;
	engine_test_release(w->engine);
	return inst;
}

static int index_of(struct world *w, int64_t id)
{
	int index;

	engine_test_hold(w->engine);
	index = model_instance(engine_test_model(w->engine), id)->index;
	engine_test_release(w->engine);
	return index;
}

/* An attempt that ran and exited with code. */
static void run_to(struct world *w, int64_t id, int attempt, int code)
{
	report(w, id, attempt, REPORT_RUNNING, 0, 0);
	report(w, id, attempt, REPORT_EXITED, code, 0);
}

/* Run what h1 is given until the stage has ended: the instance with index
 * bad exits with code 3, the others with 0. How many attempts ran. */
static int run_stage(struct world *w, int64_t id, const char *stage, int bad)
{
	int64_t ids[8];
	int att[8], ran = 0;
	size_t n, nc;

	for (int round = 0; round < 50 && strcmp(wait_job(w, id, stage, 200), "not done") == 0; round++) {
		n = work(w, "h1", ids, att, 8, &nc);
		for (size_t i = 0; i < n; i++, ran++)
			run_to(w, ids[i], att[i], index_of(w, ids[i]) == bad ? 3 : 0);
	}
	return ran;
}

static char *stage_text(struct world *w, int64_t id, const char *stage)
{
	return engine_stage_status(w->engine, id, stage, NULL);
}

static char *events_text(struct world *w, int64_t id)
{
	return engine_job_text(w->engine, id, JOB_VIEW_EVENTS, NULL);
}

static void lacks(const char *text, const char *needle, const char *what)
{
	if (!ok(text && !strstr(text, needle), "%s", what))
		diag("'%s' in:\n%s", needle, text ? text : "(null)");
}

static const char two_stages[] = "[stage s]\ninstances = 4\nrun = x\n%s\n[stage next]\nafter = s\nrun = y\n";

static int64_t submit_two(struct world *w, const char *extra)
{
	char spec[256];

	snprintf(spec, sizeof spec, two_stages, extra);
	return submit(w, spec, NULL);
}

/* submit_two(extra), then instances 0 and 1 start on h1's two cpus (ids[0],
 * ids[1]); 0 runs, 1 exits with code 3: the fan-out's first failure. */
static int64_t fail_one(struct world *w, const char *extra, int64_t *ids, const char *what)
{
	int64_t id = submit_two(w, extra);
	int att[8];
	size_t n, nc;

	n = work(w, "h1", ids, att, 8, &nc);
	ok(n == 2 && index_of(w, ids[1]) == 1, "%s: instances 0 and 1 start on two cpus", what);
	report(w, ids[0], 1, REPORT_RUNNING, 0, 0);
	run_to(w, ids[1], 1, 3);
	return id;
}

/* The default: index 1 fails, the other three run to the end, then the stage
 * and the job fail, next never starts; retry reruns only index 1. */
static void test_finish(struct world *w)
{
	int64_t ids[8], id;
	int att[8];
	size_t n, nc;
	char *text;

	id = fail_one(w, "", ids, "finish");
	n = work(w, "h1", ids + 2, att + 2, 6, &nc);
	is_int(nc, 0, "finish: instance 0 is not cancelled");
	ok(n == 1 && index_of(w, ids[2]) == 2, "the queued instance 2 still starts");
	text = job_text(w, id, 0);
	has(text, "state: running", "the job runs on");
	has(text, "stage next: cancelled", "next will never start");
	free(text);
	text = job_text(w, id, 1);
	has(text, "  instance 1 failed (exit code 3), more than max_failed = 0: the others run to the end "
	    "(on_failure = finish), then the stage fails", "why says what comes");
	free(text);
	is_str(wait_job(w, id, NULL, 100), "not done", "the job does not end while the others run");
	run_to(w, ids[0], 1, 0);
	run_to(w, ids[2], 1, 0);
	is_int(run_stage(w, id, "s", -1), 1, "and instance 3 after them");
	is_str(wait_job(w, id, NULL, 2000), "failed", "then the job fails");
	text = job_text(w, id, 0);
	has(text, "reason: stage s failed: instance 1 failed (exit code 3)", "its reason names index 1");
	has(text, "stage s: failed (0 running, 3 done, 0 queued, 1 failed of 4)", "three succeeded");
	free(text);
	text = stage_text(w, id, "s");
	has(text, "failures: instance 1 failed (exit code 3)\n", "the stage's status names index 1");
	has(text, "on_failure: finish\nmax_failed: 0\nmax_running: none\n", "and its keys");
	free(text);
	text = events_text(w, id);
	has(text, "stage s will fail: 1 of 4 instances failed (max_failed = 0); the others run to the end "
	    "(on_failure = finish)", "events: what happens now");
	has(text, "stage next not started: stage s failed", "events: next never starts");
	has(text, "stage s failed: instance 1 failed (exit code 3)", "events: the stage's end");
	lacks(text, "cancelled on", "nothing was cancelled");
	free(text);

	is_int(engine_ctl(w->engine, &w->me, id, "retry", NULL), 0, "retry");
	text = events_text(w, id);
	has(text, "2 instances requeued", "retry requeues index 1 and next's instance, not the succeeded ones");
	free(text);
	is_int(run_stage(w, id, "s", -1), 1, "only index 1 runs again");
	is_int(run_stage(w, id, NULL, -1), 1, "then next");
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "after retry: succeeded");
}

/* on_failure = stop: today's behaviour, the running ones are cancelled. */
static void test_stop(struct world *w)
{
	int64_t ids[8], id;
	int att[8];
	size_t nc;
	char *text;

	id = fail_one(w, "on_failure = stop\n", ids, "stop");
	work(w, "h1", ids + 2, att + 2, 6, &nc);
	is_int(nc, 1, "stop: instance 0 is cancelled at once");
	report(w, ids[0], 1, REPORT_EXITED, -1, 15);
	is_str(wait_job(w, id, NULL, 2000), "failed", "the job fails");
	text = job_text(w, id, 0);
	has(text, "reason: stage s failed: instance 1 failed (exit code 3)", "naming index 1");
	has(text, "stage s: failed (0 running, 0 done, 0 queued, 1 failed, 3 cancelled of 4)",
	    "the queued ones never started");
	free(text);
	text = events_text(w, id);
	has(text, "stage s instance 0 cancelled on h1 (killed by signal 15", "instance 0 was cancelled");
	lacks(text, "will fail", "no 'others run to the end'");
	free(text);
}

/* on_failure = ignore: counted, the stage succeeds, next runs; max_failed
 * caps it. */
static void test_ignore(struct world *w)
{
	int64_t id;
	char *text;

	id = submit_two(w, "on_failure = ignore\n");
	is_int(run_stage(w, id, "s", 1), 4, "ignore: all four ran");
	is_str(wait_job(w, id, "s", 2000), "succeeded", "the stage succeeds");
	text = job_text(w, id, 0);
	has(text, "stage s: succeeded, 1 of 4 failed\n", "with its failure counted");
	free(text);
	text = stage_text(w, id, "s");
	has(text, "failures: instance 1 failed (exit code 3)\n", "the stage's status names it");
	has(text, "max_failed: all\n", "ignore tolerates all");
	free(text);
	is_int(run_stage(w, id, NULL, -1), 1, "next runs");
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "and the job succeeds");
	text = events_text(w, id);
	has(text, "stage s succeeded, 1 of 4 failed (on_failure = ignore): instance 1 failed (exit code 3)",
	    "events say so");
	free(text);
	is_int(engine_ctl(w->engine, &w->me, id, "retry", NULL), -1, "a job that succeeded is not retried");

	id = submit_two(w, "on_failure = ignore\nmax_failed = 0\n");
	is_int(run_stage(w, id, "s", 1), 4, "ignore, max_failed = 0: the others still run");
	is_str(wait_job(w, id, NULL, 2000), "failed", "one failure too many: the job fails");
	text = job_text(w, id, 0);
	has(text, "reason: stage s failed: instance 1 failed (exit code 3)", "naming index 1");
	has(text, "stage next: cancelled", "next never ran");
	free(text);

	id = submit_two(w, "on_failure = ignore\nmax_failed = 25%\n");
	is_int(run_stage(w, id, "s", 1), 4, "ignore, max_failed = 25%%: all ran");
	is_str(wait_job(w, id, "s", 2000), "succeeded", "one of four is 25%%: it succeeds");
	text = stage_text(w, id, "s");
	has(text, "max_failed: 25% (1 of 4)\n", "its status says how many it tolerates");
	free(text);
	run_stage(w, id, NULL, -1);
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "the job succeeds");
}

/* max_running: at most N assigned or running at once. */
static void test_max_running(struct world *w)
{
	int64_t ids[8], id;
	int att[8];
	size_t n, nc;
	char *text;

	id = submit(w, "[stage s]\ninstances = 3\nmax_running = 1\nrun = x\n", NULL);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "max_running = 1: one starts on two free cpus");
	n = work(w, "h1", ids + 1, att + 1, 7, &nc);
	ok(n == 1 && ids[1] == ids[0], "an assigned one counts: only it is sent again");
	text = job_text(w, id, 1);
	has(text, "  max_running = 1: the next starts when one of those running ends", "why says so");
	lacks(text, "h1: fits", "rather than that the host fits");
	free(text);
	run_to(w, ids[0], 1, 0);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "once it ended, the next");
	run_to(w, ids[0], 1, 0);
	is_int(run_stage(w, id, NULL, -1), 1, "and the last");
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "the job succeeds");
}

/* A cancel while a finish stage runs on stops everything; a restart keeps
 * a failing stage failing, and says so once. */
static void test_failure_cancel_restart(struct world *w)
{
	int64_t ids[8], id;
	int att[8];
	size_t n, nc;
	char *text;

	id = fail_one(w, "", ids, "cancel");
	n = work(w, "h1", ids + 2, att + 2, 6, &nc);
	ok(n == 1 && ids[2] == inst_id(w, id, 2), "instance 2 starts after the failure");
	report(w, ids[2], 1, REPORT_RUNNING, 0, 0);
	is_int(engine_ctl(w->engine, &w->me, id, "cancel", NULL), 0, "cancel while the others finish");
	work(w, "h1", ids + 3, att + 3, 5, &nc);
	is_int(nc, 2, "both running ones get a cancel");
	report(w, ids[0], 1, REPORT_EXITED, -1, 15);
	report(w, ids[2], 1, REPORT_EXITED, -1, 15);
	is_str(wait_job(w, id, NULL, 2000), "cancelled", "the job is cancelled");
	text = job_text(w, id, 0);
	has(text, "stage s: failed (0 running, 0 done, 0 queued, 1 failed, 3 cancelled of 4)",
	    "the queued one never started");
	free(text);

	id = fail_one(w, "", ids, "restart");
	wait_job(w, id, NULL, 200);
	world_stop(w);
	world_start(w);
	host_up(w, "h1", 2, 1);
	confirm(w, ids[0], 1);
	n = work(w, "h1", ids + 2, att + 2, 6, &nc);
	ok(n >= 1 && nc == 0, "after a restart the failing stage goes on");
	for (size_t i = 2; i < 2 + n; i++)
		run_to(w, ids[i], att[i], 0);
	report(w, ids[0], 1, REPORT_EXITED, 0, 0);
	run_stage(w, id, "s", -1);
	is_str(wait_job(w, id, NULL, 2000), "failed", "and fails at the end");
	text = job_text(w, id, 0);
	has(text, "reason: stage s failed: instance 1 failed (exit code 3)", "for index 1");
	has(text, "stage s: failed (0 running, 3 done, 0 queued, 1 failed of 4)", "the others succeeded");
	free(text);
	text = events_text(w, id);
	ok(text && strstr(text, "will fail") && !strstr(strstr(text, "will fail") + 1, "will fail"),
	   "'will fail' once");
	free(text);
}

/* ---- status that tells the truth ---- */

static void test_truth(struct world *w)
{
	struct placement_host *hosts = NULL;
	struct stage_progress soon, later;
	int64_t ids[8], id, now;
	int att[8];
	size_t n, nc, nh;
	struct job *job;
	char *text = NULL, *e1, *e2;

	/* Running from its first assignment, before the runner tells of a start. */
	id = submit(w, "[stage s]\nrun = x\n", NULL);
	n = work(w, "h1", ids, att, 8, &nc);
	is_int(n, 1, "assigned");
	text = job_text(w, id, 0);
	has(text, "state: running\n", "the job reads running once an instance is assigned");
	free(text);

	/* An ended stage's rate is over its own start..end. */
	report(w, ids[0], 1, REPORT_RUNNING, 0, 0);
	engine_progress(w->engine, ids[0], 1, 50, 100, NULL);
	usleep(50 * 1000);
	report(w, ids[0], 1, REPORT_EXITED, 0, 0);
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "it succeeds");
	engine_test_hold(w->engine);
	job = model_job(engine_test_model(w->engine), id);
	stage_progress_get(&job->stages[0], job->stages[0].ended_ms + 10000, &soon);
	stage_progress_get(&job->stages[0], job->stages[0].ended_ms + 1000000, &later);
	e1 = views_stage_status(&job->stages[0], job->stages[0].ended_ms + 10000);
	e2 = views_stage_status(&job->stages[0], job->stages[0].ended_ms + 1000000);
	ok(soon.rate_per_s > 0 && soon.rate_per_s == later.rate_per_s &&
	   soon.rate_per_s == 100.0 / ((double)(job->stages[0].ended_ms - job->stages[0].started_ms) / 1000.0),
	   "a finished stage's rate stays its own (%.3g/s, then %.3g/s)", soon.rate_per_s, later.rate_per_s);
	engine_test_release(w->engine);
	ok(e1 && e2 && strstr(e1, "rate: ") && strcmp(strstr(e1, "rate: "), strstr(e2, "rate: ")) == 0,
	   "its status shows the same rate later");
	free(e1);
	free(e2);

	/* A host over its live CPU limit with free cores: nobody knows when it
	 * frees, so it is held for no one. */
	host_up(w, "h1", 2, 97);
	id = submit(w, "[stage s]\nwalltime = 1h\nrun = x\n", NULL);
	wait_job(w, id, NULL, 300);
	text = job_text(w, id, 1);
	has(text, "h1: CPU used outside parsa 97% >= limit 90%", "why: the live limit");
	lacks(text, "next in line", "no reservation from now");
	free(text);
	/* A reservation whose time has passed is not shown; one ahead is. */
	engine_test_hold(w->engine);
	job = model_job(engine_test_model(w->engine), id);
	nh = engine_placement_hosts(w->engine, &hosts);
	now = time_now_ms();
	hosts[0].held_job = id;
	hosts[0].held_stage = 0;
	hosts[0].held_ms = now - 60000;
	e1 = views_job_why(engine_test_model(w->engine), job, hosts, nh, now);
	hosts[0].held_ms = now + 3600000;
	e2 = views_job_why(engine_test_model(w->engine), job, hosts, nh, now);
	engine_test_release(w->engine);
	free(hosts);
	lacks(e1, "next in line", "a reservation from a time gone by is not shown");
	has(e2, "next in line: h1 is held for it from", "one ahead is");
	free(e1);
	free(e2);
	host_up(w, "h1", 2, 1);
	run_stage(w, id, NULL, -1);
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "it runs once the host is free");

	/* A notification that fails is in the job's events. */
	id = submit(w, "[job]\nnotify = mail:alice@example.org\n[stage s]\nrun = x\n", NULL);
	run_stage(w, id, NULL, -1);
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "a job with notify succeeds");
	text = NULL;
	for (int i = 0; i < 100; i++) {
		free(text);
		text = events_text(w, id);
		if (strstr(text, "notification"))
			break;
		usleep(50 * 1000);
	}
	has(text, "notification to alice@example.org failed: /nonexistent/sendmail is not there",
	    "its failed notification is in its events");
	free(text);
}

/* spec is taken from who as file (what), its status holds shown, it runs. */
static void accepted(struct world *w, const struct caller *who, const char *file, const char *spec,
		     const char *what, const char *shown)
{
	char *err = NULL, *text;
	int64_t id = 0;

	if (!ok(engine_submit(w->engine, who, file, NULL, spec, strlen(spec), &id, NULL, &err) == 0, "%s", what))
		diag("%s", err ? err : "?");
	free(err);
	text = job_text(w, id, 0);
	has(text, shown, "its status shows it as it should");
	free(text);
	wait_job(w, id, "a", 10000);
}

/* Whether the pass has let job id rest (job->quiet), waiting up to ms. */
static bool quiet_within(struct world *w, int64_t id, int ms)
{
	bool quiet = false;

	for (int waited = 0; !quiet && waited <= ms; waited += 10) {
		struct job *job;

		engine_test_hold(w->engine);
		job = model_job(engine_test_model(w->engine), id);
		quiet = job && job->quiet;
		engine_test_release(w->engine);
		if (!quiet)
			usleep(10 * 1000);
	}
	return quiet;
}

/* Issue 16: a queued job that nothing changes rests (the pass skips its
 * roll-up), and every change to it wakes it up again. */
static void test_quiet(struct world *w)
{
	const char *later = "[job]\nstart = +1h\n[stage a]\nrun = true\n[stage b]\nafter = a\nrun = true\n";
	const char *soon = "[job]\nstart = +2s\n[stage a]\nrun = true\n";
	int64_t id, dep, ids[4];
	int att[4];
	size_t nc, n = 0;
	char *text, spec[96];

	/* What earlier tests left queued runs to its end first (on a host
	 * that is up: its last heartbeat may have timed out meanwhile). */
	for (int round = 0; round < 20; round++) {
		host_up(w, "h1", 2, 1);
		n = work(w, "h1", ids, att, 4, &nc);
		for (size_t i = 0; i < n; i++)
			report(w, ids[i], att[i], REPORT_EXITED, 0, 0);
		if (n == 0)
			break;
	}
	id = submit(w, later, NULL);
	ok(quiet_within(w, id, 2000), "a job waiting for its start time rests after a pass");
	text = job_text(w, id, 0);
	has(text, "stage a: queued", "its first roll-up was made all the same");
	free(text);
	is_int(engine_ctl(w->engine, &w->me, id, "hold", NULL), 0, "hold");
	text = job_text(w, id, 0);
	has(text, "held: yes", "held");
	free(text);
	ok(quiet_within(w, id, 2000), "a held job rests too");
	is_int(engine_ctl(w->engine, &w->me, id, "release", NULL), 0, "release");
	is_int(engine_ctl(w->engine, &w->me, id, "priority 3", NULL), 0, "priority 3");
	ok(quiet_within(w, id, 2000), "and again after the changes");
	snprintf(spec, sizeof spec, "[job]\nafter = %lld\n[stage s]\nrun = x\n", (long long)id);
	dep = submit(w, spec, NULL);
	ok(dep > 0, "a job that waits for the resting one");
	usleep(300 * 1000);
	ok(!quiet_within(w, dep, 0), "a job waiting for another job is rolled up every pass");
	is_int(engine_ctl(w->engine, &w->me, id, "cancel", NULL), 0, "cancel of the resting job");
	is_str(wait_job(w, id, NULL, 2000), "cancelled", "the next pass cancels it");
	is_str(wait_job(w, id, "b", 100), "cancelled", "with its waiting stage");
	is_str(wait_job(w, dep, NULL, 2000), "failed", "and the job that waited for it fails");

	host_up(w, "h1", 2, 1);
	id = submit(w, soon, NULL);
	/* Two seconds: room for a slow (sanitized, loaded) machine to look
	 * before the start. */
	ok(quiet_within(w, id, 500), "a job starting in two seconds rests meanwhile");
	text = job_text(w, id, 0);
	has(text, "stage a: queued (0 running", "nothing is placed before its start");
	free(text);
	/* One long poll (2 s) may end just before the start time. */
	n = 0;
	for (int tries = 0; tries < 3 && n == 0; tries++) {
		host_up(w, "h1", 2, 1);
		n = work(w, "h1", ids, att, 4, &nc);
	}
	if (!ok(n == 1, "its instance is placed once the time has come")) {
		text = job_text(w, id, 1);
		diag("%s", text);
		free(text);
	}
	is_int(report(w, ids[0], att[0], REPORT_RUNNING, 0, 0), 0, "it runs");
	is_int(report(w, ids[0], att[0], REPORT_EXITED, 0, 0), 0, "it ends");
	is_str(wait_job(w, id, NULL, 2000), "succeeded", "and its end is rolled up");
}

/* Issue 15: names that could forge view lines, teams, limits at submission. */
static void test_admission(struct world *w)
{
	const char *ok_spec = "[stage a]\nrun = true\n";
	const char *team_spec = "[job]\nteam = not-my-team\n[stage a]\nrun = true\n";
	const char *big_spec = "[stage a]\ninstances = 100001\nrun = true\n";
	struct caller other = { .uid = 4242, .gid = getgid() };
	char *err = NULL;
	int64_t id = 0;

	errno = 0;
	is_int(engine_submit(w->engine, &w->me, "x\nstate: failed", NULL, ok_spec, strlen(ok_spec), &id, NULL, &err),
	       -1, "a file name with a newline is refused at the API's edge");
	is_int(errno, EINVAL, "EINVAL");
	has(err, "x\\nstate: failed: the file name holds a control character", "the name escaped in the reason");
	free(err);
	err = NULL;

	accepted(w, &w->me, "back\\slash.conf", ok_spec, "a backslash is a good file name",
		 "\nspec: back\\\\slash.conf\n");

	errno = 0;
	is_int(engine_submit(w->engine, &other, "t.conf", NULL, team_spec, strlen(team_spec), &id, NULL, &err), -1, "a team that is not the caller's is refused");
	is_int(errno, EACCES, "EACCES");
	has(err, "t.conf:2: team = not-my-team: 4242 may use the teams ", "with the spec's line and the user");
	free(err);
	err = NULL;
	accepted(w, &(struct caller){ .uid = 0, .gid = getgid() }, "t.conf", team_spec,
		 "root may name any team", "\nteam: not-my-team\n");

	errno = 0;
	is_int(engine_submit(w->engine, &other, "big.conf", NULL, big_spec, strlen(big_spec), &id, NULL, &err), -1, "more instances than the default instances_per_job");
	is_int(errno, EDQUOT, "EDQUOT");
	has(err, "more than instances_per_job = 100000 (the built-in default", "names the limit and where");
	free(err);
}

/* Collects the assignments of work answers for up to tries times 2 s (an
 * answer may come at once, empty, after any pass) until want came. The
 * heartbeats list running_id's attempt when it is > 0: an instance reported
 * running that they leave out is lost after lost_after_ms (300 ms here). */
static size_t work_until(struct world *w, int64_t *ids, int *att, size_t want, int tries,
			 int64_t running_id, int running_att)
{
	int64_t until = time_now_ms() + tries * 2000LL;
	size_t n = 0, nc;

	while (n < want && time_now_ms() < until) {
		host_up(w, "h1", 8, 1);
		if (running_id > 0)
			confirm(w, running_id, running_att);
		n += work(w, "h1", ids + n, att + n, want - n, &nc);
	}
	return n;
}

/* Does the job's why say it waits for a burst's end? */
static bool burst_waits(struct world *w, int64_t id)
{
	char *why = job_text(w, id, 1);
	bool waits = why && strstr(why, "\nburst: ");

	free(why);
	return waits;
}

/* A burst of submissions is placed at its end; a lone submission at once.
 * The burst's times are widened (a second between submissions begins one,
 * 1.5 s without one ends it) so that a slow sanitized run is still inside. */
static void test_burst(struct world *w)
{
	const char *spec = "[stage a]\nrun = true\n";
	int64_t id[3], ids[8];
	int att[8];
	char *text;
	size_t n;

	world_stop(w);
	w->burst = (struct engine_config){ .burst_gap_ms = 1000, .burst_quiet_ms = 1500,
					   .burst_max_ms = 4000 };
	world_start(w);
	n = work_until(w, ids, att, 8, 1, 0, 0);
	for (size_t i = 0; i < n; i++)
		report(w, ids[i], att[i], REPORT_EXITED, 0, 0);
	is_int((int)engine_bursts(w->engine), 0, "no burst yet");
	for (int i = 0; i < 3; i++)
		id[i] = submit(w, spec, NULL);
	ok(!burst_waits(w, id[0]), "the first of three quick submissions is placed at once");
	ok(burst_waits(w, id[1]) && burst_waits(w, id[2]), "the next two wait for the burst's end");
	text = job_text(w, id[2], 1);
	has(text, "placed when the burst ends (1.5 s without a new job, at most 4 s)",
	    "why gives the burst's configured times");
	free(text);
	is_int((int)engine_bursts(w->engine), 1, "one burst");
	n = work_until(w, ids, att, 1, 1, 0, 0);
	ok(n == 1 && ids[0] > 0, "the first is assigned");
	ok(burst_waits(w, id[2]), "while the others still wait");
	/* Started: the next answers do not send it again. */
	report(w, ids[0], att[0], REPORT_RUNNING, 0, 0);
	n += work_until(w, ids + 1, att + 1, 2, 4, ids[0], att[0]);
	is_int((int)n, 3, "all three assigned once the burst is over");
	ok(!burst_waits(w, id[1]) && !burst_waits(w, id[2]), "and none waits any more");
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			report(w, ids[i], att[i], REPORT_RUNNING, 0, 0);
		report(w, ids[i], att[i], REPORT_EXITED, 0, 0);
	}
	for (int i = 0; i < 3; i++)
		is_str(wait_job(w, id[i], NULL, 2000), "succeeded", "job %d of the burst succeeded", i);

	/* defer_bursts = no */
	world_stop(w);
	w->burst.start_bursts_at_once = true;
	world_start(w);
	for (int i = 0; i < 3; i++)
		id[i] = submit(w, spec, NULL);
	ok(!burst_waits(w, id[1]) && !burst_waits(w, id[2]), "defer_bursts = no: nothing waits");
	is_int((int)engine_bursts(w->engine), 0, "and there is no burst");
	n = work_until(w, ids, att, 3, 3, 0, 0);
	is_int((int)n, 3, "all three assigned");
	for (size_t i = 0; i < n; i++)
		report(w, ids[i], att[i], REPORT_EXITED, 0, 0);
	world_stop(w);
	w->burst = (struct engine_config){ 0 };
	world_start(w);
}

/* Up to want distinct assignments (an unconfirmed one comes again), each
 * reported running at once; within tries times 2 s. */
static size_t start_distinct(struct world *w, int64_t *ids, int *att, size_t want, int tries)
{
	int64_t until = time_now_ms() + tries * 2000LL;
	size_t n = 0, got, nc;
	int64_t one[4];
	int one_att[4];

	while (n < want && time_now_ms() < until) {
		host_up(w, "h1", 8, 1);
		got = work(w, "h1", one, one_att, 4, &nc);
		for (size_t i = 0; i < got && n < want; i++) {
			bool seen = false;

			for (size_t k = 0; k < n; k++)
				seen |= ids[k] == one[i];
			if (seen)
				continue;
			report(w, one[i], one_att[i], REPORT_RUNNING, 0, 0);
			ids[n] = one[i];
			att[n++] = one_att[i];
		}
	}
	return n;
}

static bool is_dir(const char *vol, int64_t id, const char *stage)
{
	char *path = xasprintf("%s/jobs/%lld/out/%s", vol, (long long)id, stage);
	struct stat st;
	bool yes = stat(path, &st) == 0 && S_ISDIR(st.st_mode);

	free(path);
	return yes;
}

/* Folders pending: a job taken while the volume fails (a fault backend whose
 * outage a file switches on and off) waits for its folders, why says which
 * and why, nothing of it starts, also after a restart in the outage; once
 * the volume is back the storage thread makes them, the events say so and
 * the job runs. A retry makes a removed out/<stage> again before it runs. */
static void test_folders_wait(struct world *w)
{
	const char *spec = "[stage t]\nrun = true\n";
	char *down = xasprintf("%s/down", w->dir), *vol = w->vol, *err = NULL, *text, *want;
	int64_t id, id2, ids[4], *left;
	int att[4], fd;
	size_t n, nc, nleft;

	/* What earlier tests left unfinished would start with these. */
	engine_test_hold(w->engine);
	nleft = model_nactive(engine_test_model(w->engine));
	left = xcalloc(nleft ? nleft : 1, sizeof *left);
	for (size_t j = 0; j < nleft; j++)
		left[j] = model_active_at(engine_test_model(w->engine), j)->id;
	engine_test_release(w->engine);
	for (size_t j = 0; j < nleft; j++)
		engine_ctl(w->engine, &w->me, left[j], "cancel", NULL);
	free(left);
	world_stop(w);
	w->vol = xasprintf("fault:eio=all,while=%s:%s", down, vol);
	fd = open(down, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0)
		close(fd);
	world_start(w);
	host_up(w, "h1", 8, 1);
	id = submit(w, spec, &err);
	ok(id > 0, "a job is taken while the volume fails (%s)", err ? err : "taken");
	free(err);
	err = NULL;
	text = job_text(w, id, 1);
	want = xasprintf("waiting for the storage volume: jobs/%lld/out/t not made yet (last error: "
			 "Input/output error)", (long long)id);
	has(text, want, "why says which folder waits, and why");
	free(text);
	free(want);
	text = job_text(w, id, 0);
	has(text, "folders: waiting for the storage volume: jobs/", "status says it too");
	free(text);
	n = work(w, "h1", ids, att, 4, &nc);
	is_int((int)n, 0, "nothing of it starts while its folders are missing");

	/* A restart in the outage: the start finds them missing again. */
	world_stop(w);
	world_start(w);
	host_up(w, "h1", 8, 1);
	id2 = submit(w, spec, NULL);
	ok(id2 > id, "another is taken after the restart");
	text = job_text(w, id, 1);
	has(text, "waiting for the storage volume: jobs/", "after the restart the first still waits");
	free(text);
	n = work(w, "h1", ids, att, 4, &nc);
	is_int((int)n, 0, "nothing starts after the restart either");
	ok(!is_dir(vol, id, "t") && !is_dir(vol, id2, "t"), "no folder was made");

	unlink(down);
	n = start_distinct(w, ids, att, 2, 10);
	is_int((int)n, 2, "the volume back: both jobs start");
	if (!ok(is_dir(vol, id, "t") && is_dir(vol, id2, "t"), "their out/t were made first"))
		diag("started %lld %lld (jobs %lld %lld); %d %d", (long long)ids[0], (long long)ids[1],
		     (long long)id, (long long)id2, is_dir(vol, id, "t"), is_dir(vol, id2, "t"));
	text = events_text(w, id);
	has(text, "waiting for the storage volume: jobs/", "the events say it waited");
	has(text, "the storage volume is back: its folders are made (out/t)", "and when they were made");
	free(text);
	text = job_text(w, id, 1);
	ok(text && !strstr(text, "waiting for the storage volume"), "why no longer says it waits");
	free(text);
	for (size_t i = 0; i < n; i++)
		report(w, ids[i], att[i], REPORT_EXITED, 0, 0);
	is_str(wait_job(w, id, NULL, 5000), "succeeded", "the first succeeds");
	is_str(wait_job(w, id2, NULL, 5000), "succeeded", "the second too");

	/* retry after rm -rf out/t of a failed job. */
	id = submit(w, "[stage t]\nrun = false\n", NULL);
	n = start_distinct(w, ids, att, 1, 5);
	is_int((int)n, 1, "a job that will fail starts");
	if (n == 1)
		report(w, ids[0], att[0], REPORT_EXITED, 1, 0);
	is_str(wait_job(w, id, NULL, 5000), "failed", "and fails");
	{
		char *cmd = xasprintf("rm -rf '%s/jobs/%lld/out/t'", vol, (long long)id);

		ok(system(cmd) == 0 && !is_dir(vol, id, "t"), "its out/t is removed");
		free(cmd);
	}
	is_int(engine_ctl(w->engine, &w->me, id, "retry", NULL), 0, "retry");
	n = start_distinct(w, ids, att, 1, 5);
	is_int((int)n, 1, "it runs again");
	ok(is_dir(vol, id, "t"), "with its out/t made again first");
	text = events_text(w, id);
	has(text, "missing folders made again: out/t", "the events say so");
	free(text);
	if (n == 1)
		report(w, ids[0], att[0], REPORT_EXITED, 0, 0);
	is_str(wait_job(w, id, NULL, 5000), "succeeded", "after the retry it succeeds");

	/* A foreach stage whose input cannot be listed in an outage waits and
	 * is listed once the volume is back, instead of failing. */
	id = submit(w, "[stage a]\nrun = x\n[stage b]\nafter = a\nforeach = a/*\nrun = y\n", NULL);
	n = start_distinct(w, ids, att, 1, 5);
	is_int((int)n, 1, "stage a of a foreach job starts");
	{
		char *item = xasprintf("%s/jobs/%lld/out/a/x1", vol, (long long)id);

		fd = open(item, O_WRONLY | O_CREAT, 0644);
		if (fd >= 0)
			close(fd);
		free(item);
	}
	fd = open(down, O_WRONLY | O_CREAT, 0644);
	if (fd >= 0)
		close(fd);
	if (n == 1)
		report(w, ids[0], att[0], REPORT_EXITED, 0, 0);
	n = start_distinct(w, ids, att, 1, 1);
	is_int((int)n, 0, "in the outage stage b does not start");
	text = job_text(w, id, 0);
	ok(text && !strstr(text, "state: failed"), "and the job has not failed");
	free(text);
	text = events_text(w, id);
	has(text, "stage b: waiting for the storage volume to list its input", "the events say it waits");
	free(text);
	unlink(down);
	n = start_distinct(w, ids, att, 1, 10);
	is_int((int)n, 1, "the volume back: stage b is listed and its instance starts");
	if (n == 1)
		report(w, ids[0], att[0], REPORT_EXITED, 0, 0);
	is_str(wait_job(w, id, NULL, 5000), "succeeded", "the foreach job succeeds");

	world_stop(w);
	free(w->vol);
	w->vol = vol;
	world_start(w);
	host_up(w, "h1", 2, 1);
	free(down);
}

int main(void)
{
	struct world w = { .dir = "/tmp/parsa-test-engine.XXXXXX" };

	if (!mkdtemp(w.dir))
		return 1;
	w.db = xasprintf("%s/parsa.db", w.dir);
	w.vol = xasprintf("%s/storage", w.dir);
	mkdir(w.vol, 0755);
	w.me.uid = getuid();
	w.me.gid = getgid();
	world_start(&w);
	host_up(&w, "h1", 2, 1);
	test_pipeline(&w);
	test_retry_and_fail(&w);
	test_ctl(&w);
	test_hold_and_limits(&w);
	test_superseded_poll(&w);
	test_lost_and_restart(&w);
	test_true_times(&w);
	test_finish(&w);
	test_stop(&w);
	test_ignore(&w);
	test_max_running(&w);
	test_truth(&w);
	test_failure_cancel_restart(&w);
	test_admission(&w);
	test_quiet(&w);
	test_token(&w);
	test_burst(&w);
	test_folders_wait(&w);
	world_stop(&w);
	{
		char *cmd = xasprintf("rm -rf '%s'", w.dir);

		if (system(cmd) != 0)
			diag("cannot remove %s", w.dir);
		free(cmd);
	}
	free(w.db);
	free(w.vol);
	return done_testing();
}
