#include "model.h"

#include "timewin.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growable array of pointers. */
#define VEC_PUSH(arr, n, cap, item) do { \
	if ((n) == (cap)) { \
		(cap) = (cap) ? (cap) * 2 : 16; \
		(arr) = xrealloc((arr), (cap) * sizeof *(arr)); \
	} \
	(arr)[(n)++] = (item); \
	} while (0)

struct model {
	struct job **jobs;          /* indexed by id; NULL for ids not resident */
	size_t njobs, jobs_cap;     /* njobs = the next job id */
	size_t nresident;           /* jobs held */
	struct job **active;        /* not ended, by id */
	size_t nactive, active_cap;
	/* Resident instances by id: a hash chained through inst->by_id_next,
	 * since ids of jobs long gone would make an array by id grow for good. */
	struct instance **inst_buckets;
	size_t ninst_buckets, ninsts_held;
	int64_t next_inst_id;
	struct model_charge *charges;   /* usage to write with the next flush */
	size_t ncharges, charges_cap;
	struct host **hosts;        /* in registration order */
	size_t nhosts, hosts_cap;
	struct model_dirty dirty;
	size_t djobs_cap, dstages_cap, dinsts_cap, dhosts_cap;
};

static const char *const job_names[] = { "queued", "running", "succeeded", "failed", "cancelled" };
static const char *const stage_names[] = { "waiting", "queued", "running", "succeeded", "failed",
	"cancelled" };
static const char *const inst_names[] = { "queued", "assigned", "running", "succeeded", "failed",
	"cancelled" };

const char *job_state_name(enum job_state s) { return job_names[s]; }
const char *stage_state_name(enum stage_state s) { return stage_names[s]; }
const char *inst_state_name(enum inst_state s) { return inst_names[s]; }

static int find_name(const char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return (int)i;
	return -1;
}

int job_state_parse(const char *name) { return find_name(job_names, ARRAY_LEN(job_names), name); }
int stage_state_parse(const char *name) { return find_name(stage_names, ARRAY_LEN(stage_names), name); }
int inst_state_parse(const char *name) { return find_name(inst_names, ARRAY_LEN(inst_names), name); }

struct model *model_create(void)
{
	struct model *m = xcalloc(1, sizeof *m);

	/* Ids start at 1: slot 0 stays empty. */
	m->njobs = 1;
	m->jobs = xcalloc(1, sizeof *m->jobs);
	m->jobs_cap = 1;
	m->next_inst_id = 1;
	m->ninst_buckets = 1024;
	m->inst_buckets = xcalloc(m->ninst_buckets, sizeof *m->inst_buckets);
	return m;
}

static void instance_free(struct instance *inst)
{
	free(inst->item);
	free(inst->host_name);
	free(inst->reason);
	free(inst->cpu_list);
	free(inst->gpu_list);
	free(inst->slurm_job);
	free(inst->slurm_reason);
	free(inst->slurm_state);
	free(inst);
}

void model_job_free(struct job *job)
{
	if (!job)
		return;
	for (size_t s = 0; s < job->nstages; s++) {
		for (size_t i = 0; i < job->stages[s].ninst; i++)
			instance_free(job->stages[s].inst[i]);
		free(job->stages[s].inst);
	}
	free(job->stages);
	for (size_t e = 0; e < job->nevents; e++)
		free(job->events[e].text);
	free(job->events);
	spec_destroy(job->spec);
	free(job->name);
	free(job->spec_file);
	free(job->token);
	free(job->spec_text);
	free(job->groups);
	free(job->user);
	free(job->team);
	free(job->reason);
	free(job->folders_wait);
	free(job);
}

static void host_free(struct host *h)
{
	free(h->window);
	timewin_destroy(h->win);
	free(h->name);
	for (size_t i = 0; i < h->nfeatures; i++)
		free(h->features[i]);
	free(h->features);
	free(h->mount);
	free(h->storage_reason);
	model_host_executor_free(h->exec);
	free(h->active);
	free(h->orphans);
	free(h);
}

