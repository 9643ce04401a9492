/* A volume that does not answer and attempts that fail (issue 35): a host
 * whose runner says its storage is unreachable gets nothing placed and says
 * why; an instance the runner did not start for that reason goes back to the
 * queue without counting an attempt; a failed attempt's retry waits out a
 * back-off (60 s here) that doubles and goes to another host when one has room. The
 * engine with a real store and volume, its clock moved through a clock file;
 * placement's part also alone. */
#include "api_client.h"
#include "clock.h"
#include "engine.h"
#include "engine_internal.h"
#include "engine_test.h"
#include "launch.h"
#include "placement.h"
#include "tap.h"
#include "util.h"
#include "views.h"
#include "volume.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

struct world {
	char dir[64];
	char *db, *vol, *clock_file;
	struct clock *clock;
	struct store *store;
	struct backend *storage;
	struct model *model;
	struct engine *engine;
	struct caller me;
};

static void set_clock(struct world *w, const char *text)
{
	/* Whole or not at all: an empty file would be the system's clock. */
	char *tmp = xasprintf("%s.tmp", w->clock_file);
	FILE *f = fopen(tmp, "w");

	if (f) {
		fprintf(f, "%s\n", text);
		fclose(f);
		rename(tmp, w->clock_file);
	}
	free(tmp);
}

static int world_start(struct world *w)
{
	struct engine_config cfg = { .host_timeout_ms = 10000, .lost_after_ms = 300, .timer_ms = 50,
				     .sendmail = "/nonexistent/sendmail", .retry_backoff_ms = 60000 };
	char *err = NULL;

	if (!mkdtemp(w->dir))
		return -1;
	w->db = xasprintf("%s/parsa.db", w->dir);
	w->vol = xasprintf("%s/storage", w->dir);
	w->clock_file = xasprintf("%s/clock", w->dir);
	mkdir(w->vol, 0755);
	set_clock(w, "+0s");
	w->clock = clock_create(w->clock_file);
	cfg.clock = w->clock;
	w->me.uid = getuid();
	w->me.gid = getgid();
	w->store = store_open(w->db, &err);
	w->storage = w->store ? backend_create(w->vol, &err) : NULL;
	w->model = model_create();
	if (!w->storage || store_load(w->store, w->model, 0, &err) < 0)
		goto fail;
	w->engine = engine_create(&cfg, w->store, w->storage, w->model, &err);
	if (!w->engine || engine_start(w->engine, &err) < 0)
		goto fail;
	return 0;
fail:
	diag("setup: %s", err ? err : "?");
	free(err);
	return -1;
}

static void world_stop(struct world *w)
{
	char *cmd = xasprintf("rm -rf '%s'", w->dir);

	engine_destroy(w->engine);
	model_destroy(w->model);
	backend_destroy(w->storage);
	store_close(w->store);
	clock_destroy(w->clock);
	if (system(cmd) != 0)
		diag("cannot remove %s", w->dir);
	free(cmd);
	free(w->db);
	free(w->vol);
	free(w->clock_file);
}

/* A heartbeat: the volume reachable (since 0) or not since then. */
static void beat(struct world *w, const char *name, int64_t since, const char *reason)
{
	struct heartbeat hb = { .cpu_pct = 1, .mem_pct = 1, .scratch_free = -1,
				.parsa_cpu_pct = 0, .outside_cpu_pct = 1, .parsa_mem_pct = 0,
				.outside_mem_pct = 1, .outside_cores = 0, .outside_mem = 0,
				.storage_down_since = since, .storage_reason = reason };

	engine_heartbeat(w->engine, name, &hb, NULL);
}

static void host_up(struct world *w, const char *name, int cpus)
{
	struct host_info info = { .name = name, .cpus = cpus, .mem = 16ULL << 30,
				  .scratch_total = 100ULL << 30, .scratch_free = 100ULL << 30,
				  .cpu_limit = 90, .mem_limit = 90, .mount = "/parsa" };

	engine_register_host(w->engine, &info, NULL);
	beat(w, name, 0, NULL);
}

