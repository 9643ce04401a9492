#include "engine.h"
#include "lifecycle.h"
#include "space.h"
#include "api_client.h"
#include "backfill.h"
#include "clock.h"
#include "fairshare.h"
#include "notify.h"
#include "schedules.h"
#include "timewin.h"
#include "timing.h"

#include "log.h"
#include "units.h"
#include "util.h"
#include "views.h"

#include <errno.h>
#include <fnmatch.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How many pass durations GET /v1/stats can show. */
#define PASS_HISTORY 4096
/* A silent host's instances are requeued this long after its lease ran out:
 * by then its runner has killed them. It counts the lease from the heartbeat
 * it sent, we from the one we received, which is later; but it may notice a
 * few seconds late, stuck in a call that times out (5 s) during a cut. */
#define LEASE_MARGIN_MS 7000

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

static int job_ended(const struct job *job)
{
	return job->state == JOB_SUCCEEDED || job->state == JOB_FAILED || job->state == JOB_CANCELLED;
}

static int stage_ended(const struct stage *stage)
{
	return stage->state == STAGE_SUCCEEDED || stage->state == STAGE_FAILED ||
	       stage->state == STAGE_CANCELLED;
}

static int inst_active(const struct instance *inst)
{
	return inst->state == INST_ASSIGNED || inst->state == INST_RUNNING;
}

/* The time of every decision and timestamp: the engine's clock, which tests
 * move (lib/clock.h). Liveness timeouts use the real monotonic clock. */
static int64_t now_ms(struct engine *e)
{
	return clock_now_ms(e->cfg.clock);
}

