/* The roll-up: a job's dependencies on other jobs, its stages' dependencies
 * and foreach expansion, and the stage and job states that follow from their
 * instances'. Lock held throughout; foreach expansion is engine_foreach.c's. */
#include "engine_internal.h"
#include "notify.h"
#include "util.h"
#include "views.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- roll-up ---- */

/* 1 when every job this one waits for succeeded; 0 while some has not ended;
 * -1 (with *failed set) when one failed or was cancelled. */
static int job_deps(struct engine *e, const struct job *job, int64_t *failed)
{
	int ready = 1;

	for (size_t i = 0; i < job->spec->nafter_jobs; i++) {
		enum job_state state;

		/* A job whose record retention deleted ended long ago: done. */
		if (engine_job_state_of(e, job->spec->after_jobs[i], &state) != 1)
			continue;
		if (state == JOB_FAILED || state == JOB_CANCELLED) {
			*failed = job->spec->after_jobs[i];
			return -1;
		}
		if (state != JOB_SUCCEEDED)
			ready = 0;
	}
	return ready;
}

/* Bring an ending job's stages to a stop: queued instances are cancelled and
 * running ones asked to stop; the job ends when none is left running. */
static void stop_job(struct engine *e, struct job *job, int64_t now)
{
	const char *why = job->ending == ENDING_FAIL ? "job failed" : "job cancelled";

	for (size_t s = 0; s < job->nstages; s++) {
		struct stage *stage = &job->stages[s];

		if (stage_ended(stage))
			continue;
		for (size_t i = 0; i < stage->ninst; i++) {
			struct instance *inst = stage->inst[i];

			if (inst->state == INST_QUEUED) {
				model_set_state(e->model, inst, INST_CANCELLED);
				engine_set_reason(inst, why);
				inst->ended_ms = now;
			} else if (inst_active(inst) && !inst->cancel_requested) {
				inst->cancel_requested = true;
				inst->cancel_sent = false;
				model_dirty_instance(e->model, inst);
			}
		}
	}
}

/* The first stage of the job past the failures it tolerates, or NULL: once
 * there is one, no stage of the job starts any more. */
static const struct stage *failing_stage(const struct job *job)
{
	for (size_t s = 0; s < job->nstages; s++)
		if (stage_failing(&job->stages[s]))
			return &job->stages[s];
	return NULL;
}

/* A waiting stage that will never start (the job fails): its instances are
 * cancelled and so is it. */
static void cancel_waiting(struct engine *e, struct stage *stage, const struct stage *failed,
			   int64_t now)
{
	char why[128];

	snprintf(why, sizeof why, "not started: stage %s failed", failed->spec->name);
	for (size_t i = 0; i < stage->ninst; i++) {
		struct instance *inst = stage->inst[i];

		if (inst->state != INST_QUEUED)
			continue;
		model_set_state(e->model, inst, INST_CANCELLED);
		engine_set_reason(inst, why);
		inst->ended_ms = now;
	}
	engine_set_stage_state(e, stage, STAGE_CANCELLED, now);
	model_job_event(e->model, stage->job, now, "stage %s %s", stage->spec->name, why);
}

/* Every instance has ended: the stage's end, its event, and for a failure
 * the job's reason (the first stage to fail gives it). */
static void end_stage(struct engine *e, struct stage *stage, int64_t now)
{
	struct job *job = stage->job;
	const int *c = stage->counts;
	enum stage_state end = stage_failing(stage) ? STAGE_FAILED :
			       c[INST_CANCELLED] ? STAGE_CANCELLED : STAGE_SUCCEEDED;
	char failures[512];

	engine_set_stage_state(e, stage, end, now);
	views_stage_failures(stage, failures, sizeof failures);
	if (end == STAGE_SUCCEEDED && c[INST_FAILED] > 0) {
		model_job_event(e->model, job, now, "stage %s succeeded, %d of %zu failed (on_failure = %s): %s",
				stage->spec->name, c[INST_FAILED], stage->ninst,
				spec_on_failure_name(stage->spec->on_failure), failures);
		return;
	}
	/* A job that is ending said why when it began to (stop, cancel). */
	if (end != STAGE_FAILED || !*failures || job->ending != ENDING_NONE) {
		model_job_event(e->model, job, now, "stage %s %s", stage->spec->name, stage_state_name(end));
		return;
	}
	model_job_event(e->model, job, now, "stage %s failed: %s", stage->spec->name, failures);
	if (!*job->reason) {
		free(job->reason);
		job->reason = xasprintf("stage %s failed: %s", stage->spec->name, failures);
		model_dirty_job(e->model, job);
	}
}