void model_destroy(struct model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->njobs; i++)
		model_job_free(m->jobs[i]);
	free(m->jobs);
	free(m->active);
	free(m->inst_buckets);
	for (size_t i = 0; i < m->ncharges; i++) {
		free(m->charges[i].team);
		free(m->charges[i].user);
	}
	free(m->charges);
	for (size_t i = 0; i < m->nhosts; i++)
		host_free(m->hosts[i]);
	free(m->hosts);
	free(m->dirty.jobs);
	free(m->dirty.stages);
	free(m->dirty.insts);
	free(m->dirty.hosts);
	free(m);
}

struct job *model_job(struct model *m, int64_t id)
{
	if (id <= 0 || (size_t)id >= m->njobs)
		return NULL;
	return m->jobs[id];
}

size_t model_njobs(struct model *m) { return m->njobs; }
size_t model_nresident(struct model *m) { return m->nresident; }
struct job *model_job_at(struct model *m, size_t i) { return i < m->njobs ? m->jobs[i] : NULL; }
int64_t model_next_job_id(struct model *m) { return (int64_t)m->njobs; }
int64_t model_next_instance_id(struct model *m) { return m->next_inst_id; }

static void grow_ptrs(void ***arr, size_t *cap, size_t need);

void model_set_next_ids(struct model *m, int64_t job_id, int64_t inst_id)
{
	if (job_id > (int64_t)m->njobs) {
		grow_ptrs((void ***)&m->jobs, &m->jobs_cap, (size_t)job_id);
		m->njobs = (size_t)job_id;
	}
	if (inst_id > m->next_inst_id)
		m->next_inst_id = inst_id;
}
size_t model_nactive(struct model *m) { return m->nactive; }
struct job *model_active_at(struct model *m, size_t i) { return i < m->nactive ? m->active[i] : NULL; }

void model_prune_active(struct model *m)
{
	size_t keep = 0;

	for (size_t i = 0; i < m->nactive; i++)
		if (!job_ended(m->active[i]))
			m->active[keep++] = m->active[i];
	m->nactive = keep;
}

void model_activate(struct model *m, struct job *job)
{
	size_t at;

	job->loaded = false;    /* read back from the store, now live again */
	for (size_t i = 0; i < m->nactive; i++)
		if (m->active[i] == job)
			return;
	VEC_PUSH(m->active, m->nactive, m->active_cap, job);
	/* Keep the list in id order: move it back to its place. */
	for (at = m->nactive - 1; at > 0 && m->active[at - 1]->id > job->id; at--)
		m->active[at] = m->active[at - 1];
	m->active[at] = job;
}

static size_t inst_bucket(const struct model *m, int64_t id)
{
	return (size_t)(((uint64_t)id * 11400714819323198485ull) >> 40) & (m->ninst_buckets - 1);
}

struct instance *model_instance(struct model *m, int64_t id)
{
	struct instance *inst = m->inst_buckets[inst_bucket(m, id)];

	while (inst && inst->id != id)
		inst = inst->by_id_next;
	return inst;
}

/* Twice the buckets once there are more instances than buckets. */
static void inst_rehash(struct model *m)
{
	size_t old_n = m->ninst_buckets;
	struct instance **old = m->inst_buckets;

	m->ninst_buckets = old_n * 2;
	m->inst_buckets = xcalloc(m->ninst_buckets, sizeof *m->inst_buckets);
	for (size_t b = 0; b < old_n; b++) {
		struct instance *inst = old[b], *next;

		for (; inst; inst = next) {
			size_t nb = inst_bucket(m, inst->id);

			next = inst->by_id_next;
			inst->by_id_next = m->inst_buckets[nb];
			m->inst_buckets[nb] = inst;
		}
	}
	free(old);
}

static void inst_unhash(struct model *m, struct instance *inst)
{
	struct instance **pp = &m->inst_buckets[inst_bucket(m, inst->id)];

	while (*pp && *pp != inst)
		pp = &(*pp)->by_id_next;
	if (*pp) {
		*pp = inst->by_id_next;
		inst->by_id_next = NULL;
		m->ninsts_held--;
	}
}

struct job *model_job_new(int64_t id, struct spec *spec)
{
	struct job *job = xcalloc(1, sizeof *job);

