/* The views of jobs, stages and instances: their status, events, why and
 * JSON (see views.h). Hosts and the cluster are in views_hosts.c. */
#include "views.h"
#include "views_exec.h"
#include "views_internal.h"
#include "api_client.h"
#include "escape.h"
#include "proto.h"
#include "stage_progress.h"
#include "timewin.h"
#include "timing.h"

#include "units.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A queued instance that may not be placed yet, as why and status say it:
 * "retry 2 of 3 waits until 04:41:07 (back-off after a failure on host vm)". */
static void backoff_text(const struct instance *inst, int64_t now, char *buf, size_t len)
{
	char at[64];

	clock_time(inst->not_before_ms, now, at, sizeof at);
	if (inst->failures > 0 && !api_reason_storage_unreachable(inst->reason))
		snprintf(buf, len, "retry %d of %d waits until %s (back-off after a failure on host %s)",
			 inst->failures, inst->stage->spec->retries, at, inst->host_name);
	else
		snprintf(buf, len, "waits until %s (its start failed on host %s: storage unreachable)",
			 at, inst->host_name);
}

/* How many of a stage's queued instances back off (not_before_ms in the
 * future), and the first of them to be due. */
static int backing_off(const struct stage *stage, int64_t now, const struct instance **first)
{
	int n = 0;

	*first = NULL;
	if (stage->counts[INST_QUEUED] == 0)
		return 0;
	for (size_t i = stage->queued_hint; i < stage->ninst; i++) {
		const struct instance *inst = stage->inst[i];

		if (inst->state != INST_QUEUED || inst->not_before_ms <= now)
			continue;
		n++;
		if (!*first || inst->not_before_ms < (*first)->not_before_ms)
			*first = inst;
	}
	return n;
}

/* ---- JSON ---- */

json_t *views_assignment_json(const struct instance *inst)
{
	const struct spec_stage *ss = inst->stage->spec;
	const struct job *job = inst->job;
	char *point = ss->nmatrix ? spec_point_text(ss, inst->index, ",") : NULL;
	char **env = ss->nmatrix ? spec_point_env(ss, inst->index) : NULL;
	/* Borrows the model's strings (but the point's): never destroyed. */
	const struct assignment a = {
		.id = inst->id, .attempt = inst->attempt, .job = job->id,
		.stage = ss->name, .index = inst->index, .item = inst->item, .point = point ? point : "",
		.run = ss->run ? ss->run : "", .cpus = ss->cpus, .mem = ss->mem,
		.workdir = job->spec->workdir && strcmp(job->spec->workdir, "out") != 0 ?
			   job->spec->workdir : "",
		.workdir_fallback = job->spec->workdir_submitted,
		.scratch = ss->scratch, .walltime_s = ss->walltime, .progress_files = ss->progress_files,
		.env = env ? env : ss->env, .nenv = env ? ss->nenv + ss->nmatrix + 1 : ss->nenv,
		.uid = job->uid, .gid = job->gid,
		.user = job->user, .groups = job->groups, .ngroups = job->ngroups,
		.gpus = ss->gpus, .slurm = ss->slurm,
	};
	json_t *json = assignment_to_json(&a);

	if (env)
		for (size_t i = 0; i < a.nenv; i++)
			free(env[i]);
	free(env);
	free(point);
	return json;
}

static json_t *counts_json(const struct stage *stage)
{
	int waiting = stage->state == STAGE_WAITING ? stage->counts[INST_QUEUED] : 0;

	return json_pack("{s:i,s:i,s:i,s:i,s:i,s:i}",
			 "waiting", waiting,
			 "queued", stage->counts[INST_QUEUED] - waiting,
			 "running", stage->counts[INST_RUNNING] + stage->counts[INST_ASSIGNED],
			 "succeeded", stage->counts[INST_SUCCEEDED],
			 "failed", stage->counts[INST_FAILED],
			 "cancelled", stage->counts[INST_CANCELLED]);
}

/* on_failure, max_failed (the spec's: null, N or "P%"), max_running (0 = no
 * limit) and, when some failed, "failures" (views_stage_failures). */
