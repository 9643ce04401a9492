#include "request.h"

#include "timing.h"

#include <limits.h>
#include <string.h>

int request_job_open(const struct job *job, int64_t now)
{
	/* Each of these also holds every stage in request_stage_hold(). */
	return !job_ended(job) && job->ending == ENDING_NONE && !job->held && !job->folders_pending &&
	       timing_job_start_ms(job) <= now;
}

long request_room(const struct stage *stage)
{
	int max = stage->spec->max_running;

	if (max <= 0)
		return LONG_MAX;
	return (long)max - (long)(stage->counts[INST_ASSIGNED] + stage->counts[INST_RUNNING]);
}

enum request_hold request_stage_hold(const struct stage *stage, int64_t now, char *buf, size_t len)
{
	const struct job *job = stage->job;

	if (job_ended(job) || (stage->state != STAGE_QUEUED && stage->state != STAGE_RUNNING) ||
	    stage->counts[INST_QUEUED] == 0)
		return REQUEST_NONE_QUEUED;
	if (job->ending != ENDING_NONE)
		return REQUEST_ENDING;
	if (request_room(stage) <= 0)
		return REQUEST_MAX_RUNNING;
	if (job->held)
		return REQUEST_HELD;
	/* The job's start time, then the stage's window: as timing says. */
	if (!timing_stage_open(stage, now, buf, len))
		return REQUEST_NOT_YET;
	if (job->folders_pending)
		return REQUEST_FOLDERS;
	return REQUEST_OPEN;
}

void request_make(const struct instance *inst, double usage, struct placement_req *r)
{
	const struct stage *stage = inst->stage;
	const struct spec_stage *ss = stage->spec;
	const struct job *job = inst->job;

	memset(r, 0, sizeof *r);
	r->group = job->id * SPEC_MAX_STAGES + stage->idx;
	r->order.usage = usage;
	r->order.priority = job->priority;
	r->order.submitted_ms = job->submitted_ms;
	r->order.job = job->id;
	r->order.stage = stage->idx;
	r->order.index = inst->index;
	r->cpus = ss->cpus;
	r->gpus = ss->gpus;
	r->mem = ss->mem;
	r->scratch = ss->scratch;
	r->hosts = (const char *const *)ss->hosts;
	r->nhosts = ss->nhosts;
	r->avoid = inst->avoid_host && *inst->host_name ? inst->host_name : NULL;
	r->host = -1;
	r->walltime_ms = (int64_t)ss->walltime * 1000;
	r->disk = ss->disk;
}
