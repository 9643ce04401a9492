/* The door into the model (engine.h, "views"): each call takes the lock,
 * renders what is asked with sched/views, copies it out and lets go. A job
 * that is not in memory is rendered the same way from the history reader's
 * copy, outside the lock; the lists and counts of every job come from the
 * reader's connection, outside the lock too. */
#include "engine_internal.h"
#include "fairshare.h"
#include "history_reader.h"
#include "space.h"
#include "util.h"
#include "views.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What is asked of one job, and what came of it. */
struct job_ask {
	struct engine *e;
	bool live;               /* the job is the model's (lock held): why sees placement */
	int64_t now;
	unsigned what;           /* JOB_VIEW_* */
	size_t max_instances;
	struct job_views *out;
	const char *stage;       /* a stage's or an instance's view */
	int64_t index;           /* an instance's; -1: the stage's status */
	char *status;            /* theirs */
	json_t *json;
	char *missing;           /* no such stage or instance: what to say */
	const char *state;       /* engine_job_state's */
	bool ended;
};

typedef void (*job_fn)(struct job_ask *a, struct model *m, const struct job *job);

struct reader_call {
	struct job_ask *ask;
	job_fn fn;
};

static void reader_fn(void *arg, struct model *m, const struct job *job)
{
	struct reader_call *c = arg;

	c->fn(c->ask, m, job);
}

/* fn(a, m, job) on job id: under the lock when it is in memory, else on the
 * history reader's copy outside it. 0, or -1 with errno ENOENT or EIO and *err. */
static int with_job(struct engine *e, int64_t id, job_fn fn, struct job_ask *a, char **err)
{
	struct reader_call call = { a, fn };
	char *why = NULL;
	struct job *job;
	int64_t next;
	uint64_t changes;
	int rc;

	a->e = e;
	pthread_mutex_lock(&e->lock);
	a->now = engine_now(e);
	job = model_job(e->model, id);
	if (job) {
		a->live = true;
		fn(a, e->model, job);
		pthread_mutex_unlock(&e->lock);
		return 0;
	}
	next = model_next_job_id(e->model);
	changes = e->history.changes;
	pthread_mutex_unlock(&e->lock);
	rc = id > 0 && id < next ? history_reader_job(e->reader, id, changes, reader_fn, &call, &why)
				 : 0;
	if (rc < 0) {
		errprintf(err, "job %lld cannot be read from the database: %s", (long long)id,
			  why ? why : "?");
		free(why);
		errno = EIO;
		return -1;
	}
	if (rc == 0) {
		errprintf(err, "no job %lld", (long long)id);
		errno = ENOENT;
		return -1;
	}
	return 0;
}

/* "10 ms", "0.5 s". */
static void format_ms(int64_t ms, char *buf, size_t len)
{
	if (ms < 1000)
		snprintf(buf, len, "%lld ms", (long long)ms);
	else
		snprintf(buf, len, "%g s", (double)ms / 1000);
}

/* jobs/<id>/why: placement's verdicts, then the space the job waits for and
 * the burst it came in, with the times configured (engine_config). */
static char *job_why(struct job_ask *a, struct model *m, const struct job *job)
{
	struct engine *e = a->e;
	struct placement_host *hosts = NULL;
	size_t nhosts = 0;
	char quiet[32], most[32], *text, *more;

	if (!a->live)
		return views_job_why(m, job, NULL, 0, a->now);
	nhosts = engine_placement_hosts(e, &hosts);
	text = views_job_why(m, job, hosts, nhosts, a->now);
	free(hosts);
	text = space_why_job(e->space, job, text);
	if (!engine_burst_waits(e, job))
		return text;
	format_ms(e->cfg.burst_quiet_ms, quiet, sizeof quiet);
	format_ms(e->cfg.burst_max_ms, most, sizeof most);
	more = xasprintf("%sburst: it came in a burst of submissions that is still on: placed when "
			 "the burst ends (%s without a new job, at most %s)\n", text, quiet, most);
	free(text);
	return more;
}

