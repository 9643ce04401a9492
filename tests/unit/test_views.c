/* The text views (sched/views/views.c, sched/views/views_hosts.c) of a real engine's
 * model, for a few shapes of job: a pipeline whose second stage waits for
 * the first (status and why, whole), a job no host can take, a held job, a
 * cancelled one; and a host's status and the cluster's with one instance
 * running. The jobs are driven the way the API drives them: submitted,
 * assigned through a work poll, reported running. */
#include "engine.h"
#include "engine_internal.h"
#include "engine_test.h"
#include "tap.h"
#include "util.h"
#include "views.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

struct world {
	char dir[64];
	struct store *store;
	struct backend *storage;
	struct model *model;
	struct engine *engine;
	struct caller me;
};

static int world_start(struct world *w)
{
	struct engine_config cfg = { .host_timeout_ms = 10000, .timer_ms = 100,
				     .sendmail = "/nonexistent/sendmail" };
	char *db = xasprintf("%s/parsa.db", w->dir), *vol = xasprintf("%s/storage", w->dir);
	char *err = NULL;
	int ret = -1;

	mkdir(vol, 0755);
	w->store = store_open(db, &err);
	w->storage = w->store ? backend_create(vol, &err) : NULL;
	w->model = model_create();
	if (!w->storage || store_load(w->store, w->model, 0, &err) < 0)
		goto out;
	w->engine = engine_create(&cfg, w->store, w->storage, w->model, &err);
	if (!w->engine || engine_start(w->engine, &err) < 0)
		goto out;
	ret = 0;
out:
	if (ret < 0)
		diag("setup: %s", err ? err : "?");
	free(err);
	free(db);
	free(vol);
	return ret;
}

static void world_stop(struct world *w)
{
	char *cmd = xasprintf("rm -rf '%s'", w->dir);

	engine_destroy(w->engine);
	model_destroy(w->model);
	backend_destroy(w->storage);
	store_close(w->store);
	if (system(cmd) != 0)
		diag("cannot remove %s", w->dir);
	free(cmd);
}

static int64_t submit(struct world *w, const char *file, const char *text)
{
	char *err = NULL;
	int64_t id = 0;

	if (engine_submit(w->engine, &w->me, file, NULL, text, strlen(text), &id, NULL, &err) < 0) {
		diag("submit %s: %s", file, err ? err : "?");
		id = -1;
	}
	free(err);
	return id;
}

static void host_up(struct world *w, const char *name, int cpus)
{
	struct host_info info = { .name = name, .cpus = cpus, .mem = 16ULL << 30,
				  .scratch_total = 100ULL << 30, .scratch_free = 100ULL << 30,
				  .cpu_limit = 90, .mem_limit = 90, .mount = "/parsa" };
	struct heartbeat hb = { .cpu_pct = 1, .mem_pct = 10, .scratch_free = -1,
				.parsa_cpu_pct = -1, .outside_cpu_pct = -1, .parsa_mem_pct = -1,
				.outside_mem_pct = -1, .outside_cores = -1, .outside_mem = -1 };

	engine_register_host(w->engine, &info, NULL);
	engine_heartbeat(w->engine, name, &hb, NULL);
}

/* The first instance the next work poll of host starts; 0 when none. */
static int64_t work_one(struct world *w, const char *host)
{
	json_t *answer = engine_work(w->engine, host, 2000, NULL);
	int64_t id = 0;

	if (answer)
		id = json_integer_value(json_object_get(json_array_get(json_object_get(answer, "start"),
									 0), "id"));
	json_decref(answer);
	return id;
}

/* Wait for two passes to begin after this call: the second saw all that was
 * done before it (a pass runs at least every timer_ms). */
static void settle(struct world *w)
{
	uint64_t before, now;
	double last;

	engine_pass_stats(w->engine, &last, 1, &before);
	for (int i = 0; i < 500; i++) {
		engine_pass_stats(w->engine, &last, 1, &now);
		if (now >= before + 2)
			return;
		usleep(10000);
	}
	diag("no pass in 5 s");
}

/* A job's status (why = 0) or why, as jobs/<id>/ serves them. */
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

static void lacks(const char *text, const char *needle, const char *what)
{
	if (!ok(text && !strstr(text, needle), "%s", what))
		diag("'%s' in:\n%s", needle, text ? text : "(null)");
}

/* Submitted before any host exists, so that no pass can place it first;
 * the pass made its stage queued. */
static void test_held(struct world *w, int64_t id)
{
	char *text, want[256];

	is_int(engine_ctl(w->engine, &w->me, id, "hold", NULL), 0, "hold");
	text = job_text(w, id, 0);
	has(text, "name: later\n", "status: the name from the file, without .conf");
	has(text, "state: queued\nheld: yes\n", "status: queued and held");
	has(text, "stage only: queued (0 running, 0 done, 1 queued, 0 failed of 1)\n",
	    "status: its stage is queued");
	free(text);
	text = job_text(w, id, 1);
	snprintf(want, sizeof want, "job %lld: queued (held: write 'release' to ctl to let it start)\n"
		 "stage only: 1 queued, 0 running\n"
		 "  held: nothing new starts until 'release' is written to ctl\n", (long long)id);
	is_str(text, want, "why of a held job, whole");
	free(text);
}

