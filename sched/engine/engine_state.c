/* The state changes of stages, jobs and instances that every part of the
 * engine makes: an attempt that started or ended, a requeue, a job starting
 * to end. Lock held throughout (engine_internal.h). */
#include "engine_internal.h"
#include "api_client.h"
#include "fairshare.h"
#include "log.h"
#include "units.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void engine_set_stage_state(struct engine *e, struct stage *stage, enum stage_state state,
			    int64_t now)
{
	if (stage->state == state)
		return;
	stage->state = state;
	if (state == STAGE_RUNNING && !stage->started_ms)
		stage->started_ms = now;
	/* A job runs from its first stage's start, even before an instance
	 * reports that it reached exec (which may only move it earlier). */
	if (state == STAGE_RUNNING && !stage->job->started_ms) {
		stage->job->started_ms = stage->started_ms;
		model_dirty_job(e->model, stage->job);
	}
	if (stage_state_ended(state))
		stage->ended_ms = now;
	else
		stage->ended_ms = 0;
	model_dirty_stage(e->model, stage);
}

void engine_begin_ending(struct engine *e, struct job *job, enum job_ending how,
			 const char *reason, int64_t now)
{
	if (job->ending != ENDING_NONE || job_ended(job))
		return;
	job->ending = how;
	free(job->reason);
	job->reason = xstrdup(reason);
	model_job_event(e->model, job, now, "%s", reason);
	model_dirty_job(e->model, job);
}

