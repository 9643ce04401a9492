/* What the engine's files share and nobody else sees: the engine's struct and
 * the state changes every part of it makes (sched/engine/engine_*.c). Everything here
 * but the struct's own lock, conditions and thread is called with e->lock
 * held, unless it says otherwise. */
#ifndef PARSA_ENGINE_INTERNAL_H
#define PARSA_ENGINE_INTERNAL_H

#include "clock.h"
#include "engine.h"
#include "model.h"
#include "spec.h"
#include "store.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* How many pass durations GET /v1/stats can show. */
#define PASS_HISTORY 4096

struct fairshare;
struct group_commit;
struct history_reader;
struct lifecycle;
struct policy;
struct notify;
struct space;
struct schedules;
struct ident_cache;
struct spare_folders;
struct storage_queue;

struct engine {
	struct engine_config cfg;
	struct store *store;
	struct backend *storage;
	struct model *model;          /* protected by lock, like everything it holds */
	pthread_mutex_t lock;
	pthread_cond_t kick;          /* wakes the scheduling thread */
	pthread_cond_t changed;       /* broadcast after every pass: wakes long polls */
	bool kicked;                  /* protected by lock */
	bool kicked_now;              /* by other than a new job: no rest; protected by lock */
	bool resting;                 /* the thread rests after a pass; protected by lock */
	bool stopping;                /* protected by lock */
	bool thread_started;
	pthread_t thread;
	struct fairshare *fair;       /* protected by lock */
	int64_t started_mono;         /* silence before this does not count (restart) */
	double pass_ms[PASS_HISTORY]; /* ring of pass durations; protected by lock */
	uint64_t npasses;             /* protected by lock */
	struct engine_counters counters; /* for /metrics; protected by lock */
	struct schedules *schedules;  /* guarded by lock (sched/engine/schedules.h) */
	struct {                      /* the last pass's backfill reservation, for why; */
		int64_t job;          /* protected by lock; job 0 = none */
		int stage;
		char *host;
		int64_t at_ms;
	} held;
	struct notify *notify;        /* its own lock */
	struct space *space;          /* free space on the volume (sched/engine/space.h) */
	struct lifecycle *lifecycle;  /* purge, keep, retention (sched/engine/lifecycle.h) */
	struct storage_queue *storage_work; /* folders and listings, off the lock */
	/* When a probe of the storage thread last found the volume away, and
	 * its errno (the storage thread's own): the pieces after it within a
	 * second take its word instead of waiting a probe each. */
	int64_t away_probe_mono;
	int away_probe_errno;
	struct spare_folders *spares; /* its own lock; NULL without storage */
	struct ident_cache *ident;    /* its own lock: names and groups of callers */
	struct policy *policy;        /* teams and limits; protected by lock (SIGHUP swaps it) */
	struct history_reader *reader; /* its own lock: the store outside ours */
	struct {                      /* engine_history.c; protected by lock */
		uint64_t changes;     /* old jobs read back for a command, record
				       * retention's deletes: the reader's copies
				       * of old jobs from before are out of date */
		size_t nloaded;       /* jobs read back for commands, held now */
		int64_t swept_mono;
		int64_t retention_next_ms; /* the engine's clock */
		uint64_t records_deleted;
	} history;
	struct group_commit *submits; /* its own lock; takes lock to commit a group */
	struct {                      /* a burst of submissions (engine.c); protected by lock */
		int64_t last_ns;      /* the last new job's kick, monotonic */
		int64_t start_ns;     /* when the burst began; 0: none */
		int64_t first_id;     /* its first job: it and the later ones wait */
		uint64_t bursts;      /* so far, for GET /v1/stats */
	} burst;
};

/* The engine's lock. Only the engine's files take it: everything else reads
 * through the views of engine.h. */
void engine_lock(struct engine *e);
void engine_unlock(struct engine *e);

/* Job id for a command (lock held): resident, or read back from the store (it
 * then stays in the model a little while, and the history reader's copies of
 * old jobs are out of date). NULL with errno ENOENT (no such job) or EIO (the
 * store failed). */
struct job *engine_job_get(struct engine *e, int64_t id);
/* The hosts as placement sees them now (lock held); the caller frees *out. */
size_t engine_placement_hosts(struct engine *e, struct placement_host **out);
/* Is the host up (heartbeat within the timeout)? Lock held. */
int engine_host_up(struct engine *e, const struct host *h);
/* Job came in a burst of submissions that is still on: it is placed at the
 * burst's end (for why). Lock held. */
bool engine_burst_waits(const struct engine *e, const struct job *job);