static void failure_json(const struct stage *stage, json_t *json)
{
	const struct spec_stage *ss = stage->spec;
	json_t *max = json_null();
	char text[512];

	if (ss->max_failed >= 0)
		max = ss->max_failed_pct ? json_sprintf("%lld%%", ss->max_failed) : json_integer(ss->max_failed);
	views_stage_failures(stage, text, sizeof text);
	json_object_set_new(json, "on_failure", json_string(spec_on_failure_name(ss->on_failure)));
	json_object_set_new(json, "max_failed", max);
	json_object_set_new(json, "max_running", json_integer(ss->max_running));
	json_object_set_new(json, "failures", *text ? json_string(text) : json_null());
}

static json_t *stage_json(const struct stage *stage, int64_t now)
{
	const struct spec_stage *ss = stage->spec;
	const struct timewin *w = timing_stage_window(stage);
	json_t *foreach = json_null(), *json;
	struct stage_progress p;

	if (ss->foreach_stage)
		foreach = json_sprintf("%s/%s", ss->foreach_stage, ss->foreach_glob ? ss->foreach_glob : "*");
	stage_progress_get(stage, now, &p);
	json = json_pack("{s:s,s:s,s:o,s:o,s:i,s:I,s:I,s:I,s:I,s:i,s:I,s:o,s:o,s:I,s:I}",
			 "name", ss->name, "state", stage_state_name(stage->state),
			 "after", strings_json(ss->after, ss->nafter), "foreach", foreach,
			 "cpus", ss->cpus, "mem", (json_int_t)ss->mem, "disk", (json_int_t)ss->disk,
			 "scratch", (json_int_t)ss->scratch, "walltime_s", (json_int_t)ss->walltime,
			 "retries", ss->retries, "instances", (json_int_t)stage->ninst,
			 "hosts", strings_json(ss->hosts, ss->nhosts),
			 "counts", counts_json(stage),
			 "started_ms", (json_int_t)stage->started_ms,
			 "ended_ms", (json_int_t)stage->ended_ms);
	if (json) {
		json_object_set_new(json, "window", w ? json_string(timewin_text(w)) : json_null());
		json_object_set_new(json, "progress", stage_progress_json(&p));
		failure_json(stage, json);
	}
	return json;
}

json_t *views_job_json(const struct job *job, int64_t now)
{
	json_t *after = json_array(), *stages = json_array(), *json;

	for (size_t i = 0; i < job->spec->nafter_jobs; i++)
		json_array_append_new(after, json_integer(job->spec->after_jobs[i]));
	for (size_t s = 0; s < job->nstages; s++)
		json_array_append_new(stages, stage_json(&job->stages[s], now));
	json = json_pack("{s:I,s:s,s:s,s:I,s:I,s:s,s:s,s:i,s:s,s:b,s:s,s:o,s:I,s:I,s:I,s:o}",
			 "id", (json_int_t)job->id, "name", job->name, "spec_file", job->spec_file,
			 "uid", (json_int_t)job->uid, "gid", (json_int_t)job->gid,
			 "user", job->user, "team", job->team, "priority", job->priority,
			 "state", job_state_name(job->state), "held", (int)job->held,
			 "reason", job->reason, "after", after,
			 "submitted_ms", (json_int_t)job->submitted_ms,
			 "started_ms", (json_int_t)job->started_ms,
			 "ended_ms", (json_int_t)job->ended_ms, "stages", stages);
	if (json) {
		json_object_set_new(json, "start_ms", json_integer(timing_job_start_ms(job)));
		json_object_set_new(json, "window", job->spec->window ? json_string(job->spec->window)
								      : json_null());
		json_object_set_new(json, "notify", strings_json(job->spec->notify, job->spec->nnotify));
	}
	return json;
}

/* ---- text ---- */

/* How many failed indices views_stage_failures() lists before "and N more". */
#define FAILURES_LISTED 10

