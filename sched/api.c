#include "api.h"
#include "schedules.h"
#include "space.h"

#include "auth.h"
#include "log.h"
#include "util.h"
#include "views.h"

#include <errno.h>
#include <grp.h>
#include <microhttpd.h>
#include <netdb.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* A JSON-escaped 1 MiB spec can grow up to six times; anything larger is
 * refused before it is read. */
#define BODY_MAX ((size_t)SPEC_MAX_BYTES * 6 + 4096)
#define MAX_GROUPS 256
#define MAX_ARGS 4
/* 413: its libmicrohttpd name changed between versions. */
#define HTTP_TOO_LARGE 413

struct api {
	struct engine *engine;
	struct MHD_Daemon *mhd;
	struct MHD_Daemon *tcp;   /* api_listen_tcp(); NULL without */
	struct auth *auth;        /* checks the munge credentials of TCP requests */
	char *path;
	uid_t self_uid;
};

/* Per request: the body as it arrives and who sent it. */
struct request {
	char *target;         /* the request target as sent (path and query): what a
			       * munge credential is bound to */
	bool started;         /* on_request has seen the headers */
	bool unsigned_tcp;    /* TCP without a credential: refused, body not kept */
	char *body;
	size_t len, cap;
	bool too_large;
	json_t *work;         /* a work answer, until it is known to be delivered */
	char *work_host;
};

/* What a handler sees. */
struct call {
	struct api *api;
	struct MHD_Connection *conn;
	struct request *req;
	const char *args[MAX_ARGS];       /* the '*' segments of the route */
	const char *body;
	size_t len;
	struct caller who;
	gid_t groups[MAX_GROUPS];
	bool groups_known;
	bool trusted;
	char *auth_error;      /* why a TCP request's credential was refused */
	bool auth_busy;        /* ... because munged could not be asked */
	/* The answer. */
	unsigned int status;
	char *out;
	size_t out_len;
	const char *type;
};

typedef void (*handler_fn)(struct call *c);

enum access { ANYONE, TRUSTED };

unsigned int api_status_for_errno(int err)
{
	switch (err) {
	case EINVAL:
		return MHD_HTTP_BAD_REQUEST;
	case EACCES:
	case EPERM:
		return MHD_HTTP_FORBIDDEN;
	case ENOENT:
		return MHD_HTTP_NOT_FOUND;
	case EBUSY:
		return MHD_HTTP_CONFLICT;
	case EFBIG:
		return HTTP_TOO_LARGE;
	case EAGAIN:
		return MHD_HTTP_SERVICE_UNAVAILABLE;
	case ENOSPC:
		return MHD_HTTP_INSUFFICIENT_STORAGE;
	default:
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
}

/* ---- answers ---- */

static void reply_json(struct call *c, unsigned int status, json_t *json)
{
	c->status = status;
	c->out = json ? json_dumps(json, JSON_COMPACT) : NULL;
	if (!c->out)
		c->out = xstrdup("{}");
	c->out_len = strlen(c->out);
	c->type = "application/json";
	json_decref(json);
}

static void reply_text(struct call *c, char *text)
{
	c->status = MHD_HTTP_OK;
	c->out = text;
	c->out_len = strlen(text);
	c->type = "text/plain; charset=utf-8";
}

static void reply_error(struct call *c, unsigned int status, const char *msg)
{
	reply_json(c, status, json_pack("{s:s}", "error", msg ? msg : "error"));
}

/* A ctl request without a command: say which there are (commands, the
 * list from the ctl's table, is freed here). */
static void reply_needs_command(struct call *c, char *commands)
{
	char *msg = xasprintf("the body needs \"command\": %s", commands);

	reply_error(c, MHD_HTTP_BAD_REQUEST, msg);
	free(msg);
	free(commands);
}

/* Reply with the status for errno and the engine's text (freed here). */
static void reply_errno(struct call *c, int err, char *msg)
{
	reply_error(c, api_status_for_errno(err), msg ? msg : strerror(err));
	free(msg);
}

/* ---- arguments ---- */

/* A whole non-negative decimal number, nothing else around it. */
static int parse_num(const char *text, int64_t *out)
{
	char *end;
	long long v;

	if (!text || *text < '0' || *text > '9')
		return -1;
	errno = 0;
	v = strtoll(text, &end, 10);
	if (*end || errno)
		return -1;
	*out = v;
	return 0;
}

static int parse_id(const char *text, int64_t *id)
{
	return parse_num(text, id) == 0 && *id > 0 ? 0 : -1;
}

static int64_t query_ms(struct call *c, const char *name, int64_t dflt, int64_t max)
{
	const char *v = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, name);
	int64_t ms;

	if (!v || parse_num(v, &ms) < 0)
		return dflt;
	return ms > max ? max : ms;
}

static json_t *body_json(struct call *c)
{
	json_error_t jerr;
	json_t *json = json_loadb(c->body ? c->body : "", c->len, 0, &jerr);

	if (!json || !json_is_object(json)) {
		char msg[256];

		snprintf(msg, sizeof msg, "the body is not a JSON object: %s",
			 json ? "not an object" : jerr.text);
		reply_error(c, MHD_HTTP_BAD_REQUEST, msg);
		json_decref(json);
		return NULL;
	}
	return json;
}

