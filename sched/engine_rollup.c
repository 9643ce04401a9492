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
		struct job *dep = model_job(e->model, job->spec->after_jobs[i]);

		if (!dep)
			continue;
		if (dep->state == JOB_FAILED || dep->state == JOB_CANCELLED) {
			*failed = dep->id;
			return -1;
		}
		if (dep->state != JOB_SUCCEEDED)
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

static void settle_stage(struct engine *e, struct stage *stage, int64_t now)
{
	struct job *job = stage->job;
	const int *c = stage->counts;
	int active = c[INST_ASSIGNED] + c[INST_RUNNING];
	char reason[600];

	if (stage_ended(stage))
		return;
	if (stage->state == STAGE_WAITING) {
		if (job->ending != ENDING_NONE) {
			if (active == 0 && c[INST_QUEUED] == 0)
				engine_set_stage_state(e, stage, STAGE_CANCELLED, now);
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
	if (c[INST_FAILED] > 0 && job->ending == ENDING_NONE) {
		const struct instance *bad = NULL;

		for (size_t i = 0; i < stage->ninst && !bad; i++)
			if (stage->inst[i]->state == INST_FAILED)
				bad = stage->inst[i];
		snprintf(reason, sizeof reason, "stage %s failed: instance %d: %s", stage->spec->name,
			 bad ? bad->index : 0, bad ? bad->reason : "?");
		engine_begin_ending(e, job, ENDING_FAIL, reason, now);
	}
	if (active == 0 && c[INST_QUEUED] == 0) {
		enum stage_state end = c[INST_FAILED] ? STAGE_FAILED :
				       c[INST_CANCELLED] ? STAGE_CANCELLED : STAGE_SUCCEEDED;

		engine_set_stage_state(e, stage, end, now);
		model_job_event(e->model, job, now, "stage %s %s", stage->spec->name,
				stage_state_name(end));
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
			struct job *dep = model_job(e->model, failed_dep);

			snprintf(reason, sizeof reason, "dependency job %lld %s", (long long)failed_dep,
				 dep && dep->state == JOB_CANCELLED ? "was cancelled" : "failed");
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
		any_progress |= stage->state == STAGE_RUNNING || stage->state == STAGE_SUCCEEDED ||
				stage->counts[INST_RUNNING] > 0;
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
