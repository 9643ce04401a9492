/* What a job's owner does to it: the ctl commands (cancel, hold, release,
 * retry, priority, purge, keep, unkeep) and waiting for its end. */
#include "engine_internal.h"
#include "ctl_commands.h"
#include "ident.h"
#include "lifecycle.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*ctl_fn)(struct engine *e, struct job *job, const char *who, const char *arg,
		      int64_t now, char **err);

static int ctl_cancel(struct engine *e, struct job *job, const char *who, const char *arg,
		      int64_t now, char **err)
{
	char reason[256];

	(void)arg;
	if (job_ended(job)) {
		errno = EBUSY;
		return errprintf(err, "job %lld has already ended (%s)", (long long)job->id,
				 job_state_name(job->state));
	}
	snprintf(reason, sizeof reason, "cancelled by %s", who);
	engine_begin_ending(e, job, ENDING_CANCEL, reason, now);
	engine_update_job(e, job, now);
	return 0;
}

static int ctl_hold(struct engine *e, struct job *job, const char *who, const char *arg,
		    int64_t now, char **err)
{
	(void)arg;
	if (job_ended(job) || job->held) {
		errno = EBUSY;
		return errprintf(err, "job %lld %s", (long long)job->id,
				 job->held ? "is already held" : "has already ended");
	}
	job->held = true;
	model_job_event(e->model, job, now, "held by %s", who);
	model_dirty_job(e->model, job);
	return 0;
}

static int ctl_release(struct engine *e, struct job *job, const char *who, const char *arg,
		       int64_t now, char **err)
{
	(void)arg;
	if (!job->held) {
		errno = EBUSY;
		return errprintf(err, "job %lld is not held", (long long)job->id);
	}
	job->held = false;
	model_job_event(e->model, job, now, "released by %s", who);
	model_dirty_job(e->model, job);
	return 0;
}

static int ctl_retry(struct engine *e, struct job *job, const char *who, const char *arg,
		     int64_t now, char **err)
{
	int requeued = 0;

	(void)arg;
	if (job->state != JOB_FAILED && job->state != JOB_CANCELLED) {
		errno = EBUSY;
		return errprintf(err, "job %lld is %s: retry applies to a failed or cancelled job",
				 (long long)job->id, job_state_name(job->state));
	}
	for (size_t s = 0; s < job->nstages; s++) {
		struct stage *stage = &job->stages[s];

		/* A stage that succeeded with failures it tolerates (max_failed,
		 * ignore) stays as it is: stages after it have used its output. */
		if (stage->state == STAGE_SUCCEEDED)
			continue;
		for (size_t i = 0; i < stage->ninst; i++) {
			struct instance *inst = stage->inst[i];

			if (inst->state != INST_FAILED && inst->state != INST_CANCELLED)
				continue;
			engine_requeue(e, inst);
			inst->failures = 0;
			inst->exit_code = -1;
			inst->signal = 0;
			engine_set_reason(inst, "");
			requeued++;
		}
		if (stage->state == STAGE_FAILED || stage->state == STAGE_CANCELLED)
			engine_set_stage_state(e, stage, STAGE_WAITING, now);
	}
	job->state = JOB_QUEUED;
	job->ending = ENDING_NONE;
	job->ended_ms = 0;
	free(job->reason);
	job->reason = xstrdup("");
	model_activate(e->model, job);
	model_job_event(e->model, job, now, "retry by %s: %d instance%s requeued", who, requeued,
			requeued == 1 ? "" : "s");
	model_dirty_job(e->model, job);
	/* Folders removed since (rm -rf out/S), or never made (the volume was
	 * away): made again on the storage thread before anything of it starts. */
	engine_folders_later(e, job, true);
	engine_update_job(e, job, now);
	return 0;
}