static int64_t submit(struct world *w, const char *text)
{
	char *err = NULL;
	int64_t id = 0;

	if (engine_submit(w->engine, &w->me, "test.conf", NULL, text, strlen(text), &id, NULL, &err) < 0) {
		diag("submit: %s", err ? err : strerror(errno));
		id = -1;
	}
	free(err);
	return id;
}

/* The first assignment of host's next work answer (its id and attempt), or
 * 0 when none came within ms. */
static int64_t work(struct world *w, const char *host, int64_t ms, int *attempt)
{
	json_t *answer = engine_work(w->engine, host, ms, NULL);
	json_t *a = json_array_get(json_object_get(answer, "start"), 0);
	int64_t id = a ? json_integer_value(json_object_get(a, "id")) : 0;

	if (attempt)
		*attempt = a ? (int)json_integer_value(json_object_get(a, "attempt")) : 0;
	json_decref(answer);
	return id;
}

static int report(struct world *w, int64_t id, int attempt, enum report_kind kind, int code,
		  const char *reason)
{
	struct report r = { .attempt = attempt, .kind = kind, .pid = kind == REPORT_FAILED ? 0 : 4242,
			    .exit_code = code, .reason = reason, .usage = INSTANCE_USAGE_UNKNOWN };

	return engine_report(w->engine, id, &r, NULL);
}

static const char *wait_job(struct world *w, int64_t id, int64_t ms)
{
	const char *state = "?";
	int done = 0;

	engine_wait(w->engine, id, NULL, ms, &done, &state, NULL);
	return done ? state : "not done";
}

enum view { VIEW_WHY, VIEW_STATUS, VIEW_EVENTS, VIEW_CLUSTER };

static char *view(struct world *w, int64_t id, enum view which)
{
	struct placement_host *hosts = NULL;
	int64_t jobs[5] = { 0 };
	int up[8] = { 0 };
	char *text;
	size_t n;

	if (which != VIEW_CLUSTER)
		return engine_job_text(w->engine, id, which == VIEW_WHY ? JOB_VIEW_WHY
						      : which == VIEW_STATUS ? JOB_VIEW_STATUS
									     : JOB_VIEW_EVENTS, NULL);
	engine_test_hold(w->engine);
	n = engine_placement_hosts(w->engine, &hosts);
	for (size_t i = 0; i < n && i < 8; i++)
		up[i] = hosts[i].up;
	text = views_cluster_status(engine_test_model(w->engine), jobs, up, engine_now_ms(w->engine));
	engine_test_release(w->engine);
	free(hosts);
	return text;
}

/* The first instance of job's first stage, read under the lock. */
static void instance_of(struct world *w, int64_t id, int *attempt, int *failures, int64_t *not_before,
			char *host, size_t len)
{
	const struct instance *inst;

	engine_test_hold(w->engine);
	inst = model_job(engine_test_model(w->engine), id)->stages[0].inst[0];
	*attempt = inst->attempt;
	*failures = inst->failures;
	*not_before = inst->state == INST_QUEUED ? inst->not_before_ms : 0;
	snprintf(host, len, "%s", inst->host_name);
	engine_test_release(w->engine);
}

static void has(const char *text, const char *needle, const char *what)
{
	if (!ok(text && strstr(text, needle), "%s", what))
		diag("no '%s' in:\n%s", needle, text ? text : "(null)");
}

static void has_free(char *text, const char *needle, const char *what)
{
	has(text, needle, what);
	free(text);
}