static struct job *job_arg(struct call *c, struct model *m)
{
	int64_t id;
	struct job *job;
	char msg[128];

	if (parse_id(c->args[0], &id) < 0 || !(job = model_job(m, id))) {
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

/* The caller's supplementary groups: from X-Parsa-Groups, else the group
 * database, else just the primary group. */
static void caller_groups(struct call *c)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	int n = MAX_GROUPS;

	if (c->groups_known)
		return;
	c->groups_known = true;
	if (getpwuid_r(c->who.uid, &pw, buf, sizeof buf, &res) == 0 && res &&
	    getgrouplist(pw.pw_name, c->who.gid, c->groups, &n) >= 0) {
		c->who.ngroups = (size_t)n;
	} else {
		c->groups[0] = c->who.gid;
		c->who.ngroups = 1;
	}
	c->who.groups = c->groups;
}

/* ---- handlers: jobs ---- */

static void h_submit(struct call *c)
{
	json_t *json = body_json(c), *name, *spec;
	char *err = NULL;
	int64_t id;

	if (!json)
		return;
	name = json_object_get(json, "name");
	spec = json_object_get(json, "spec");
	if (!json_is_string(spec)) {
		reply_error(c, MHD_HTTP_BAD_REQUEST, "the body needs \"spec\": the spec's text");
		goto out;
	}
	caller_groups(c);
	if (engine_submit(c->api->engine, &c->who,
			  json_is_string(name) && *json_string_value(name) ? json_string_value(name) : "spec",
			  json_string_value(spec), json_string_length(spec), &id, &err) < 0) {
		reply_errno(c, errno, err);
		goto out;
	}
	reply_json(c, MHD_HTTP_CREATED, json_pack("{s:I,s:o}", "id", (json_int_t)id,
						  "job", engine_job_meta_json(c->api->engine, id)));
out:
	json_decref(json);
}

static void h_jobs(struct call *c)
{
	const char *uid_text = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, "uid");
	struct model *m = engine_model(c->api->engine);
	json_t *jobs = json_array();
	int64_t uid = -1;

	if (uid_text && parse_num(uid_text, &uid) < 0)
		uid = -2; /* matches nobody */
	engine_lock(c->api->engine);
	for (size_t i = 0; i < model_njobs(m); i++) {
		const struct job *job = model_job_at(m, i);

		if (job && (uid == -1 || (int64_t)job->uid == uid))
			json_array_append_new(jobs, views_job_summary_json(job));
	}
	engine_unlock(c->api->engine);
	reply_json(c, MHD_HTTP_OK, json_pack("{s:o}", "jobs", jobs));
}

static void h_last(struct call *c)
{
	struct model *m = engine_model(c->api->engine);
	int64_t id = 0;

	engine_lock(c->api->engine);
	for (size_t i = model_njobs(m); i-- > 0 && !id; ) {
		const struct job *job = model_job_at(m, i);

		if (job && job->uid == c->who.uid)
			id = job->id;
	}
	engine_unlock(c->api->engine);
	if (!id)
		reply_error(c, MHD_HTTP_NOT_FOUND, "you have no job");
	else
		reply_json(c, MHD_HTTP_OK, json_pack("{s:I}", "id", (json_int_t)id));
}

/* The job views share their shape: look the job up, render, answer. */
enum job_view { VIEW_JSON, VIEW_STATUS, VIEW_WHY, VIEW_EVENTS, VIEW_SPEC };

static void job_view(struct call *c, enum job_view view)
{
	struct engine *e = c->api->engine;
	struct placement_host *hosts = NULL;
	struct job *job;
	json_t *json = NULL;
	char *text = NULL;
	size_t nhosts;

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
			c->status = MHD_HTTP_OK;
			c->out = xmalloc(job->spec_len + 1);
			memcpy(c->out, job->spec_text, job->spec_len + 1);
			c->out_len = job->spec_len;
			c->type = "text/plain; charset=utf-8";
			break;
		}
	}
	engine_unlock(e);
	if (json)
		reply_json(c, MHD_HTTP_OK, json);
	else if (text)
		reply_text(c, text);
}

static void h_job(struct call *c) { job_view(c, VIEW_JSON); }
static void h_job_status(struct call *c) { job_view(c, VIEW_STATUS); }
static void h_job_why(struct call *c) { job_view(c, VIEW_WHY); }
static void h_job_events(struct call *c) { job_view(c, VIEW_EVENTS); }
static void h_job_spec(struct call *c) { job_view(c, VIEW_SPEC); }

static void h_wait(struct call *c)
{
	const char *stage = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, "stage");
	int64_t id, timeout = query_ms(c, "timeout_ms", 60000, 60000);
	const char *state = NULL;
	char *err = NULL;
	int done = 0;

	if (parse_id(c->args[0], &id) < 0) {
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such job");
		return;
	}
	if (engine_wait(c->api->engine, id, stage && *stage ? stage : NULL, timeout, &done, &state,
			&err) < 0) {
		reply_errno(c, errno, err);
		return;
	}
	reply_json(c, MHD_HTTP_OK, json_pack("{s:b,s:s}", "done", done, "state", state));
}

