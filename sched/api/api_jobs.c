#include "api_jobs.h"
#include "api_args.h"
#include "api_identity.h"
#include "api_reply.h"

#include "api_answers.h"
#include "api_requests.h"
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The job id the call's path names: 0, or -1 when it answered 404. */
static int job_id_arg(struct call *c, int64_t *id)
{
	char msg[128];

	if (api_parse_id(c->args[0], id) == 0)
		return 0;
	snprintf(msg, sizeof msg, "no job %s", c->args[0]);
	reply_error(c, MHD_HTTP_NOT_FOUND, msg);
	return -1;
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
	if (engine_submit_from(c->engine, &c->who, s.name && *s.name ? s.name : "spec", s.workdir,
			       s.token, s.spec, s.len, &id, &existed, &err) < 0) {
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
	rc = engine_list_jobs(c->engine, uid, list_one, &o, &err);
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

	found = engine_last_job(c->engine, c->who.uid, &id, &err);
	if (found < 0)
		reply_errno(c, EIO, err);
	else if (!found)
		reply_error(c, MHD_HTTP_NOT_FOUND, "you have no job");
	else
		reply_json(c, MHD_HTTP_OK, api_id_json(id));
}

/* The job views share their shape: ask the engine for one, answer. */
static void job_view(struct call *c, unsigned view)
{
	struct job_views v;
	char *err = NULL;
	int64_t id;

	if (job_id_arg(c, &id) < 0)
		return;
	if (engine_job_views(c->engine, id, view, 0, &v, &err) < 0) {
		reply_errno(c, errno, err);
		return;
	}
	if (v.json) {
		reply_json(c, MHD_HTTP_OK, v.json);
		v.json = NULL;
	} else if (view == JOB_VIEW_SPEC) {
		reply_bytes(c, v.spec, v.spec_len);
		v.spec = NULL;
	} else {
		char **text = view == JOB_VIEW_STATUS ? &v.status : view == JOB_VIEW_WHY ? &v.why
											 : &v.events;

		reply_text(c, *text);
		*text = NULL;
	}
	job_views_free(&v);
}

void api_jobs_json(struct call *c) { job_view(c, JOB_VIEW_JSON); }
void api_jobs_status(struct call *c) { job_view(c, JOB_VIEW_STATUS); }
void api_jobs_why(struct call *c) { job_view(c, JOB_VIEW_WHY); }
void api_jobs_events(struct call *c) { job_view(c, JOB_VIEW_EVENTS); }
void api_jobs_spec(struct call *c) { job_view(c, JOB_VIEW_SPEC); }
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
	char *text, *err = NULL;
	int64_t id;

	if (job_id_arg(c, &id) < 0)
		return;
	text = engine_stage_status(c->engine, id, c->args[1], &err);
	if (text)
		reply_text(c, text);
	else
		reply_errno(c, errno, err);
}

/* The instance the call's path names: its status text or JSON. */
static void instance_view(struct call *c, bool json)
{
	json_t *j = NULL;
	char *text = NULL, *err = NULL;
	int64_t id, idx;

	if (job_id_arg(c, &id) < 0)
		return;
	if (api_parse_num(c->args[2], &idx) < 0)
		idx = -1; /* no such instance */
	if (engine_instance_views(c->engine, id, c->args[1], idx, json ? NULL : &text,
				  json ? &j : NULL, &err) < 0)
		reply_errno(c, errno, err);
	else if (json)
		reply_json(c, MHD_HTTP_OK, j);
	else
		reply_text(c, text);
}

void api_jobs_instance_status(struct call *c) { instance_view(c, false); }
void api_jobs_instance_json(struct call *c) { instance_view(c, true); }