static void test_placement(void)
{
	struct placement_host h[2] = {
		{ .name = "a", .up = 1, .cpus = 4, .mem = 1 << 30, .cpu_limit = 100, .mem_limit = 100 },
		{ .name = "b", .up = 1, .cpus = 2, .mem = 1 << 30, .cpu_limit = 100, .mem_limit = 100 },
	};
	struct placement_req r = { .group = 1, .cpus = 1, .host = -2 };
	char line[512];

	is_int(placement_run(h, 2, &r, 1), 1, "placement: placed");
	is_int(r.host, 0, "placement: on the host with the most free cpus");
	h[0].reserved_cpus = 0;
	r.avoid = "a";
	placement_run(h, 2, &r, 1);
	is_int(r.host, 1, "placement: not where it just failed, when another host has room");
	h[1].reserved_cpus = 2;
	r.host = -2;
	placement_run(h, 2, &r, 1);
	is_int(r.host, 0, "placement: there after all when the other is full");
	h[0].reserved_cpus = h[1].reserved_cpus = 0;
	r.avoid = NULL;
	h[0].storage_down_since = 1796700001;
	h[0].storage_reason = "cannot mount nfs://127.0.0.1/export: Connection refused";
	is_int(placement_check(&h[0], &r), PLACE_STORAGE, "placement: a host without its volume does not fit");
	placement_explain(&h[0], &r, line, sizeof line);
	has(line, "a: storage unreachable since ", "placement: why says so");
	has(line, "(cannot mount nfs://127.0.0.1/export: Connection refused)", "placement: and why");
	ok(!placement_host_open(&h[0]) && placement_host_open(&h[1]), "placement: it is not open");
	placement_run(h, 2, &r, 1);
	is_int(r.host, 1, "placement: the other host gets it");
	h[1].storage_down_since = 1796700001;
	is_int(placement_run(h, 2, &r, 1), 0, "placement: no host with its volume, nothing placed");
}

static void test_volume_file(void)
{
	struct volume_state st;

	ok(volume_state_parse("state: reachable\nvolume: nfs://127.0.0.1/export\n", 5, &st) == 0 &&
	   st.down_since == 0 && !*st.reason, "storage file: reachable");
	ok(volume_state_parse("state: unreachable\nsince: 1796700001 (2026-12-06 04:40:01 UTC)\n"
			      "volume: nfs://127.0.0.1/export\nreason: cannot mount nfs://127.0.0.1/export: "
			      "Connection refused\n", 5, &st) == 0 && st.down_since == 1796700001 &&
	   strcmp(st.reason, "cannot mount nfs://127.0.0.1/export: Connection refused") == 0,
	   "storage file: unreachable, since and reason");
	ok(volume_state_parse("state: unreachable\n", 77, &st) == 0 && st.down_since == 77,
	   "storage file: unreachable without a since: from when it was read");
	ok(volume_state_parse("hello\n", 5, &st) < 0 && errno == EINVAL && st.down_since == 0,
	   "storage file: a text without a state is not ours (reachable)");
	ok(volume_state_parse("", 5, &st) < 0 && st.down_since == 0, "storage file: empty");
	/* The errors that make a start that failed at its log or folder "storage
	 * unreachable" (runner/launch.c), and one that does not. */
	ok(launch_volume_errno(EIO) && launch_volume_errno(ETIMEDOUT) && launch_volume_errno(ENOTCONN) &&
	   launch_volume_errno(ESTALE) && launch_volume_errno(EHOSTDOWN) &&
	   launch_volume_errno(ECONNREFUSED) && !launch_volume_errno(ENOENT) && !launch_volume_errno(EACCES),
	   "launch: the volume's errors");
}

static void write_file(const char *path, const char *text)
{
	char *tmp = xasprintf("%s.tmp", path);
	FILE *f = fopen(tmp, "w");

	if (f) {
		fputs(text, f);
		fclose(f);
		rename(tmp, path);
	}
	free(tmp);
}

/* Poll the watch until its state's since is want (or 5 s pass). */
static bool watch_says(struct volume_watch *v, int64_t want, struct volume_state *st)
{
	for (int i = 0; i < 100; i++) {
		volume_watch_get(v, st);
		if (st->down_since == want)
			return true;
		usleep(50 * 1000);
	}
	return false;
}