static void h_ctl(struct call *c)
{
	json_t *json = body_json(c), *command;
	char *err = NULL;
	int64_t id;

	if (!json)
		return;
	command = json_object_get(json, "command");
	if (!json_is_string(command)) {
		reply_needs_command(c, engine_ctl_commands(" or "));
	} else if (parse_id(c->args[0], &id) < 0) {
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such job");
	} else if (caller_groups(c), engine_ctl(c->api->engine, &c->who, id,
						json_string_value(command), &err) < 0) {
		reply_errno(c, errno, err);
	} else {
		reply_json(c, MHD_HTTP_OK, json_pack("{s:b}", "ok", 1));
	}
	json_decref(json);
}

static void h_stage_status(struct call *c)
{
	struct engine *e = c->api->engine;
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

static void h_instance_status(struct call *c)
{
	struct engine *e = c->api->engine;
	struct stage *stage;
	char *text = NULL;
	int64_t idx;

	engine_lock(e);
	stage = stage_arg(c, engine_model(e));
	if (stage) {
		if (parse_num(c->args[2], &idx) == 0 && (size_t)idx < stage->ninst)
			text = views_instance_status(stage->inst[idx]);
		else
			reply_error(c, MHD_HTTP_NOT_FOUND, "no such instance");
	}
	engine_unlock(e);
	if (text)
		reply_text(c, text);
}

/* ---- handlers: hosts and runners ---- */

static int64_t get_int(const json_t *obj, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(obj, key);

	return json_is_number(v) ? (int64_t)json_number_value(v) : dflt;
}

static double get_real(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_number(v) ? json_number_value(v) : 0;
}

static void h_register(struct call *c)
{
	json_t *json = body_json(c), *features, *f;
	const char **names = NULL;
	struct host_info info = { 0 };
	char *err = NULL;
	size_t i;

	if (!json)
		return;
	info.name = json_string_value(json_object_get(json, "name"));
	info.cpus = (int)get_int(json, "cpus", 0);
	info.mem = (uint64_t)get_int(json, "mem", 0);
	info.scratch_total = (uint64_t)get_int(json, "scratch_total", 0);
	info.scratch_free = (uint64_t)get_int(json, "scratch_free", (int64_t)info.scratch_total);
	info.cpu_limit = (int)get_int(json, "cpu_limit", 0);
	info.mem_limit = (int)get_int(json, "mem_limit", 0);
	info.mount = json_string_value(json_object_get(json, "mount"));
	info.window = json_string_value(json_object_get(json, "window"));
	info.window_drain = json_is_true(json_object_get(json, "drain_at_window_end"));
	features = json_object_get(json, "features");
	names = xcalloc(json_array_size(features) + 1, sizeof *names);
	json_array_foreach(features, i, f)
		if (json_is_string(f))
			names[info.nfeatures++] = json_string_value(f);
	info.features = names;
	if (engine_register_host(c->api->engine, &info, &err) < 0)
		reply_errno(c, errno, err);
	else
		reply_json(c, MHD_HTTP_OK, json_pack("{s:s,s:I}", "name", info.name, "lease_ms",
						     (json_int_t)engine_lease_ms(c->api->engine)));
	free(names);
	json_decref(json);
}

static void h_hosts(struct call *c)
{
	struct engine *e = c->api->engine;
	struct model *m = engine_model(e);
	json_t *hosts = json_array();

	engine_lock(e);
	for (size_t i = 0; i < model_nhosts(m); i++) {
		struct host *h = model_host_at(m, i);

		json_array_append_new(hosts, views_host_json(h, engine_host_up(e, h)));
	}
	engine_unlock(e);
	reply_json(c, MHD_HTTP_OK, json_pack("{s:o}", "hosts", hosts));
}

static void h_host_status(struct call *c)
{
	struct engine *e = c->api->engine;
	struct host *h;
	char *text = NULL;

	engine_lock(e);
	h = model_host(engine_model(e), c->args[0]);
	if (h)
		text = views_host_status(h, engine_host_up(e, h), engine_now_ms(e));
	engine_unlock(e);
	if (text)
		reply_text(c, text);
	else
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such host");
}

static void h_leave(struct call *c)
{
	char *err = NULL;

	if (engine_host_leave(c->api->engine, c->args[0], &err) < 0)
		reply_errno(c, errno, err);
	else
		reply_json(c, MHD_HTTP_OK, json_object());
}

static void h_host_ctl(struct call *c)
{
	json_t *json = body_json(c), *command;
	char *err = NULL;

	if (!json)
		return;
	command = json_object_get(json, "command");
	caller_groups(c);
	if (!json_is_string(command))
		reply_needs_command(c, engine_host_ctl_commands(" or "));
	else if (engine_host_ctl(c->api->engine, &c->who, c->args[0], json_string_value(command), &err) < 0)
		reply_errno(c, errno, err);
	else
		reply_json(c, MHD_HTTP_OK, json_pack("{s:b}", "ok", 1));
	json_decref(json);
}

/* The durations of the last scheduling passes (bench/placement reads them). */
static void h_stats(struct call *c)
{
	enum { MAX_PASSES = 4096 };
	double *ms = xcalloc(MAX_PASSES, sizeof *ms);
	json_t *list = json_array();
	uint64_t total = 0;
	size_t n = engine_pass_stats(c->api->engine, ms, MAX_PASSES, &total);

	for (size_t i = 0; i < n; i++)
		json_array_append_new(list, json_real(ms[i]));
	free(ms);
	reply_json(c, MHD_HTTP_OK, json_pack("{s:I,s:o}", "passes", (json_int_t)total, "pass_ms", list));
}

static void h_heartbeat(struct call *c)
{
	json_t *json = body_json(c), *list, *item;
	struct heartbeat hb = { 0 };
	struct heartbeat_entry *entries;
	char *err = NULL;
	size_t i;

	if (!json)
		return;
	hb.cpu_pct = get_real(json, "cpu_pct");
	hb.mem_pct = get_real(json, "mem_pct");
	hb.load1 = get_real(json, "load1");
	hb.scratch_free = get_int(json, "scratch_free", -1);
	list = json_object_get(json, "instances");
	entries = xcalloc(json_array_size(list) + 1, sizeof *entries);
	json_array_foreach(list, i, item) {
		entries[hb.ninstances].id = get_int(item, "id", 0);
		entries[hb.ninstances].attempt = (int)get_int(item, "attempt", 0);
		entries[hb.ninstances].pid = (int)get_int(item, "pid", 0);
		entries[hb.ninstances].progress_done = get_real(json_object_get(item, "progress"), "done");
		entries[hb.ninstances].progress_total = get_real(json_object_get(item, "progress"), "total");
		hb.ninstances++;
	}
	hb.instances = entries;
	if (engine_heartbeat(c->api->engine, c->args[0], &hb, &err) < 0)
		reply_errno(c, errno, err);
	else
		reply_json(c, MHD_HTTP_OK, json_object());
	free(entries);
	json_decref(json);
}

static void h_work(struct call *c)
{
	int64_t timeout = query_ms(c, "timeout_ms", 30000, 30000);
	char *err = NULL;
	json_t *answer = engine_work(c->api->engine, c->args[0], timeout, &err);

	if (!answer) {
		reply_errno(c, errno, err);
		return;
	}
	/* Kept until the connection reports how the answer went (on_completed). */
	if (json_array_size(json_object_get(answer, "start")) ||
	    json_array_size(json_object_get(answer, "cancel"))) {
		c->req->work = json_incref(answer);
		c->req->work_host = xstrdup(c->args[0]);
	}
	reply_json(c, MHD_HTTP_OK, answer);
}

static const struct report_kind_name {
	const char *name;
	enum report_kind kind;
} report_kinds[] = {
	{ "running", REPORT_RUNNING },
	{ "exited", REPORT_EXITED },
	{ "failed", REPORT_FAILED },
};

static void h_report(struct call *c)
{
	json_t *json = body_json(c);
	const char *state, *reason;
	struct report r = { 0 };
	char *err = NULL;
	int64_t id;
	bool known = false;

	if (!json)
		return;
	state = json_string_value(json_object_get(json, "state"));
	for (size_t i = 0; i < ARRAY_LEN(report_kinds) && state; i++) {
		if (strcmp(report_kinds[i].name, state) == 0) {
			r.kind = report_kinds[i].kind;
			known = true;
		}
	}
	reason = json_string_value(json_object_get(json, "reason"));
	r.attempt = (int)get_int(json, "attempt", 0);
	r.pid = (int)get_int(json, "pid", 0);
	r.exit_code = (int)get_int(json, "exit_code", -1);
	r.signal = (int)get_int(json, "signal", 0);
	r.reason = reason && *reason ? reason : NULL;
	if (!known) {
		reply_error(c, MHD_HTTP_BAD_REQUEST, "\"state\" must be running, exited or failed");
	} else if (parse_id(c->args[0], &id) < 0) {
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such instance");
	} else if (r.kind == REPORT_EXITED && r.exit_code < 0 && r.signal <= 0) {
		reply_error(c, MHD_HTTP_BAD_REQUEST, "an exited report needs exit_code or signal");
	} else if (engine_report(c->api->engine, id, &r, &err) < 0) {
		reply_errno(c, errno, err);
	} else {
		reply_json(c, MHD_HTTP_OK, json_object());
	}
	json_decref(json);
}

static void h_status(struct call *c)
{
	struct engine *e = c->api->engine;
	struct model *m = engine_model(e);
	int *up;
	char *text, *fair, *full;

	engine_lock(e);
	up = xcalloc(model_nhosts(m) + 1, sizeof *up);
	for (size_t i = 0; i < model_nhosts(m); i++)
		up[i] = engine_host_up(e, model_host_at(m, i));
	text = views_cluster_status(m, up, engine_now_ms(e));
	fair = engine_fairshare_text(e);
	engine_unlock(e);
	free(up);
	full = xasprintf("%s%s", text, fair);
	free(text);
	free(fair);
	reply_text(c, full);
}

/* ---- handlers: progress and schedules ---- */

/* {"attempt": 1, "done": 37, "total": 200} or {"attempt": 1, "percent": 18.5} */
static void h_progress(struct call *c)
{
	json_t *json = body_json(c), *percent;
	double done, total;
	char *err = NULL;
	int64_t id;

	if (!json)
		return;
	percent = json_object_get(json, "percent");
	if (json_is_number(percent)) {
		done = json_number_value(percent);
		total = 100;
	} else {
		done = get_real(json, "done");
		total = get_real(json, "total");
	}
	if (parse_id(c->args[0], &id) < 0)
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such instance");
	else if (engine_progress(c->api->engine, id, (int)get_int(json, "attempt", 0), done, total,
				 &err) < 0)
		reply_errno(c, errno, err);
	else
		reply_json(c, MHD_HTTP_OK, json_object());
	json_decref(json);
}

static void h_schedule_put(struct call *c)
{
	json_t *json = body_json(c), *name, *spec;
	char *err = NULL;
	int64_t id;

	if (!json)
		return;
	name = json_object_get(json, "name");
	spec = json_object_get(json, "spec");
	caller_groups(c);
	if (!json_is_string(spec) || !json_is_string(name))
		reply_error(c, MHD_HTTP_BAD_REQUEST, "the body needs \"name\" (the file name) and \"spec\"");
	else if (schedules_put(engine_schedules(c->api->engine), &c->who, json_string_value(name),
			       json_string_value(spec), json_string_length(spec), &id, &err) < 0)
		reply_errno(c, errno, err);
	else
		reply_json(c, MHD_HTTP_CREATED, json_pack("{s:I}", "id", (json_int_t)id));
	json_decref(json);
}

static void h_schedules(struct call *c)
{
	reply_json(c, MHD_HTTP_OK, schedules_list_json(engine_schedules(c->api->engine)));
}

static void h_schedule(struct call *c)
{
	json_t *json = schedules_json(engine_schedules(c->api->engine), c->args[0]);

	if (json)
		reply_json(c, MHD_HTTP_OK, json);
	else
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such schedule");
}

static void h_schedule_status(struct call *c)
{
	char *text = schedules_status(engine_schedules(c->api->engine), c->args[0]);

	if (text)
		reply_text(c, text);
	else
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such schedule");
}

static void h_schedule_spec(struct call *c)
{
	size_t len = 0;
	char *text = schedules_spec(engine_schedules(c->api->engine), c->args[0], &len);

	if (!text) {
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such schedule");
		return;
	}
	c->status = MHD_HTTP_OK;
	c->out = text;
	c->out_len = len;
	c->type = "text/plain; charset=utf-8";
}

static void h_schedule_ctl(struct call *c)
{
	json_t *json = body_json(c), *command;
	char *err = NULL;

	if (!json)
		return;
	command = json_object_get(json, "command");
	caller_groups(c);
	if (!json_is_string(command))
		reply_needs_command(c, schedules_ctl_commands(" or "));
	else if (schedules_ctl(engine_schedules(c->api->engine), &c->who, c->args[0],
			       json_string_value(command), &err) < 0)
		reply_errno(c, errno, err);
	else
		reply_json(c, MHD_HTTP_OK, json_pack("{s:b}", "ok", 1));
	json_decref(json);
}

static void h_schedule_delete(struct call *c)
{
	char *err = NULL;

	caller_groups(c);
	if (schedules_remove(engine_schedules(c->api->engine), &c->who, c->args[0], &err) < 0)
		reply_errno(c, errno, err);
	else
		reply_json(c, MHD_HTTP_OK, json_object());
}

/* ---- routing ---- */

/* '*' matches one path segment and is passed to the handler in c->args. The
 * first match wins, so fixed segments ("last") come before '*'. */
static const struct route {
	const char *method;
	const char *pattern;
	handler_fn fn;
	enum access who;
} routes[] = {
	{ "POST", "/v1/jobs", h_submit, ANYONE },
	{ "GET", "/v1/jobs", h_jobs, ANYONE },
	{ "GET", "/v1/jobs/last", h_last, ANYONE },
	{ "GET", "/v1/jobs/*", h_job, ANYONE },
	{ "GET", "/v1/jobs/*/status", h_job_status, ANYONE },
	{ "GET", "/v1/jobs/*/why", h_job_why, ANYONE },
	{ "GET", "/v1/jobs/*/events", h_job_events, ANYONE },
	{ "GET", "/v1/jobs/*/spec", h_job_spec, ANYONE },
	{ "GET", "/v1/jobs/*/wait", h_wait, ANYONE },
	{ "POST", "/v1/jobs/*/ctl", h_ctl, ANYONE },
	{ "GET", "/v1/jobs/*/stages/*/status", h_stage_status, ANYONE },
	{ "GET", "/v1/jobs/*/stages/*/instances/*/status", h_instance_status, ANYONE },
	{ "POST", "/v1/hosts", h_register, TRUSTED },
	{ "GET", "/v1/hosts", h_hosts, ANYONE },
	{ "GET", "/v1/hosts/*/status", h_host_status, ANYONE },
	{ "POST", "/v1/hosts/*/heartbeat", h_heartbeat, TRUSTED },
	{ "POST", "/v1/hosts/*/leave", h_leave, TRUSTED },
	{ "POST", "/v1/hosts/*/ctl", h_host_ctl, ANYONE },
	{ "GET", "/v1/hosts/*/work", h_work, TRUSTED },
	{ "POST", "/v1/instances/*/state", h_report, TRUSTED },
	{ "POST", "/v1/instances/*/progress", h_progress, TRUSTED },
	{ "POST", "/v1/schedules", h_schedule_put, ANYONE },
	{ "GET", "/v1/schedules", h_schedules, ANYONE },
	{ "GET", "/v1/schedules/*", h_schedule, ANYONE },
	{ "DELETE", "/v1/schedules/*", h_schedule_delete, ANYONE },
	{ "GET", "/v1/schedules/*/status", h_schedule_status, ANYONE },
	{ "GET", "/v1/schedules/*/spec", h_schedule_spec, ANYONE },
	{ "POST", "/v1/schedules/*/ctl", h_schedule_ctl, ANYONE },
	{ "GET", "/v1/status", h_status, ANYONE },
	{ "GET", "/v1/stats", h_stats, ANYONE },
};

/* Match url against pattern, filling args (pointers into buf, a copy of url
 * split at '/'). 1 on a match. */
static int route_match(const char *pattern, const char *url, char *buf, size_t len,
		       const char **args)
{
	size_t nargs = 0;
	char *save_u = NULL, *save_p = NULL, *u, *p;
	char pat[128];

	if (strlen(url) >= len || strlen(pattern) >= sizeof pat)
		return 0;
	strcpy(buf, url);
	strcpy(pat, pattern);
	u = strtok_r(buf, "/", &save_u);
	p = strtok_r(pat, "/", &save_p);
	while (u && p) {
		if (strcmp(p, "*") == 0) {
			if (nargs == MAX_ARGS)
				return 0;
			args[nargs++] = u;
		} else if (strcmp(p, u) != 0) {
			return 0;
		}
		u = strtok_r(NULL, "/", &save_u);
		p = strtok_r(NULL, "/", &save_p);
	}
	return !u && !p;
}

/* 1 when conn came through the unix socket (0 for TCP). */
static int on_unix_socket(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn,
		MHD_CONNECTION_INFO_CONNECTION_FD);
	struct sockaddr_storage local;
	socklen_t len = sizeof local;

	return info && getsockname(info->connect_fd, (struct sockaddr *)&local, &len) == 0 &&
	       local.ss_family == AF_UNIX;
}

