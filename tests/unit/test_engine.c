/* The engine with a real store and a local storage volume, driven the way the
 * API drives it: dependencies and foreach expansion, roll-up of stage and job
 * states, retries, cancel, hold, job dependencies, and restart from the store;
 * status that tells the truth (a job runs from its first assignment, an ended
 * stage's rate, no reservation from a time gone by, a failed notification in
 * the job's events); a submission retried with its token commits once. The
 * failure rules are test_engine_failure.c's, resting and bursts
 * test_engine_quiet.c's. */
#include "engine_world.h"

TAP_STATE;

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
	/* The last pass's reservation is shown until the next pass makes its
	 * own, also once its time has come: the pass's gate held the host
	 * against others (its releases past their walltime end "now"), and
	 * test_why_agrees holds why to that. */
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
	has(e1, "next in line: h1 is held for it since", "a reservation whose time has come is shown");
	has(e2, "next in line: h1 is held for it from", "and one ahead");
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

int main(void)
{
	struct world w = { 0 };

	if (world_begin(&w, "/tmp/parsa-test-engine.XXXXXX") < 0)
		return 1;
	test_pipeline(&w);
	test_retry_and_fail(&w);
	test_ctl(&w);
	test_hold_and_limits(&w);
	test_superseded_poll(&w);
	test_lost_and_restart(&w);
	test_true_times(&w);
	test_truth(&w);
	test_token(&w);
	world_stop(&w);
	world_remove(&w);
	return done_testing();
}
