/* Loading the model from the store: at start the hosts and the resident jobs
 * (unfinished, or ended within keep_finished: their specs read back, stages,
 * instances and events, in that order); later one job at a time, on demand
 * (store_history.c), through the same row readers. */
#include "store_internal.h"
#include "ident.h"
#include "log.h"
#include "timewin.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A window that no longer parses (it did when it was stored) is dropped with
 * a warning: the runner registers it again. */
static void load_host_window(struct host *h, const char *text, bool drain)
{
	char *why = NULL;

	h->window_drain = drain;
	if (!*text)
		return;
	h->win = timewin_parse(text, &why);
	if (h->win)
		h->window = xstrdup(text);
	else
		log_warnx("host %s: stored window '%s' is not valid: %s", h->name, text, why ? why : "?");
	free(why);
}

static int load_hosts(struct store *st, struct model *m, char **err)
{
	sqlite3_stmt *s = st->stmt[ST_LOAD_HOSTS];
	int rc;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct host *h = model_add_host(m, store_col_text(s, 0));
		json_t *features = json_loads(store_col_text(s, 7), 0, NULL);
		size_t i;
		json_t *f;

		h->cpus = sqlite3_column_int(s, 1);
		h->mem = (uint64_t)sqlite3_column_int64(s, 2);
		h->scratch_total = (uint64_t)sqlite3_column_int64(s, 3);
		h->scratch_free = (uint64_t)sqlite3_column_int64(s, 4);
		h->cpu_limit = sqlite3_column_int(s, 5);
		h->mem_limit = sqlite3_column_int(s, 6);
		if (json_is_array(features)) {
			h->features = xcalloc(json_array_size(features), sizeof *h->features);
			json_array_foreach(features, i, f)
				if (json_is_string(f))
					h->features[h->nfeatures++] = xstrdup(json_string_value(f));
		}
		json_decref(features);
		free(h->mount);
		h->mount = xstrdup(store_col_text(s, 8));
		h->draining = sqlite3_column_int(s, 9) != 0;
		h->registered_ms = sqlite3_column_int64(s, 10);
		load_host_window(h, store_col_text(s, 11), sqlite3_column_int(s, 12) != 0);
		h->gpus = sqlite3_column_int(s, 13);
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return store_db_error(st, rc, "load hosts", err);
	return 0;
}

/* The stored spec: its JSON form, or the text parsed again if that fails. */
static struct spec *load_spec(int64_t id, const char *spec_json, const char *text, size_t len,
			      const char *file)
{
	json_t *json = json_loads(spec_json, 0, NULL);
	struct spec *spec = NULL;
	char *msg = NULL;

	if (json && !json_is_null(json))
		spec = spec_from_json(json, &msg);
	json_decref(json);
	if (!spec) {
		free(msg);
		msg = NULL;
		spec = spec_parse(text, len, file, &msg);
	}
	if (!spec)
		log_warnx("job %lld: stored spec does not load: %s", (long long)id, msg ? msg : "?");
	free(msg);
	return spec;
}

static int load_jobs(struct store *st, struct model *m, enum stmt_id id, char **err)
{
	sqlite3_stmt *s = st->stmt[id];
	int rc;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(s, 0);
		const void *text = sqlite3_column_blob(s, 17);
		size_t len = (size_t)sqlite3_column_bytes(s, 17);
		struct spec *spec;
		struct job *job;
		int state;

		spec = load_spec(id, store_col_text(s, 3), text ? text : "", len, store_col_text(s, 2));
		if (!spec) {
			sqlite3_reset(s);
			errno = EILSEQ;
			return errprintf(err, "%s: job %lld: the stored spec cannot be read",
					 st->path, (long long)id);
		}
		job = model_job_new(id, spec);
		job->name = xstrdup(store_col_text(s, 1));
		job->spec_file = xstrdup(store_col_text(s, 2));
		job->spec_text = xmalloc(len + 1);
		memcpy(job->spec_text, text ? text : "", len);
		job->spec_text[len] = '\0';
		job->spec_len = len;
		job->uid = (uid_t)sqlite3_column_int64(s, 4);
		job->gid = (gid_t)sqlite3_column_int64(s, 5);
		free(job->groups);
		job->groups = ident_groups_parse(store_col_text(s, 6), &job->ngroups);
		job->user = xstrdup(store_col_text(s, 7));
		job->team = xstrdup(store_col_text(s, 8));
		job->priority = sqlite3_column_int(s, 9);
		state = job_state_parse(store_col_text(s, 10));
		job->state = state < 0 ? JOB_FAILED : (enum job_state)state;
		job->held = sqlite3_column_int(s, 11) != 0;
		job->ending = (enum job_ending)sqlite3_column_int(s, 12);
		free(job->reason);
		job->reason = xstrdup(store_col_text(s, 13));
		job->submitted_ms = sqlite3_column_int64(s, 14);
		job->started_ms = sqlite3_column_int64(s, 15);
		job->ended_ms = sqlite3_column_int64(s, 16);
		job->persisted = true;
		model_add_job(m, job);
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return store_db_error(st, rc, "load jobs", err);
	return 0;
}

static struct stage *find_stage(struct model *m, int64_t job_id, int idx)
{
	struct job *job = model_job(m, job_id);

	if (!job || idx < 0 || (size_t)idx >= job->nstages)
		return NULL;
	return &job->stages[idx];
}