/* The peer of a TCP connection: its munge credential, bound to this request.
 * 0, or -1 with c->auth_error. */
static int identify_munge(struct call *c, const char *method)
{
	const char *header = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND,
							 MHD_HTTP_HEADER_AUTHORIZATION);
	uid_t uid;
	gid_t gid;

	if (auth_verify(c->api->auth, header, method, c->req->target ? c->req->target : "",
			c->body, c->len, &uid, &gid, &c->auth_error) < 0) {
		c->auth_busy = errno == EAGAIN;
		return -1;
	}
	c->who.uid = uid;
	c->who.gid = gid;
	return 0;
}

/* Who is calling: SO_PEERCRED on the unix socket, a munge credential over TCP,
 * and the X-Parsa-* headers from a trusted peer. -1 when the caller cannot be
 * told; -2 when a TCP request's credential is refused (c->auth_error). */
static int identify(struct call *c, const char *method)
{
	const union MHD_ConnectionInfo *info;
	const char *huid, *hgid, *hgroups;
	struct sockaddr_storage local;
	socklen_t local_len = sizeof local;
	struct ucred cred;
	socklen_t len = sizeof cred;
	int64_t v;

	info = MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!info || getsockname(info->connect_fd, (struct sockaddr *)&local, &local_len) < 0)
		return -1;
	if (local.ss_family != AF_UNIX) {
		if (identify_munge(c, method) < 0)
			return -2;
	} else {
		if (getsockopt(info->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
			return -1;
		c->who.uid = cred.uid;
		c->who.gid = cred.gid;
	}
	c->trusted = c->who.uid == 0 || c->who.uid == c->api->self_uid;
	if (!c->trusted)
		return 0;
	huid = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "X-Parsa-Uid");
	hgid = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "X-Parsa-Gid");
	hgroups = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "X-Parsa-Groups");
	if (huid) {
		struct passwd pw, *res = NULL;
		char buf[4096];

		if (parse_num(huid, &v) < 0)
			return -1;
		c->who.uid = (uid_t)v;
		/* Never let the trusted peer's own gid (root's) leak into somebody
		 * else's identity: without X-Parsa-Gid, take the user's primary group. */
		if (!hgid) {
			if (getpwuid_r(c->who.uid, &pw, buf, sizeof buf, &res) != 0 || !res)
				return -1;
			c->who.gid = pw.pw_gid;
		}
	}
	if (hgid) {
		if (parse_num(hgid, &v) < 0)
			return -1;
		c->who.gid = (gid_t)v;
	}
	if (hgroups && *hgroups) {
		const char *p = hgroups;
		size_t n = 0;

		while (*p && n < MAX_GROUPS) {
			char *end;
			unsigned long g = strtoul(p, &end, 10);

			if (end == p)
				break;
			c->groups[n++] = (gid_t)g;
			p = end;
			while (*p == ',' || *p == ' ')
				p++;
		}
		c->who.groups = c->groups;
		c->who.ngroups = n;
		c->groups_known = true;
	}
	/* Acting for somebody else carries only that person's rights. */
	c->trusted = c->who.uid == 0 || c->who.uid == c->api->self_uid;
	return 0;
}