	job->id = id;
	job->spec = spec;
	job->reason = xstrdup("");
	job->nstages = spec->nstages;
	job->stages = xcalloc(spec->nstages, sizeof *job->stages);
	for (size_t s = 0; s < spec->nstages; s++) {
		job->stages[s].job = job;
		job->stages[s].idx = (int)s;
		job->stages[s].spec = &spec->stages[s];
	}
	return job;
}

static void grow_ptrs(void ***arr, size_t *cap, size_t need)
{
	size_t old = *cap;

	if (need <= old)
		return;
	while (*cap < need)
		*cap = *cap ? *cap * 2 : 16;
	*arr = xrealloc(*arr, *cap * sizeof **arr);
	memset(*arr + old, 0, (*cap - old) * sizeof **arr);
}

void model_add_instance(struct model *m, struct instance *inst)
{
	size_t b;

	if (m->ninsts_held >= m->ninst_buckets)
		inst_rehash(m);
	b = inst_bucket(m, inst->id);
	inst->by_id_next = m->inst_buckets[b];
	m->inst_buckets[b] = inst;
	m->ninsts_held++;
	if (inst->id + 1 > m->next_inst_id)
		m->next_inst_id = inst->id + 1;
}

void model_add_job(struct model *m, struct job *job)
{
	size_t id = (size_t)job->id;

	grow_ptrs((void ***)&m->jobs, &m->jobs_cap, id + 1);
	if (!m->jobs[id])
		m->nresident++;
	m->jobs[id] = job;
	if (id + 1 > m->njobs)
		m->njobs = id + 1;
	for (size_t s = 0; s < job->nstages; s++)
		for (size_t i = 0; i < job->stages[s].ninst; i++)
			model_add_instance(m, job->stages[s].inst[i]);
	if (!job_ended(job)) {
		/* Jobs arrive in id order except at load, where they are loaded by id too. */
		VEC_PUSH(m->active, m->nactive, m->active_cap, job);
	}
}

/* Drop the entries of v (n of them) that belong to job, keeping the order. */
#define DROP_OF_JOB(v, n, belongs)                          \
	do {                                                \
		size_t keep_ = 0;                           \
		for (size_t i_ = 0; i_ < (n); i_++)         \
			if (!(belongs))                     \
				(v)[keep_++] = (v)[i_];     \
		(n) = keep_;                                \
	} while (0)

void model_forget_job(struct model *m, struct job *job)
{
	for (size_t s = 0; s < job->nstages; s++)
		for (size_t i = 0; i < job->stages[s].ninst; i++)
			inst_unhash(m, job->stages[s].inst[i]);
	if ((size_t)job->id < m->njobs && m->jobs[job->id] == job) {
		m->jobs[job->id] = NULL;
		m->nresident--;
	}
	DROP_OF_JOB(m->active, m->nactive, m->active[i_] == job);
	DROP_OF_JOB(m->dirty.jobs, m->dirty.njobs, m->dirty.jobs[i_] == job);
	DROP_OF_JOB(m->dirty.stages, m->dirty.nstages, m->dirty.stages[i_]->job == job);
	DROP_OF_JOB(m->dirty.insts, m->dirty.ninsts, m->dirty.insts[i_]->job == job);
	model_job_free(job);
}

void model_undirty_job(struct model *m, struct job *job)
{
	DROP_OF_JOB(m->dirty.jobs, m->dirty.njobs, m->dirty.jobs[i_] == job);
	DROP_OF_JOB(m->dirty.stages, m->dirty.nstages, m->dirty.stages[i_]->job == job);
	DROP_OF_JOB(m->dirty.insts, m->dirty.ninsts, m->dirty.insts[i_]->job == job);
	job->dirty = false;
	job->nflushed_events = job->nevents;
	for (size_t s = 0; s < job->nstages; s++) {
		job->stages[s].dirty = false;
		for (size_t i = 0; i < job->stages[s].ninst; i++)
			job->stages[s].inst[i]->dirty = false;
	}
}

struct instance *model_stage_new_instance(struct stage *stage, int64_t id, const char *item)
{
	struct instance *inst = xcalloc(1, sizeof *inst);

