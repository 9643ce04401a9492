/* What the engine's files share and nobody else sees: the engine's struct and
 * the state changes every part of it makes (sched/engine_*.c). Everything here
 * but the struct's own lock, conditions and thread is called with e->lock
 * held, unless it says otherwise. */
#ifndef PARSA_ENGINE_INTERNAL_H
#define PARSA_ENGINE_INTERNAL_H

#include "engine.h"
#include "model.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* How many pass durations GET /v1/stats can show. */
#define PASS_HISTORY 4096

struct fairshare;
struct lifecycle;
struct notify;
struct space;
struct schedules;

struct engine {
	struct engine_config cfg;
	struct store *store;
	struct backend *storage;
	struct model *model;          /* protected by lock, like everything it holds */
	pthread_mutex_t lock;
	pthread_cond_t kick;          /* wakes the scheduling thread */
	pthread_cond_t changed;       /* broadcast after every pass: wakes long polls */
	bool kicked;                  /* protected by lock */
	bool stopping;                /* protected by lock */
	bool thread_started;
	pthread_t thread;
	struct fairshare *fair;       /* protected by lock */
	int64_t started_mono;         /* silence before this does not count (restart) */
	double pass_ms[PASS_HISTORY]; /* ring of pass durations; protected by lock */
	uint64_t npasses;             /* protected by lock */
	struct schedules *schedules;  /* guarded by lock (sched/schedules.h) */
	struct {                      /* the last pass's backfill reservation, for why; */
		int64_t job;          /* protected by lock; job 0 = none */
		int stage;
		char *host;
		int64_t at_ms;
	} held;
	struct notify *notify;        /* its own lock */
	struct space *space;          /* free space on the volume (sched/space.h) */
	struct lifecycle *lifecycle;  /* purge, keep, retention (sched/lifecycle.h) */
};

static inline bool job_ended(const struct job *job)
{
	return job->state == JOB_SUCCEEDED || job->state == JOB_FAILED || job->state == JOB_CANCELLED;
}

static inline bool stage_ended(const struct stage *stage)
{
	return stage->state == STAGE_SUCCEEDED || stage->state == STAGE_FAILED ||
	       stage->state == STAGE_CANCELLED;
}

static inline bool inst_active(const struct instance *inst)
{
	return inst->state == INST_ASSIGNED || inst->state == INST_RUNNING;
}

/* ---- engine.c: the thread, the lock and the wake-up ---- */

/* Wake the scheduling pass. */
void engine_kick(struct engine *e);
/* Write what changed (store_flush). On failure the objects stay dirty: the
 * timer's next pass tries again. */
int engine_flush(struct engine *e, char **err);
/* An absolute CLOCK_MONOTONIC deadline ms from now, for pthread_cond_timedwait
 * on e->kick and e->changed. No lock needed. */
struct timespec engine_deadline_in(int64_t ms);
/* Root, or a member of the admin group (engine_config.admin_gid). No lock needed. */
bool engine_is_admin(const struct engine *e, const struct caller *who);

/* ---- engine_state.c: state changes ---- */

void engine_set_stage_state(struct engine *e, struct stage *stage, enum stage_state state,
			    int64_t now);
/* Start bringing job to an end (cancel or fail) for reason; the roll-up does the rest. */
void engine_begin_ending(struct engine *e, struct job *job, enum job_ending how,
			 const char *reason, int64_t now);
/* An instance's reason, on one line (a status file has one "reason:" line). */
void engine_set_reason(struct instance *inst, const char *reason);
/* Requeue an instance (a retry): a new attempt will be assigned by the pass. */
void engine_requeue(struct engine *e, struct instance *inst);
/* The runner says an attempt ended (or the scheduler decided it is lost).
 * code/sig describe how; reason is extra text (NULL when none). Takes the
 * instance off its host's active list. */
void engine_end_attempt(struct engine *e, struct instance *inst, int code, int sig,
			const char *reason, int64_t now);
/* The runner confirmed the attempt runs (a report or a heartbeat); how is
 * added to the event (" (from a heartbeat)" or ""). */
void engine_mark_running(struct engine *e, struct instance *inst, int pid, int64_t now,
			 int64_t mono, const char *how);

/* ---- engine_rollup.c: dependencies, foreach expansion, stage and job states ---- */

/* Dependencies, expansion and roll-up for one unfinished job. */
void engine_update_job(struct engine *e, struct job *job, int64_t now);

/* ---- engine_pass.c: the scheduling pass ---- */

/* Roll-up, recurring runs, placement and the commit of what it placed. */
void engine_pass(struct engine *e);

/* ---- engine_folders.c: job folders on the volume ---- */

/* Make the stage folders of job now (lock held: only before the thread
 * starts and for scheduled runs; see engine_folders.c). */
int engine_make_job_folders(struct engine *e, const struct job *job);
/* What a job's folders need, copied so that they can be made without the lock. */
struct folder_plan;
struct folder_plan *folder_plan_of(const struct job *job);
int64_t folder_plan_job(const struct folder_plan *p);
/* Make them; no lock held. 0, or -1 when a folder could not be made (logged). */
int folder_plan_make(struct engine *e, const struct folder_plan *p);
void folder_plan_free(struct folder_plan *p);
/* List a foreach stage's upstream output folder: names matching glob, sorted,
 * at most SPEC_MAX_INSTANCES; *names malloc'ed. -1 with errno and *err. */
int engine_list_foreach(struct engine *e, int64_t job, const char *upstream, const char *glob,
			char ***names, size_t *n, char **err);
/* The hooks of the clean-up and space threads (no lock held). */
size_t engine_lifecycle_ended_before(void *arg, int64_t cutoff_ms, int64_t **ids);
void engine_lifecycle_note(void *arg, int64_t id, const char *text);
void engine_space_changed(void *arg);

/* ---- engine_submit.c ---- */

/* A new job of who for spec (which it takes, also on failure), not yet
 * committed nor in the model. user names who; team NULL means the spec's or
 * who's primary group. NULL with errno and *err (e.g. after = a job that does
 * not exist). Commit it, then engine_job_adopt() it, or model_job_free() it. */
struct job *engine_job_build(struct engine *e, const struct caller *who, const char *user,
			     const char *team, struct spec *spec, const char *filename,
			     const char *text, size_t len, int64_t now, char **err);
/* A committed job joins the model; it is placed once its folders exist. */
void engine_job_adopt(struct engine *e, struct job *job);
/* A run of a recurring pipeline (schedules_ops.submit; arg is the engine). */
struct schedule_run;
int engine_submit_run(void *arg, const struct schedule_run *run, int64_t *job, char **err);

#endif