/* An absolute CLOCK_MONOTONIC deadline for pthread_cond_timedwait. */
static struct timespec deadline_in(int64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

static void kick(struct engine *e)
{
	e->kicked = true;
	pthread_cond_signal(&e->kick);
}

/* Write what changed. Failures are logged and the objects stay dirty: the
 * timer's next pass tries again. */
static int flush(struct engine *e, char **err)
{
	return store_flush(e->store, e->model, err);
}

/* ---- storage folders ---- */

/* What a job's folders need, copied so that they can be made without the
 * engine's lock (a slow disk or NFS server must not stall scheduling). */
struct folder_plan {
	int64_t id;
	struct backend_cred cred;
	size_t nstages;
	char **stages;
};

static struct folder_plan *folder_plan_of(const struct job *job)
{
	struct folder_plan *p = xcalloc(1, sizeof *p);

	p->id = job->id;
	p->cred = (struct backend_cred){ job->uid, job->gid };
	p->nstages = job->nstages;
	p->stages = xcalloc(job->nstages, sizeof *p->stages);
	for (size_t s = 0; s < job->nstages; s++)
		p->stages[s] = xstrdup(job->stages[s].spec->name);
	return p;
}

static void folder_plan_free(struct folder_plan *p)
{
	if (!p)
		return;
	for (size_t s = 0; s < p->nstages; s++)
		free(p->stages[s]);
	free(p->stages);
	free(p);
}

static int folder_plan_make(struct engine *e, const struct folder_plan *p)
{
	char path[512];
	int ret = 0;

	if (!e->storage)
		return 0;
	/* The stages' output folders, which instances run in. Their logs'
	 * folders (jobs/<id>/log/<stage>) are made by the mount that opens the
	 * first log: one folder less per stage in each submission. */
	for (size_t s = 0; s < p->nstages; s++) {
		snprintf(path, sizeof path, "jobs/%lld/out/%s", (long long)p->id, p->stages[s]);
		if (backend_mkdir_p(e->storage, &p->cred, path, 0755) < 0 && errno != EEXIST) {
			log_warn("job %lld: cannot create %s", (long long)p->id, path);
			ret = -1;
		}
	}
	return ret;
}

static int make_job_folders(struct engine *e, const struct job *job)
{
	struct folder_plan *p = folder_plan_of(job);
	int ret = folder_plan_make(e, p);

	folder_plan_free(p);
	return ret;
}

/* ---- state changes ---- */

static void set_stage_state(struct engine *e, struct stage *stage, enum stage_state state,
			    int64_t now)
{
	if (stage->state == state)
		return;
	stage->state = state;
	if (state == STAGE_RUNNING && !stage->started_ms)
		stage->started_ms = now;
	if (state == STAGE_SUCCEEDED || state == STAGE_FAILED || state == STAGE_CANCELLED)
		stage->ended_ms = now;
	else
		stage->ended_ms = 0;
	model_dirty_stage(e->model, stage);
}

static void begin_ending(struct engine *e, struct job *job, enum job_ending how,
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

static void set_reason(struct instance *inst, const char *reason)
{
	free(inst->reason);
	inst->reason = xstrdup(reason);
	/* A status file has one "reason:" line. */
	for (char *p = inst->reason; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

/* Requeue an instance (a retry): a new attempt will be assigned by the pass. */
static void requeue(struct engine *e, struct instance *inst)
{
	model_set_state(e->model, inst, INST_QUEUED);
	inst->cancel_requested = false;
	if ((size_t)inst->index < inst->stage->queued_hint)
		inst->stage->queued_hint = (size_t)inst->index;
}

/* The runner says an attempt ended (or the scheduler decided it is lost).
 * code/sig describe how; reason is extra text (NULL when none). */
static void end_attempt(struct engine *e, struct instance *inst, int code, int sig,
			const char *reason, int64_t now)
{
	const struct spec_stage *ss = inst->stage->spec;
	struct host *h = inst->host;
	struct job *job = inst->job;
	char why[512];

	if (h) {
		/* Until the host's next heartbeat, count the ended instance's share of
		 * the live use as free: a host kept busy by parsa's own work can take
		 * the next instance at once instead of a heartbeat later. */
		if (h->cpus > 0)
			h->ended_cpu_pct += 100.0 * ss->cpus / h->cpus;
		if (h->mem > 0)
			h->ended_mem_pct += 100.0 * (double)ss->mem / (double)h->mem;
	}
	inst->ended_ms = now;
	inst->exit_code = code;
	inst->signal = sig;
	if (inst->started_ms > 0 && now > inst->started_ms)
		fairshare_charge(e->fair, job->team, ss->cpus * (double)(now - inst->started_ms) / 1000.0, now);
	if (code == 0 && sig == 0 && !reason) {
		model_set_state(e->model, inst, INST_SUCCEEDED);
		set_reason(inst, "");
		model_job_event(e->model, job, now, "stage %s instance %d succeeded on %s (%.1f s)",
				ss->name, inst->index, inst->host_name,
				inst->started_ms ? (double)(now - inst->started_ms) / 1000.0 : 0.0);
		return;
	}
	if (sig)
		snprintf(why, sizeof why, "killed by signal %d%s%s", sig, reason ? ": " : "",
			 reason ? reason : "");
	else if (code >= 0)
		snprintf(why, sizeof why, "exit code %d%s%s", code, reason ? ": " : "",
			 reason ? reason : "");
	else
		snprintf(why, sizeof why, "%s", reason ? reason : "failed");
	if (inst->cancel_requested) {
		model_set_state(e->model, inst, INST_CANCELLED);
		set_reason(inst, "cancelled");
		model_job_event(e->model, job, now, "stage %s instance %d cancelled on %s (%s)",
				ss->name, inst->index, inst->host_name, why);
		return;
	}
	if (reason && strcmp(reason, API_REASON_RUNNER_STOPPED) == 0 && job->ending == ENDING_NONE) {
		set_reason(inst, why);
		model_job_event(e->model, job, now,
				"stage %s instance %d stopped with the runner on %s; requeued",
				ss->name, inst->index, inst->host_name);
		requeue(e, inst);
		return;
	}
	/* Not the job's fault either: the host's window closed on it. */
	if (reason && strcmp(reason, API_REASON_WINDOW_CLOSED) == 0 && job->ending == ENDING_NONE) {
		set_reason(inst, why);
		model_job_event(e->model, job, now,
				"stage %s instance %d stopped on %s: its window closed; requeued",
				ss->name, inst->index, inst->host_name);
		requeue(e, inst);
		return;
	}
	inst->failures++;
	set_reason(inst, why);
	if (inst->failures <= ss->retries && job->ending == ENDING_NONE) {
		model_job_event(e->model, job, now,
				"stage %s instance %d failed on %s (%s); retrying (%d of %d retries)",
				ss->name, inst->index, inst->host_name, why, inst->failures, ss->retries);
		requeue(e, inst);
		return;
	}
	model_set_state(e->model, inst, INST_FAILED);
	model_job_event(e->model, job, now, "stage %s instance %d failed on %s (%s)",
			ss->name, inst->index, inst->host_name, why);
}

static void mark_running(struct engine *e, struct instance *inst, int pid, int64_t now,
			 int64_t mono, const char *how)
{
	struct stage *stage = inst->stage;
	struct job *job = inst->job;

	if (pid > 0)
		inst->pid = pid;
	inst->confirmed_mono = mono;
	inst->missing_mono = 0;
	if (inst->state == INST_RUNNING) {
		model_dirty_instance(e->model, inst);
		return;
	}
	model_set_state(e->model, inst, INST_RUNNING);
	inst->started_ms = now;
	if (!stage->started_ms) {
		stage->started_ms = now;
		model_dirty_stage(e->model, stage);
	}
	if (!job->started_ms) {
		job->started_ms = now;
		model_dirty_job(e->model, job);
	}
	model_job_event(e->model, job, now, "stage %s instance %d started on %s (pid %d)%s",
			stage->spec->name, inst->index, inst->host_name, inst->pid, how);
}

/* ---- foreach ---- */

struct entries {
	char **names;
	size_t n, cap;
	const char *glob;
};

static int collect_entry(void *arg, const char *name, const struct stat *st)
{
	struct entries *list = arg;

	(void)st;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return 0;
	if (fnmatch(list->glob, name, FNM_PERIOD) != 0)
		return 0;
	if (list->n >= SPEC_MAX_INSTANCES)
		return 1;
	if (list->n == list->cap) {
		list->cap = list->cap ? list->cap * 2 : 64;
		list->names = xrealloc(list->names, list->cap * sizeof *list->names);
	}
	list->names[list->n++] = xstrdup(name);
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Create a foreach stage's instances, one per matching entry of the upstream
 * stage's output folder, in name order. 0, or -1 with *err. */
static int expand_foreach(struct engine *e, struct stage *stage, int64_t now, char **err)
{
	const struct spec_stage *ss = stage->spec;
	struct entries list = { .glob = ss->foreach_glob ? ss->foreach_glob : "*" };
	int64_t next_id = model_next_instance_id(e->model);
	char path[512], item[1024];
	int ret = -1;

	snprintf(path, sizeof path, "jobs/%lld/out/%s", (long long)stage->job->id, ss->foreach_stage);
	if (!e->storage) {
		errno = ENODEV;
		errprintf(err, "no storage volume to list %s", path);
		goto out;
	}
	if (backend_readdir(e->storage, path, collect_entry, &list) < 0 && errno != ENOENT) {
		errprintf(err, "cannot list %s: %s", path, strerror(errno));
		goto out;
	}
	if (list.n > 1)
		qsort(list.names, list.n, sizeof *list.names, cmp_names);
	for (size_t i = 0; i < list.n; i++) {
		struct instance *inst;

		snprintf(item, sizeof item, "%s/%s", ss->foreach_stage, list.names[i]);
		inst = model_stage_new_instance(stage, next_id++, item);
		model_add_instance(e->model, inst);
		model_dirty_instance(e->model, inst);
	}
	stage->expanded = true;
	stage->queued_hint = 0;
	model_dirty_stage(e->model, stage);
	model_job_event(e->model, stage->job, now, "stage %s: foreach = %s/%s matched %zu entr%s",
			ss->name, ss->foreach_stage, list.glob, list.n, list.n == 1 ? "y" : "ies");
	ret = 0;
out:
	for (size_t i = 0; i < list.n; i++)
		free(list.names[i]);
	free(list.names);
	return ret;
}

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

static int stage_deps_ready(const struct job *job, const struct stage *stage)
{
	for (size_t i = 0; i < stage->spec->nafter; i++) {
		int up = spec_stage_index(job->spec, stage->spec->after[i]);

		if (up >= 0 && job->stages[up].state != STAGE_SUCCEEDED)
			return 0;
	}
	return 1;
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
				set_reason(inst, why);
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
				set_stage_state(e, stage, STAGE_CANCELLED, now);
			return;
		}
		if (job->held || !stage_deps_ready(job, stage))
			return;
		if (!stage->expanded) {
			char *err = NULL;

			if (expand_foreach(e, stage, now, &err) < 0) {
				snprintf(reason, sizeof reason, "stage %s: %s", stage->spec->name,
					 err ? err : "cannot expand foreach");
				free(err);
				begin_ending(e, job, ENDING_FAIL, reason, now);
				set_stage_state(e, stage, STAGE_FAILED, now);
				return;
			}
		}
		if (stage->ninst == 0) {
			model_job_event(e->model, job, now, "stage %s: nothing to do", stage->spec->name);
			set_stage_state(e, stage, STAGE_SUCCEEDED, now);
			return;
		}
		set_stage_state(e, stage, STAGE_QUEUED, now);
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
		begin_ending(e, job, ENDING_FAIL, reason, now);
	}
	if (active == 0 && c[INST_QUEUED] == 0) {
		enum stage_state end = c[INST_FAILED] ? STAGE_FAILED :
				       c[INST_CANCELLED] ? STAGE_CANCELLED : STAGE_SUCCEEDED;

		set_stage_state(e, stage, end, now);
		model_job_event(e->model, job, now, "stage %s %s", stage->spec->name,
				stage_state_name(end));
	} else if (stage->state == STAGE_QUEUED &&
		   (c[INST_ASSIGNED] || c[INST_RUNNING] || c[INST_SUCCEEDED] || c[INST_FAILED] ||
		    c[INST_CANCELLED])) {
		/* Assigned counts: the summary shows those instances as running,
		 * and a runner tells of a start up to 50 ms late (with its end,
		 * for a short one). */
		set_stage_state(e, stage, STAGE_RUNNING, now);
	}
}

/* Dependencies, expansion and roll-up for one unfinished job. */
static void update_job(struct engine *e, struct job *job, int64_t now)
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
			begin_ending(e, job, ENDING_FAIL, reason, now);
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

/* ---- placement ---- */

int engine_host_up(struct engine *e, const struct host *h)
{
	return h->last_heartbeat_mono > 0 &&
	       time_mono_ms() - h->last_heartbeat_mono <= e->cfg.host_timeout_ms;
}

size_t engine_placement_hosts(struct engine *e, struct placement_host **out)
{
	int64_t now = now_ms(e);
	size_t n = model_nhosts(e->model);
	struct placement_host *ph = xcalloc(n ? n : 1, sizeof *ph);

	for (size_t i = 0; i < n; i++) {
		struct host *h = model_host_at(e->model, i);
		double cpu = h->cpu_pct - h->ended_cpu_pct, mem = h->mem_pct - h->ended_mem_pct;

		ph[i].name = h->name;
		ph[i].up = engine_host_up(e, h);
		ph[i].draining = h->draining;
		ph[i].cpus = h->cpus;
		ph[i].mem = h->mem;
		ph[i].scratch_total = h->scratch_total;
		ph[i].scratch_free = h->scratch_free;
		ph[i].reserved_cpus = h->reserved_cpus;
		ph[i].reserved_mem = h->reserved_mem;
		ph[i].reserved_scratch = h->reserved_scratch;
		ph[i].cpu_pct = cpu > 0 ? cpu : 0;
		ph[i].mem_pct = mem > 0 ? mem : 0;
		ph[i].cpu_limit = h->cpu_limit;
		ph[i].mem_limit = h->mem_limit;
		ph[i].features = (const char *const *)h->features;
		ph[i].nfeatures = h->nfeatures;
		timing_host_fill(h, now, &ph[i]);
		if (e->held.job && e->held.host && strcmp(e->held.host, h->name) == 0) {
			ph[i].held_job = e->held.job;
			ph[i].held_stage = e->held.stage;
			ph[i].held_ms = e->held.at_ms;
		}
	}
	*out = ph;
	return n;
}

static void assign(struct engine *e, struct instance *inst, struct host *h, int64_t now)
{
	inst->attempt++;
	inst->pid = 0;
	inst->exit_code = -1;
	inst->signal = 0;
	inst->cancel_requested = false;
	inst->start_sent = false;
	inst->cancel_sent = false;
	inst->assigned_ms = now;
	inst->started_ms = 0;
	inst->ended_ms = 0;
	set_reason(inst, "");
	model_set_state(e->model, inst, INST_ASSIGNED);
	model_set_host(e->model, inst, h);
	/* Its summary counts the instance as running from now on. */
	if (inst->stage->state == STAGE_QUEUED)
		set_stage_state(e, inst->stage, STAGE_RUNNING, now);
	log_debug("job %lld stage %s instance %d attempt %d -> %s", (long long)inst->job->id,
		  inst->stage->spec->name, inst->index, inst->attempt, h->name);
}

/* Fair share counts what running instances have used so far. */
static void fair_running(struct engine *e, int64_t now)
{
	fairshare_clear_running(e->fair);
	for (size_t i = 0; i < model_nhosts(e->model); i++) {
		struct host *h = model_host_at(e->model, i);

		for (size_t k = 0; k < h->nactive; k++) {
			const struct instance *inst = h->active[k];

			if (inst->state == INST_RUNNING && inst->started_ms > 0 && now > inst->started_ms)
				fairshare_add_running(e->fair, inst->job->team, inst->stage->spec->cpus *
						      (double)(now - inst->started_ms) / 1000.0);
		}
	}
}

/* A host silent past its lease: its runner has killed what it ran there (or
 * lost it with the machine), so its instances go back to the queue, each
 * counting as a failed attempt. */
static void requeue_silent(struct engine *e, int64_t now)
{
	int64_t mono = time_mono_ms();
	char why[256];

	for (size_t i = 0; i < model_nhosts(e->model); i++) {
		struct host *h = model_host_at(e->model, i);
		int64_t heard = h->last_heartbeat_mono > e->started_mono ? h->last_heartbeat_mono :
				e->started_mono;

		if (h->nactive == 0 || mono - heard < e->cfg.lease_ms + LEASE_MARGIN_MS)
			continue;
		snprintf(why, sizeof why, "host %s down: no heartbeat for %.0f s (lease %.0f s)", h->name,
			 (double)(mono - heard) / 1000.0, (double)e->cfg.lease_ms / 1000.0);
		log_warnx("%s: requeueing its %zu instance(s)", why, h->nactive);
		/* end_attempt() takes each off h->active. */
		while (h->nactive > 0)
			end_attempt(e, h->active[h->nactive - 1], -1, 0, why, now);
	}
}

/* Volume space declared (disk =) by the instances assigned or running. */
static uint64_t reserved_disk(struct engine *e)
{
	uint64_t sum = 0;

	for (size_t j = 0; j < model_nactive(e->model); j++) {
		const struct job *job = model_active_at(e->model, j);

		for (size_t s = 0; s < job->nstages; s++) {
			const struct stage *stage = &job->stages[s];

			sum += stage->spec->disk *
			       (uint64_t)(stage->counts[INST_ASSIGNED] + stage->counts[INST_RUNNING]);
		}
	}
	return sum;
}

/* For the clean-up thread (no lock held): jobs that ended before cutoff. */
static size_t lifecycle_ended_before(void *arg, int64_t cutoff_ms, int64_t **ids)
{
	struct engine *e = arg;
	size_t n = 0, cap = 0;

	*ids = NULL;
	pthread_mutex_lock(&e->lock);
	for (size_t j = 0; j < model_njobs(e->model); j++) {
		const struct job *job = model_job_at(e->model, j);

		if (!job || !job_ended(job) || job->ended_ms <= 0 || job->ended_ms >= cutoff_ms)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			*ids = xrealloc(*ids, cap * sizeof **ids);
		}
		(*ids)[n++] = job->id;
	}
	pthread_mutex_unlock(&e->lock);
	return n;
}

static void lifecycle_note(void *arg, int64_t id, const char *text)
{
	struct engine *e = arg;
	struct job *job;

	pthread_mutex_lock(&e->lock);
	job = model_job(e->model, id);
	if (job) {
		model_job_event(e->model, job, now_ms(e), "%s", text);
		model_dirty_job(e->model, job);
		kick(e);
	}
	pthread_mutex_unlock(&e->lock);
}

/* The space thread learned something new about the volume: pass again. */
static void space_changed(void *arg)
{
	struct engine *e = arg;

	pthread_mutex_lock(&e->lock);
	kick(e);
	pthread_mutex_unlock(&e->lock);
}

/* Remember the pass's reservation for `why` (NULL: none). */
static void keep_reservation(struct engine *e, const struct backfill_reservation *res,
			     const struct placement_host *ph)
{
	const struct instance *inst = res ? res->cookie : NULL;

	free(e->held.host);
	memset(&e->held, 0, sizeof e->held);
	if (!inst)
		return;
	e->held.job = inst->job->id;
	e->held.stage = inst->stage->idx;
	e->held.host = xstrdup(ph[res->host].name);
	e->held.at_ms = res->at_ms;
}

/* One placement pass over every queued instance of every runnable job. */
static size_t place(struct engine *e, int64_t now)
{
	struct placement_host *ph = NULL;
	struct placement_req *reqs = NULL;
	struct backfill *bf = NULL;
	struct placement_gate gate;
	size_t nh, nreqs = 0, cap = 0, placed = 0;
	long free_cpus = 0;

	nh = engine_placement_hosts(e, &ph);
	fair_running(e, now);
	for (size_t i = 0; i < nh; i++)
		if (ph[i].up && !ph[i].draining && !ph[i].closed && ph[i].cpus > ph[i].reserved_cpus)
			free_cpus += ph[i].cpus - ph[i].reserved_cpus;
	if (free_cpus == 0) {
		/* Nothing can start; what was held stays held. */
		goto out;
	}
	for (size_t j = 0; j < model_nactive(e->model); j++) {
		struct job *job = model_active_at(e->model, j);
		double usage;

		if (job_ended(job) || job->held || job->ending != ENDING_NONE || job->folders_pending)
			continue;
		usage = fairshare_usage(e->fair, job->team, now);
		for (size_t s = 0; s < job->nstages; s++) {
			struct stage *stage = &job->stages[s];
			const struct spec_stage *ss = stage->spec;
			long limit;

			if ((stage->state != STAGE_QUEUED && stage->state != STAGE_RUNNING) ||
			    stage->counts[INST_QUEUED] == 0)
				continue;
			/* Before its start time or outside its window: not yet. */
			if (!timing_stage_open(stage, now, NULL, 0))
				continue;
			/* Instances of a stage are alike: no more of them can be placed
			 * in this pass than the free cpus allow; but one always goes in,
			 * so that a stage too big for now gets its backfill reservation. */
			limit = ss->cpus > 0 ? free_cpus / ss->cpus : stage->counts[INST_QUEUED];
			if (limit < 1)
				limit = 1;
			while (stage->queued_hint < stage->ninst &&
			       stage->inst[stage->queued_hint]->state != INST_QUEUED)
				stage->queued_hint++;
			for (size_t i = stage->queued_hint; i < stage->ninst && limit > 0; i++) {
				struct instance *inst = stage->inst[i];
				struct placement_req *r;

				if (inst->state != INST_QUEUED)
					continue;
				if (nreqs == cap) {
					cap = cap ? cap * 2 : 256;
					reqs = xrealloc(reqs, cap * sizeof *reqs);
				}
				r = &reqs[nreqs++];
				memset(r, 0, sizeof *r);
				r->group = job->id * SPEC_MAX_STAGES + stage->idx;
				r->order.usage = usage;
				r->order.priority = job->priority;
				r->order.submitted_ms = job->submitted_ms;
				r->order.job = job->id;
				r->order.stage = stage->idx;
				r->order.index = inst->index;
				r->cpus = ss->cpus;
				r->mem = ss->mem;
				r->scratch = ss->scratch;
				r->hosts = (const char *const *)ss->hosts;
				r->nhosts = ss->nhosts;
				r->cookie = inst;
				r->walltime_ms = (int64_t)ss->walltime * 1000;
				r->disk = ss->disk;
				limit--;
			}
		}
	}
	placement_sort(reqs, nreqs);
	/* Walltime-aware backfill (sched/backfill.h): the first request that
	 * fits nowhere keeps its place on the host where it starts soonest. */
	bf = backfill_create(now);
	backfill_add_model(bf, e->model);
	gate = backfill_gate(bf);
	/* Space on the volume comes first: a stage waiting for it holds no host. */
	space_begin_pass(e->space, reserved_disk(e));
	gate = space_gate(e->space, &gate);
	placed = placement_run_gated(ph, nh, reqs, nreqs, &gate);
	keep_reservation(e, backfill_reserved(bf), ph);
	for (size_t i = 0; i < nreqs && placed > 0; i++)
		if (reqs[i].host >= 0)
			assign(e, reqs[i].cookie, model_host_at(e->model, (size_t)reqs[i].host), now);
out:
	backfill_destroy(bf);
	free(reqs);
	free(ph);
	return placed;
}

/* The scheduling pass: lock held. */
/* A pass this slow is logged with where the time went. */
#define SLOW_PASS_MS 50.0

static double elapsed_ms(const struct timespec *from, const struct timespec *to)
{
	return (double)(to->tv_sec - from->tv_sec) * 1000.0 + (double)(to->tv_nsec - from->tv_nsec) / 1e6;
}

static void pass(struct engine *e)
{
	int64_t now = now_ms(e), t0 = time_mono_ms();
	struct timespec a, b, c, d;
	size_t placed;
	char *err = NULL;
	double ms;

	clock_gettime(CLOCK_MONOTONIC, &a);
	/* Recurring pipelines first: their new jobs are placed in this pass. */
	schedules_tick(e->schedules, now);
	requeue_silent(e, now);
	for (size_t j = 0; j < model_nactive(e->model); j++)
		update_job(e, model_active_at(e->model, j), now);
	clock_gettime(CLOCK_MONOTONIC, &c);
	placed = place(e, now);
	clock_gettime(CLOCK_MONOTONIC, &d);
	if (flush(e, &err) < 0) {
		log_warnx("cannot write the state (will retry): %s", err ? err : strerror(errno));
		free(err);
	}
	model_prune_active(e->model);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = elapsed_ms(&a, &b);
	e->pass_ms[e->npasses++ % PASS_HISTORY] = ms;
	if (ms >= SLOW_PASS_MS)
		log_info("slow pass: %.0f ms (roll-up %.0f, placement %.0f of %zu, commit %.0f)", ms,
			 elapsed_ms(&a, &c), elapsed_ms(&c, &d), placed, elapsed_ms(&d, &b));
	pthread_cond_broadcast(&e->changed);
	if (placed)
		log_debug("pass: %zu placed in %lld ms", placed, (long long)(time_mono_ms() - t0));
}

static void *engine_main(void *arg)
{
	struct engine *e = arg;

	pthread_mutex_lock(&e->lock);
	while (!e->stopping) {
		if (!e->kicked) {
			struct timespec until = deadline_in(e->cfg.timer_ms);

			pthread_cond_timedwait(&e->kick, &e->lock, &until);
			if (e->stopping)
				break;
		}
		e->kicked = false;
		pass(e);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

/* ---- life cycle ---- */

/* Fair share is not stored: rebuild it from every instance that ran. */
static void fair_load(struct engine *e)
{
	for (size_t j = 0; j < model_njobs(e->model); j++) {
		const struct job *job = model_job_at(e->model, j);

		for (size_t s = 0; job && s < job->nstages; s++) {
			const struct stage *stage = &job->stages[s];

			for (size_t i = 0; i < stage->ninst; i++) {
				const struct instance *inst = stage->inst[i];

				if (inst->started_ms > 0 && inst->ended_ms > inst->started_ms)
					fairshare_charge(e->fair, job->team, stage->spec->cpus *
							 (double)(inst->ended_ms - inst->started_ms) / 1000.0,
							 inst->ended_ms);
			}
		}
	}
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
	e->fair = fairshare_create(e->cfg.half_life_ms);
	e->store = store;
	e->storage = storage;
	e->model = model;
	pthread_mutex_init(&e->lock, NULL);
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
		free(e);
		return NULL;
	}
	e->notify = notify_create(e->cfg.sendmail);
	e->space = space_create(storage, 2000, space_changed, e);
	e->lifecycle = lifecycle_create(storage, e->cfg.retention_ms, &(struct lifecycle_hooks){
		.ended_before = lifecycle_ended_before, .note = lifecycle_note, .arg = e });
	e->schedules = schedules_create(e, store, err);
	if (!e->schedules) {
		int saved = errno;

		engine_destroy(e);
		errno = saved;
		return NULL;
	}
	return e;
}

int engine_start(struct engine *e, char **err)
{
	struct backend_cred self = { getuid(), getgid() };
	int64_t mono = time_mono_ms();
	int rc;

	pthread_mutex_lock(&e->lock);
	e->started_mono = mono;
	if (e->storage && backend_mkdir_p(e->storage, &self, "jobs", 0755) < 0 && errno != EEXIST)
		log_warn("cannot create jobs/ on the storage volume");
	else if (e->storage)
		backend_spread(e->storage, "jobs");
	fair_load(e);
	for (size_t j = 0; j < model_nactive(e->model); j++) {
		struct job *job = model_active_at(e->model, j);

		make_job_folders(e, job);
		/* Give runners time to report what they run before "lost" applies. */
		for (size_t s = 0; s < job->nstages; s++)
			for (size_t i = 0; i < job->stages[s].ninst; i++)
				job->stages[s].inst[i]->confirmed_mono = mono;
	}
	e->kicked = true;
	pthread_mutex_unlock(&e->lock);
	if (space_start(e->space, err) < 0 || lifecycle_start(e->lifecycle, err) < 0)
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

	if (flush(e, &err) < 0) {
		log_warnx("cannot write the last changes: %s", err ? err : "?");
		free(err);
	}
}

void engine_destroy(struct engine *e)
{
	if (!e)
		return;
	engine_stop(e);
	flush_last(e);
	/* Its thread takes our lock to kick us: stop it while we still exist. */
	space_destroy(e->space);
	lifecycle_destroy(e->lifecycle);
	notify_destroy(e->notify);
	schedules_destroy(e->schedules);
	free(e->held.host);
	pthread_cond_destroy(&e->kick);
	pthread_cond_destroy(&e->changed);
	pthread_mutex_destroy(&e->lock);
	fairshare_destroy(e->fair);
	free(e);
}

void engine_lock(struct engine *e) { pthread_mutex_lock(&e->lock); }
void engine_unlock(struct engine *e) { pthread_mutex_unlock(&e->lock); }
struct model *engine_model(struct engine *e) { return e->model; }

/* ---- submission ---- */

static char *user_name(uid_t uid)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res)
		return xstrdup(pw.pw_name);
	return xasprintf("%u", (unsigned)uid);
}

static char *group_name(gid_t gid)
{
	struct group gr, *res = NULL;
	size_t len = 16384;
	char *buf = NULL, *name;
	int rc;

	/* A group with many members needs a large buffer: grow it on ERANGE. */
	do {
		buf = xrealloc(buf, len);
		rc = getgrgid_r(gid, &gr, buf, len, &res);
		len *= 4;
	} while (rc == ERANGE && len <= (1 << 24));
	if (rc == 0 && res)
		name = xstrdup(gr.gr_name);
	else
		name = xasprintf("%u", (unsigned)gid);
	free(buf);
	return name;
}

int engine_submit(struct engine *e, const struct caller *who, const char *filename,
		  const char *text, size_t len, int64_t *id, char **err)
{
	struct folder_plan *plan = NULL;
	struct spec *spec;
	struct job *job = NULL;
	char *user = NULL, *team = NULL;
	int64_t now;
	int ret = -1, saved;

	if (len > SPEC_MAX_BYTES) {
		errno = EFBIG;
		return errprintf(err, "%s: %zu bytes is larger than the limit of %d bytes", filename,
				 len, SPEC_MAX_BYTES);
	}
	spec = spec_parse(text, len, filename, err);
	if (!spec)
		return -1;
	if (spec->every) {
		errno = EINVAL;
		errprintf(err, "%s:%d: every = %s: a spec that repeats goes to schedules/, not queue/ "
			  "(or remove every to run it once)", filename, spec->every_line, spec->every);
		spec_destroy(spec);
		return -1;
	}
	user = user_name(who->uid);
	team = spec->team ? xstrdup(spec->team) : group_name(who->gid);

	pthread_mutex_lock(&e->lock);
	now = now_ms(e);
	job = engine_job_build(e, who, user, team, spec, filename, text, len, now, err);
	if (!job)
		goto out;
	if (store_insert_job(e->store, job, err) < 0)
		goto out;
	*id = job->id;
	/* Committed: the job is the model's now, placed once its folders exist. */
	model_add_job(e->model, job);
	job->folders_pending = true;
	plan = folder_plan_of(job);
	log_info("job %lld (%s) submitted by %s", (long long)job->id, job->name, job->user);
	job = NULL;
	ret = 0;
out:
	saved = errno;
	pthread_mutex_unlock(&e->lock);
	if (plan) {
		folder_plan_make(e, plan);
		pthread_mutex_lock(&e->lock);
		job = model_job(e->model, plan->id);
		if (job)
			job->folders_pending = false;
		job = NULL;
		kick(e);
		pthread_mutex_unlock(&e->lock);
		folder_plan_free(plan);
	}
	model_job_free(job);
	free(user);
	free(team);
	errno = saved;
	return ret;
}

json_t *engine_job_meta_json(struct engine *e, int64_t id)
{
	json_t *json = json_object(), *stages = json_array();
	const struct job *job;

	pthread_mutex_lock(&e->lock);
	job = model_job(e->model, id);
	if (job) {
		for (size_t s = 0; s < job->nstages; s++)
			json_array_append_new(stages, json_pack("{s:s,s:I}", "name", job->stages[s].spec->name,
							"instances", (json_int_t)job->stages[s].ninst));
		json_object_set_new(json, "uid", json_integer(job->uid));
		json_object_set_new(json, "gid", json_integer(job->gid));
		json_object_set_new(json, "submitted_ms", json_integer(job->submitted_ms));
		json_object_set(json, "stages", stages);
	}
	pthread_mutex_unlock(&e->lock);
	json_decref(stages);
	return json;
}

/* ---- ctl ---- */

/* Root, or a member of the admin group (engine_config.admin_gid). */
static int is_admin(const struct engine *e, const struct caller *who)
{
	if (who->uid == 0)
		return 1;
	if (!e->cfg.admin_set)
		return 0;
	if (who->gid == e->cfg.admin_gid)
		return 1;
	for (size_t i = 0; i < who->ngroups; i++)
		if (who->groups[i] == e->cfg.admin_gid)
			return 1;
	return 0;
}

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
	begin_ending(e, job, ENDING_CANCEL, reason, now);
	update_job(e, job, now);
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

		for (size_t i = 0; i < stage->ninst; i++) {
			struct instance *inst = stage->inst[i];

			if (inst->state != INST_FAILED && inst->state != INST_CANCELLED)
				continue;
			requeue(e, inst);
			inst->failures = 0;
			inst->exit_code = -1;
			inst->signal = 0;
			set_reason(inst, "");
			requeued++;
		}
		if (stage->state == STAGE_FAILED || stage->state == STAGE_CANCELLED)
			set_stage_state(e, stage, STAGE_WAITING, now);
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
	update_job(e, job, now);
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

static const struct ctl_command {
	const char *name;
	int takes_arg;
	ctl_fn fn;
} ctl_commands[] = {
	{ "cancel", 0, ctl_cancel },
	{ "hold", 0, ctl_hold },
	{ "release", 0, ctl_release },
	{ "retry", 0, ctl_retry },
	{ "priority", 1, ctl_priority },
	{ "purge", 0, ctl_purge },
	{ "keep", 0, ctl_keep },
	{ "unkeep", 0, ctl_unkeep },
};

int engine_ctl(struct engine *e, const struct caller *who, int64_t id, const char *command,
	       char **err)
{
	char word[32] = "", arg[64] = "", extra[8] = "";
	const struct ctl_command *cmd = NULL;
	struct job *job;
	char *name = NULL;
	int n, ret = -1, saved;

	n = sscanf(command, "%31s %63s %7s", word, arg, extra);
	for (size_t i = 0; i < ARRAY_LEN(ctl_commands) && n >= 1; i++)
		if (strcmp(ctl_commands[i].name, word) == 0)
			cmd = &ctl_commands[i];
	if (!cmd || n > 1 + cmd->takes_arg || (cmd->takes_arg && n < 2)) {
		errno = EINVAL;
		if (cmd)
			return errprintf(err, "'%s' %s", word, cmd->takes_arg ?
					 "takes one argument, e.g. 'priority 10'" : "takes no argument");
		return errprintf(err, "unknown command '%s': valid commands are cancel, hold, release,"
				 " retry, priority N, purge, keep, unkeep", n >= 1 ? word : "");
	}
	name = user_name(who->uid);
	pthread_mutex_lock(&e->lock);
	job = model_job(e->model, id);
	if (!job) {
		errno = ENOENT;
		errprintf(err, "no job %lld", (long long)id);
		goto out;
	}
	if (who->uid != 0 && who->uid != job->uid && !is_admin(e, who)) {
		errno = EACCES;
		errprintf(err, "job %lld belongs to %s: only they, root or the admin group may %s it",
			  (long long)id, job->user, word);
		goto out;
	}
	if (cmd->fn(e, job, name, cmd->takes_arg ? arg : NULL, now_ms(e), err) < 0)
		goto out;
	if (flush(e, err) < 0)
		goto out;
	kick(e);
	ret = 0;
out:
	saved = errno;
	pthread_mutex_unlock(&e->lock);
	free(name);
	errno = saved;
	return ret;
}

/* ---- wait ---- */

int engine_wait(struct engine *e, int64_t id, const char *stage_name, int64_t timeout_ms,
		int *done, const char **state, char **err)
{
	struct timespec until = deadline_in(timeout_ms > 0 ? timeout_ms : 0);
	struct stage *stage = NULL;
	struct job *job;
	int ret = -1;

	pthread_mutex_lock(&e->lock);
	job = model_job(e->model, id);
	if (!job) {
		errno = ENOENT;
		errprintf(err, "no job %lld", (long long)id);
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
		if (pthread_cond_timedwait(&e->changed, &e->lock, &until) == ETIMEDOUT) {
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

/* ---- runners ---- */

int engine_register_host(struct engine *e, const struct host_info *info, char **err)
{
	struct timewin *win = NULL;
	struct host *h;
	char *why = NULL;
	int ret = -1, saved;

	if (!info->name || !*info->name || strchr(info->name, '/') || info->cpus <= 0) {
		errno = EINVAL;
		return errprintf(err, "a host needs a name (no '/') and cpus > 0");
	}
	if (info->window && *info->window && !(win = timewin_parse(info->window, &why))) {
		errno = EINVAL;
		errprintf(err, "window '%s': %s", info->window, why ? why : "not a window");
		free(why);
		return -1;
	}
	pthread_mutex_lock(&e->lock);
	h = model_host(e->model, info->name);
	if (!h)
		h = model_add_host(e->model, info->name);
	h->cpus = info->cpus;
	h->mem = info->mem;
	h->scratch_total = info->scratch_total;
	h->scratch_free = info->scratch_free;
	h->cpu_limit = info->cpu_limit > 0 ? info->cpu_limit : 90;
	h->mem_limit = info->mem_limit > 0 ? info->mem_limit : 90;
	for (size_t i = 0; i < h->nfeatures; i++)
		free(h->features[i]);
	free(h->features);
	h->features = xcalloc(info->nfeatures ? info->nfeatures : 1, sizeof *h->features);
	h->nfeatures = info->nfeatures;
	for (size_t i = 0; i < info->nfeatures; i++)
		h->features[i] = xstrdup(info->features[i]);
	free(h->mount);
	h->mount = xstrdup(info->mount ? info->mount : "");
	free(h->window);
	timewin_destroy(h->win);
	h->win = win;
	h->window = win ? xstrdup(timewin_text(win)) : NULL;
	h->window_drain = info->window_drain;
	h->registered_ms = now_ms(e);
	/* Registering is the first sign of life: the host is up from now on. */
	h->last_heartbeat_ms = h->registered_ms;
	h->last_heartbeat_mono = time_mono_ms();
	/* Assignments not yet confirmed go out again to the (new) runner. */
	for (size_t i = 0; i < h->nactive; i++) {
		h->active[i]->start_sent = false;
		h->active[i]->cancel_sent = false;
	}
	model_dirty_host(e->model, h);
	if (flush(e, err) < 0)
		goto out;
	log_info("host %s registered: %d cpus", h->name, h->cpus);
	kick(e);
	ret = 0;
out:
	saved = errno;
	pthread_mutex_unlock(&e->lock);
	errno = saved;
	return ret;
}

int engine_heartbeat(struct engine *e, const char *name, const struct heartbeat *hb, char **err)
{
	int64_t now = now_ms(e), mono = time_mono_ms();
	struct host *h;
	char *ferr = NULL;
	int ret = -1;

	pthread_mutex_lock(&e->lock);
	h = model_host(e->model, name);
	if (!h) {
		errno = ENOENT;
		errprintf(err, "no host '%s': register it first", name);
		goto out;
	}
	h->cpu_pct = hb->cpu_pct;
	h->mem_pct = hb->mem_pct;
	h->load1 = hb->load1;
	h->ended_cpu_pct = h->ended_mem_pct = 0;
	if (hb->scratch_free >= 0)
		h->scratch_free = (uint64_t)hb->scratch_free;
	h->last_heartbeat_ms = now;
	h->last_heartbeat_mono = mono;
	h->heartbeat_seq++;
	for (size_t i = 0; i < hb->ninstances; i++) {
		const struct heartbeat_entry *he = &hb->instances[i];
		struct instance *inst = model_instance(e->model, he->id);

		if (inst && inst->host == h && inst->attempt == he->attempt && inst_active(inst)) {
			inst->seen_seq = h->heartbeat_seq;
			/* Progress sent with heartbeats too: a restarted scheduler learns
			 * it without waiting for the next change. */
			if (he->progress_total > 0 && he->progress_total <= 1e15 &&
			    he->progress_done >= 0 && he->progress_done <= 1e15 && inst->progress_ms == 0) {
				inst->progress_done = he->progress_done;
				inst->progress_total = he->progress_total;
				inst->progress_ms = now;
			}
			mark_running(e, inst, he->pid, now, mono, inst->state == INST_ASSIGNED ?
				     " (from a heartbeat)" : "");
		} else {
			/* It runs there, but not for us (cancelled, lost and requeued, or
			 * an old attempt): make sure the runner stops it. */
			model_host_orphan(h, he->id, he->attempt);
		}
	}
	for (size_t i = 0; i < h->nactive; ) {
		struct instance *inst = h->active[i];

		/* Running instances that heartbeats stop listing are lost; an
		 * assignment cancelled before the runner started it is never listed
		 * and ends the same way (as cancelled), once the cancel went out. */
		bool watch = inst->state == INST_RUNNING ||
			     (inst->cancel_requested && inst->cancel_sent);

		if (!watch || inst->seen_seq == h->heartbeat_seq) {
			i++;
			continue;
		}
		if (!inst->missing_mono)
			inst->missing_mono = mono;
		if (mono - inst->missing_mono >= e->cfg.lost_after_ms &&
		    mono - inst->confirmed_mono >= e->cfg.lost_after_ms) {
			/* end_attempt() takes it off h->active: do not advance i. */
			end_attempt(e, inst, -1, 0, inst->state == INST_RUNNING ? "lost" :
				    "cancelled before it started", now);
			continue;
		}
		i++;
	}
	if (flush(e, &ferr) < 0) {
		log_warnx("heartbeat of %s: cannot write the state (will retry): %s", name,
			  ferr ? ferr : "?");
		free(ferr);
	}
	kick(e);
	ret = 0;
out:
	pthread_mutex_unlock(&e->lock);
	return ret;
}

int engine_host_leave(struct engine *e, const char *name, char **err)
{
	int64_t now = now_ms(e);
	struct host *h;
	char *ferr = NULL;
	int ret = -1;

	pthread_mutex_lock(&e->lock);
	h = model_host(e->model, name);
	if (!h) {
		errno = ENOENT;
		errprintf(err, "no host '%s'", name);
		goto out;
	}
	/* Down until it registers again: nothing new goes there. */
	h->last_heartbeat_mono = 0;
	for (size_t i = 0; i < h->nactive; ) {
		struct instance *inst = h->active[i];

		/* Assignments it never started go back to the queue; end_attempt()
		 * takes them off h->active, so do not advance i. Running ones were
		 * stopped and reported by the runner before it left. */
		if (inst->state == INST_ASSIGNED) {
			end_attempt(e, inst, -1, 0, API_REASON_RUNNER_STOPPED, now);
			continue;
		}
		i++;
	}
	log_info("host %s left (its runner stopped)", name);
	if (flush(e, &ferr) < 0) {
		log_warnx("host %s left: cannot write the state (will retry): %s", name,
			  ferr ? ferr : "?");
		free(ferr);
	}
	kick(e);
	ret = 0;
out:
	pthread_mutex_unlock(&e->lock);
	return ret;
}

static int host_has_news(const struct host *h)
{
	if (h->norphans)
		return 1;
	for (size_t i = 0; i < h->nactive; i++) {
		const struct instance *inst = h->active[i];

		if (inst->dirty)
			continue;
		if (inst->state == INST_ASSIGNED && !inst->start_sent)
			return 1;
		if (inst->cancel_requested && !inst->cancel_sent)
			return 1;
	}
	return 0;
}

json_t *engine_work(struct engine *e, const char *name, int64_t timeout_ms, char **err)
{
	struct timespec until = deadline_in(timeout_ms > 0 ? timeout_ms : 0);
	json_t *answer = NULL, *start, *cancel;
	struct host *h;
	uint64_t seq;

	pthread_mutex_lock(&e->lock);
	h = model_host(e->model, name);
	if (!h) {
		errno = ENOENT;
		errprintf(err, "no host '%s': register it first", name);
		goto out;
	}
	/* A runner polls once at a time: an older poll still waiting belongs to a
	 * connection that is gone (a restarted runner) and must not take the news. */
	seq = ++h->poll_seq;
	pthread_cond_broadcast(&e->changed);
	while (!e->stopping && !host_has_news(h) && h->poll_seq == seq) {
		int rc = pthread_cond_timedwait(&e->changed, &e->lock, &until);

		/* The host may have been removed (hosts/<h>/ctl) while we waited. */
		if (model_host(e->model, name) != h) {
			errno = ENOENT;
			errprintf(err, "host '%s' was removed", name);
			goto out;
		}
		if (rc == ETIMEDOUT)
			break;
	}
	start = json_array();
	cancel = json_array();
	if (h->poll_seq != seq) {
		/* Superseded. Answer empty, but not at once: two runners polling
		 * under one host name would otherwise keep superseding each other
		 * in a tight loop. */
		struct timespec brief = deadline_in(1000);

		if (until.tv_sec < brief.tv_sec ||
		    (until.tv_sec == brief.tv_sec && until.tv_nsec < brief.tv_nsec))
			brief = until;
		log_debug("host %s: an older work poll was superseded", h->name);
		while (!e->stopping &&
		       pthread_cond_timedwait(&e->changed, &e->lock, &brief) != ETIMEDOUT)
			;
		answer = json_pack("{s:o,s:o}", "start", start, "cancel", cancel);
		goto out;
	}
	/* Everything not yet confirmed goes out again: the runner de-duplicates by
	 * id and attempt, and an answer lost on the way costs nothing. Objects not
	 * yet committed (dirty) wait for the commit. */
	for (size_t i = 0; i < h->nactive; i++) {
		struct instance *inst = h->active[i];

		if (inst->dirty)
			continue;
		if (inst->cancel_requested) {
			json_array_append_new(cancel, json_pack("{s:I,s:i}", "id", (json_int_t)inst->id,
								"attempt", inst->attempt));
			inst->cancel_sent = true;
		} else if (inst->state == INST_ASSIGNED) {
			json_array_append_new(start, views_assignment_json(inst));
			inst->start_sent = true;
		}
	}
	for (size_t i = 0; i + 1 < h->norphans; i += 2)
		json_array_append_new(cancel, json_pack("{s:I,s:i}", "id", (json_int_t)h->orphans[i],
							"attempt", (int)h->orphans[i + 1]));
	h->norphans = 0;
	answer = json_pack("{s:o,s:o}", "start", start, "cancel", cancel);
out:
	pthread_mutex_unlock(&e->lock);
	return answer;
}

void engine_work_undelivered(struct engine *e, const char *name, const json_t *answer)
{
	static const char *const lists[] = { "start", "cancel" };
	struct host *h;

	pthread_mutex_lock(&e->lock);
	h = model_host(e->model, name);
	for (size_t l = 0; l < ARRAY_LEN(lists) && h; l++) {
		const json_t *item;
		size_t i;

		json_array_foreach(json_object_get(answer, lists[l]), i, item) {
			struct instance *inst = model_instance(e->model,
				json_integer_value(json_object_get(item, "id")));

			if (!inst || inst->host != h ||
			    inst->attempt != json_integer_value(json_object_get(item, "attempt")))
				continue;
			if (l == 0)
				inst->start_sent = false;
			else
				inst->cancel_sent = false;
		}
	}
	pthread_cond_broadcast(&e->changed);
	pthread_mutex_unlock(&e->lock);
}

int engine_report(struct engine *e, int64_t id, const struct report *r, char **err)
{
	int64_t now = now_ms(e), mono = time_mono_ms();
	struct instance *inst;
	int ret = -1, saved;

	pthread_mutex_lock(&e->lock);
	inst = model_instance(e->model, id);
	if (!inst) {
		errno = ENOENT;
		errprintf(err, "no instance %lld", (long long)id);
		goto out;
	}
	/* Reports about another attempt, or about an attempt that already ended
	 * (a report sent again), change nothing. */
	if (r->attempt != inst->attempt || !inst_active(inst)) {
		log_debug("instance %lld: ignoring a report for attempt %d (now %d, %s)",
			  (long long)id, r->attempt, inst->attempt, inst_state_name(inst->state));
		ret = 0;
		goto out;
	}
	switch (r->kind) {
	case REPORT_RUNNING:
		mark_running(e, inst, r->pid, now, mono, "");
		/* A start frees nothing, so no placement pass: only its job's
		 * roll-up changes, and that is cheap to do here. */
		update_job(e, inst->job, now);
		break;
	case REPORT_EXITED:
		/* A short instance's runner reports its start with its end. */
		if (inst->state == INST_ASSIGNED && r->pid > 0)
			mark_running(e, inst, r->pid, now, mono, "");
		end_attempt(e, inst, r->signal ? -1 : r->exit_code, r->signal, r->reason, now);
		break;
	case REPORT_FAILED:
		end_attempt(e, inst, -1, 0, r->reason ? r->reason : "could not start", now);
		break;
	}
	if (flush(e, err) < 0)
		goto out;
	if (r->kind == REPORT_RUNNING)
		pthread_cond_broadcast(&e->changed);
	else
		kick(e);
	ret = 0;
out:
	saved = errno;
	pthread_mutex_unlock(&e->lock);
	errno = saved;
	return ret;
}

/* ---- hosts: drain, resume, remove ---- */

typedef int (*host_ctl_fn)(struct engine *e, struct host *h, int64_t now, char **err);

static int host_drain(struct engine *e, struct host *h, int64_t now, char **err)
{
	(void)now;
	(void)err;
	h->draining = true;
	log_info("host %s draining: no new work, %zu instance(s) left to finish", h->name, h->nactive);
	model_dirty_host(e->model, h);
	return 0;
}

static int host_resume(struct engine *e, struct host *h, int64_t now, char **err)
{
	(void)now;
	(void)err;
	h->draining = false;
	log_info("host %s resumed", h->name);
	model_dirty_host(e->model, h);
	return 0;
}

static int host_remove(struct engine *e, struct host *h, int64_t now, char **err)
{
	(void)now;
	errno = EBUSY;
	if (!h->draining)
		return errprintf(err, "host %s is not drained: write 'drain' first, wait for its"
				 " instances to end, stop its runner, then 'remove'", h->name);
	if (h->nactive > 0)
		return errprintf(err, "host %s still runs %zu instance(s): wait for them to end",
				 h->name, h->nactive);
	if (engine_host_up(e, h))
		return errprintf(err, "the runner of host %s still runs: stop it first (it would"
				 " register the host again)", h->name);
	if (store_delete_host(e->store, h->name, err) < 0)
		return -1;
	log_info("host %s removed", h->name);
	model_remove_host(e->model, h);
	return 0;
}

static const struct host_command {
	const char *name;
	host_ctl_fn fn;
} host_commands[] = {
	{ "drain", host_drain },
	{ "resume", host_resume },
	{ "remove", host_remove },
};

int engine_host_ctl(struct engine *e, const struct caller *who, const char *name,
		    const char *command, char **err)
{
	const struct host_command *cmd = NULL;
	char word[32] = "", extra[8] = "";
	struct host *h;
	int n, ret = -1, saved;

	n = sscanf(command, "%31s %7s", word, extra);
	for (size_t i = 0; i < ARRAY_LEN(host_commands) && n == 1; i++)
		if (strcmp(host_commands[i].name, word) == 0)
			cmd = &host_commands[i];
	if (!cmd) {
		errno = EINVAL;
		return errprintf(err, "unknown host command '%s': valid commands are drain, resume,"
				 " remove", command);
	}
	pthread_mutex_lock(&e->lock);
	if (!is_admin(e, who)) {
		errno = EACCES;
		errprintf(err, "only root%s may %s a host", e->cfg.admin_set ?
			  " and the admin group" : "", word);
		goto out;
	}
	h = model_host(e->model, name);
	if (!h) {
		errno = ENOENT;
		errprintf(err, "no host '%s'", name);
		goto out;
	}
	if (cmd->fn(e, h, now_ms(e), err) < 0)
		goto out;
	if (flush(e, err) < 0)
		goto out;
	kick(e);
	ret = 0;
out:
	saved = errno;
	pthread_mutex_unlock(&e->lock);
	errno = saved;
	return ret;
}

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

char *engine_fairshare_text(struct engine *e)
{
	return fairshare_text(e->fair, now_ms(e));
}

/* ---- time and progress ---- */

int64_t engine_now_ms(struct engine *e)
{
	return now_ms(e);
}

void engine_kick_locked(struct engine *e)
{
	kick(e);
}

struct space *engine_space(struct engine *e)
{
	return e->space;
}

struct schedules *engine_schedules(struct engine *e)
{
	return e->schedules;
}

struct job *engine_job_build(struct engine *e, const struct caller *who, const char *user,
			     const char *team, struct spec *spec, const char *filename,
			     const char *text, size_t len, int64_t now, char **err)
{
	struct job *job;
	int64_t next_inst;

	for (size_t i = 0; i < spec->nafter_jobs; i++) {
		if (!model_job(e->model, spec->after_jobs[i])) {
			errno = EINVAL;
			errprintf(err, "%s: after = %lld: no such job", filename,
				  (long long)spec->after_jobs[i]);
			spec_destroy(spec);
			return NULL;
		}
	}
	job = model_job_new(model_next_job_id(e->model), spec);
	job->name = xstrdup(spec->name ? spec->name : filename);
	job->spec_file = xstrdup(filename);
	job->spec_text = xmalloc(len + 1);
	memcpy(job->spec_text, text, len);
	job->spec_text[len] = '\0';
	job->spec_len = len;
	job->uid = who->uid;
	job->gid = who->gid;
	job->ngroups = who->ngroups;
	job->groups = xcalloc(who->ngroups ? who->ngroups : 1, sizeof *job->groups);
	if (who->ngroups)
		memcpy(job->groups, who->groups, who->ngroups * sizeof *job->groups);
	job->user = user ? xstrdup(user) : user_name(who->uid);
	job->team = team ? xstrdup(team) : spec->team ? xstrdup(spec->team) : group_name(who->gid);
	job->priority = spec->priority;
	job->state = JOB_QUEUED;
	job->submitted_ms = now;
	next_inst = model_next_instance_id(e->model);
	for (size_t s = 0; s < job->nstages; s++) {
		struct stage *stage = &job->stages[s];

		if (stage->spec->foreach_stage)
			continue;
		for (int i = 0; i < stage->spec->instances; i++)
			model_stage_new_instance(stage, next_inst++, "");
		stage->expanded = true;
	}
	model_job_event(NULL, job, now, "submitted by %s (%s)", job->user, filename);
	return job;
}

void engine_job_adopt(struct engine *e, struct job *job)
{
	model_add_job(e->model, job);
	make_job_folders(e, job);
	log_info("job %lld (%s) submitted by %s", (long long)job->id, job->name, job->user);
	kick(e);
}

int engine_progress(struct engine *e, int64_t id, int attempt, double done, double total,
		    char **err)
{
	struct instance *inst;
	int ret = -1;

	if (!(total > 0) || !(done >= 0) || total > 1e15 || done > 1e15) {
		errno = EINVAL;
		return errprintf(err, "progress needs 0 <= done and 0 < total");
	}
	pthread_mutex_lock(&e->lock);
	inst = model_instance(e->model, id);
	if (!inst) {
		errno = ENOENT;
		errprintf(err, "no instance %lld", (long long)id);
		goto out;
	}
	/* The last word of an attempt that has ended still counts (it may come
	 * after its end); an older attempt's does not. */
	if (attempt == inst->attempt) {
		inst->progress_done = done;
		inst->progress_total = total;
		inst->progress_ms = now_ms(e);
	}
	ret = 0;
out:
	pthread_mutex_unlock(&e->lock);
	return ret;
}
