/* What the engine's tests share (test_engine*.c): a world with a real store,
 * a local storage volume and an engine, and the calls that drive it the way
 * the API does (submit, work polls, reports, the views). */
#ifndef PARSA_TEST_ENGINE_WORLD_H
#define PARSA_TEST_ENGINE_WORLD_H

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

static inline void world_start(struct world *w)
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

static inline void world_stop(struct world *w)
{
	engine_destroy(w->engine);
	model_destroy(w->model);
	backend_destroy(w->storage);
	store_close(w->store);
}

static inline void host_up(struct world *w, const char *name, int cpus, double cpu_pct);

/* A new world in a fresh folder from template (mkdtemp's XXXXXX), started,
 * with host h1 of 2 cores up: what every engine test begins with. -1 when no
 * folder could be made. */
static inline int world_begin(struct world *w, const char *template)
{
	snprintf(w->dir, sizeof w->dir, "%s", template);
	if (!mkdtemp(w->dir))
		return -1;
	w->db = xasprintf("%s/parsa.db", w->dir);
	w->vol = xasprintf("%s/storage", w->dir);
	mkdir(w->vol, 0755);
	w->me.uid = getuid();
	w->me.gid = getgid();
	world_start(w);
	host_up(w, "h1", 2, 1);
	return 0;
}

/* The world's folder and paths, once it is stopped. */
static inline void world_remove(struct world *w)
{
	char *cmd = xasprintf("rm -rf '%s'", w->dir);

	if (system(cmd) != 0)
		diag("cannot remove %s", w->dir);
	free(cmd);
	free(w->db);
	free(w->vol);
}

static inline int64_t submit(struct world *w, const char *text, char **err)
{
	int64_t id = 0;

	if (engine_submit(w->engine, &w->me, "test.conf", NULL, text, strlen(text), &id, NULL, err) < 0)
		return -1;
	return id;
}

static inline void host_up(struct world *w, const char *name, int cpus, double cpu_pct)
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
static inline void host_split(struct world *w, const char *name, double cpu_pct, double outside_pct,
		       double outside_cores)
{
	struct heartbeat hb = { .cpu_pct = cpu_pct, .mem_pct = 10, .scratch_free = -1,
				.parsa_cpu_pct = cpu_pct - outside_pct, .outside_cpu_pct = outside_pct,
				.parsa_mem_pct = 5, .outside_mem_pct = 5, .outside_cores = outside_cores,
				.outside_mem = 1 << 20 };

	engine_heartbeat(w->engine, name, &hb, NULL);
}

/* A heartbeat of h1 that lists one instance as running (the runner confirms it). */
static inline void confirm(struct world *w, int64_t id, int attempt)
{
	struct heartbeat_entry entry = { .id = id, .attempt = attempt, .pid = 77 };
	struct heartbeat hb = { .cpu_pct = 1, .mem_pct = 1, .scratch_free = -1, .instances = &entry,
				.ninstances = 1 };

	engine_heartbeat(w->engine, "h1", &hb, NULL);
}

/* The ids of the assignments in the next work answer, up to max. */
static inline size_t work(struct world *w, const char *host, int64_t *ids, int *attempts, size_t max,
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

static inline int report(struct world *w, int64_t id, int attempt, enum report_kind kind, int code,
		  int sig)
{
	struct report r = { .attempt = attempt, .kind = kind, .pid = 100 + (int)id,
			    .exit_code = code, .signal = sig, .usage = INSTANCE_USAGE_UNKNOWN };

	return engine_report(w->engine, id, &r, NULL);
}

static inline const char *wait_job(struct world *w, int64_t id, const char *stage, int64_t ms)
{
	const char *state = "?";
	int done = 0;

	engine_wait(w->engine, id, stage, ms, &done, &state, NULL);
	return done ? state : "not done";
}

/* The job's why or status, through the door the API uses. */
static inline char *job_text(struct world *w, int64_t id, int why)
{
	return engine_job_text(w->engine, id, why ? JOB_VIEW_WHY : JOB_VIEW_STATUS, NULL);
}

/* ok() that text contains needle, showing the text when it does not. */
static inline void has(const char *text, const char *needle, const char *what)
{
	if (!ok(text && strstr(text, needle), "%s", what))
		diag("no '%s' in:\n%s", needle, text ? text : "(null)");
}

static inline void touch(struct world *w, const char *rel)
{
	char *path = xasprintf("%s/%s", w->vol, rel);
	int fd = open(path, O_WRONLY | O_CREAT, 0644);

	if (fd >= 0)
		close(fd);
	free(path);
}

/* The id of instance index of job id's first stage. */
static inline int64_t inst_id(struct world *w, int64_t id, int index)
{
	int64_t inst;

	engine_test_hold(w->engine);
	inst = model_job(engine_test_model(w->engine), id)->stages[0].inst[index]->id;
	engine_test_release(w->engine);
	return inst;
}

static inline int index_of(struct world *w, int64_t id)
{
	int index;

	engine_test_hold(w->engine);
	index = model_instance(engine_test_model(w->engine), id)->index;
	engine_test_release(w->engine);
	return index;
}

/* An attempt that ran and exited with code. */
static inline void run_to(struct world *w, int64_t id, int attempt, int code)
{
	report(w, id, attempt, REPORT_RUNNING, 0, 0);
	report(w, id, attempt, REPORT_EXITED, code, 0);
}

/* Run what h1 is given until the stage has ended: the instance with index
 * bad exits with code 3, the others with 0. How many attempts ran. */
static inline int run_stage(struct world *w, int64_t id, const char *stage, int bad)
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

static inline char *stage_text(struct world *w, int64_t id, const char *stage)
{
	return engine_stage_status(w->engine, id, stage, NULL);
}

static inline char *events_text(struct world *w, int64_t id)
{
	return engine_job_text(w->engine, id, JOB_VIEW_EVENTS, NULL);
}

static inline void lacks(const char *text, const char *needle, const char *what)
{
	if (!ok(text && !strstr(text, needle), "%s", what))
		diag("'%s' in:\n%s", needle, text ? text : "(null)");
}

static const char two_stages[] = "[stage s]\ninstances = 4\nrun = x\n%s\n[stage next]\nafter = s\nrun = y\n";

static inline int64_t submit_two(struct world *w, const char *extra)
{
	char spec[256];

	snprintf(spec, sizeof spec, two_stages, extra);
	return submit(w, spec, NULL);
}

/* submit_two(extra), then instances 0 and 1 start on h1's two cpus (ids[0],
 * ids[1]); 0 runs, 1 exits with code 3: the fan-out's first failure. */
static inline int64_t fail_one(struct world *w, const char *extra, int64_t *ids, const char *what)
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

#endif