void engine_set_reason(struct instance *inst, const char *reason)
{
	free(inst->reason);
	inst->reason = xstrdup(reason);
	/* A status file has one "reason:" line. */
	for (char *p = inst->reason; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

void engine_requeue(struct engine *e, struct instance *inst)
{
	model_set_state(e->model, inst, INST_QUEUED);
	inst->cancel_requested = false;
	inst->not_before_ms = 0;
	inst->avoid_host = false;
	if ((size_t)inst->index < inst->stage->queued_hint)
		inst->stage->queued_hint = (size_t)inst->index;
}

/* The failure that put a stage past what it tolerates, with on_failure =
 * finish or ignore and others still to run: say once that they go on and
 * the stage will fail. (With stop the roll-up ends the job, which says so;
 * with nothing left, the stage's end does.) */
static void note_failing(struct engine *e, const struct stage *stage, int64_t now)
{
	const struct spec_stage *ss = stage->spec;
	const int *c = stage->counts;
	size_t max = spec_stage_max_failed(ss, stage->ninst);

	if (ss->on_failure == ON_FAILURE_STOP || stage->job->ending != ENDING_NONE || max == SIZE_MAX ||
	    (size_t)c[INST_FAILED] != max + 1 || c[INST_QUEUED] + c[INST_ASSIGNED] + c[INST_RUNNING] == 0)
		return;
	model_job_event(e->model, stage->job, now, "stage %s will fail: %d of %zu instance%s failed "
			"(max_failed = %zu); the others run to the end (on_failure = %s)", ss->name,
			c[INST_FAILED], stage->ninst, stage->ninst == 1 ? "" : "s", max,
			spec_on_failure_name(ss->on_failure));
}

int64_t engine_retry_backoff(const struct engine *e, int failures)
{
	int64_t ms = e->cfg.retry_backoff_ms;

	for (int i = 1; i < failures && ms < ENGINE_RETRY_BACKOFF_MAX_MS; i++)
		ms *= 2;
	return ms < ENGINE_RETRY_BACKOFF_MAX_MS ? ms : ENGINE_RETRY_BACKOFF_MAX_MS;
}

/* The runner could not start inst because its volume did not answer: until
 * its next heartbeat says otherwise the host takes nothing new, so that the
 * instance is not sent straight back to it (a heartbeat within the second
 * then tells the state its mount sees). */
static void host_storage_failed(struct host *h, const char *reason, int64_t now)
{
	size_t n = strlen(API_REASON_STORAGE_UNREACHABLE);

	if (!h || h->storage_down_since > 0)
		return;
	reason += n;
	reason += strspn(reason, ": ");
	h->storage_down_since = now / 1000 > 0 ? now / 1000 : 1;
	model_set_text(&h->storage_reason, *reason ? reason : "an instance could not start");
	log_warnx("host %s: storage unreachable: %s", h->name, h->storage_reason);
}

/* An attempt that ended through no fault of the job's (its runner stopped,
 * its volume was away, its host's window closed): back to the queue, no
 * failure counted. The event reads "stage S instance I <before> HOST<after>;
 * requeued". */
static void requeue_unfailed(struct engine *e, struct instance *inst, const char *why, int64_t now,
			     const char *before, const char *after)
{
	struct job *job = inst->job;

	engine_set_reason(inst, why);
	e->counters.ended[ENDED_REQUEUED]++;
	model_job_event(e->model, job, now, "stage %s instance %d %s %s%s; requeued",
			inst->stage->spec->name, inst->index, before, inst->host_name, after);
	engine_requeue(e, inst);
}

void engine_end_attempt(struct engine *e, struct instance *inst, int code, int sig,
			const char *reason, int64_t now)
{
	const struct spec_stage *ss = inst->stage->spec;
	struct job *job = inst->job;
	char why[512];

	/* The runner's stamp when it sent one (engine_record_report), else now. */
	if (inst->ended_ms <= 0)
		inst->ended_ms = now;
	now = inst->ended_ms;
	inst->exit_code = code;
	inst->signal = sig;
	/* Fair share charges what was reserved for as long as it ran. */
	if (inst->started_ms > 0 && inst->ended_ms > inst->started_ms) {
		double cpu_s = ss->cpus * (double)(inst->ended_ms - inst->started_ms) / 1000.0;

		fairshare_charge(e->fair, job->team, cpu_s, now);
		model_charge(e->model, job, now, cpu_s);
	}
	if (code == 0 && sig == 0 && !reason) {
		model_set_state(e->model, inst, INST_SUCCEEDED);
		e->counters.ended[ENDED_SUCCEEDED]++;
		engine_set_reason(inst, "");
		model_job_event(e->model, job, now, "stage %s instance %d succeeded on %s (%.3f s)",
				ss->name, inst->index, inst->host_name,
				inst->started_ms ? (double)(now - inst->started_ms) / 1000.0 : 0.0);
		return;
	}
	/* The runner stopped it for passing its mem: the reason says it all. */
	if (reason && strncmp(reason, API_REASON_OUT_OF_MEMORY, strlen(API_REASON_OUT_OF_MEMORY)) == 0)
		snprintf(why, sizeof why, "%s", reason);
	else if (sig)
		snprintf(why, sizeof why, "killed by signal %d%s%s", sig, reason ? ": " : "",
			 reason ? reason : "");
	else if (code >= 0)
		snprintf(why, sizeof why, "exit code %d%s%s", code, reason ? ": " : "",
			 reason ? reason : "");
	else
		snprintf(why, sizeof why, "%s", reason ? reason : "failed");
	if (inst->cancel_requested) {
		model_set_state(e->model, inst, INST_CANCELLED);
		e->counters.ended[ENDED_CANCELLED]++;
		engine_set_reason(inst, "cancelled");
		model_job_event(e->model, job, now, "stage %s instance %d cancelled on %s (%s)",
				ss->name, inst->index, inst->host_name, why);
		return;
	}
	if (reason && strcmp(reason, API_REASON_RUNNER_STOPPED) == 0 && job->ending == ENDING_NONE) {
		requeue_unfailed(e, inst, why, now, "stopped with the runner on", "");
		return;
	}
	/* Nor did the volume failing under the runner: it started nothing. */
	if (api_reason_storage_unreachable(reason) && job->ending == ENDING_NONE) {
		int64_t clock = engine_now(e);

		host_storage_failed(inst->host, reason, clock);
		requeue_unfailed(e, inst, why, now, "could not start on", ": storage unreachable");
		/* Not a failure, but not at once either: another host first. */
		inst->not_before_ms = clock + e->cfg.retry_backoff_ms;
		inst->avoid_host = true;
		return;
	}
	/* Not the job's fault either: the host's window closed on it. */
	if (reason && strcmp(reason, API_REASON_WINDOW_CLOSED) == 0 && job->ending == ENDING_NONE) {
		requeue_unfailed(e, inst, why, now, "stopped on", ": its window closed");
		return;
	}
	e->counters.ended[ENDED_FAILED]++;
	inst->failures++;
	engine_set_reason(inst, why);
	if (inst->failures <= ss->retries && job->ending == ENDING_NONE) {
		int64_t wait = engine_retry_backoff(e, inst->failures);
		char in[32];

		if (wait % 1000)
			snprintf(in, sizeof in, "%lld ms", (long long)wait);
		else
			format_duration((uint64_t)(wait / 1000), in, sizeof in);
		model_job_event(e->model, job, now,
				"stage %s instance %d failed on %s (%s); retrying (%d of %d retries) "
				"in %s", ss->name, inst->index, inst->host_name, why, inst->failures,
				ss->retries, in);
		engine_requeue(e, inst);
		/* Never in a tight loop (a failing volume, a broken host): the
		 * retry waits, and goes elsewhere when another host has room. */
		inst->not_before_ms = engine_now(e) + wait;
		inst->avoid_host = true;
		return;
	}
	model_set_state(e->model, inst, INST_FAILED);
	model_job_event(e->model, job, now, "stage %s instance %d failed on %s (%s)",
			ss->name, inst->index, inst->host_name, why);
	note_failing(e, inst->stage, now);
}

void engine_record_report(struct engine *e, struct instance *inst, const struct report *r)
{
	if (r->started_ms > 0)
		inst->started_ms = r->started_ms;
	if (r->kind == REPORT_EXITED && r->ended_ms > 0)
		inst->ended_ms = r->ended_ms;
	if (r->usage.cpu_ms >= 0)
		inst->cpu_ms = r->usage.cpu_ms;
	if (r->usage.max_rss > inst->max_rss)
		inst->max_rss = r->usage.max_rss;
	if (r->usage.rss >= 0)
		inst->rss = r->usage.rss;
	if (r->cpu_list)
		model_set_text(&inst->cpu_list, r->cpu_list);
	if (r->gpu_list)
		model_set_text(&inst->gpu_list, r->gpu_list);
	if (r->slurm_job)
		model_set_short(&inst->slurm_job, r->slurm_job, 64);
	if (r->slurm_state)
		model_set_short(&inst->slurm_state, r->slurm_state, 128);
	model_dirty_instance(e->model, inst);
}

void engine_mark_running(struct engine *e, struct instance *inst, int pid, int64_t now,
			 int64_t mono, const char *how)
{
	struct stage *stage = inst->stage;
	struct job *job = inst->job;
	char pidtext[32] = "";

	if (pid > 0)
		inst->pid = pid;
	inst->confirmed_mono = mono;
	inst->missing_mono = 0;
	model_set_short(&inst->slurm_reason, NULL, 0);
	if (inst->state == INST_RUNNING) {
		model_dirty_instance(e->model, inst);
		return;
	}
	model_set_state(e->model, inst, INST_RUNNING);
	/* The host's stamp of when it reached exec (engine_record_report), else now. */
	if (inst->started_ms <= 0)
		inst->started_ms = now;
	now = inst->started_ms;
	if (!stage->started_ms || stage->started_ms > now) {
		stage->started_ms = now;
		model_dirty_stage(e->model, stage);
	}
	if (!job->started_ms || job->started_ms > now) {
		job->started_ms = now;
		model_dirty_job(e->model, job);
	}
	if (inst->pid > 0)
		snprintf(pidtext, sizeof pidtext, " (pid %d)", inst->pid);
	model_job_event(e->model, job, now, "stage %s instance %d started on %s%s%s",
			stage->spec->name, inst->index, inst->host_name, pidtext, how);
}