void views_stage_failures(const struct stage *stage, char *buf, size_t len)
{
	const struct instance *first = NULL;
	bool same = true;
	int nfailed = stage->counts[INST_FAILED], listed = 0, n;

	buf[0] = '\0';
	if (nfailed <= 0)
		return;
	n = snprintf(buf, len, "instance%s", nfailed == 1 ? "" : "s");
	for (size_t i = 0; i < stage->ninst && n >= 0 && (size_t)n < len; i++) {
		const struct instance *inst = stage->inst[i];

		if (inst->state != INST_FAILED)
			continue;
		if (!first)
			first = inst;
		else if (strcmp(first->reason, inst->reason) != 0)
			same = false;
		if (listed < FAILURES_LISTED)
			n += snprintf(buf + n, len - (size_t)n, "%s %d", listed ? "," : "", inst->index);
		listed++;
	}
	if (n >= 0 && (size_t)n < len && nfailed > FAILURES_LISTED)
		n += snprintf(buf + n, len - (size_t)n, " and %d more", nfailed - FAILURES_LISTED);
	if (n < 0 || (size_t)n >= len || !first)
		return;
	if (same)
		snprintf(buf + n, len - (size_t)n, " failed (%s)", first->reason);
	else
		snprintf(buf + n, len - (size_t)n, " failed (instance %d: %s; the others' reasons differ)",
			 first->index, first->reason);
}

void views_stage_summary(const struct stage *stage, char *buf, size_t len)
{
	const int *c = stage->counts;
	const struct spec_stage *ss = stage->spec;

	if (stage->state == STAGE_SUCCEEDED && c[INST_FAILED] > 0) {
		/* Failures it tolerates (max_failed, on_failure = ignore). */
		snprintf(buf, len, "succeeded, %d of %zu failed", c[INST_FAILED], stage->ninst);
	} else if (stage->state == STAGE_SUCCEEDED) {
		snprintf(buf, len, "succeeded %d/%zu", c[INST_SUCCEEDED], stage->ninst);
	} else if (stage->state == STAGE_WAITING && !stage->expanded) {
		snprintf(buf, len, "waiting (one instance per entry of %s/%s)", ss->foreach_stage,
			 ss->foreach_glob ? ss->foreach_glob : "*");
	} else if (stage->state == STAGE_WAITING) {
		snprintf(buf, len, "waiting 0/%zu", stage->ninst);
	} else {
		int n = snprintf(buf, len, "%s (%d running, %d done, %d queued, %d failed",
				 stage_state_name(stage->state), c[INST_RUNNING] + c[INST_ASSIGNED],
				 c[INST_SUCCEEDED], c[INST_QUEUED], c[INST_FAILED]);

		if (n >= 0 && (size_t)n < len && c[INST_CANCELLED])
			n += snprintf(buf + n, len - (size_t)n, ", %d cancelled", c[INST_CANCELLED]);
		if (n >= 0 && (size_t)n < len)
			snprintf(buf + n, len - (size_t)n, " of %zu)", stage->ninst);
	}
}

char *views_job_status(const struct job *job, int64_t now)
{
	int64_t start = timing_job_start_ms(job);
	struct stage_progress p;
	struct text t;
	char a[64], b[64], c[64], line[256];

	text_open(&t);
	fprintf(t.f, "id: %lld\nname: %s\nowner: %s\nteam: %s\nstate: %s\n", (long long)job->id,
		esc(&t, job->name), esc(&t, job->user), esc(&t, job->team), job_state_name(job->state));
	fprintf(t.f, "held: %s\npriority: %d\n", job->held ? "yes" : "no", job->priority);
	if (*job->reason)
		fprintf(t.f, "reason: %s\n", esc(&t, job->reason));
	if (job->spec->nafter_jobs) {
		fprintf(t.f, "after:");
		for (size_t i = 0; i < job->spec->nafter_jobs; i++)
			fprintf(t.f, " %lld", (long long)job->spec->after_jobs[i]);
		fprintf(t.f, "\n");
	}
	fprintf(t.f, "spec: %s\nsubmitted: %s\nstarted: %s\nended: %s\n", esc(&t, job->spec_file),
		iso(job->submitted_ms, a, sizeof a), iso(job->started_ms, b, sizeof b),
		iso(job->ended_ms, c, sizeof c));
	if (!job->spec->workdir || strcmp(job->spec->workdir, "out") == 0)
		fprintf(t.f, "workdir: each stage's output folder\n");
	else if (job->spec->workdir_submitted)
		fprintf(t.f, "workdir: %s (where it was submitted from; a host without it: the output "
			"folder)\n", esc(&t, job->spec->workdir));
	else
		fprintf(t.f, "workdir: %s\n", esc(&t, job->spec->workdir));
	if (start > 0) {
		timing_when(start, now, line, sizeof line);
		fprintf(t.f, "start: %s\n", line);
	}
	if (job->spec->window)
		fprintf(t.f, "window: %s\n", esc(&t, job->spec->window));
	if (job->folders_wait && !job_ended(job))
		fprintf(t.f, "folders: waiting for the storage volume: %s\n", esc(&t, job->folders_wait));
	for (size_t s = 0; s < job->nstages; s++) {
		views_stage_summary(&job->stages[s], line, sizeof line);
		fprintf(t.f, "stage %s: %s\n", esc(&t, job->stages[s].spec->name), esc(&t, line));
		/* Progress while it matters: a running stage, or one that ended with
		 * reports (its last figures). */
		stage_progress_get(&job->stages[s], now, &p);
		stage_progress_format(&p, now, line, sizeof line);
		if (*line)
			fprintf(t.f, "progress %s: %s\n", esc(&t, job->stages[s].spec->name), line);
		{
			const struct instance *first;
			int n = backing_off(&job->stages[s], now, &first);

			if (n > 0) {
				backoff_text(first, now, line, sizeof line);
				fprintf(t.f, "back-off %s: %d instance%s wait%s; instance %d: %s\n",
					esc(&t, job->stages[s].spec->name), n, n == 1 ? "" : "s",
					n == 1 ? "s" : "", first->index, esc(&t, line));
			}
		}
	}
	return text_close(&t);
}

