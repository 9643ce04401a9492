#include "api_jobs.h"
#include "api_args.h"
#include "api_identity.h"
#include "api_reply.h"
#include "space.h"

#include "util.h"
#include "views.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct job *job_arg(struct call *c, struct model *m)
{
	int64_t id;
	struct job *job;
	char msg[128];

	if (api_parse_id(c->args[0], &id) < 0 || !(job = model_job(m, id))) {
		snprintf(msg, sizeof msg, "no job %s", c->args[0]);
		reply_error(c, MHD_HTTP_NOT_FOUND, msg);
		return NULL;
	}
	return job;
}

static struct stage *stage_arg(struct call *c, struct model *m)
{
	struct job *job = job_arg(c, m);
	char msg[256];
	int idx;

	if (!job)
		return NULL;
	idx = spec_stage_index(job->spec, c->args[1]);
	if (idx < 0) {
		snprintf(msg, sizeof msg, "job %lld has no stage '%s'", (long long)job->id, c->args[1]);
		reply_error(c, MHD_HTTP_NOT_FOUND, msg);
		return NULL;
	}
	return &job->stages[idx];
}

/* A token is the submitter's own unique text (docs/api.md): short, and
 * plain, since it is stored and compared as given. */
#define TOKEN_MAX 64

static bool token_ok(const char *t)
{
	size_t n = strlen(t);

	if (n == 0 || n > TOKEN_MAX)
		return false;
	return strspn(t, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_") == n;
}

void api_jobs_submit(struct call *c)
{
	json_t *json = api_body_json(c), *name, *spec, *token;
	char *err = NULL;
	int64_t id;
	bool existed = false;

	if (!json)
		return;
	name = json_object_get(json, "name");
	spec = json_object_get(json, "spec");
	token = json_object_get(json, "token");
	if (!json_is_string(spec)) {
		reply_error(c, MHD_HTTP_BAD_REQUEST, "the body needs \"spec\": the spec's text");
		goto out;
	}
	if (token && (!json_is_string(token) || !token_ok(json_string_value(token)))) {
		reply_error(c, MHD_HTTP_BAD_REQUEST, "\"token\" is 1 to 64 letters, digits, '-' or '_'");
		goto out;
	}
	api_caller_groups(c);
	if (engine_submit(c->engine, &c->who,
			  json_is_string(name) && *json_string_value(name) ? json_string_value(name) : "spec",
			  token ? json_string_value(token) : NULL,
			  json_string_value(spec), json_string_length(spec), &id, &existed, &err) < 0) {
		reply_errno(c, errno, err);
		goto out;
	}
	/* 200 for a submission already committed under this token: the same job. */
	reply_json(c, existed ? MHD_HTTP_OK : MHD_HTTP_CREATED,
		   json_pack("{s:I,s:o}", "id", (json_int_t)id, "job", engine_job_meta_json(c->engine, id)));
out:
	json_decref(json);
}

/* GET /v1/jobs: {"jobs":[summary, ...]}, written job by job into the answer's
 * text. A tree of 50,000 summaries and then its dump was three copies of a
 * 7 MB answer at once; this holds one summary and the text. */
void api_jobs_list(struct call *c)
{
	const char *uid_text = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, "uid");
	struct model *m = engine_model(c->engine);
	int64_t uid = -1;
	char *text = NULL;
	size_t len = 0, n = 0;
	FILE *f;

	if (uid_text && api_parse_num(uid_text, &uid) < 0)
		uid = -2; /* matches nobody */
	f = open_memstream(&text, &len);
	if (!f) {
		reply_errno(c, errno, NULL);
		return;
	}
	fputs("{\"jobs\":[", f);
	engine_lock(c->engine);
	for (size_t i = 0; i < model_njobs(m); i++) {
		const struct job *job = model_job_at(m, i);
		json_t *summary;

		if (!job || (uid != -1 && (int64_t)job->uid != uid))
			continue;
		summary = views_job_summary_json(job);
		if (n++)
			fputc(',', f);
		json_dumpf(summary, f, JSON_COMPACT);
		json_decref(summary);
	}
	engine_unlock(c->engine);
	fputs("]}", f);
	if (ferror(f)) {
		fclose(f);
		free(text);
		reply_errno(c, ENOMEM, NULL);
		return;
	}
	fclose(f);
	reply_json_text(c, MHD_HTTP_OK, text, len);
}

