/* The scheduling pass: recurring runs due, hosts silent past their lease,
 * the roll-up of every unfinished job, then placement (fair share, backfill,
 * space on the volume) and the commit of what it placed. Also the hosts as
 * placement sees them, which the views of why share. Lock held throughout. */
#include "engine_internal.h"
#include "backfill.h"
#include "fairshare.h"
#include "log.h"
#include "placement.h"
#include "schedules.h"
#include "space.h"
#include "timing.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A silent host's instances are requeued this long after its lease ran out:
 * by then its runner has killed them. It counts the lease from the heartbeat
 * it sent, we from the one we received, which is later; but it may notice a
 * few seconds late, stuck in a call that times out (5 s) during a cut. */
#define LEASE_MARGIN_MS 7000

int engine_host_up(struct engine *e, const struct host *h)
{
	return h->last_heartbeat_mono > 0 &&
	       time_mono_ms() - h->last_heartbeat_mono <= e->cfg.host_timeout_ms;
}

/* Memory that parsa's instances use beyond what they reserved (mem = 0 is no
 * limit, and a tree is measured only twice a second): taken like outside use,
 * so that it is not handed out a second time. */
static uint64_t over_reservation_mem(const struct host *h)
{
	uint64_t sum = 0;

	for (size_t k = 0; k < h->nactive; k++) {
		const struct instance *inst = h->active[k];

		if (inst->rss > 0 && (uint64_t)inst->rss > inst->stage->spec->mem)
			sum += (uint64_t)inst->rss - inst->stage->spec->mem;
	}
	return sum;
}

