/* The engine's core: its struct's life (create, start, stop, destroy), the
 * scheduling thread, the lock and the wake-up, and small accessors (the
 * views are engine_views.c). The work itself is in sched/engine/engine_*.c (engine_internal.h). */
#include "engine_internal.h"
#include "engine_test.h"
#include "clock.h"
#include "fairshare.h"
#include "group_commit.h"
#include "history_reader.h"
#include "ident.h"
#include "lifecycle.h"
#include "log.h"
#include "notify.h"
#include "policy.h"
#include "schedules.h"
#include "space.h"
#include "spare_folders.h"
#include "storage_queue.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The time of every decision and timestamp: the engine's clock, which tests
 * move (lib/clock.h). Liveness timeouts use the real monotonic clock. */
int64_t engine_now_ms(struct engine *e)
{
	return engine_now(e);
}

/* After a pass, a new job's kick (engine_kick_new_job) waits this many times
 * as long as the pass took before the next pass starts: a stream of
 * submissions meets a pass that holds the lock at most a tenth of the time,
 * and each pass takes all that came meanwhile. Any other kick (an instance's
 * end, a heartbeat, a command) cuts the rest short, so hand-offs and the
 * placement of what frees up are as fast as before. A pass shorter than
 * PASS_REST_MIN_NS (an idle machine's takes a twentieth of a millisecond, one
 * with a few hundred jobs a tenth) earns no rest: the next job starts at once;
 * and a rest is never longer than PASS_REST_MAX_NS. */
/* Empty job folders kept ready at the volume's root (sched/engine/spare_folders.h):
 * enough for a burst of a few hundred submissions (a 200-sample sweep
 * submitted by a script), made again once it is over. 256 of each kind are
 * 768 empty folders, made in a few tens of milliseconds at start. */
#define SPARE_FOLDERS_DIR ".parsa-spare"
#define SPARE_FOLDERS_KEEP 256

#define PASS_REST_FACTOR 9
#define PASS_REST_MIN_NS (200 * 1000LL)
#define PASS_REST_MAX_NS (50 * 1000000LL)

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A burst of submissions: it begins with a new job that comes less than
 * BURST_GAP_MS after the one before, and ends when no new job came for
 * BURST_QUIET_MS (a longer wait, so that one slow commit inside a burst does
 * not end it) or when it has lasted BURST_MAX_MS. The placement of its jobs
 * waits for its end, and then they are placed in one pass. Starting each of
 * them at once made every submission of a burst share the cores with the
 * starts, reports and ends of the ones before it: on the embedded default
 * (scheduler, runner and jobs on one machine) a loop of submissions went at
 * about half the speed it has when nothing starts. This is Slurm's "defer".
 * A submission alone, or one more than BURST_GAP_MS after the last (every
 * latency the benchmarks measure), is placed at once as before; only the
 * second and later of a burst wait, by at most BURST_MAX_MS. [sched]
 * defer_bursts = no turns it off (engine_config.start_bursts_at_once). */
#define BURST_GAP_MS 2
#define BURST_QUIET_MS 10
#define BURST_MAX_MS 500

void engine_kick_new_job(struct engine *e, int64_t id, bool submitted)
{
	int64_t now = mono_ns();
	bool began = false;

	/* Only submissions make a burst: the folders made at a start are not. */
	if (!submitted)
		goto kick;
	if (!e->cfg.start_bursts_at_once && e->burst.start_ns == 0 && e->burst.last_ns != 0 &&
	    now - e->burst.last_ns < e->cfg.burst_gap_ms * 1000000) {
		e->burst.start_ns = now;
		e->burst.first_id = id;
		e->burst.bursts++;
		began = true;
	}
	e->burst.last_ns = now;
kick:
	e->kicked = true;
	/* Inside a burst the thread already waits for its end; at its
	 * beginning it learns of that end. */
	if (began || (!e->resting && e->burst.start_ns == 0))
		pthread_cond_signal(&e->kick);
}

/* When the burst on now ends, monotonic; 0 when none is on (or it just ended:
 * then its jobs are placed by the next pass). */
static int64_t burst_end(struct engine *e, int64_t now)
{
	int64_t end;

	if (e->burst.start_ns == 0)
		return 0;
	end = e->burst.last_ns + e->cfg.burst_quiet_ms * 1000000;
	if (end > e->burst.start_ns + e->cfg.burst_max_ms * 1000000)
		end = e->burst.start_ns + e->cfg.burst_max_ms * 1000000;
	if (now >= end) {
		e->burst.start_ns = 0;
		e->kicked = true;
		return 0;
	}
	return end;
}