static int event_order(const void *a, const void *b)
{
	const struct event *x = *(const struct event *const *)a, *y = *(const struct event *const *)b;

	if (x->ms != y->ms)
		return x->ms < y->ms ? -1 : 1;
	return x < y ? -1 : x > y; /* the same millisecond: as they were recorded */
}

/* In time order: an instance's start is stamped by its runner and may
 * arrive after a later event of the scheduler's (a cancel) was recorded. */
char *views_job_events(const struct job *job)
{
	const struct event **order = xcalloc(job->nevents ? job->nevents : 1, sizeof *order);
	struct text t;
	char stamp[64];

	for (size_t e = 0; e < job->nevents; e++)
		order[e] = &job->events[e];
	qsort(order, job->nevents, sizeof *order, event_order);
	text_open(&t);
	for (size_t e = 0; e < job->nevents; e++)
		fprintf(t.f, "%s  %s\n", iso_ms(order[e]->ms, stamp, sizeof stamp), esc(&t, order[e]->text));
	free(order);
	return text_close(&t);
}

/* max_failed as the stage applies it: "0", "all", "5" or "10% (20 of 200)". */
static void max_failed_text(const struct stage *stage, char *buf, size_t len)
{
	const struct spec_stage *ss = stage->spec;
	size_t max = spec_stage_max_failed(ss, stage->ninst);

	if (ss->max_failed_pct && ss->max_failed >= 0)
		snprintf(buf, len, "%lld%% (%zu of %zu)", ss->max_failed, max, stage->ninst);
	else if (max == SIZE_MAX)
		snprintf(buf, len, "all");
	else
		snprintf(buf, len, "%zu", max);
}