/* The runner's reader of MOUNT/storage, on a plain folder standing in for the mount. */
static void test_volume_watch(void)
{
	char dir[] = "/tmp/parsa-test-volume.XXXXXX";
	struct volume_watch *v;
	struct volume_state st;
	char *file;

	volume_watch_get(NULL, &st);
	ok(st.down_since == 0, "watch: none is reachable");
	if (!mkdtemp(dir)) {
		ok(0, "watch: a folder");
		return;
	}
	file = xasprintf("%s/storage", dir);
	v = volume_watch_create(dir, NULL);
	ok(v && watch_says(v, 0, &st), "watch: no file (no parsafs there, or an old one): reachable");
	write_file(file, "state: unreachable\nsince: 1796700001 (2026-12-06 04:40:01 UTC)\n"
		   "volume: nfs://127.0.0.1/export\nreason: cannot mount: Connection refused\n");
	ok(watch_says(v, 1796700001, &st) && strcmp(st.reason, "cannot mount: Connection refused") == 0,
	   "watch: the file says unreachable: so does the watch, with since and reason");
	write_file(file, "state: reachable\nvolume: nfs://127.0.0.1/export\n");
	ok(watch_says(v, 0, &st) && !*st.reason, "watch: and reachable again");
	write_file(file, "garbage\n");
	usleep(2 * VOLUME_READ_INTERVAL_MS * 1000);
	ok(watch_says(v, 0, &st), "watch: a file it cannot read as a state: reachable");
	volume_watch_destroy(v);
	unlink(file);
	rmdir(dir);
	free(file);
}

/* A host whose volume is away takes nothing; why and the host say so; an
 * instance its runner did not start for it is requeued, no attempt counted,
 * and runs once the volume is back. */
static void test_storage(struct world *w)
{
	int64_t id, inst, nb;
	int att, failures;
	char host[64], *text;

	beat(w, "h1", 1796700001, "cannot mount nfs://127.0.0.1/export: Connection refused");
	id = submit(w, "[stage s]\nretries = 0\nrun = x\n");
	ok(id > 0, "storage: submitted");
	is_int(work(w, "h1", 400, NULL), 0, "storage: nothing is placed on a host without its volume");
	has_free(view(w, id, VIEW_WHY), "h1: storage unreachable since ", "storage: why says so");
	text = engine_host_status(w->engine, "h1");
	has(text, "storage: unreachable since ", "storage: the host's status says so");
	has_free(text, "(cannot mount nfs://127.0.0.1/export: Connection refused)", "storage: and why");
	has_free(view(w, id, VIEW_CLUSTER), " s ago, storage unreachable since ",
		 "storage: the cluster's host line says so");
	beat(w, "h1", 0, NULL);
	inst = work(w, "h1", 2000, &att);
	ok(inst > 0 && att == 1, "storage: back, it is placed");
	text = engine_host_status(w->engine, "h1");
	has_free(text, "storage: reachable", "storage: the host's status says it is back");

	/* Its runner found the volume gone when it came to start it. */
	ok(report(w, inst, 1, REPORT_FAILED, -1, API_REASON_STORAGE_UNREACHABLE
		  ": cannot open the log /parsa/jobs/1/instances/0/log as uid 0: Input/output error") == 0,
	   "storage: reported not started");
	instance_of(w, id, &att, &failures, &nb, host, sizeof host);
	ok(failures == 0 && att == 1 && nb > 0, "storage: requeued, no failure counted");
	has_free(view(w, id, VIEW_EVENTS), "stage s instance 0 could not start on h1: storage unreachable; "
		 "requeued", "storage: the event");
	text = view(w, id, VIEW_WHY);
	has(text, "h1: storage unreachable since ",
	    "storage: the report alone keeps the host from new work until its next heartbeat");
	has_free(text, "instance 0: waits until ", "storage: why says the instance waits a little");
	has_free(view(w, id, VIEW_WHY), "(its start failed on host h1: storage unreachable)",
		 "storage: and why, without calling it a retry");
	engine_test_hold(w->engine);
	{
		const struct instance *i0 = model_job(engine_test_model(w->engine), id)->stages[0].inst[0];
		char *status = views_instance_status(i0);
		json_t *json = views_instance_json(i0);

		has(status, "back-off: waits until ", "storage: the instance's status says it waits");
		has(status, "reason: storage unreachable: cannot open the log", "storage: with the reason");
		ok(json_integer_value(json_object_get(json, "not_before_ms")) == nb,
		   "storage: status.json has not_before_ms");
		free(status);
		json_decref(json);
	}
	engine_test_release(w->engine);
	beat(w, "h1", 0, NULL);
	set_clock(w, "+70s");
	inst = work(w, "h1", 2000, &att);
	ok(inst > 0 && att == 2, "storage: on a single host it goes back there");
	report(w, inst, 2, REPORT_EXITED, 0, NULL);
	is_str(wait_job(w, id, 2000), "succeeded", "storage: and succeeds with retries = 0");
}