static void dispatch(struct call *c, const char *method, const char *url)
{
	char buf[1024];
	bool path_known = false;

	for (size_t i = 0; i < ARRAY_LEN(routes); i++) {
		const struct route *r = &routes[i];

		memset(c->args, 0, sizeof c->args);
		if (!route_match(r->pattern, url, buf, sizeof buf, c->args))
			continue;
		path_known = true;
		if (strcmp(r->method, method) != 0)
			continue;
		if (r->who == TRUSTED && !c->trusted) {
			reply_error(c, MHD_HTTP_FORBIDDEN, "only root or the scheduler's user may call this");
			return;
		}
		r->fn(c);
		return;
	}
	if (path_known)
		reply_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed here");
	else
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such path");
}

static enum MHD_Result send_reply(struct MHD_Connection *conn, struct call *c)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(c->out_len, c->out, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(c->out);
		return MHD_NO;
	}
	c->out = NULL;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, c->type);
	ret = MHD_queue_response(conn, c->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct api *api = cls;
	struct request *req = *con_cls;
	struct call *c;
	enum MHD_Result ret;
	int who;

	(void)version;
	if (!req) {
		/* on_uri made it, unless libmicrohttpd skipped the URI callback. */
		req = xcalloc(1, sizeof *req);
		*con_cls = req;
	}
	if (!req->started) {
		const char *clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							       MHD_HTTP_HEADER_CONTENT_LENGTH);

		req->started = true;
		if (clen && strtoull(clen, NULL, 10) > BODY_MAX)
			req->too_large = true;
		/* Over TCP, a request without a credential is refused anyway: do
		 * not keep its body. */
		if (!MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION) &&
		    !on_unix_socket(conn))
			req->unsigned_tcp = true;
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (!req->too_large && req->len + *upload_data_size > BODY_MAX)
			req->too_large = true;
		if (!req->too_large && !req->unsigned_tcp) {
			if (req->len + *upload_data_size + 1 > req->cap) {
				req->cap = (req->len + *upload_data_size + 1) * 2;
				if (req->cap > BODY_MAX + 1)
					req->cap = BODY_MAX + 1;
				req->body = xrealloc(req->body, req->cap);
			}
			memcpy(req->body + req->len, upload_data, *upload_data_size);
			req->len += *upload_data_size;
			req->body[req->len] = '\0';
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	c = xcalloc(1, sizeof *c);
	c->api = api;
	c->conn = conn;
	c->req = req;
	c->body = req->body;
	c->len = req->len;
	if (req->too_large) {
		char msg[128];

		snprintf(msg, sizeof msg, "the request is larger than the limit (a spec may have %d bytes)",
			 SPEC_MAX_BYTES);
		reply_error(c, HTTP_TOO_LARGE, msg);
	} else if ((who = identify(c, method)) == -2) {
		log_info("%s %s refused: %s", method, url, c->auth_error ? c->auth_error : "?");
		reply_error(c, c->auth_busy ? MHD_HTTP_SERVICE_UNAVAILABLE :
			    MHD_HTTP_UNAUTHORIZED, c->auth_error);
	} else if (who < 0) {
		reply_error(c, MHD_HTTP_FORBIDDEN, "cannot tell who is calling (no peer credentials, or"
			    " X-Parsa-Uid/Gid that are not numbers or name no known user)");
	} else {
		dispatch(c, method, url);
	}
	if (!c->out)
		reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "no answer");
	log_debug("%s %s uid %u -> %u", method, url, (unsigned)c->who.uid, c->status);
	ret = send_reply(conn, c);
	free(c->auth_error);
	free(c);
	return ret;
}