static int ctl_priority(struct engine *e, struct job *job, const char *who, const char *arg,
			int64_t now, char **err)
{
	char *end;
	long value;

	errno = 0;
	value = arg ? strtol(arg, &end, 10) : 0;
	/* The same range as a spec's priority key. */
	if (!arg || end == arg || *end || errno || value < -1000 || value > 1000) {
		errno = EINVAL;
		return errprintf(err, "priority needs a whole number from -1000 to 1000, e.g. 'priority 10'");
	}
	if (job_ended(job)) {
		errno = EBUSY;
		return errprintf(err, "job %lld has already ended", (long long)job->id);
	}
	model_job_event(e->model, job, now, "priority %d -> %ld by %s", job->priority, value, who);
	job->priority = (int)value;
	model_dirty_job(e->model, job);
	return 0;
}

/* Delete the outputs of a finished job, in the clean-up thread. */
static int ctl_purge(struct engine *e, struct job *job, const char *who, const char *arg,
		     int64_t now, char **err)
{
	(void)arg;
	if (!job_ended(job)) {
		errno = EBUSY;
		return errprintf(err, "job %lld is %s: purge deletes the outputs of a finished job "
				 "(cancel it first)", (long long)job->id, job_state_name(job->state));
	}
	if (!e->storage) {
		errno = EBUSY;
		return errprintf(err, "the scheduler has no storage volume");
	}
	model_job_event(e->model, job, now, "purge of the outputs requested by %s", who);
	model_dirty_job(e->model, job);
	lifecycle_purge(e->lifecycle, job->id, who);
	return 0;
}

/* keep and unkeep: protect a job's outputs from the retention clean-up, or not. */
static int set_keep(struct engine *e, struct job *job, const char *who, int64_t now, bool keep)
{
	model_job_event(e->model, job, now, keep ? "outputs kept (no automatic clean-up) by %s" :
			"outputs no longer kept, by %s", who);
	model_dirty_job(e->model, job);
	lifecycle_keep(e->lifecycle, job->id, keep);
	return 0;
}

static int ctl_keep(struct engine *e, struct job *job, const char *who, const char *arg,
		    int64_t now, char **err)
{
	(void)arg;
	(void)err;
	return set_keep(e, job, who, now, true);
}

static int ctl_unkeep(struct engine *e, struct job *job, const char *who, const char *arg,
		      int64_t now, char **err)
{
	(void)arg;
	(void)err;
	return set_keep(e, job, who, now, false);
}

/* The handler of each command of ctl_job_table, by its index. */
static const ctl_fn job_handlers[CTL_JOB_COMMANDS] = {
	[CTL_JOB_CANCEL] = ctl_cancel,
	[CTL_JOB_HOLD] = ctl_hold,
	[CTL_JOB_RELEASE] = ctl_release,
	[CTL_JOB_RETRY] = ctl_retry,
	[CTL_JOB_PRIORITY] = ctl_priority,
	[CTL_JOB_PURGE] = ctl_purge,
	[CTL_JOB_KEEP] = ctl_keep,
	[CTL_JOB_UNKEEP] = ctl_unkeep,
};

char *engine_ctl_commands(const char *last_sep)
{
	return ctl_list(&ctl_job_table, last_sep);
}

/* The index in ctl_job_table of the command of line, or -1 with errno EINVAL
 * and *err. */
static int job_command_of(const struct ctl_line *line, char **err)
{
	int i = ctl_find(&ctl_job_table, line->word);
	const struct ctl_command *cmd = i >= 0 ? &ctl_job_table.entries[i] : NULL;
	char *list;

	if (cmd && ctl_arity_ok(cmd, line))
		return i;
	errno = EINVAL;
	if (cmd) {
		errprintf(err, "'%s' %s", line->word, cmd->arg ?
			  "takes one argument, e.g. 'priority 10'" : "takes no argument");
		return -1;
	}
	list = ctl_list(&ctl_job_table, ", ");
	errprintf(err, "unknown command '%s': valid commands are %s", line->word, list);
	free(list);
	return -1;
}