static struct timespec mono_timespec(int64_t ns)
{
	return (struct timespec){ .tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000 };
}

/* The scheduling thread: a pass whenever it is kicked (for a new job, after
 * the rest the last pass earned, or at the end of a burst), and at least
 * every timer_ms. */
static void *engine_main(void *arg)
{
	struct engine *e = arg;
	int64_t rest_until = 0, t0, took, burst;

	pthread_setname_np(pthread_self(), "engine");
	pthread_mutex_lock(&e->lock);
	while (!e->stopping) {
		burst = burst_end(e, mono_ns());
		if (burst && !e->kicked_now) {
			/* Only new jobs kicked: nothing to place before the end. */
			struct timespec until = mono_timespec(burst);

			pthread_cond_timedwait(&e->kick, &e->lock, &until);
			continue;
		}
		if (!e->kicked) {
			struct timespec until = time_mono_deadline(e->cfg.timer_ms);

			pthread_cond_timedwait(&e->kick, &e->lock, &until);
			if (e->stopping)
				break;
		}
		t0 = mono_ns();
		if (t0 < rest_until && !e->kicked_now) {
			/* New jobs' kicks do not signal while we rest. */
			struct timespec until = mono_timespec(rest_until);

			e->resting = true;
			pthread_cond_timedwait(&e->kick, &e->lock, &until);
			e->resting = false;
			continue;
		}
		e->kicked = false;
		e->kicked_now = false;
		engine_pass(e);
		took = mono_ns() - t0;
		if (took < PASS_REST_MIN_NS)
			rest_until = 0;
		else
			rest_until = t0 + took + (took < PASS_REST_MAX_NS / PASS_REST_FACTOR
							  ? took * PASS_REST_FACTOR : PASS_REST_MAX_NS);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

/* ---- life cycle ---- */

/* The schedules' operations (schedules.h): the engine's lock, clock and jobs. */
static void lock_op(void *arg)
{
	engine_lock(arg);
}

static void unlock_op(void *arg)
{
	engine_unlock(arg);
}

static int64_t now_op(void *arg)
{
	return engine_now_ms(arg);
}

static const char *job_state_op(void *arg, int64_t id)
{
	enum job_state state;

	return engine_job_state_of(arg, id, &state) == 1 ? job_state_name(state) : NULL;
}

/* Fair share starts from the store's hourly usage: 30 half-lives back is
 * all that still counts (under a billionth), and no instance need be loaded. */
static void fair_add_hour(void *arg, const char *team, int64_t hour, double cpu_s)
{
	struct engine *e = arg;
	int64_t at = hour * 3600000 + 1800000, now = engine_now_ms(e);

	fairshare_charge(e->fair, team, cpu_s, at < now ? at : now);
}

static int fair_load(struct engine *e, char **err)
{
	int64_t since_ms = engine_now_ms(e) - 30 * fairshare_half_life_ms(e->fair);

	return store_usage_since(e->store, since_ms > 0 ? since_ms / 3600000 : 0, fair_add_hour, e, err);
}

struct engine *engine_create(const struct engine_config *cfg, struct store *store,
			     struct backend *storage, struct model *model, char **err)
{
	struct engine *e = xcalloc(1, sizeof *e);
	pthread_condattr_t attr;
	int rc;

	e->cfg = *cfg;
	if (e->cfg.host_timeout_ms <= 0)
		e->cfg.host_timeout_ms = 10000;
	if (e->cfg.lost_after_ms <= 0)
		e->cfg.lost_after_ms = 5000;
	if (e->cfg.timer_ms <= 0)
		e->cfg.timer_ms = 1000;
	if (e->cfg.lease_ms <= 0)
		e->cfg.lease_ms = 30000;
	if (e->cfg.keep_finished_ms <= 0)
		e->cfg.keep_finished_ms = ENGINE_KEEP_FINISHED_MS;
	if (e->cfg.list_finished_ms <= 0)
		e->cfg.list_finished_ms = ENGINE_LIST_FINISHED_MS;
	if (e->cfg.burst_gap_ms <= 0)
		e->cfg.burst_gap_ms = BURST_GAP_MS;
	if (e->cfg.burst_quiet_ms <= 0)
		e->cfg.burst_quiet_ms = BURST_QUIET_MS;
	if (e->cfg.burst_max_ms <= 0)
		e->cfg.burst_max_ms = BURST_MAX_MS;
	if (e->cfg.retry_backoff_ms <= 0)
		e->cfg.retry_backoff_ms = ENGINE_RETRY_BACKOFF_MS;
	e->fair = fairshare_create(e->cfg.half_life_ms);
	e->policy = policy_create(cfg->conf);
	/* The engine reads the config only here: the caller may free it. */
	e->cfg.conf = NULL;
	e->store = store;
	e->storage = storage;
	e->model = model;
	pthread_mutex_init(&e->lock, NULL);
	e->submits = group_commit_create(engine_commit_submissions, e);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	rc = pthread_cond_init(&e->kick, &attr);
	if (rc == 0)
		rc = pthread_cond_init(&e->changed, &attr);
	pthread_condattr_destroy(&attr);
	if (rc != 0) {
		errno = rc;
		errprintf(err, "cannot create condition variables: %s", strerror(rc));
		fairshare_destroy(e->fair);
		policy_destroy(e->policy);
		group_commit_destroy(e->submits);
		free(e);
		return NULL;
	}
	e->notify = notify_create(e->cfg.sendmail, engine_lifecycle_note, e);
	e->storage_work = storage_queue_create();
	e->ident = ident_cache_create();
	if (storage)
		e->spares = spare_folders_create(storage, SPARE_FOLDERS_DIR, SPARE_FOLDERS_KEEP);
	e->space = space_create(storage, 2000, engine_space_changed, e);
	e->lifecycle = lifecycle_create(storage, e->cfg.retention_ms, &(struct lifecycle_hooks){
		.ended_before = engine_lifecycle_ended_before, .note = engine_lifecycle_note, .arg = e });
	e->schedules = schedules_create(store, &(struct schedules_ops){
		.lock = lock_op, .unlock = unlock_op, .now_ms = now_op, .submit = engine_submit_run,
		.job_state = job_state_op, .arg = e }, err);
	if (e->schedules)
		e->reader = history_reader_open(store, err);
	if (!e->schedules || !e->reader) {
		int saved = errno;

		engine_destroy(e);
		errno = saved;
		return NULL;
	}
	return e;
}

int engine_start(struct engine *e, char **err)
{
	int64_t mono = time_mono_ms();
	int rc;

	pthread_mutex_lock(&e->lock);
	e->started_mono = mono;
	if (fair_load(e, err) < 0) {
		pthread_mutex_unlock(&e->lock);
		return -1;
	}
	for (size_t j = 0; j < model_nactive(e->model); j++) {
		struct job *job = model_active_at(e->model, j);

		/* Give runners time to report what they run before "lost" applies. */
		for (size_t s = 0; s < job->nstages; s++)
			for (size_t i = 0; i < job->stages[s].ninst; i++)
				job->stages[s].inst[i]->confirmed_mono = mono;
	}
	e->kicked = true;
	pthread_mutex_unlock(&e->lock);
	/* Before the first pass, so that nothing is placed without its folder. */
	engine_folders_at_start(e);
	if (space_start(e->space, err) < 0 || lifecycle_start(e->lifecycle, err) < 0 ||
	    storage_queue_start(e->storage_work, err) < 0 ||
	    (e->spares && spare_folders_start(e->spares, err) < 0))
		return -1;
	rc = pthread_create(&e->thread, NULL, engine_main, e);
	if (rc != 0) {
		errno = rc;
		return errprintf(err, "cannot start the scheduling thread: %s", strerror(rc));
	}
	e->thread_started = true;
	return 0;
}

void engine_stop(struct engine *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->lock);
	e->stopping = true;
	pthread_cond_signal(&e->kick);
	pthread_cond_broadcast(&e->changed);
	pthread_mutex_unlock(&e->lock);
	if (e->thread_started) {
		pthread_join(e->thread, NULL);
		e->thread_started = false;
	}
}

/* Kept out of line: inlined into engine_destroy, GCC 12 at -O3 takes the
 * error text for a dangling pointer (-Wdangling-pointer false positive). */
static __attribute__((noinline)) void flush_last(struct engine *e)
{
	char *err = NULL;

	if (engine_flush(e, &err) < 0) {
		log_warnx("cannot write the last changes: %s", err ? err : "?");
		free(err);
	}
}

void engine_destroy(struct engine *e)
{
	if (!e)
		return;
	engine_stop(e);
	/* Its pieces take our lock to hand results back: stop it while we still
	 * exist. What it had not done yet is done again at the next start. */
	storage_queue_destroy(e->storage_work);
	spare_folders_destroy(e->spares);
	ident_cache_destroy(e->ident);
	flush_last(e);
	/* Its thread takes our lock to kick us: stop it while we still exist. */
	space_destroy(e->space);
	lifecycle_destroy(e->lifecycle);
	notify_destroy(e->notify);
	schedules_destroy(e->schedules);
	history_reader_close(e->reader);
	free(e->held.host);
	pthread_cond_destroy(&e->kick);
	pthread_cond_destroy(&e->changed);
	pthread_mutex_destroy(&e->lock);
	group_commit_destroy(e->submits);
	fairshare_destroy(e->fair);
	policy_destroy(e->policy);
	free(e);
}

void engine_reconfigure(struct engine *e, const struct engine_live *live)
{
	struct policy *fresh = policy_create(live->conf), *old;

	/* Built outside the lock; the swap is all a pass or a submission can see. */
	pthread_mutex_lock(&e->lock);
	old = e->policy;
	e->policy = fresh;
	e->cfg.admin_set = live->admin_set;
	e->cfg.admin_gid = live->admin_gid;
	e->cfg.host_timeout_ms = live->host_timeout_ms > 0 ? live->host_timeout_ms : 10000;
	e->cfg.keep_finished_ms = live->keep_finished_ms > 0 ? live->keep_finished_ms
							      : ENGINE_KEEP_FINISHED_MS;
	e->cfg.record_retention_ms = live->record_retention_ms;
	e->cfg.list_finished_ms = live->list_finished_ms > 0 ? live->list_finished_ms
							      : ENGINE_LIST_FINISHED_MS;
	e->cfg.start_bursts_at_once = live->start_bursts_at_once;
	pthread_cond_broadcast(&e->kick);
	pthread_mutex_unlock(&e->lock);
	policy_destroy(old);
}

void engine_lock(struct engine *e) { pthread_mutex_lock(&e->lock); }
/* Keeps errno: a call's exit path unlocks after the failure it reports. */
void engine_unlock(struct engine *e)
{
	int saved = errno;

	pthread_mutex_unlock(&e->lock);
	errno = saved;
}
/* engine_test.h: the unit tests' hooks. */
void engine_test_hold(struct engine *e) { pthread_mutex_lock(&e->lock); }
void engine_test_release(struct engine *e) { pthread_mutex_unlock(&e->lock); }
struct model *engine_test_model(struct engine *e) { return e->model; }
struct ident_cache *engine_ident(struct engine *e) { return e->ident; }

int64_t engine_lease_ms(const struct engine *e)
{
	return e->cfg.lease_ms;
}

size_t engine_pass_stats(struct engine *e, double *out, size_t max, uint64_t *total)
{
	size_t n, first;

	pthread_mutex_lock(&e->lock);
	n = e->npasses < PASS_HISTORY ? (size_t)e->npasses : PASS_HISTORY;
	if (n > max)
		n = max;
	first = (size_t)((e->npasses - n) % PASS_HISTORY);
	for (size_t i = 0; i < n; i++)
		out[i] = e->pass_ms[(first + i) % PASS_HISTORY];
	*total = e->npasses;
	pthread_mutex_unlock(&e->lock);
	return n;
}

void engine_get_counters(struct engine *e, struct engine_counters *out)
{
	pthread_mutex_lock(&e->lock);
	*out = e->counters;
	pthread_mutex_unlock(&e->lock);
}

bool engine_burst_waits(const struct engine *e, const struct job *job)
{
	return engine_burst_defers(e, job) && !job_ended(job);
}

uint64_t engine_bursts(struct engine *e)
{
	uint64_t n;

	pthread_mutex_lock(&e->lock);
	n = e->burst.bursts;
	pthread_mutex_unlock(&e->lock);
	return n;
}

double engine_fairshare_usage(struct engine *e, const char *team)
{
	double usage;

	pthread_mutex_lock(&e->lock);
	usage = fairshare_usage(e->fair, team, engine_now_ms(e));
	pthread_mutex_unlock(&e->lock);
	return usage;
}

char *engine_fairshare_text(struct engine *e)
{
	char *text;

	pthread_mutex_lock(&e->lock);
	text = fairshare_text(e->fair, engine_now_ms(e));
	pthread_mutex_unlock(&e->lock);
	return text;
}

struct space *engine_space(struct engine *e)
{
	return e->space;
}

struct schedules *engine_schedules(struct engine *e)
{
	return e->schedules;
}