static void render_job(struct job_ask *a, struct model *m, const struct job *job)
{
	struct job_views *o = a->out;

	o->now = a->now;
	if (a->what & JOB_VIEW_JSON)
		o->json = views_job_json(job, a->now);
	if ((a->what & JOB_VIEW_JSON) && (a->what & JOB_VIEW_INSTANCES)) {
		json_t *stages = json_object_get(o->json, "stages");
		size_t shown = 0;

		for (size_t s = 0; s < job->nstages; s++) {
			const struct stage *st = &job->stages[s];
			json_t *list = json_array();

			for (size_t i = 0; i < st->ninst && shown < a->max_instances; i++, shown++)
				json_array_append_new(list, views_instance_json(st->inst[i]));
			json_object_set_new(json_array_get(stages, s), "list", list);
		}
	}
	if (a->what & JOB_VIEW_STATUS)
		o->status = views_job_status(job, a->now);
	if (a->what & JOB_VIEW_WHY)
		o->why = job_why(a, m, job);
	if (a->what & JOB_VIEW_EVENTS)
		o->events = views_job_events(job);
	if (a->what & JOB_VIEW_SPEC) {
		o->spec = xmalloc(job->spec_len + 1);
		memcpy(o->spec, job->spec_text, job->spec_len + 1);
		o->spec_len = job->spec_len;
	}
}

int engine_job_views(struct engine *e, int64_t id, unsigned what, size_t max_instances,
		     struct job_views *out, char **err)
{
	struct job_ask a = { .what = what, .max_instances = max_instances, .out = out };

	memset(out, 0, sizeof *out);
	return with_job(e, id, render_job, &a, err);
}

void job_views_free(struct job_views *v)
{
	json_decref(v->json);
	free(v->status);
	free(v->why);
	free(v->events);
	free(v->spec);
	memset(v, 0, sizeof *v);
}

char *engine_job_text(struct engine *e, int64_t id, unsigned view, char **err)
{
	struct job_views v;
	char **text = view == JOB_VIEW_STATUS ? &v.status : view == JOB_VIEW_WHY ? &v.why : &v.events;
	char *out;

	if (engine_job_views(e, id, view, 0, &v, err) < 0)
		return NULL;
	out = *text;
	*text = NULL;
	job_views_free(&v);
	return out;
}

static void render_part(struct job_ask *a, struct model *m, const struct job *job)
{
	int s = spec_stage_index(job->spec, a->stage);
	const struct stage *stage;
	const struct instance *inst;

	(void)m;
	if (s < 0) {
		a->missing = xasprintf("job %lld has no stage '%s'", (long long)job->id, a->stage);
		return;
	}
	stage = &job->stages[s];
	if (a->index < 0) {
		a->status = views_stage_status(stage, a->now);
		return;
	}
	if ((size_t)a->index >= stage->ninst) {
		a->missing = xstrdup("no such instance");
		return;
	}
	inst = stage->inst[a->index];
	a->status = views_instance_status(inst);
	a->json = views_instance_json(inst);
}

/* with_job, and ENOENT when fn found no such stage or instance. */
static int part_views(struct engine *e, int64_t id, job_fn fn, struct job_ask *a, char **err)
{
	if (with_job(e, id, fn, a, err) < 0)
		return -1;
	if (a->missing) {
		errprintf(err, "%s", a->missing);
		free(a->missing);
		errno = ENOENT;
		return -1;
	}
	return 0;
}

char *engine_stage_status(struct engine *e, int64_t id, const char *stage, char **err)
{
	struct job_ask a = { .stage = stage, .index = -1 };

	return part_views(e, id, render_part, &a, err) < 0 ? NULL : a.status;
}

int engine_instance_views(struct engine *e, int64_t id, const char *stage, int64_t index,
			  char **status, json_t **json, char **err)
{
	struct job_ask a = { .stage = stage, .index = index < 0 ? INT64_MAX : index };

	if (part_views(e, id, render_part, &a, err) < 0)
		return -1;
	if (status)
		*status = a.status;
	else
		free(a.status);
	if (json)
		*json = a.json;
	else
		json_decref(a.json);
	return 0;
}

json_t *engine_resident_jobs_json(struct engine *e, const int64_t *ids, size_t n, int64_t *now)
{
	json_t *list = json_array();

	pthread_mutex_lock(&e->lock);
	*now = engine_now(e);
	for (size_t i = 0; i < n; i++) {
		const struct job *job = model_job(e->model, ids[i]);

		json_array_append_new(list, job ? views_job_json(job, *now) : json_null());
	}
	pthread_mutex_unlock(&e->lock);
	return list;
}