static int load_stages(struct store *st, struct model *m, enum stmt_id id, char **err)
{
	sqlite3_stmt *s = st->stmt[id];
	int rc;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct stage *stage = find_stage(m, sqlite3_column_int64(s, 0), sqlite3_column_int(s, 1));
		int state;

		if (!stage)
			continue;
		state = stage_state_parse(store_col_text(s, 2));
		stage->state = state < 0 ? STAGE_FAILED : (enum stage_state)state;
		stage->expanded = sqlite3_column_int(s, 3) != 0;
		stage->started_ms = sqlite3_column_int64(s, 4);
		stage->ended_ms = sqlite3_column_int64(s, 5);
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return store_db_error(st, rc, "load stages", err);
	return 0;
}

static int load_instances(struct store *st, struct model *m, enum stmt_id id, char **err)
{
	sqlite3_stmt *s = st->stmt[id];
	int rc;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct stage *stage = find_stage(m, sqlite3_column_int64(s, 1), sqlite3_column_int(s, 2));
		struct instance *inst;
		int state;

		if (!stage)
			continue;
		inst = model_stage_new_instance(stage, sqlite3_column_int64(s, 0), store_col_text(s, 4));
		inst->index = sqlite3_column_int(s, 3);
		state = inst_state_parse(store_col_text(s, 5));
		inst->attempt = sqlite3_column_int(s, 6);
		inst->failures = sqlite3_column_int(s, 7);
		free(inst->host_name);
		inst->host_name = xstrdup(store_col_text(s, 8));
		inst->pid = sqlite3_column_int(s, 9);
		inst->exit_code = sqlite3_column_int(s, 10);
		inst->signal = sqlite3_column_int(s, 11);
		free(inst->reason);
		inst->reason = xstrdup(store_col_text(s, 12));
		inst->cancel_requested = sqlite3_column_int(s, 13) != 0;
		inst->assigned_ms = sqlite3_column_int64(s, 14);
		inst->started_ms = sqlite3_column_int64(s, 15);
		inst->ended_ms = sqlite3_column_int64(s, 16);
		inst->cpu_ms = sqlite3_column_int64(s, 17);
		inst->max_rss = sqlite3_column_int64(s, 18);
		model_set_text(&inst->cpu_list, store_col_text(s, 19));
		model_set_text(&inst->gpu_list, store_col_text(s, 20));
		model_add_instance(m, inst);
		model_set_state(m, inst, state < 0 ? INST_FAILED : (enum inst_state)state);
		if (inst->state == INST_ASSIGNED || inst->state == INST_RUNNING) {
			struct host *h = model_host(m, inst->host_name);

			if (!h)
				h = model_add_host(m, inst->host_name);
			model_set_host(m, inst, h);
		}
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return store_db_error(st, rc, "load instances", err);
	return 0;
}

static int load_events(struct store *st, struct model *m, enum stmt_id id, char **err)
{
	sqlite3_stmt *s = st->stmt[id];
	int rc;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct job *job = model_job(m, sqlite3_column_int64(s, 0));

		if (!job)
			continue;
		model_job_event(NULL, job, sqlite3_column_int64(s, 1), "%s", store_col_text(s, 2));
		job->nflushed_events = job->nevents;
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return store_db_error(st, rc, "load events", err);
	return 0;
}

int store_load_rows(struct store *st, struct model *m, enum stmt_id jobs, enum stmt_id stages,
		    enum stmt_id instances, enum stmt_id events, char **err)
{
	return load_jobs(st, m, jobs, err) < 0 || load_stages(st, m, stages, err) < 0 ||
	       load_instances(st, m, instances, err) < 0 || load_events(st, m, events, err) < 0 ? -1 : 0;
}

/* The next ids come from every row, resident or not. */
static int load_next_ids(struct store *st, struct model *m, char **err)
{
	int64_t max[2] = { 0, 0 };
	const enum stmt_id ids[2] = { ST_MAX_JOB, ST_MAX_INSTANCE };

	for (int i = 0; i < 2; i++) {
		sqlite3_stmt *s = st->stmt[ids[i]];
		int rc = sqlite3_step(s);

		if (rc == SQLITE_ROW)
			max[i] = sqlite3_column_int64(s, 0);
		sqlite3_reset(s);
		if (rc != SQLITE_ROW)
			return store_db_error(st, rc, "next ids", err);
	}
	model_set_next_ids(m, max[0] + 1, max[1] + 1);
	return 0;
}

int store_load(struct store *st, struct model *m, int64_t keep_since_ms, char **err)
{
	const enum stmt_id ids[] = { ST_LOAD_JOBS, ST_LOAD_STAGES, ST_LOAD_INSTANCES, ST_LOAD_EVENTS };

	for (size_t i = 0; i < ARRAY_LEN(ids); i++)
		sqlite3_bind_int64(st->stmt[ids[i]], 1, keep_since_ms);
	if (load_hosts(st, m, err) < 0 ||
	    store_load_rows(st, m, ST_LOAD_JOBS, ST_LOAD_STAGES, ST_LOAD_INSTANCES, ST_LOAD_EVENTS,
			    err) < 0 ||
	    load_next_ids(st, m, err) < 0)
		return -1;
	/* Loading went through the same setters as live changes; nothing is new. */
	model_clean(m);
	return 0;
}