	inst->id = id;
	inst->job = stage->job;
	inst->stage = stage;
	inst->index = (int)stage->ninst;
	inst->item = xstrdup(item ? item : "");
	inst->state = INST_QUEUED;
	inst->host_name = xstrdup("");
	inst->reason = xstrdup("");
	inst->cpu_list = xstrdup("");
	inst->gpu_list = xstrdup("");
	inst->exit_code = -1;
	inst->cpu_ms = inst->max_rss = inst->rss = -1;
	VEC_PUSH(stage->inst, stage->ninst, stage->cap, inst);
	stage->counts[INST_QUEUED]++;
	stage->job->quiet = false;
	return inst;
}

void model_job_event(struct model *m, struct job *job, int64_t ms, const char *fmt, ...)
{
	va_list ap;
	char *text = NULL;

	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) < 0)
		text = NULL;
	va_end(ap);
	if (!text)
		text = xstrdup("(out of memory)");
	/* One event, one line: reasons from runners may hold newlines. */
	for (char *p = text; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	if (job->nevents == job->events_cap) {
		job->events_cap = job->events_cap ? job->events_cap * 2 : 8;
		job->events = xrealloc(job->events, job->events_cap * sizeof *job->events);
	}
	job->events[job->nevents].ms = ms;
	job->events[job->nevents].text = text;
	job->nevents++;
	job->quiet = false;
	if (m)
		model_dirty_job(m, job);
}

void model_host_executor_free(struct host_executor *x)
{
	if (!x)
		return;
	free(x->kind);
	free(x->partition);
	free(x->poll_error);
	free(x);
}

void model_set_short(char **field, const char *text, size_t max)
{
	if (!text || !*text) {
		free(*field);
		*field = NULL;
		return;
	}
	if (*field && strncmp(*field, text, max) == 0 && strlen(*field) == strnlen(text, max))
		return;
	free(*field);
	*field = xasprintf("%.*s", (int)max, text);
}

void model_set_text(char **field, const char *text)
{
	char *copy = xstrdup(text ? text : "");

	free(*field);
	*field = copy;
}

static void host_reserve(struct host *h, const struct instance *inst, int sign)
{
	const struct spec_stage *ss = inst->stage->spec;

	h->reserved_cpus += sign * ss->cpus;
	h->reserved_gpus += sign * ss->gpus;
	if (h->reserved_gpus < 0)
		h->reserved_gpus = 0;
	if (sign > 0) {
		h->reserved_mem += ss->mem;
		h->reserved_scratch += ss->scratch;
	} else {
		h->reserved_mem -= ss->mem < h->reserved_mem ? ss->mem : h->reserved_mem;
		h->reserved_scratch -= ss->scratch < h->reserved_scratch ? ss->scratch : h->reserved_scratch;
	}
}

void model_set_host(struct model *m, struct instance *inst, struct host *host)
{
	struct host *old = inst->host;

	if (old == host)
		return;
	if (old) {
		for (size_t i = 0; i < old->nactive; i++) {
			if (old->active[i] == inst) {
				old->active[i] = old->active[--old->nactive];
				break;
			}
		}
		host_reserve(old, inst, -1);
	}
	inst->host = host;
	if (host) {
		VEC_PUSH(host->active, host->nactive, host->active_cap, inst);
		host_reserve(host, inst, +1);
		free(inst->host_name);
		inst->host_name = xstrdup(host->name);
	}
	model_dirty_instance(m, inst);
}

void model_set_state(struct model *m, struct instance *inst, enum inst_state state)
{
	struct stage *stage = inst->stage;

	if (inst->state == state)
		return;
	stage->counts[inst->state]--;
	stage->counts[state]++;
	inst->state = state;
	if (state != INST_ASSIGNED && state != INST_RUNNING)
		model_set_host(m, inst, NULL);
	model_dirty_instance(m, inst);
}

void model_dirty_job(struct model *m, struct job *job)
{
	job->quiet = false;
	if (!job->dirty) {
		job->dirty = true;
		VEC_PUSH(m->dirty.jobs, m->dirty.njobs, m->djobs_cap, job);
	}
}

void model_dirty_stage(struct model *m, struct stage *stage)
{
	stage->job->quiet = false;
	if (!stage->dirty) {
		stage->dirty = true;
		VEC_PUSH(m->dirty.stages, m->dirty.nstages, m->dstages_cap, stage);
	}
}