static inline bool inst_active(const struct instance *inst)
{
	return inst->state == INST_ASSIGNED || inst->state == INST_RUNNING;
}

/* ---- the lock's small helpers, inline so that no two of the engine's files
 * call each other: engine.c (the thread and the life cycle) calls into the
 * others, the pass and the API's calls into the roll-up, and the state
 * changes and folders call no other part of the engine. ---- */

/* The time of every decision (engine_now_ms() for callers outside). */
static inline int64_t engine_now(const struct engine *e)
{
	return clock_now_ms(e->cfg.clock);
}

/* Wake the scheduling pass. */
static inline void engine_kick(struct engine *e)
{
	e->kicked = true;
	e->kicked_now = true;
	pthread_cond_signal(&e->kick);
}

/* Wake it for new job id: after the rest the last pass earned (engine.c), so
 * that a stream of submissions does not buy a whole pass each; an instance's
 * end, a heartbeat or a command (engine_kick) cuts the rest short. Inside a
 * burst of submissions (engine.c) the pass waits for its end instead. */
void engine_kick_new_job(struct engine *e, int64_t id, bool submitted);

/* A burst of submissions is on: jobs from its first on are not placed yet. */
static inline bool engine_burst_defers(const struct engine *e, const struct job *job)
{
	return e->burst.start_ns != 0 && job->id >= e->burst.first_id;
}

/* Write what changed (store_flush). On failure the objects stay dirty: the
 * timer's next pass tries again. */
static inline int engine_flush(struct engine *e, char **err)
{
	return store_flush(e->store, e->model, err);
}

/* Commits a group of submissions (engine_submit.c; the group_commit_fn of
 * e->submits). Takes e->lock itself. */
struct group_item;
void engine_commit_submissions(void *engine, struct group_item *const *items, size_t n);

/* Would a job of user (uid) and team with job_instances in all, added of
 * them new, pass [limits] given what they hold? new_job: it is one more
 * unfinished job (a submission); else a job that already counts grows (a
 * foreach expansion). 0, or -1 with errno EDQUOT and *err (engine_submit.c). */
int engine_check_limits(struct engine *e, uid_t uid, const char *user, const char *team,
			int64_t job_instances, int64_t added, bool new_job, const char *file,
			char **err);

/* Root, or a member of the admin group (engine_config.admin_gid). */
static inline bool engine_is_admin(const struct engine *e, const struct caller *who)
{
	if (who->uid == 0)
		return true;
	if (!e->cfg.admin_set)
		return false;
	if (who->gid == e->cfg.admin_gid)
		return true;
	for (size_t i = 0; i < who->ngroups; i++)
		if (who->groups[i] == e->cfg.admin_gid)
			return true;
	return false;
}

/* More of the stage's instances failed for good (retries used up) than it
 * tolerates (max_failed): it fails, at once with on_failure = stop, else once
 * its other instances have ended. Derived from the counts, so nothing about
 * it needs to be stored. */
static inline bool stage_failing(const struct stage *stage)
{
	return (size_t)stage->counts[INST_FAILED] > spec_stage_max_failed(stage->spec, stage->ninst);
}

/* Have the stages this one runs after all succeeded? */
static inline bool stage_deps_ready(const struct job *job, const struct stage *stage)
{
	for (size_t i = 0; i < stage->spec->nafter; i++) {
		int up = spec_stage_index(job->spec, stage->spec->after[i]);

		if (up >= 0 && job->stages[up].state != STAGE_SUCCEEDED)
			return false;
	}
	return true;
}

/* ---- engine_views.c ---- */

/* The state of job id, or of its stage (NULL: the job's), and whether it has
 * ended: from the model, or for a job not in memory from the history reader,
 * outside the lock. Lock NOT held. 0, or -1 with errno ENOENT (no such job or
 * stage) or EIO and *err. *state is static. */
int engine_job_state(struct engine *e, int64_t id, const char *stage, const char **state,
		     bool *ended, char **err);

/* ---- engine_history.c: finished jobs leave memory ---- */

/* The state of job id, resident or not: 1, 0 when there is no such job. */
int engine_job_state_of(struct engine *e, int64_t id, enum job_state *state);
/* From the pass: finished jobs past keep_finished (and jobs read back that
 * nobody looked at lately) leave the model; a batch of record retention. */
void engine_history_sweep(struct engine *e, int64_t now, int64_t mono);
void engine_history_retention(struct engine *e, int64_t now, int64_t mono);

/* ---- engine_state.c: state changes ---- */