/* Called first for every request with its target as sent: keep it for the
 * munge check, which binds a credential to the exact target. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct request *req = xcalloc(1, sizeof *req);

	(void)cls;
	(void)conn;
	req->target = xstrdup(uri ? uri : "");
	return req;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct request *req = *con_cls;
	struct api *api = cls;

	(void)conn;
	if (req) {
		if (req->work && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
			log_warnx("work for %s was not delivered: it goes out again", req->work_host);
			engine_work_undelivered(api->engine, req->work_host, req->work);
		}
		json_decref(req->work);
		free(req->work_host);
		free(req->target);
		free(req->body);
		free(req);
		*con_cls = NULL;
	}
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	(void)cls;
	vsnprintf(msg, sizeof msg, fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_warnx("http: %s", msg);
}

/* 1 when something answers on the socket at path. */
static int socket_alive(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd, alive;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path);
	alive = connect(fd, (struct sockaddr *)&sun, sizeof sun) == 0;
	close(fd);
	return alive;
}

struct api *api_create(const char *path, struct engine *engine, char **err)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct api *api = xcalloc(1, sizeof *api);
	char *tmp = NULL;
	int fd = -1, saved;

	api->engine = engine;
	api->path = xstrdup(path);
	api->self_uid = geteuid();
	if (strlen(path) >= sizeof sun.sun_path) {
		errno = ENAMETOOLONG;
		errprintf(err, "socket path '%s' is longer than %zu characters", path,
			  sizeof sun.sun_path - 1);
		goto fail;
	}
	if (socket_alive(path)) {
		errno = EADDRINUSE;
		errprintf(err, "another scheduler answers on %s", path);
		goto fail;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		errprintf(err, "cannot remove the stale socket %s: %s", path, strerror(errno));
		goto fail;
	}
	/* Bound under a temporary name and renamed once served, so that clients
	 * waiting for the path never meet a socket that does not answer yet. */
	tmp = xasprintf("%s.%d", path, (int)getpid());
	if (strlen(tmp) >= sizeof sun.sun_path) {
		free(tmp);
		tmp = NULL;
	}
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", tmp ? tmp : path);
	unlink(sun.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof sun) < 0) {
		errprintf(err, "cannot create the socket %s: %s", sun.sun_path, strerror(errno));
		goto fail;
	}
	/* Every local user may talk to the scheduler when it serves them all (as
	 * root); identity comes from SO_PEERCRED, not from the file mode. */
	if (chmod(sun.sun_path, geteuid() == 0 ? 0666 : 0600) < 0 || listen(fd, 128) < 0) {
		errprintf(err, "cannot listen on %s: %s", sun.sun_path, strerror(errno));
		goto fail;
	}
	/* poll(), not select(): descriptors past 1024 must work too. */
	api->mhd = MHD_start_daemon(MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_THREAD_PER_CONNECTION |
				    MHD_USE_ITC |
				    MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, api,
				    /* First, or MHD logs its own complaint about it. */
				    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, api,
				    MHD_OPTION_LISTEN_SOCKET, fd,
				    MHD_OPTION_URI_LOG_CALLBACK, on_uri, api,
				    MHD_OPTION_NOTIFY_COMPLETED, on_completed, api,
				    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)600,
				    MHD_OPTION_END);
	if (!api->mhd) {
		errno = EIO;
		errprintf(err, "cannot start the HTTP server on %s", sun.sun_path);
		goto fail;
	}
	fd = -1; /* the daemon owns it now */
	if (tmp && rename(tmp, path) < 0) {
		errprintf(err, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
		goto fail;
	}
	free(tmp);
	log_info("listening on %s", path);
	return api;
fail:
	saved = errno;
	if (tmp)
		unlink(tmp);
	free(tmp);
	if (fd >= 0)
		close(fd);
	if (api->mhd)
		MHD_stop_daemon(api->mhd);
	free(api->path);
	free(api);
	errno = saved;
	return NULL;
}