char *views_stage_status(const struct stage *stage, int64_t now)
{
	const struct spec_stage *ss = stage->spec;
	const int *c = stage->counts;
	int waiting = stage->state == STAGE_WAITING ? c[INST_QUEUED] : 0;
	const struct timewin *w = timing_stage_window(stage);
	struct stage_progress p;
	struct text t;
	char a[64], b[64], line[256];

	text_open(&t);
	fprintf(t.f, "job: %lld\nstage: %s\nstate: %s\n", (long long)stage->job->id, esc(&t, ss->name),
		stage_state_name(stage->state));
	fprintf(t.f, "after:");
	for (size_t i = 0; i < ss->nafter; i++)
		fprintf(t.f, " %s", esc(&t, ss->after[i]));
	fprintf(t.f, "\n");
	if (ss->foreach_stage)
		fprintf(t.f, "foreach: %s/%s\n", esc(&t, ss->foreach_stage),
			esc(&t, ss->foreach_glob ? ss->foreach_glob : "*"));
	for (size_t i = 0; i < ss->nmatrix; i++) {
		fprintf(t.f, "matrix.%s:", esc(&t, ss->matrix[i].name));
		for (size_t v = 0; v < ss->matrix[i].nvalues; v++)
			fprintf(t.f, "%s %s", v ? "," : "", esc(&t, ss->matrix[i].values[v]));
		fprintf(t.f, "\n");
	}
	if (ss->nmatrix)
		fprintf(t.f, "points: %zu\n", spec_stage_points(ss));
	fprintf(t.f, "run: %s\n", esc(&t, ss->run));
	fprintf(t.f, "cpus: %d\nmem: %s\n", ss->cpus, size(ss->mem, a, sizeof a));
	fprintf(t.f, "disk: %s\nscratch: %s\n", size(ss->disk, a, sizeof a), size(ss->scratch, b, sizeof b));
	format_duration(ss->walltime, a, sizeof a);
	fprintf(t.f, "walltime: %s\nretries: %d\n", ss->walltime ? a : "none", ss->retries);
	max_failed_text(stage, a, sizeof a);
	fprintf(t.f, "on_failure: %s\nmax_failed: %s\n", spec_on_failure_name(ss->on_failure), a);
	if (ss->max_running > 0)
		fprintf(t.f, "max_running: %d\n", ss->max_running);
	else
		fprintf(t.f, "max_running: none\n");
	fprintf(t.f, "hosts:");
	for (size_t i = 0; i < ss->nhosts; i++)
		fprintf(t.f, " %s", esc(&t, ss->hosts[i]));
	fprintf(t.f, "\n");
	fprintf(t.f, "instances: %zu\nwaiting: %d\nqueued: %d\nrunning: %d\nsucceeded: %d\n"
		"failed: %d\ncancelled: %d\n", stage->ninst, waiting, c[INST_QUEUED] - waiting,
		c[INST_RUNNING] + c[INST_ASSIGNED], c[INST_SUCCEEDED], c[INST_FAILED],
		c[INST_CANCELLED]);
	views_stage_failures(stage, line, sizeof line);
	if (*line)
		fprintf(t.f, "failures: %s\n", esc(&t, line));
	fprintf(t.f, "started: %s\nended: %s\n", iso(stage->started_ms, a, sizeof a),
		iso(stage->ended_ms, b, sizeof b));
	if (w)
		fprintf(t.f, "window: %s\n", timewin_text(w));
	if (ss->progress_files)
		fprintf(t.f, "progress from: files:%llu\n", (unsigned long long)ss->progress_files);
	stage_progress_get(stage, now, &p);
	if (p.known) {
		stage_progress_format(&p, now, line, sizeof line);
		line[strcspn(line, ",")] = '\0';
		fprintf(t.f, "progress: %s\n", line);
		if (p.rate_per_s > 0)
			fprintf(t.f, "rate: %s/s\n", stage_progress_rate(p.rate_per_s, line, sizeof line));
		if (p.eta_ms > 0) {
			timing_when(p.eta_ms, now, line, sizeof line);
			fprintf(t.f, "estimated end: %s\n", line);
		}
	}
	return text_close(&t);
}