void engine_set_stage_state(struct engine *e, struct stage *stage, enum stage_state state,
			    int64_t now);
/* Start bringing job to an end (cancel or fail) for reason; the roll-up does the rest. */
void engine_begin_ending(struct engine *e, struct job *job, enum job_ending how,
			 const char *reason, int64_t now);
/* An instance's reason, on one line (a status file has one "reason:" line). */
void engine_set_reason(struct instance *inst, const char *reason);
/* Requeue an instance (a retry): a new attempt will be assigned by the pass,
 * at once and on any host (a caller that wants a back-off sets it after). */
void engine_requeue(struct engine *e, struct instance *inst);
/* How long the retry after the given number of failures waits (ms): the
 * configured back-off, doubled for each failure after the first, capped. */
int64_t engine_retry_backoff(const struct engine *e, int failures);
/* What the runner measured of the current attempt (its report's stamps,
 * usage, cores and GPUs), kept on the instance: those given replace what is
 * known. Call before engine_mark_running() / engine_end_attempt(), which then
 * date the start and end by the host's stamps. */
void engine_record_report(struct engine *e, struct instance *inst, const struct report *r);
/* The runner says an attempt ended (or the scheduler decided it is lost).
 * code/sig describe how; reason is extra text (NULL when none). The end is
 * dated by the runner's stamp when engine_record_report() had one, else now.
 * Takes the instance off its host's active list. */
void engine_end_attempt(struct engine *e, struct instance *inst, int code, int sig,
			const char *reason, int64_t now);
/* The runner confirmed the attempt runs (a report or a heartbeat); how is
 * added to the event (" (from a heartbeat)" or ""). Dated by the runner's
 * start stamp when engine_record_report() had one, else now. */
void engine_mark_running(struct engine *e, struct instance *inst, int pid, int64_t now,
			 int64_t mono, const char *how);

/* ---- engine_pass.c: the scheduling pass ---- */

/* Roll-up, recurring runs, placement and the commit of what it placed. */
void engine_pass(struct engine *e);

/* ---- engine_rollup.c: dependencies, foreach expansion, stage and job states ---- */

/* Dependencies, expansion and roll-up for one unfinished job. */
void engine_update_job(struct engine *e, struct job *job, int64_t now);

/* ---- engine_foreach.c: foreach expansion ---- */

/* A foreach stage is ready: have its input listed on the storage thread; its
 * instances are made (or the stage fails) when the listing comes back, and
 * the pass is kicked. Until then stage->listing is set. */
void engine_foreach_list(struct engine *e, struct stage *stage);

/* ---- engine_folders.c: job folders on the volume ---- */

/* What a job's folders need, copied so that they can be made without the lock. */
struct folder_plan;
struct folder_plan *folder_plan_of(const struct job *job);
/* Make the missing ones; no lock held. 0, or -1 when a folder could not be
 * made (logged; the plan keeps which and why for engine_folders_failed). */
int folder_plan_make(struct engine *e, struct folder_plan *p);
void folder_plan_free(struct folder_plan *p);
/* The job's folders are made (lock not held): it may be placed now. */
void engine_folders_made(struct engine *e, int64_t job, bool submitted);
/* Have a committed job's folders made on the storage thread (lock held);
 * job->folders_pending is set until they are, through an outage of the
 * volume (tried again, 1 s to 30 s apart). again: a retry's, which makes
 * what was removed and says so in the job's events. */
void engine_folders_later(struct engine *e, struct job *job, bool again);
/* folder_plan_make failed for p (lock not held): the job waits for the
 * volume (job->folders_wait says why) and the storage thread tries again.
 * Takes p. */
void engine_folders_failed(struct engine *e, struct folder_plan *p);
/* At start, before the thread (lock not held): jobs/ on the volume, and the
 * folders of unfinished jobs, in case the scheduler died between a commit and
 * their creation or the volume was away then; those it cannot make now wait
 * for the volume (engine_folders_failed). Never fatal. */
void engine_folders_at_start(struct engine *e);
/* The hooks of the clean-up and space threads (no lock held); the
 * notification thread's note is engine_lifecycle_note too. */
size_t engine_lifecycle_ended_before(void *arg, int64_t cutoff_ms, int64_t **ids);
void engine_lifecycle_note(void *arg, int64_t id, const char *text);
void engine_space_changed(void *arg);

/* ---- engine_submit.c ---- */

/* A run of a recurring pipeline (schedules_ops.submit; arg is the engine). */
struct schedule_run;
int engine_submit_run(void *arg, const struct schedule_run *run, int64_t *job, char **err);

#endif