static void test_too_big(struct world *w, int64_t id)
{
	char *text, want[64];

	text = job_text(w, id, 1);
	snprintf(want, sizeof want, "job %lld: queued\n", (long long)id);
	ok(text && strncmp(text, want, strlen(want)) == 0, "why: the job's line first");
	has(text, "\nstage big: 1 queued, 0 running\n", "why: the stage's counts");
	has(text, "no host has 64 cpus", "why: no host is big enough");
	has(text, "  h1", "why: a line for the host");
	free(text);
	text = job_text(w, id, 0);
	has(text, "stage big: queued (0 running, 0 done, 1 queued, 0 failed of 1)\n",
	    "status: the stage's counts");
	free(text);
}

/* Its folders are made moments after submission; until then why still says
 * when it starts, the reason that lasts. */
static void test_start_while_folders_pending(struct world *w)
{
	int64_t id = submit(w, "soon.conf", "[job]\nstart = +1h\n\n[stage only]\nrun = x\n");
	struct job *job;
	char *text;
	bool was;

	settle(w);
	engine_test_hold(w->engine);
	job = model_job(engine_test_model(w->engine), id);
	was = job ? job->folders_pending : false;
	if (job)
		job->folders_pending = true;
	engine_test_release(w->engine);
	text = job_text(w, id, 1);
	has(text, "  starts at ", "why: the start time, while its folders are still being made");
	lacks(text, "folders are made", "why: not the folders, which are made in moments");
	free(text);
	engine_test_hold(w->engine);
	if (job)
		job->folders_pending = was;
	engine_test_release(w->engine);
	is_int(engine_ctl(w->engine, &w->me, id, "cancel", NULL), 0, "cancel the job that starts later");
}

static void test_pipeline(struct world *w, int64_t *inst)
{
	int64_t id = submit(w, "jobs/pipe.conf", "[stage a]\nrun = a\n\n"
			    "[stage b]\nafter = a\nforeach = a/ck-*\nrun = b\n");
	char *text, want[256];

	ok(id > 0, "pipeline submitted");
	*inst = work_one(w, "h1");
	ok(*inst > 0, "stage a is assigned");
	text = job_text(w, id, 0);
	has(text, "stage a: running (", "status: a runs once assigned");
	lacks(text, "\nstarted: -\n", "status: the job has started with its first stage, before any "
	      "instance reports");
	free(text);
	is_int(engine_report(w->engine, *inst, &(struct report){ .attempt = 1, .kind = REPORT_RUNNING,
		.pid = 4242, .usage = INSTANCE_USAGE_UNKNOWN }, NULL), 0, "a runs");
	text = job_text(w, id, 0);
	has(text, "name: pipe\n", "status: the name from the file, without folder and .conf");
	has(text, "state: running\nheld: no\n", "status: running, not held");
	has(text, "spec: jobs/pipe.conf\n", "status: the file as given");
	has(text, "stage a: running (1 running, 0 done, 0 queued, 0 failed of 1)\n",
	    "status: a's counts");
	has(text, "stage b: waiting (one instance per entry of a/ck-*)\n",
	    "status: b waits for its list");
	lacks(text, "reason:", "status: no reason while it runs");
	free(text);
	text = job_text(w, id, 1);
	snprintf(want, sizeof want, "job %lld: running\nstage a: 1 running, nothing queued\n"
		 "stage b: waiting for stage a\n", (long long)id);
	is_str(text, want, "why of a running pipeline, whole");
	free(text);
}

static void test_host_and_cluster(struct world *w, int64_t inst)
{
	char *text, want[128];
	int64_t jobs[5] = { 2, 1, 0, 0, 1 };
	int up;

	text = engine_host_status(w->engine, "h1");
	ok(text && strncmp(text, "name: h1\nstate: up\nstorage: reachable\n", 38) == 0,
	   "host: name, state and storage first");
	has(text, "capacity: 2 cpus, ", "host: its capacity");
	has(text, "reserved: 1 cpus, ", "host: what the running instance reserves");
	has(text, "free: 1 cpus, ", "host: what is left");
	has(text, "running: 1\n", "host: one instance runs");
	snprintf(want, sizeof want, "instance %lld: job ", (long long)inst);
	has(text, want, "host: the instance is listed");
	has(text, " stage a index 0 running (pid 4242)\n", "host: with its stage and pid");
	free(text);
	is_str(engine_host_status(w->engine, "nope"), NULL, "no status for an unknown host");

	engine_test_hold(w->engine);
	up = engine_host_up(w->engine, model_host_at(engine_test_model(w->engine), 0));
	text = views_cluster_status(engine_test_model(w->engine), jobs, &up, time_now_ms());
	engine_test_release(w->engine);
	ok(text && strncmp(text, "hosts: 1 (1 up, 0 draining, 0 down)\n"
			   "cpus: 2 total, 1 reserved, 1 free\n"
			   "jobs: 2 queued, 1 running, 0 succeeded, 0 failed, 1 cancelled\n"
			   "instances: ", 130) == 0, "cluster: hosts, cpus and jobs");
	has(text, "host h1: up, cpus 1/2 reserved", "cluster: a line per host");
	if (text && strncmp(text, "hosts:", 6) != 0)
		diag("%s", text);
	free(text);
}