/* Each failed attempt's retry waits, twice as long each time, and goes to
 * the other host when that one has room. */
static void test_backoff(struct world *w)
{
	int64_t id, inst, nb, now;
	int att, failures;
	char host[64], *text;

	host_up(w, "h2", 2);
	beat(w, "h1", 0, NULL);
	set_clock(w, "+100s");
	id = submit(w, "[stage s]\nretries = 2\nrun = x\n");
	inst = work(w, "h1", 2000, &att);
	if (!inst)
		inst = work(w, "h2", 2000, &att);
	ok(inst > 0 && att == 1, "backoff: attempt 1 placed");
	instance_of(w, id, &att, &failures, &nb, host, sizeof host);
	report(w, inst, 1, REPORT_EXITED, 3, NULL);
	now = engine_now_ms(w->engine);
	instance_of(w, id, &att, &failures, &nb, host, sizeof host);
	ok(failures == 1 && nb > now + 50000 && nb <= now + 60000, "backoff: the retry waits 60 s (%lld ms)",
	   (long long)(nb - now));
	is_int(work(w, "h1", 200, NULL) + work(w, "h2", 200, NULL), 0, "backoff: nothing placed meanwhile");
	text = view(w, id, VIEW_WHY);
	has(text, "instance 0: retry 1 of 2 waits until ", "backoff: why says it waits");
	has_free(text, "(back-off after a failure on host ", "backoff: and why");
	has_free(view(w, id, VIEW_STATUS), "back-off s: 1 instance waits; instance 0: retry 1 of 2",
		 "backoff: status says it");
	has_free(view(w, id, VIEW_EVENTS), "retrying (1 of 2 retries) in 1m", "backoff: the event says how long");
	set_clock(w, "+170s");
	inst = work(w, strcmp(host, "h1") == 0 ? "h2" : "h1", 2000, &att);
	ok(inst > 0 && att == 2, "backoff: then it goes to the other host (not %s)", host);
	report(w, inst, 2, REPORT_EXITED, 3, NULL);
	now = engine_now_ms(w->engine);
	instance_of(w, id, &att, &failures, &nb, host, sizeof host);
	ok(failures == 2 && nb > now + 110000 && nb <= now + 120000, "backoff: the second retry waits 2 m "
	   "(%lld ms)", (long long)(nb - now));
	set_clock(w, "+300s");
	inst = work(w, strcmp(host, "h1") == 0 ? "h2" : "h1", 2000, &att);
	ok(inst > 0 && att == 3, "backoff: and goes back to the first");
	report(w, inst, 3, REPORT_EXITED, 3, NULL);
	is_str(wait_job(w, id, 2000), "failed", "backoff: out of retries: failed");
	instance_of(w, id, &att, &failures, &nb, host, sizeof host);
	ok(failures == 3 && att == 3, "backoff: three attempts, three failures");
}

int main(void)
{
	struct world w = { .dir = "/tmp/parsa-test-storage-retry.XXXXXX" };

	test_placement();
	test_volume_file();
	test_volume_watch();
	if (world_start(&w) < 0) {
		ok(0, "a scheduler for the test");
		return done_testing();
	}
	host_up(&w, "h1", 2);
	test_storage(&w);
	test_backoff(&w);
	world_stop(&w);
	return done_testing();
}