int engine_list_jobs(struct engine *e, int64_t uid, store_job_fn on_job, void *arg, char **err)
{
	int64_t since;

	pthread_mutex_lock(&e->lock);
	since = engine_now(e) - e->cfg.list_finished_ms;
	pthread_mutex_unlock(&e->lock);
	return history_reader_list(e->reader, since, uid, on_job, arg, err);
}

int engine_last_job(struct engine *e, uid_t uid, int64_t *id, char **err)
{
	return history_reader_last(e->reader, uid, id, err);
}

static void job_state(struct job_ask *a, struct model *m, const struct job *job)
{
	int s = a->stage ? spec_stage_index(job->spec, a->stage) : -1;

	(void)m;
	if (a->stage && s < 0) {
		a->missing = xasprintf("job %lld has no stage '%s'", (long long)job->id, a->stage);
		return;
	}
	a->ended = job_ended(job) || (s >= 0 && stage_ended(&job->stages[s]));
	a->state = s >= 0 ? stage_state_name(job->stages[s].state) : job_state_name(job->state);
}

int engine_job_state(struct engine *e, int64_t id, const char *stage, const char **state,
		     bool *ended, char **err)
{
	struct job_ask a = { .stage = stage };

	if (part_views(e, id, job_state, &a, err) < 0)
		return -1;
	*state = a.state;
	*ended = a.ended;
	return 0;
}

/* ---- hosts and the cluster ---- */

json_t *engine_hosts_json(struct engine *e)
{
	json_t *hosts = json_array();

	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < model_nhosts(e->model); i++) {
		const struct host *h = model_host_at(e->model, i);

		json_array_append_new(hosts, views_host_json(h, engine_host_up(e, h)));
	}
	pthread_mutex_unlock(&e->lock);
	return hosts;
}

int engine_host_views(struct engine *e, const char *name, json_t **json, char **status,
		      json_t **running)
{
	const struct host *h;

	pthread_mutex_lock(&e->lock);
	h = model_host(e->model, name);
	if (h && json)
		*json = views_host_json(h, engine_host_up(e, h));
	if (h && status)
		*status = views_host_status(h, engine_host_up(e, h), engine_now(e));
	if (h && running)
		*running = views_host_running_json(h);
	pthread_mutex_unlock(&e->lock);
	if (!h)
		errno = ENOENT;
	return h ? 0 : -1;
}

char *engine_host_status(struct engine *e, const char *name)
{
	char *text = NULL;

	return engine_host_views(e, name, NULL, &text, NULL) == 0 ? text : NULL;
}

json_t *engine_host_loads_json(struct engine *e)
{
	json_t *loads = json_array();

	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < model_nhosts(e->model); i++) {
		const struct host *h = model_host_at(e->model, i);

		if (h->last_heartbeat_mono == 0)
			continue; /* nothing heard since we started */
		json_array_append_new(loads, json_pack("{s:s,s:I,s:f,s:f,s:f,s:f}", "name", h->name,
				"ms", (json_int_t)h->last_heartbeat_ms, "cpu", h->cpu_pct,
				"outside_cpu", h->outside_cpu_pct, "mem", h->mem_pct,
				"outside_mem", h->outside_mem_pct));
	}
	pthread_mutex_unlock(&e->lock);
	return loads;
}

char *engine_cluster_status(struct engine *e, char **err)
{
	int64_t jobs[5];
	int *up;
	char *text, *fair, *full;

	/* Every job the store has, not only those in memory: outside the lock. */
	if (history_reader_counts(e->reader, jobs, err) < 0) {
		errno = EIO;
		return NULL;
	}
	pthread_mutex_lock(&e->lock);
	up = xcalloc(model_nhosts(e->model) + 1, sizeof *up);
	for (size_t i = 0; i < model_nhosts(e->model); i++)
		up[i] = engine_host_up(e, model_host_at(e->model, i));
	text = views_cluster_status(e->model, jobs, up, engine_now(e));
	fair = fairshare_text(e->fair, engine_now(e));
	pthread_mutex_unlock(&e->lock);
	free(up);
	full = xasprintf("%s%s", text, fair);
	free(text);
	free(fair);
	return full;
}