int engine_ctl_check(const char *command, char **err)
{
	struct ctl_line line;

	ctl_split(command, &line);
	return job_command_of(&line, err) < 0 ? -1 : 0;
}

int engine_ctl(struct engine *e, const struct caller *who, int64_t id, const char *command,
	       char **err)
{
	struct ctl_line line;
	struct job *job;
	char *name = NULL;
	int ret = -1, saved, i;

	ctl_split(command, &line);
	i = job_command_of(&line, err);
	if (i < 0)
		return -1;
	name = ident_cache_user_name(e->ident, who->uid);
	pthread_mutex_lock(&e->lock);
	job = engine_job_get(e, id);
	if (!job) {
		if (errno == ENOENT)
			errprintf(err, "no job %lld", (long long)id);
		else
			errprintf(err, "job %lld cannot be read from the database", (long long)id);
		goto out;
	}
	if (who->uid != 0 && who->uid != job->uid && !engine_is_admin(e, who)) {
		errno = EACCES;
		errprintf(err, "job %lld belongs to %s: only they, root or the admin group may %s it",
			  (long long)id, job->user, line.word);
		goto out;
	}
	if (job_handlers[i](e, job, name, ctl_job_table.entries[i].arg ? line.arg : NULL,
			    engine_now(e), err) < 0)
		goto out;
	if (engine_flush(e, err) < 0)
		goto out;
	engine_kick(e);
	ret = 0;
out:
	engine_unlock(e);
	saved = errno;
	free(name);
	errno = saved;
	return ret;
}

/* ---- wait ---- */

int engine_wait(struct engine *e, int64_t id, const char *stage_name, int64_t timeout_ms,
		int *done, const char **state, char **err)
{
	struct timespec until = time_mono_deadline(timeout_ms > 0 ? timeout_ms : 0);
	struct stage *stage = NULL;
	struct job *job;
	int ret = -1, rc;

	pthread_mutex_lock(&e->lock);
	if (!model_job(e->model, id)) {
		bool ended = false;

		/* Not in memory: it ended long ago (or there is none), and the
		 * store is read outside the lock. Brought back by a retry
		 * meanwhile, it is waited for below. */
		pthread_mutex_unlock(&e->lock);
		if (engine_job_state(e, id, stage_name, state, &ended, err) < 0)
			return -1;
		if (ended) {
			*done = 1;
			return 0;
		}
		pthread_mutex_lock(&e->lock);
	}
	job = engine_job_get(e, id);
	if (!job) {
		if (errno == ENOENT)
			errprintf(err, "no job %lld", (long long)id);
		else
			errprintf(err, "job %lld cannot be read from the database", (long long)id);
		goto out;
	}
	if (stage_name) {
		int idx = spec_stage_index(job->spec, stage_name);

		if (idx < 0) {
			errno = ENOENT;
			errprintf(err, "job %lld has no stage '%s'", (long long)id, stage_name);
			goto out;
		}
		stage = &job->stages[idx];
	}
	/* A stage of a job that has ended is over too, whatever state it was
	 * left in: nobody waits for it forever. */
	for (;;) {
		*done = job_ended(job) || (stage && stage_ended(stage));
		if (*done || e->stopping)
			break;
		rc = pthread_cond_timedwait(&e->changed, &e->lock, &until);
		/* Finished jobs leave memory (engine_history.c): look again. */
		job = engine_job_get(e, id);
		if (!job) {
			errno = EIO;
			errprintf(err, "job %lld cannot be read from the database", (long long)id);
			goto out;
		}
		stage = stage_name ? &job->stages[spec_stage_index(job->spec, stage_name)] : NULL;
		if (rc == ETIMEDOUT) {
			*done = job_ended(job) || (stage && stage_ended(stage));
			break;
		}
	}
	*state = stage ? stage_state_name(stage->state) : job_state_name(job->state);
	ret = 0;
out:
	pthread_mutex_unlock(&e->lock);
	return ret;
}