/* Events in time order, whatever order they were recorded in (a runner's
 * start stamp arrives after the scheduler's later cancel). */
static void test_events_in_time_order(void)
{
	struct event ev[3] = { { .ms = 1700000002000, .text = "cancelled" },
			       { .ms = 1700000001000, .text = "instance 0 started" },
			       { .ms = 1700000002000, .text = "ended: cancelled" } };
	struct job job = { .events = ev, .nevents = 3 };
	char *text = views_job_events(&job);
	const char *a = text ? strstr(text, "instance 0 started") : NULL;
	const char *b = text ? strstr(text, "  cancelled") : NULL;
	const char *c = text ? strstr(text, "ended: cancelled") : NULL;

	ok(a && b && c && a < b && b < c, "events: by time, ties as recorded");
	if (!(a && b && c && a < b && b < c))
		diag("got:\n%s", text ? text : "(null)");
	free(text);
}

/* The cluster's free cores are what a new instance could get: load outside
 * parsa takes cores, a host past its limit or draining offers none. */
static void test_cluster_free(void)
{
	struct model *m = model_create();
	struct host *busy = model_add_host(m, "busy"), *over = model_add_host(m, "over");
	struct host *drain = model_add_host(m, "drain");
	int64_t jobs[5] = { 0 };
	int up[3] = { 1, 1, 1 };
	char *text;

	busy->cpus = 8, busy->reserved_cpus = 2, busy->outside_cores = 3.1, busy->cpu_limit = 90;
	busy->mem_limit = 90, busy->outside_cpu_pct = 38;
	over->cpus = 4, over->outside_cores = 3.9, over->cpu_limit = 90, over->mem_limit = 90;
	over->outside_cpu_pct = 97;
	drain->cpus = 4, drain->draining = true, drain->cpu_limit = 90, drain->mem_limit = 90;
	text = views_cluster_status(m, jobs, up, time_now_ms());
	has(text, "cpus: 16 total, 2 reserved, 3 free (11 held by load outside parsa, draining or past a "
	    "host's limit)\n", "cluster: free cores are those a new instance could get");
	free(text);
	model_destroy(m);
}

static void test_cancelled(struct world *w, int64_t id)
{
	const char *state = "?";
	char *text, want[64];
	int done = 0;

	is_int(engine_ctl(w->engine, &w->me, id, "cancel", NULL), 0, "cancel");
	engine_wait(w->engine, id, NULL, 2000, &done, &state, NULL);
	is_str(done ? state : "not done", "cancelled", "the job is cancelled");
	text = job_text(w, id, 1);
	snprintf(want, sizeof want, "job %lld has ended: cancelled", (long long)id);
	ok(text && strncmp(text, want, strlen(want)) == 0, "why of an ended job: one line");
	ok(text && !strstr(text, "stage"), "and nothing of its stages");
	free(text);
	text = job_text(w, id, 0);
	has(text, "state: cancelled\n", "status: cancelled");
	has(text, "reason: ", "status: with a reason");
	has(text, "stage only: cancelled", "status: its stage is cancelled too");
	free(text);
}

int main(void)
{
	struct world w = { .dir = "/tmp/parsa-test-views.XXXXXX" };
	int64_t held, big, inst = 0;

	if (!mkdtemp(w.dir))
		return 1;
	w.me.uid = getuid();
	w.me.gid = getgid();
	if (world_start(&w) < 0)
		return 1;
	held = submit(&w, "later.conf", "[stage only]\nrun = x\n");
	big = submit(&w, "big.spec", "[stage big]\ncpus = 64\nrun = x\n");
	ok(held > 0 && big > 0, "two jobs submitted before any host");
	settle(&w);
	test_held(&w, held);
	host_up(&w, "h1", 2);
	settle(&w);
	test_too_big(&w, big);
	test_start_while_folders_pending(&w);
	test_pipeline(&w, &inst);
	test_host_and_cluster(&w, inst);
	test_cancelled(&w, held);
	test_events_in_time_order();
	test_cluster_free();
	world_stop(&w);
	return done_testing();
}