size_t engine_placement_hosts(struct engine *e, struct placement_host **out)
{
	int64_t now = engine_now(e);
	size_t n = model_nhosts(e->model);
	struct placement_host *ph = xcalloc(n ? n : 1, sizeof *ph);

	for (size_t i = 0; i < n; i++) {
		struct host *h = model_host_at(e->model, i);

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
		ph[i].reserved_gpus = h->reserved_gpus;
		ph[i].gpus = h->gpus;
		ph[i].cpu_pct = h->cpu_pct;
		ph[i].mem_pct = h->mem_pct;
		ph[i].outside_cpu_pct = h->outside_cpu_pct;
		ph[i].outside_mem_pct = h->outside_mem_pct;
		/* A core counts as taken from half a core's use on: a busy program
		 * measures a little under 1, background noise well under 0.5. */
		ph[i].outside_cpus = (int)(h->outside_cores + 0.5);
		ph[i].outside_mem = h->outside_mem + over_reservation_mem(h);
		ph[i].cpu_limit = h->cpu_limit;
		ph[i].mem_limit = h->mem_limit;
		ph[i].features = (const char *const *)h->features;
		ph[i].nfeatures = h->nfeatures;
		timing_host_fill(h, now, &ph[i]);
		ph[i].storage_down_since = h->storage_down_since;
		ph[i].storage_reason = h->storage_reason;
		/* A reservation whose time has come holds nothing any more. */
		if (e->held.job && e->held.host && e->held.at_ms > now &&
		    strcmp(e->held.host, h->name) == 0) {
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
	inst->not_before_ms = 0;
	inst->avoid_host = false;
	inst->started_ms = 0;
	inst->ended_ms = 0;
	inst->cpu_ms = inst->max_rss = inst->rss = -1;
	model_set_text(&inst->cpu_list, "");
	model_set_text(&inst->gpu_list, "");
	model_set_short(&inst->slurm_job, NULL, 0);
	model_set_short(&inst->slurm_reason, NULL, 0);
	model_set_short(&inst->slurm_state, NULL, 0);
	engine_set_reason(inst, "");
	model_set_state(e->model, inst, INST_ASSIGNED);
	model_set_host(e->model, inst, h);
	/* Its summary counts the instance as running from now on. */
	if (inst->stage->state == STAGE_QUEUED)
		engine_set_stage_state(e, inst->stage, STAGE_RUNNING, now);
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
		/* engine_end_attempt() takes each off h->active. */
		while (h->nactive > 0)
			engine_end_attempt(e, h->active[h->nactive - 1], -1, 0, why, now);
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
		if (placement_host_open(&ph[i]))
			free_cpus += placement_free_cpus(&ph[i]);
	if (free_cpus == 0) {
		/* Nothing can start; what was held stays held. */
		goto out;
	}
	for (size_t j = 0; j < model_nactive(e->model); j++) {
		struct job *job = model_active_at(e->model, j);
		double usage;

		if (job_ended(job) || job->held || job->ending != ENDING_NONE || job->folders_pending ||
		    engine_burst_defers(e, job))
			continue;
		/* Before the job's start time no stage of it is open (as
		 * timing_stage_open says for each): its stages need no look. */
		if (timing_job_start_ms(job) > now)
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
			/* max_running: what is assigned or running counts, on every host. */
			if (ss->max_running > 0) {
				long room = ss->max_running - (long)(stage->counts[INST_ASSIGNED] +
								     stage->counts[INST_RUNNING]);

				if (room <= 0)
					continue;
				if (limit > room)
					limit = room;
			}
			while (stage->queued_hint < stage->ninst &&
			       stage->inst[stage->queued_hint]->state != INST_QUEUED)
				stage->queued_hint++;
			for (size_t i = stage->queued_hint; i < stage->ninst && limit > 0; i++) {
				struct instance *inst = stage->inst[i];
				struct placement_req *r;

				if (inst->state != INST_QUEUED)
					continue;
				/* Backing off after a failure (engine_end_attempt). */
				if (inst->not_before_ms > now)
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
				r->gpus = ss->gpus;
				r->mem = ss->mem;
				r->scratch = ss->scratch;
				r->hosts = (const char *const *)ss->hosts;
				r->nhosts = ss->nhosts;
				r->cookie = inst;
				r->avoid = inst->avoid_host && *inst->host_name ? inst->host_name : NULL;
				r->walltime_ms = (int64_t)ss->walltime * 1000;
				r->disk = ss->disk;
				limit--;
			}
		}
	}
	placement_sort(reqs, nreqs);
	/* Walltime-aware backfill (sched/policy/backfill.h): the first request that
	 * fits nowhere keeps its place on the host where it starts soonest. */
	bf = backfill_create(now);
	backfill_add_model(bf, e->model);
	gate = backfill_gate(bf);
	/* Space on the volume comes first: a stage waiting for it holds no host. */
	space_begin_pass(e->space, reserved_disk(e));
	gate = space_gate(e->space, &gate);
	placed = placement_run_gated(ph, nh, reqs, nreqs, &gate);
	keep_reservation(e, backfill_reserved(bf), ph);
	for (size_t i = 0; i < nreqs && placed > 0; i++) {
		struct instance *inst = reqs[i].cookie;

		if (reqs[i].host < 0)
			continue;
		assign(e, inst, model_host_at(e->model, (size_t)reqs[i].host), now);
		/* The job runs from its first assignment, not from the next pass. */
		if (inst->job->state == JOB_QUEUED)
			engine_update_job(e, inst->job, now);
	}
out:
	backfill_destroy(bf);
	free(reqs);
	free(ph);
	return placed;
}

/* The recurring pipelines' runs that are due (schedules_due), each submitted
 * and its outcome told back. */
static void submit_due_runs(struct engine *e, int64_t now)
{
	struct schedule_run *runs = NULL;
	size_t n = schedules_due(e->schedules, now, &runs);

	for (size_t i = 0; i < n; i++) {
		char *err = NULL;
		int64_t job = 0;
		int failed = 0;

		if (engine_submit_run(e, &runs[i], &job, &err) < 0)
			failed = errno ? errno : EIO;

		schedules_ran(e->schedules, &runs[i], failed, job, err);
		free(err);
	}
	schedules_runs_free(runs, n);
}

/* Whether a job may rest after a roll-up that changed nothing (job->quiet):
 * its roll-up depends only on the job itself, which no change can touch
 * without marking it dirty; but a job waiting for other jobs reads theirs,
 * and an ending one or one whose folders are being made is seen to every
 * pass. A queue of thousands of jobs that wait for their start time then
 * costs the pass a look at each, not a roll-up (bench/submit). */
static bool may_rest(const struct job *job)
{
	return job->ending == ENDING_NONE && !job->folders_pending && job->spec->nafter_jobs == 0;
}

/* A pass this slow is logged with where the time went. */
#define SLOW_PASS_MS 50.0

static double elapsed_ms(const struct timespec *from, const struct timespec *to)
{
	return (double)(to->tv_sec - from->tv_sec) * 1000.0 + (double)(to->tv_nsec - from->tv_nsec) / 1e6;
}

/* The pass's duration into the histogram of /metrics. */
static void count_pass(struct engine_counters *c, double ms)
{
	static const double le[ENGINE_PASS_BUCKETS] = ENGINE_PASS_BUCKET_S;

	c->passes++;
	c->pass_seconds += ms / 1000.0;
	for (size_t i = 0; i < ENGINE_PASS_BUCKETS; i++)
		if (ms / 1000.0 <= le[i])
			c->pass_le[i]++;
}

void engine_pass(struct engine *e)
{
	int64_t now = engine_now(e), t0 = time_mono_ms();
	struct timespec a, b, c, d;
	size_t placed;
	char *err = NULL;
	double ms;

	clock_gettime(CLOCK_MONOTONIC, &a);
	/* Recurring pipelines first: their new jobs are placed in this pass. */
	submit_due_runs(e, now);
	requeue_silent(e, now);
	for (size_t j = 0; j < model_nactive(e->model); j++) {
		struct job *job = model_active_at(e->model, j);

		if (job->quiet)
			continue;
		job->quiet = may_rest(job);
		engine_update_job(e, job, now);
	}
	clock_gettime(CLOCK_MONOTONIC, &c);
	placed = place(e, now);
	clock_gettime(CLOCK_MONOTONIC, &d);
	if (engine_flush(e, &err) < 0) {
		log_warnx("cannot write the state (will retry): %s", err ? err : strerror(errno));
		free(err);
	}
	model_prune_active(e->model);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = elapsed_ms(&a, &b);
	e->pass_ms[e->npasses++ % PASS_HISTORY] = ms;
	count_pass(&e->counters, ms);
	if (ms >= SLOW_PASS_MS)
		log_info("slow pass: %.0f ms (roll-up %.0f, placement %.0f of %zu, commit %.0f)", ms,
			 elapsed_ms(&a, &c), elapsed_ms(&c, &d), placed, elapsed_ms(&d, &b));
	pthread_cond_broadcast(&e->changed);
	/* After the pass's own work and outside its duration: finished jobs
	 * leave memory, a batch of old records goes. */
	engine_history_sweep(e, now, time_mono_ms());
	engine_history_retention(e, now, time_mono_ms());
	if (placed)
		log_debug("pass: %zu placed in %lld ms", placed, (long long)(time_mono_ms() - t0));
}