void api_destroy(struct api *api)
{
	if (!api)
		return;
	/* Remove the name first so that no new client finds a dying socket. */
	unlink(api->path);
	if (api->tcp)
		MHD_stop_daemon(api->tcp);
	MHD_stop_daemon(api->mhd);
	auth_destroy(api->auth);
	free(api->path);
	free(api);
}

/* A listening TCP socket for "HOST:PORT" ("[::1]:7070", ":7070" for every
 * address). -1 with *err. */
static int tcp_socket(const char *address, char **err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	char *host = xstrdup(address), *port;
	int fd = -1, one = 1, rc;

	port = strrchr(host, ':');
	if (!port || !port[1]) {
		errno = EINVAL;
		errprintf(err, "--listen '%s': expected HOST:PORT, e.g. 10.0.0.1:7070 or :7070", address);
		goto out;
	}
	*port++ = '\0';
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	rc = getaddrinfo(*host ? host : NULL, port, &hints, &res);
	if (rc != 0) {
		errno = EINVAL;
		errprintf(err, "--listen '%s': %s", address, gai_strerror(rc));
		goto out;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 128) < 0) {
		errprintf(err, "cannot listen on %s: %s", address, strerror(errno));
		if (fd >= 0) {
			int saved = errno;

			close(fd);
			errno = saved;
		}
		fd = -1;
	}
out:
	if (res)
		freeaddrinfo(res);
	free(host);
	return fd;
}

int api_listen_tcp(struct api *api, const char *address, const char *munge_socket, char **err)
{
	int fd = tcp_socket(address, err);

	if (fd < 0)
		return -1;
	api->auth = auth_create(munge_socket);
	api->tcp = MHD_start_daemon(MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_THREAD_PER_CONNECTION |
				    MHD_USE_ITC | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, api,
				    MHD_OPTION_EXTERNAL_LOGGER, mhd_log, api,
				    MHD_OPTION_LISTEN_SOCKET, fd,
				    MHD_OPTION_URI_LOG_CALLBACK, on_uri, api,
				    MHD_OPTION_NOTIFY_COMPLETED, on_completed, api,
				    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)600,
				    MHD_OPTION_END);
	if (!api->tcp) {
		close(fd);
		errno = EIO;
		return errprintf(err, "cannot start the HTTP server on %s", address);
	}
	log_info("listening on %s (munge credentials from %s)", address, auth_socket(api->auth));
	return 0;
}