char *views_instance_status(const struct instance *inst)
{
	struct text t;
	char a[64];

	text_open(&t);
	fprintf(t.f, "job: %lld\nstage: %s\nindex: %d\nid: %lld\n", (long long)inst->job->id,
		esc(&t, inst->stage->spec->name), inst->index, (long long)inst->id);
	if (*inst->item)
		fprintf(t.f, "item: %s\n", esc(&t, inst->item));
	if (inst->stage->spec->nmatrix) {
		char *point = spec_point_text(inst->stage->spec, inst->index, " ");

		fprintf(t.f, "point: %s\n", esc(&t, point));
		free(point);
	}
	fprintf(t.f, "state: %s\nattempt: %d\n", inst_state_name(inst->state), inst->attempt);
	instance_progress_format(inst, a, sizeof a);
	if (*a)
		fprintf(t.f, "progress: %s\n", a);
	if (*inst->host_name)
		fprintf(t.f, "host: %s\n", esc(&t, inst->host_name));
	views_instance_exec_text(t.f, inst);
	if (inst->pid > 0)
		fprintf(t.f, "pid: %d\n", inst->pid);
	if (inst->exit_code >= 0)
		fprintf(t.f, "exit code: %d\n", inst->exit_code);
	if (inst->signal > 0)
		fprintf(t.f, "signal: %d\n", inst->signal);
	if (*inst->reason)
		fprintf(t.f, "reason: %s\n", esc(&t, inst->reason));
	if (inst->cancel_requested && (inst->state == INST_ASSIGNED || inst->state == INST_RUNNING))
		fprintf(t.f, "cancel: requested\n");
	if (inst->state == INST_QUEUED && inst->not_before_ms > 0) {
		char line[256];

		/* Its own time: the instance's view has no clock to say "today". */
		backoff_text(inst, 0, line, sizeof line);
		fprintf(t.f, "back-off: %s\n", esc(&t, line));
	}
	fprintf(t.f, "assigned: %s\n", iso_ms(inst->assigned_ms, a, sizeof a));
	fprintf(t.f, "started: %s\n", iso_ms(inst->started_ms, a, sizeof a));
	fprintf(t.f, "ended: %s\n", iso_ms(inst->ended_ms, a, sizeof a));
	if (inst->started_ms > 0 && inst->ended_ms >= inst->started_ms)
		fprintf(t.f, "duration: %.3f s\n", (double)(inst->ended_ms - inst->started_ms) / 1000.0);
	if (inst->cpu_ms >= 0)
		fprintf(t.f, "cpu: %.3f s\n", (double)inst->cpu_ms / 1000.0);
	if (inst->max_rss >= 0)
		fprintf(t.f, "max mem: %s\n", size((uint64_t)inst->max_rss, a, sizeof a));
	if ((inst->state == INST_ASSIGNED || inst->state == INST_RUNNING) && inst->rss >= 0)
		fprintf(t.f, "mem: %s\n", size((uint64_t)inst->rss, a, sizeof a));
	if (*inst->cpu_list)
		fprintf(t.f, "cores: %s\n", esc(&t, inst->cpu_list));
	if (*inst->gpu_list)
		fprintf(t.f, "gpus: %s\n", esc(&t, inst->gpu_list));
	return text_close(&t);
}