static void settle_stage(struct engine *e, struct stage *stage, int64_t now)
{
	struct job *job = stage->job;
	const struct stage *failed;
	const int *c = stage->counts;
	int active = c[INST_ASSIGNED] + c[INST_RUNNING];
	char reason[600], failures[512];

	if (stage_ended(stage))
		return;
	if (stage->state == STAGE_WAITING) {
		if (job->ending != ENDING_NONE) {
			if (active == 0 && c[INST_QUEUED] == 0)
				engine_set_stage_state(e, stage, STAGE_CANCELLED, now);
			return;
		}
		/* A stage failed (or will, once its others end: finish): what
		 * runs finishes, nothing new starts. */
		failed = failing_stage(job);
		if (failed) {
			cancel_waiting(e, stage, failed, now);
			return;
		}
		if (job->held || !stage_deps_ready(job, stage))
			return;
		/* A foreach stage goes on once its input is listed, off the lock. */
		if (!stage->expanded) {
			if (!stage->listing)
				engine_foreach_list(e, stage);
			return;
		}
		if (stage->ninst == 0) {
			model_job_event(e->model, job, now, "stage %s: nothing to do", stage->spec->name);
			engine_set_stage_state(e, stage, STAGE_SUCCEEDED, now);
			return;
		}
		engine_set_stage_state(e, stage, STAGE_QUEUED, now);
		model_job_event(e->model, job, now, "stage %s ready: %zu instance%s queued",
				stage->spec->name, stage->ninst, stage->ninst == 1 ? "" : "s");
		return;
	}
	/* on_failure = stop: the job ends now, its running instances cancelled.
	 * finish and ignore let the others run (engine_end_attempt told why). */
	if (stage_failing(stage) && stage->spec->on_failure == ON_FAILURE_STOP &&
	    job->ending == ENDING_NONE) {
		views_stage_failures(stage, failures, sizeof failures);
		snprintf(reason, sizeof reason, "stage %s failed: %s", stage->spec->name, failures);
		engine_begin_ending(e, job, ENDING_FAIL, reason, now);
	}
	if (active == 0 && c[INST_QUEUED] == 0) {
		end_stage(e, stage, now);
	} else if (stage->state == STAGE_QUEUED &&
		   (c[INST_ASSIGNED] || c[INST_RUNNING] || c[INST_SUCCEEDED] || c[INST_FAILED] ||
		    c[INST_CANCELLED])) {
		/* Assigned counts: the summary shows those instances as running,
		 * and a runner tells of a start up to 50 ms late (with its end,
		 * for a short one). */
		engine_set_stage_state(e, stage, STAGE_RUNNING, now);
	}
}

void engine_update_job(struct engine *e, struct job *job, int64_t now)
{
	enum job_state state;
	int64_t failed_dep = 0;
	bool all_ended = true, any_failed = false, any_cancelled = false, any_progress = false;
	char reason[128];

	if (job_ended(job))
		return;
	if (job->ending == ENDING_NONE) {
		int deps = job_deps(e, job, &failed_dep);

		if (deps < 0) {
			enum job_state dep = JOB_FAILED;

			engine_job_state_of(e, failed_dep, &dep);
			snprintf(reason, sizeof reason, "dependency job %lld %s", (long long)failed_dep,
				 dep == JOB_CANCELLED ? "was cancelled" : "failed");
			engine_begin_ending(e, job, ENDING_FAIL, reason, now);
		} else if (deps == 0) {
			return;
		}
	}
	if (job->ending != ENDING_NONE)
		stop_job(e, job, now);
	/* Stages are in topological order: one pass settles a chain of them. */
	for (size_t s = 0; s < job->nstages; s++)
		settle_stage(e, &job->stages[s], now);
	if (job->ending != ENDING_NONE)
		stop_job(e, job, now);
	for (size_t s = 0; s < job->nstages; s++) {
		const struct stage *stage = &job->stages[s];

		all_ended &= stage_ended(stage);
		any_failed |= stage->state == STAGE_FAILED;
		any_cancelled |= stage->state == STAGE_CANCELLED;
		/* Running from the first assignment, as its stage is: the runner
		 * tells of a start later, or only with its end. */
		any_progress |= stage->state == STAGE_RUNNING || stage->state == STAGE_SUCCEEDED ||
				stage->counts[INST_RUNNING] > 0 || stage->counts[INST_ASSIGNED] > 0;
	}
	if (all_ended) {
		/* A cancel by the user wins over instances that failed while stopping. */
		if (job->ending == ENDING_CANCEL)
			state = JOB_CANCELLED;
		else if (job->ending == ENDING_FAIL || any_failed)
			state = JOB_FAILED;
		else if (any_cancelled)
			state = JOB_CANCELLED;
		else
			state = JOB_SUCCEEDED;
		job->ended_ms = now;
		model_job_event(e->model, job, now, "job %s%s%s", job_state_name(state),
				*job->reason ? ": " : "", job->reason);
	} else {
		state = any_progress ? JOB_RUNNING : JOB_QUEUED;
	}
	if (state != job->state) {
		job->state = state;
		model_dirty_job(e->model, job);
		if (all_ended && job->spec->nnotify > 0) {
			char *status = views_job_status(job, now);

			notify_job(e->notify, job, status);
			free(status);
		}
	}
}