void api_jobs_last(struct call *c)
{
	struct model *m = engine_model(c->engine);
	int64_t id = 0;

	engine_lock(c->engine);
	for (size_t i = model_njobs(m); i-- > 0 && !id; ) {
		const struct job *job = model_job_at(m, i);

		if (job && job->uid == c->who.uid)
			id = job->id;
	}
	engine_unlock(c->engine);
	if (!id)
		reply_error(c, MHD_HTTP_NOT_FOUND, "you have no job");
	else
		reply_json(c, MHD_HTTP_OK, json_pack("{s:I}", "id", (json_int_t)id));
}

/* The job views share their shape: look the job up, render, answer. */
enum job_view { VIEW_JSON, VIEW_STATUS, VIEW_WHY, VIEW_EVENTS, VIEW_SPEC };

static void job_view(struct call *c, enum job_view view)
{
	struct engine *e = c->engine;
	struct placement_host *hosts = NULL;
	struct job *job;
	json_t *json = NULL;
	char *text = NULL;
	size_t nhosts, len = 0;

	engine_lock(e);
	job = job_arg(c, engine_model(e));
	if (job) {
		switch (view) {
		case VIEW_JSON:
			json = views_job_json(job, engine_now_ms(e));
			break;
		case VIEW_STATUS:
			text = views_job_status(job, engine_now_ms(e));
			break;
		case VIEW_WHY:
			nhosts = engine_placement_hosts(e, &hosts);
			text = views_job_why(engine_model(e), job, hosts, nhosts, engine_now_ms(e));
			text = space_why_job(engine_space(e), job, text);
			free(hosts);
			break;
		case VIEW_EVENTS:
			text = views_job_events(job);
			break;
		case VIEW_SPEC:
			/* Byte for byte, even with NULs in it. */
			text = xmalloc(job->spec_len + 1);
			memcpy(text, job->spec_text, job->spec_len + 1);
			len = job->spec_len;
			break;
		}
	}
	engine_unlock(e);
	if (json)
		reply_json(c, MHD_HTTP_OK, json);
	else if (text && view == VIEW_SPEC)
		reply_bytes(c, text, len);
	else if (text)
		reply_text(c, text);
}

void api_jobs_json(struct call *c) { job_view(c, VIEW_JSON); }
void api_jobs_status(struct call *c) { job_view(c, VIEW_STATUS); }
void api_jobs_why(struct call *c) { job_view(c, VIEW_WHY); }
void api_jobs_events(struct call *c) { job_view(c, VIEW_EVENTS); }
void api_jobs_spec(struct call *c) { job_view(c, VIEW_SPEC); }

void api_jobs_wait(struct call *c)
{
	const char *stage = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, "stage");
	int64_t id, timeout = api_query_ms(c, "timeout_ms", 60000, 60000);
	const char *state = NULL;
	char *err = NULL;
	int done = 0;

	if (api_parse_id(c->args[0], &id) < 0) {
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such job");
		return;
	}
	if (engine_wait(c->engine, id, stage && *stage ? stage : NULL, timeout, &done, &state,
			&err) < 0) {
		reply_errno(c, errno, err);
		return;
	}
	reply_json(c, MHD_HTTP_OK, json_pack("{s:b,s:s}", "done", done, "state", state));
}

void api_jobs_stage_status(struct call *c)
{
	struct engine *e = c->engine;
	struct stage *stage;
	char *text = NULL;

	engine_lock(e);
	stage = stage_arg(c, engine_model(e));
	if (stage)
		text = views_stage_status(stage, engine_now_ms(e));
	engine_unlock(e);
	if (text)
		reply_text(c, text);
}

/* The instance the call's path names, or NULL when it replied 404. Lock held. */
static struct instance *instance_arg(struct call *c)
{
	struct stage *stage = stage_arg(c, engine_model(c->engine));
	int64_t idx;

	if (!stage)
		return NULL;
	if (api_parse_num(c->args[2], &idx) == 0 && (size_t)idx < stage->ninst)
		return stage->inst[idx];
	reply_error(c, MHD_HTTP_NOT_FOUND, "no such instance");
	return NULL;
}

void api_jobs_instance_status(struct call *c)
{
	struct engine *e = c->engine;
	struct instance *inst;
	char *text = NULL;

	engine_lock(e);
	inst = instance_arg(c);
	if (inst)
		text = views_instance_status(inst);
	engine_unlock(e);
	if (text)
		reply_text(c, text);
}

void api_jobs_instance_json(struct call *c)
{
	struct engine *e = c->engine;
	struct instance *inst;
	json_t *json = NULL;

	engine_lock(e);
	inst = instance_arg(c);
	if (inst)
		json = views_instance_json(inst);
	engine_unlock(e);
	if (json)
		reply_json(c, MHD_HTTP_OK, json);
}
