#include "api_jobs.h"
#include "api_args.h"
#include "api_identity.h"
#include "api_reply.h"
#include "space.h"

#include "api_answers.h"
#include "api_requests.h"
#include "util.h"
#include "views.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lock held. A job no longer in memory is read back from the store. */
static struct job *job_arg(struct call *c)
{
	int64_t id;
	struct job *job = NULL;
	char msg[128];

	if (api_parse_id(c->args[0], &id) == 0)
		job = engine_job_get(c->engine, id);
	if (!job && errno == EIO) {
		snprintf(msg, sizeof msg, "job %s cannot be read from the database", c->args[0]);
		reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
	} else if (!job) {
		snprintf(msg, sizeof msg, "no job %s", c->args[0]);
		reply_error(c, MHD_HTTP_NOT_FOUND, msg);
	}
	return job;
}

static struct stage *stage_arg(struct call *c)
{
	struct job *job = job_arg(c);
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

void api_jobs_submit(struct call *c)
{
	/* A spec with a NUL byte reaches the spec parser, which says where it is
	 * and what to do, as `parsa check` does; not jansson's own words. */
	json_t *json = api_body_json_flags(c, JSON_ALLOW_NUL);
	struct api_submission s;
	char *err = NULL;
	int64_t id;
	bool existed = false;

	if (!json)
		return;
	if (api_read_submission(json, &s, &err) < 0) {
		reply_error(c, MHD_HTTP_BAD_REQUEST, err);
		free(err);
		goto out;
	}
	api_caller_groups(c);
	if (engine_submit(c->engine, &c->who, s.name && *s.name ? s.name : "spec", s.token, s.spec,
			  s.len, &id, &existed, &err) < 0) {
		reply_errno(c, errno, err);
		goto out;
	}
	/* 200 for a submission already committed under this token: the same job. */
	reply_json(c, existed ? MHD_HTTP_OK : MHD_HTTP_CREATED,
		   json_pack("{s:I,s:o}", "id", (json_int_t)id, "job", engine_job_meta_json(c->engine, id)));
out:
	json_decref(json);
}

/* GET /v1/jobs: {"jobs":[summary, ...]} of what jobs/ lists (unfinished
 * jobs and those that ended within list_finished), read from the store row
 * by row into the answer's text: no job is loaded for it. ?uid=N: one
 * user's. ?view=owners&format=json: {"owners":[[id,uid,gid,submitted_ms],...]}
 * instead, what the mount needs to list and stat jobs/ (a tenth of the full
 * list's size); ?view=owners alone: the lines 0.1.0's mounts read
 * (lib/api_answers.h). */
struct list_out {
	FILE *f;
	size_t n;
	enum api_owners_form owners;
};

static int list_one(void *arg, const struct store_job_row *row)
{
	struct list_out *o = arg;
	json_t *summary;

	if (o->owners) {
		api_owners_row(o->f, o->owners, &(struct api_owner){ .id = row->id, .uid = (uid_t)row->uid,
			       .gid = (gid_t)row->gid, .submitted_ms = row->submitted_ms }, o->n++ == 0);
		return 0;
	}
	summary = json_pack("{s:I,s:s,s:I,s:I,s:s,s:s,s:s,s:I}", "id", (json_int_t)row->id,
			    "name", row->name, "uid", (json_int_t)row->uid, "gid", (json_int_t)row->gid,
			    "user", row->user, "team", row->team, "state", row->state,
			    "submitted_ms", (json_int_t)row->submitted_ms);
	if (o->n++)
		fputc(',', o->f);
	json_dumpf(summary, o->f, JSON_COMPACT);
	json_decref(summary);
	return 0;
}

void api_jobs_list(struct call *c)
{
	const char *uid_text = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, "uid");
	const char *view = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, "view");
	const char *format = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, "format");
	struct list_out o = { .owners = api_owners_form(view, format) };
	int64_t uid = -1;
	char *text = NULL, *err = NULL;
	size_t len = 0;
	int rc;

	if (uid_text && api_parse_num(uid_text, &uid) < 0)
		uid = -2; /* matches nobody */
	o.f = open_memstream(&text, &len);
	if (!o.f) {
		reply_errno(c, errno, NULL);
		return;
	}
	if (o.owners)
		api_owners_begin(o.f, o.owners);
	else
		fputs("{\"jobs\":[", o.f);
	engine_lock(c->engine);
	rc = store_list_jobs(engine_store(c->engine),
			     engine_now_ms(c->engine) - engine_list_finished_ms(c->engine), uid,
			     list_one, &o, &err);
	engine_unlock(c->engine);
	if (o.owners)
		api_owners_end(o.f, o.owners);
	else
		fputs("]}", o.f);
	if (rc < 0 || ferror(o.f)) {
		fclose(o.f);
		free(text);
		reply_errno(c, rc < 0 ? EIO : ENOMEM, err);
		return;
	}
	fclose(o.f);
	if (o.owners == API_OWNERS_LINES)
		reply_bytes(c, text, len);
	else
		reply_json_text(c, MHD_HTTP_OK, text, len);
}

void api_jobs_last(struct call *c)
{
	int64_t id = 0;
	char *err = NULL;
	int found;

	engine_lock(c->engine);
	found = store_last_job(engine_store(c->engine), c->who.uid, &id, &err);
	engine_unlock(c->engine);
	if (found < 0)
		reply_errno(c, EIO, err);
	else if (!found)
		reply_error(c, MHD_HTTP_NOT_FOUND, "you have no job");
	else
		reply_json(c, MHD_HTTP_OK, api_id_json(id));
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
	job = job_arg(c);
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
			if (engine_burst_waits(e, job)) {
				char *more = xasprintf("%sburst: it came in a burst of submissions that is "
						       "still on: placed when the burst ends (10 ms "
						       "without a new job, at most 0.5 s)\n", text);

				free(text);
				text = more;
			}
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
	reply_json(c, MHD_HTTP_OK, api_wait_json(done, state));
}

void api_jobs_stage_status(struct call *c)
{
	struct engine *e = c->engine;
	struct stage *stage;
	char *text = NULL;

	engine_lock(e);
	stage = stage_arg(c);
	if (stage)
		text = views_stage_status(stage, engine_now_ms(e));
	engine_unlock(e);
	if (text)
		reply_text(c, text);
}

/* The instance the call's path names, or NULL when it replied 404. Lock held. */
static struct instance *instance_arg(struct call *c)
{
	struct stage *stage = stage_arg(c);
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