void model_dirty_instance(struct model *m, struct instance *inst)
{
	inst->job->quiet = false;
	if (!inst->dirty) {
		inst->dirty = true;
		VEC_PUSH(m->dirty.insts, m->dirty.ninsts, m->dinsts_cap, inst);
	}
}

void model_dirty_host(struct model *m, struct host *host)
{
	if (!host->dirty) {
		host->dirty = true;
		VEC_PUSH(m->dirty.hosts, m->dirty.nhosts, m->dhosts_cap, host);
	}
}

const struct model_dirty *model_dirty(struct model *m)
{
	return &m->dirty;
}

void model_charge(struct model *m, const struct job *job, int64_t ended_ms, double cpu_s)
{
	struct model_charge *c;

	if (m->ncharges == m->charges_cap) {
		m->charges_cap = m->charges_cap ? m->charges_cap * 2 : 16;
		m->charges = xrealloc(m->charges, m->charges_cap * sizeof *m->charges);
	}
	c = &m->charges[m->ncharges++];
	c->hour = ended_ms / 3600000;
	c->team = xstrdup(job->team ? job->team : "");
	c->user = xstrdup(job->user ? job->user : "");
	c->cpu_s = cpu_s;
}

const struct model_charge *model_charges(struct model *m, size_t *n)
{
	*n = m->ncharges;
	return m->charges;
}

void model_clean(struct model *m)
{
	for (size_t i = 0; i < m->dirty.njobs; i++) {
		m->dirty.jobs[i]->dirty = false;
		m->dirty.jobs[i]->persisted = true;
		m->dirty.jobs[i]->nflushed_events = m->dirty.jobs[i]->nevents;
	}
	for (size_t i = 0; i < m->dirty.nstages; i++)
		m->dirty.stages[i]->dirty = false;
	for (size_t i = 0; i < m->dirty.ninsts; i++)
		m->dirty.insts[i]->dirty = false;
	for (size_t i = 0; i < m->dirty.nhosts; i++)
		m->dirty.hosts[i]->dirty = false;
	m->dirty.njobs = m->dirty.nstages = m->dirty.ninsts = m->dirty.nhosts = 0;
	for (size_t i = 0; i < m->ncharges; i++) {
		free(m->charges[i].team);
		free(m->charges[i].user);
	}
	m->ncharges = 0;
}

struct host *model_host(struct model *m, const char *name)
{
	for (size_t i = 0; i < m->nhosts; i++)
		if (strcmp(m->hosts[i]->name, name) == 0)
			return m->hosts[i];
	return NULL;
}

struct host *model_add_host(struct model *m, const char *name)
{
	struct host *h = xcalloc(1, sizeof *h);

	h->name = xstrdup(name);
	h->mount = xstrdup("");
	h->cpu_limit = 90;
	h->mem_limit = 90;
	VEC_PUSH(m->hosts, m->nhosts, m->hosts_cap, h);
	return h;
}

size_t model_nhosts(struct model *m) { return m->nhosts; }
struct host *model_host_at(struct model *m, size_t i) { return i < m->nhosts ? m->hosts[i] : NULL; }

void model_host_orphan(struct host *host, int64_t id, int attempt)
{
	for (size_t i = 0; i + 1 < host->norphans; i += 2)
		if (host->orphans[i] == id && host->orphans[i + 1] == attempt)
			return;
	VEC_PUSH(host->orphans, host->norphans, host->orphans_cap, id);
	VEC_PUSH(host->orphans, host->norphans, host->orphans_cap, (int64_t)attempt);
}

void model_remove_host(struct model *m, struct host *host)
{
	size_t keep = 0;

	for (size_t i = 0; i < m->dirty.nhosts; i++)
		if (m->dirty.hosts[i] != host)
			m->dirty.hosts[keep++] = m->dirty.hosts[i];
	m->dirty.nhosts = keep;
	for (size_t i = 0; i < m->nhosts; i++) {
		if (m->hosts[i] == host) {
			/* Keep registration order for the views. */
			memmove(&m->hosts[i], &m->hosts[i + 1], (m->nhosts - i - 1) * sizeof *m->hosts);
			m->nhosts--;
			break;
		}
	}
	host_free(host);
}