/* A number that is -1 when unknown, as JSON null then. */
static json_t *known_or_null(int64_t v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

json_t *views_instance_json(const struct instance *inst)
{
	json_t *json;

	json = json_pack("{s:I,s:s,s:i,s:I,s:s,s:s,s:i,s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:s,s:s,s:s}",
			 "job", (json_int_t)inst->job->id, "stage", inst->stage->spec->name,
			 "index", inst->index, "id", (json_int_t)inst->id, "item", inst->item,
			 "state", inst_state_name(inst->state), "attempt", inst->attempt,
			 "host", inst->host_name,
			 "assigned_ms", known_or_null(inst->assigned_ms > 0 ? inst->assigned_ms : -1),
			 "started_ms", known_or_null(inst->started_ms > 0 ? inst->started_ms : -1),
			 "ended_ms", known_or_null(inst->ended_ms > 0 ? inst->ended_ms : -1),
			 "cpu_ms", known_or_null(inst->cpu_ms),
			 "max_rss_bytes", known_or_null(inst->max_rss),
			 "exit_code", known_or_null(inst->exit_code),
			 "signal", inst->signal > 0 ? json_integer(inst->signal) : json_null(),
			 "reason", inst->reason, "cpu_list", inst->cpu_list, "gpu_list", inst->gpu_list);
	if (json && inst->pid > 0)
		json_object_set_new(json, "pid", json_integer(inst->pid));
	if (json && inst->stage->spec->nmatrix) {
		char *point = spec_point_text(inst->stage->spec, inst->index, " ");

		json_object_set_new(json, "point", json_string(point));
		free(point);
	}
	if (json)
		json_object_set_new(json, "slurm_job", inst->slurm_job ? json_string(inst->slurm_job) : json_null());
	if (json)
		json_object_set_new(json, "slurm_state", inst->slurm_state ? json_string(inst->slurm_state) : json_null());
	if (json)
		json_object_set_new(json, "not_before_ms", inst->state == INST_QUEUED &&
				    inst->not_before_ms > 0 ? json_integer(inst->not_before_ms) : json_null());
	return json;
}

/* The placement request for a queued instance, as the pass would make it. */
static void instance_req(const struct instance *inst, struct placement_req *r)
{
	const struct spec_stage *ss = inst->stage->spec;

	memset(r, 0, sizeof *r);
	r->cpus = ss->cpus;
	r->gpus = ss->gpus;
	r->mem = ss->mem;
	r->scratch = ss->scratch;
	r->hosts = (const char *const *)ss->hosts;
	r->nhosts = ss->nhosts;
	r->host = -1;
	r->walltime_ms = (int64_t)ss->walltime * 1000;
	r->order.job = inst->job->id;
}

/* A stage past the failures it tolerates that still runs (on_failure =
 * finish, or ignore past max_failed): it will fail. */
static void why_failing(struct text *t, const struct stage *stage)
{
	const struct spec_stage *ss = stage->spec;
	size_t max = spec_stage_max_failed(ss, stage->ninst);
	char line[512];

	if ((size_t)stage->counts[INST_FAILED] <= max || ss->on_failure == ON_FAILURE_STOP ||
	    stage->job->ending != ENDING_NONE)
		return;
	views_stage_failures(stage, line, sizeof line);
	fprintf(t->f, "  %s, more than max_failed = %zu: the others run to the end (on_failure = %s), "
		"then the stage fails\n", esc(t, line), max, spec_on_failure_name(ss->on_failure));
}

/* The queued instances that back off, the first few by name: until then
 * no host gets them, whatever the lines after say of the hosts. */
#define BACKOFF_LISTED 5

static void why_backoff(struct text *t, const struct stage *stage, int64_t now)
{
	const struct instance *first;
	int n = backing_off(stage, now, &first), shown = 0;
	char line[256];

	if (n == 0)
		return;
	for (size_t i = stage->queued_hint; i < stage->ninst && shown < BACKOFF_LISTED; i++) {
		const struct instance *inst = stage->inst[i];

		if (inst->state != INST_QUEUED || inst->not_before_ms <= now)
			continue;
		backoff_text(inst, now, line, sizeof line);
		fprintf(t->f, "  instance %d: %s\n", inst->index, esc(t, line));
		shown++;
	}
	if (n > shown)
		fprintf(t->f, "  and %d more instance%s back off\n", n - shown, n - shown == 1 ? "" : "s");
	if (n == stage->counts[INST_QUEUED])
		fprintf(t->f, "  when the back-off ends:\n");
}

static void why_stage(struct text *t, struct model *m, const struct stage *stage,
		      const struct placement_host *hosts, size_t nhosts, int64_t now)
{
	const struct job *job = stage->job;
	const struct spec_stage *ss = stage->spec;
	const int *c = stage->counts;
	const struct instance *next = NULL;
	struct placement_req req;
	char line[512];

	(void)m;
	if (stage_ended(stage)) {
		fprintf(t->f, "stage %s: %s\n", esc(t, ss->name), stage_state_name(stage->state));
		return;
	}
	if (stage->state == STAGE_WAITING) {
		int first = 1;

		fprintf(t->f, "stage %s: waiting for", esc(t, ss->name));
		for (size_t i = 0; i < ss->nafter; i++) {
			int up = spec_stage_index(job->spec, ss->after[i]);

			if (up >= 0 && job->stages[up].state == STAGE_SUCCEEDED)
				continue;
			fprintf(t->f, "%s stage %s", first ? "" : ",", esc(t, ss->after[i]));
			first = 0;
		}
		for (size_t i = 0; i < job->spec->nafter_jobs; i++) {
			const struct job *dep = model_job(m, job->spec->after_jobs[i]);

			if (dep && dep->state == JOB_SUCCEEDED)
				continue;
			fprintf(t->f, "%s job %lld (%s)", first ? "" : ",",
				(long long)job->spec->after_jobs[i], dep ? job_state_name(dep->state) : "?");
			first = 0;
		}
		fprintf(t->f, "%s\n", first ? (job->held ? " release (held)" : " the next pass") : "");
		return;
	}
	if (c[INST_QUEUED] == 0) {
		fprintf(t->f, "stage %s: %d running, nothing queued\n", esc(t, ss->name),
			c[INST_RUNNING] + c[INST_ASSIGNED]);
		views_why_exec(t->f, stage);
		why_failing(t, stage);
		return;
	}
	fprintf(t->f, "stage %s: %d queued, %d running\n", esc(t, ss->name), c[INST_QUEUED],
		c[INST_RUNNING] + c[INST_ASSIGNED]);
	views_why_exec(t->f, stage);
	why_failing(t, stage);
	if (ss->max_running > 0 && c[INST_RUNNING] + c[INST_ASSIGNED] >= ss->max_running &&
	    job->ending == ENDING_NONE) {
		fprintf(t->f, "  max_running = %d: the next starts when one of those running ends\n",
			ss->max_running);
		return;
	}
	if (job->held) {
		fprintf(t->f, "  held: nothing new starts until 'release' is written to ctl\n");
		return;
	}
	/* A start time or window says more than the folders, which are made in
	 * moments: it is what a user reading why just after cp wants to see. */
	if (!timing_stage_open(stage, now, line, sizeof line)) {
		fprintf(t->f, "  %s\n", esc(t, line));
		return;
	}
	if (job->folders_pending) {
		fprintf(t->f, "  nothing of it starts before its folders are made (above)\n");
		return;
	}
	for (size_t i = stage->queued_hint; i < stage->ninst && !next; i++)
		if (stage->inst[i]->state == INST_QUEUED)
			next = stage->inst[i];
	if (!next)
		return;
	instance_req(next, &req);
	if (placement_never_fits(hosts, nhosts, &req, line, sizeof line)) {
		fprintf(t->f, "  %s\n", esc(t, line));
		if (nhosts == 0)
			return;
	}
	if (next->failures > 0 && *next->reason)
		fprintf(t->f, "  instance %d is retried after attempt %d: %s\n", next->index,
			next->attempt, esc(t, next->reason));
	why_backoff(t, stage, now);
	for (size_t h = 0; h < nhosts; h++) {
		const struct placement_host *ph = &hosts[h];
		enum placement_verdict v = placement_check(ph, &req);

		placement_explain(ph, &req, line, sizeof line);
		if (ph->up && v != PLACE_CPU_LIVE && v != PLACE_MEM_LIVE)
			fprintf(t->f, "  %s (live cpu %.0f%%: parsa %.0f%%, outside %.0f%%; mem %.0f%%: "
				"parsa %.0f%%, outside %.0f%%)\n", esc(t, line), ph->cpu_pct,
				share(ph->cpu_pct, ph->outside_cpu_pct), ph->outside_cpu_pct, ph->mem_pct,
				share(ph->mem_pct, ph->outside_mem_pct), ph->outside_mem_pct);
		else
			fprintf(t->f, "  %s\n", esc(t, line));
	}
	for (size_t h = 0; h < nhosts; h++) {
		/* A reservation whose time has come is not one any more. */
		if (hosts[h].held_ms > now && hosts[h].held_job == job->id &&
		    hosts[h].held_stage == stage->idx) {
			timing_when(hosts[h].held_ms, now, line, sizeof line);
			fprintf(t->f, "  next in line: %s is held for it from %s, when what runs there "
				"reaches its walltime (smaller jobs go ahead only if they end by then)\n",
				esc(t, hosts[h].name), line);
		}
	}
}

char *views_job_why(struct model *m, const struct job *job,
		    const struct placement_host *hosts, size_t nhosts, int64_t now)
{
	struct text t;

	text_open(&t);
	if (job_ended(job)) {
		fprintf(t.f, "job %lld has ended: %s%s%s\n", (long long)job->id,
			job_state_name(job->state), *job->reason ? ": " : "", esc(&t, job->reason));
		return text_close(&t);
	}
	fprintf(t.f, "job %lld: %s%s\n", (long long)job->id, job_state_name(job->state),
		job->held ? " (held: write 'release' to ctl to let it start)" : "");
	if (job->ending != ENDING_NONE)
		fprintf(t.f, "ending: %s; waiting for running instances to stop\n", esc(&t, job->reason));
	if (job->folders_pending && job->ending == ENDING_NONE)
		fprintf(t.f, "waiting for the storage volume: %s\n",
			job->folders_wait ? esc(&t, job->folders_wait) : "its folders are being made");
	for (size_t s = 0; s < job->nstages; s++)
		why_stage(&t, m, &job->stages[s], hosts, nhosts, now);
	return text_close(&t);
}

