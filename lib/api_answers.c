/* The API's answers, read and written (see api_answers.h). */
#include "api_answers.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* -1 with EPROTO and *err: "the answer of <what> ...". */
static int malformed(char **err, const char *what, const char *why)
{
	errprintf(err, "the scheduler's answer to %s %s (a scheduler of another version?)", what, why);
	errno = EPROTO;
	return -1;
}

/* The body as a JSON object, or NULL after malformed(). */
static json_t *load_object(const char *body, size_t len, const char *what, char **err)
{
	json_error_t error;
	json_t *root = body ? json_loadb(body, len, 0, &error) : NULL;

	if (!root) {
		malformed(err, what, "is not JSON");
		return NULL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		malformed(err, what, "is not a JSON object");
		return NULL;
	}
	return root;
}

/* A member that must be an integer in [min, max]. */
static int get_int(const json_t *obj, const char *key, int64_t min, int64_t max, int64_t *v)
{
	const json_t *j = json_object_get(obj, key);

	if (!json_is_integer(j) || json_integer_value(j) < min || json_integer_value(j) > max)
		return -1;
	*v = json_integer_value(j);
	return 0;
}

/* An optional number member (0 when absent); -1 when present and not a number. */
static int get_real(const json_t *obj, const char *key, double *v)
{
	const json_t *j = json_object_get(obj, key);

	*v = 0;
	if (!j)
		return 0;
	if (!json_is_number(j))
		return -1;
	*v = json_number_value(j);
	return 0;
}

/* How read_list() reads one kind of list: the member holding it, what a
 * row must have (for the refusal), the row's size, its reader (-1 for a
 * row that does not read) and what frees n rows. */
struct list_kind {
	const char *what;           /* the request, for messages */
	const char *key;
	const char *row_needs;
	size_t row_size;
	int (*read)(const json_t *j, void *row);
	void (*free_rows)(void *rows, size_t n);
};

/* The rows of the list member of the answer: *rows (at least one element,
 * so never NULL on success) and *n; or -1 after malformed(). */
static int read_list(const struct list_kind *k, const char *body, size_t len, void **rows,
		     size_t *n, char **err)
{
	json_t *root = load_object(body, len, k->what, err), *list, *j;
	char why[128];
	size_t i;

	*rows = NULL;
	*n = 0;
	if (!root)
		return -1;
	list = json_object_get(root, k->key);
	if (!json_is_array(list)) {
		json_decref(root);
		snprintf(why, sizeof why, "has no \"%s\" list", k->key);
		return malformed(err, k->what, why);
	}
	*rows = xcalloc(json_array_size(list) + 1, k->row_size);
	json_array_foreach(list, i, j) {
		if (k->read(j, (char *)*rows + i * k->row_size) < 0) {
			/* The row that failed may hold some of its own. */
			k->free_rows(*rows, i + 1);
			*rows = NULL;
			json_decref(root);
			snprintf(why, sizeof why, "has a row %zu without %s", i, k->row_needs);
			return malformed(err, k->what, why);
		}
	}
	*n = json_array_size(list);
	json_decref(root);
	return 0;
}

int api_read_id(const char *body, size_t len, int64_t *id, char **err)
{
	json_t *root = load_object(body, len, "a job's id", err);
	int rc = 0;

	if (!root)
		return -1;
	if (get_int(root, "id", 1, INT64_MAX, id) < 0)
		rc = malformed(err, "a job's id", "has no \"id\" that is a positive integer");
	json_decref(root);
	return rc;
}

json_t *api_id_json(int64_t id)
{
	return json_pack("{s:I}", "id", (json_int_t)id);
}

int api_read_job_json(const json_t *json, struct api_job_meta *job, char **err)
{
	static const char what[] = "GET /v1/jobs/<id>";
	const json_t *stages = json_object_get(json, "stages"), *st;
	int64_t uid, gid;
	size_t i;

	memset(job, 0, sizeof *job);
	if (!json_is_object(json) || get_int(json, "uid", 0, UINT32_MAX, &uid) < 0 ||
	    get_int(json, "gid", 0, UINT32_MAX, &gid) < 0 ||
	    get_int(json, "submitted_ms", 0, INT64_MAX, &job->submitted_ms) < 0 || !json_is_array(stages))
		return malformed(err, what, "has no uid, gid, submitted_ms and stages");
	job->uid = (uid_t)uid;
	job->gid = (gid_t)gid;
	job->stages = xcalloc(json_array_size(stages) + 1, sizeof *job->stages);
	json_array_foreach(stages, i, st) {
		const char *name = json_string_value(json_object_get(st, "name"));
		int64_t n;

		if (!name || get_int(st, "instances", 0, INT32_MAX, &n) < 0) {
			api_job_meta_clear(job);
			return malformed(err, what, "has a stage without its name and instances");
		}
		job->stages[i] = (struct api_stage_meta){ .name = xstrdup(name), .instances = (int)n };
		job->nstages = i + 1;
	}
	return 0;
}

int api_read_job(const char *body, size_t len, struct api_job_meta *job, char **err)
{
	json_t *root = load_object(body, len, "GET /v1/jobs/<id>", err);
	int rc;

	memset(job, 0, sizeof *job);
	if (!root)
		return -1;
	rc = api_read_job_json(root, job, err);
	json_decref(root);
	return rc;
}

void api_job_meta_clear(struct api_job_meta *job)
{
	for (size_t i = 0; i < job->nstages; i++)
		free(job->stages[i].name);
	free(job->stages);
	memset(job, 0, sizeof *job);
}

int api_read_submitted(const char *body, size_t len, int64_t *id, struct api_job_meta *job,
		       bool *has_job, char **err)
{
	static const char what[] = "POST /v1/jobs";
	json_t *root = load_object(body, len, what, err), *j;
	int rc = 0;

	if (has_job)
		*has_job = false;
	if (!root)
		return -1;
	if (get_int(root, "id", 1, INT64_MAX, id) < 0) {
		rc = malformed(err, what, "has no \"id\" that is a positive integer");
	} else if (has_job && (j = json_object_get(root, "job"))) {
		/* The job is committed whatever its shape: the id is the answer. */
		*has_job = api_read_job_json(j, job, NULL) == 0;
	}
	json_decref(root);
	return rc;
}

int api_read_check(const char *body, size_t len, bool *good, char **why, char **err)
{
	static const char what[] = "a ctl check";
	json_t *root = load_object(body, len, what, err);
	const json_t *ok_member;
	const char *error;
	int rc = 0;

	*why = NULL;
	if (!root)
		return -1;
	ok_member = json_object_get(root, "ok");
	error = json_string_value(json_object_get(root, "error"));
	if (!json_is_boolean(ok_member)) {
		rc = malformed(err, what, "has no \"ok\" true or false");
	} else {
		*good = json_is_true(ok_member);
		if (!*good)
			*why = xstrdup(error ? error : "not a command");
	}
	json_decref(root);
	return rc;
}

json_t *api_check_json(const char *error)
{
	return error ? json_pack("{s:b,s:s}", "ok", 0, "error", error) : json_pack("{s:b}", "ok", 1);
}

static int read_owner(const json_t *row, void *out)
{
	int64_t v[4];

	if (!json_is_array(row) || json_array_size(row) != 4)
		return -1;
	for (size_t k = 0; k < 4; k++) {
		json_t *j = json_array_get(row, k);

		if (!json_is_integer(j) || json_integer_value(j) < (k == 0 ? 1 : 0) ||
		    ((k == 1 || k == 2) && json_integer_value(j) > UINT32_MAX))
			return -1;
		v[k] = json_integer_value(j);
	}
	*(struct api_owner *)out = (struct api_owner){ .id = v[0], .uid = (uid_t)v[1], .gid = (gid_t)v[2],
						       .submitted_ms = v[3] };
	return 0;
}

static void free_plain(void *rows, size_t n)
{
	(void)n;
	free(rows);
}

int api_read_owners(const char *body, size_t len, struct api_owner **rows, size_t *n, char **err)
{
	static const struct list_kind kind = { "GET /v1/jobs?view=owners", "owners",
		"its [id, uid, gid, submitted_ms]", sizeof **rows, read_owner, free_plain };

	return read_list(&kind, body, len, (void **)rows, n, err);
}

enum api_owners_form api_owners_form(const char *view, const char *format)
{
	if (!view || strcmp(view, "owners") != 0)
		return API_OWNERS_NONE;
	return format && strcmp(format, "json") == 0 ? API_OWNERS_JSON : API_OWNERS_LINES;
}

void api_owners_begin(FILE *out, enum api_owners_form form)
{
	if (form == API_OWNERS_JSON)
		fputs("{\"owners\":[", out);
}

void api_owners_row(FILE *out, enum api_owners_form form, const struct api_owner *row, bool first)
{
	if (form == API_OWNERS_JSON)
		fprintf(out, "%s[%" PRId64 ",%lu,%lu,%" PRId64 "]", first ? "" : ",", row->id,
			(unsigned long)row->uid, (unsigned long)row->gid, row->submitted_ms);
	else
		fprintf(out, "%" PRId64 " %lu %lu %" PRId64 "\n", row->id, (unsigned long)row->uid,
			(unsigned long)row->gid, row->submitted_ms);
}

void api_owners_end(FILE *out, enum api_owners_form form)
{
	if (form == API_OWNERS_JSON)
		fputs("]}", out);
}

int api_read_wait(const char *body, size_t len, bool *done, char **state, char **err)
{
	static const char what[] = "a wait";
	json_t *root = load_object(body, len, what, err);
	const json_t *d;
	const char *s;

	*state = NULL;
	if (!root)
		return -1;
	d = json_object_get(root, "done");
	s = json_string_value(json_object_get(root, "state"));
	if (!json_is_boolean(d) || !s) {
		json_decref(root);
		return malformed(err, what, "has no \"done\" true or false and \"state\" text");
	}
	*done = json_is_true(d);
	*state = xstrdup(s);
	json_decref(root);
	return 0;
}

json_t *api_wait_json(bool done, const char *state)
{
	return json_pack("{s:b,s:s}", "done", done, "state", state ? state : "unknown");
}

/* One entry of the hosts list into h; -1 when a member has the wrong type. */
static int read_host(const json_t *j, void *row)
{
	struct api_host *h = row;
	const json_t *res = json_object_get(j, "reserved"), *live = json_object_get(j, "live");
	const json_t *running = json_object_get(j, "running");
	const char *name = json_string_value(json_object_get(j, "name"));
	const char *state = json_string_value(json_object_get(j, "state"));

	if (!json_is_object(j) || !name || !state || !json_is_object(res))
		return -1;
	h->name = xstrdup(name);
	h->state = xstrdup(state);
	if (get_int(j, "cpus", 0, INT64_MAX, &h->cpus) < 0 ||
	    get_int(j, "mem", 0, INT64_MAX, &h->mem) < 0 ||
	    get_int(res, "cpus", 0, INT64_MAX, &h->reserved_cpus) < 0 ||
	    get_int(res, "mem", 0, INT64_MAX, &h->reserved_mem) < 0)
		return -1;
	/* Optional: a host that has not said yet. */
	if (json_object_get(j, "scratch_free") &&
	    get_int(j, "scratch_free", 0, INT64_MAX, &h->scratch_free) < 0)
		return -1;
	if (json_object_get(j, "last_heartbeat_ms") &&
	    get_int(j, "last_heartbeat_ms", 0, INT64_MAX, &h->last_heartbeat_ms) < 0)
		return -1;
	/* "running" is a count or a list of instances, depending on the view. */
	if (json_is_array(running))
		h->running = (int64_t)json_array_size(running);
	else if (running && get_int(j, "running", 0, INT64_MAX, &h->running) < 0)
		return -1;
	if (live && (!json_is_object(live) || get_real(live, "cpu_pct", &h->cpu_pct) < 0 ||
		     get_real(live, "mem_pct", &h->mem_pct) < 0 || get_real(live, "load1", &h->load1) < 0))
		return -1;
	return 0;
}

static void free_hosts(void *rows, size_t n)
{
	api_hosts_free(rows, n);
}

int api_read_hosts(const char *body, size_t len, struct api_host **hosts, size_t *n, char **err)
{
	static const struct list_kind kind = { "GET /v1/hosts", "hosts",
		"its name, state, cpus and mem", sizeof **hosts, read_host, free_hosts };

	return read_list(&kind, body, len, (void **)hosts, n, err);
}

void api_hosts_free(struct api_host *hosts, size_t n)
{
	for (size_t i = 0; hosts && i < n; i++) {
		free(hosts[i].name);
		free(hosts[i].state);
	}
	free(hosts);
}

/* A member as text ("" when absent or not text), malloc'ed. */
static char *text_of(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return xstrdup(s ? s : "");
}

/* A member as a number (0 when absent, null or not a whole number). */
static int64_t num_of(const json_t *obj, const char *key)
{
	return json_integer_value(json_object_get(obj, key));
}

static int read_history_job(const json_t *j, void *row)
{
	struct api_history_job *h = row;
	static const char *const ended[] = { "succeeded", "failed", "cancelled" };
	static const char *const open[] = { "running", "queued" };
	const json_t *stages = json_object_get(j, "stages"), *st;
	size_t s;

	if (!json_is_object(j) || get_int(j, "id", 1, INT64_MAX, &h->id) < 0)
		return -1;
	h->name = text_of(j, "name");
	h->user = text_of(j, "user");
	h->team = text_of(j, "team");
	h->state = text_of(j, "state");
	h->reason = text_of(j, "reason");
	h->submitted_ms = num_of(j, "submitted_ms");
	h->started_ms = num_of(j, "started_ms");
	h->ended_ms = num_of(j, "ended_ms");
	h->wait_ms = num_of(j, "wait_ms");
	h->run_ms = num_of(j, "run_ms");
	h->cpu_ms = num_of(j, "cpu_ms");
	h->max_rss = num_of(j, "max_rss");
	json_array_foreach(stages, s, st) {
		const json_t *counts = json_object_get(st, "counts");

		for (size_t k = 0; k < ARRAY_LEN(ended); k++)
			h->done += num_of(counts, ended[k]);
		h->succeeded += num_of(counts, "succeeded");
		h->failed += num_of(counts, "failed");
		for (size_t k = 0; k < ARRAY_LEN(open); k++)
			h->total += num_of(counts, open[k]);
	}
	h->total += h->done;
	return 0;
}

static void free_history(void *rows, size_t n)
{
	api_history_free(rows, n);
}

int api_read_history(const char *body, size_t len, struct api_history_job **jobs, size_t *n,
		     char **err)
{
	static const struct list_kind kind = { "GET /v1/history/jobs", "jobs", "its id",
		sizeof **jobs, read_history_job, free_history };

	return read_list(&kind, body, len, (void **)jobs, n, err);
}

void api_history_free(struct api_history_job *jobs, size_t n)
{
	for (size_t i = 0; jobs && i < n; i++) {
		free(jobs[i].name);
		free(jobs[i].user);
		free(jobs[i].team);
		free(jobs[i].state);
		free(jobs[i].reason);
	}
	free(jobs);
}

int api_read_stats(const char *body, size_t len, struct api_stats *stats, char **err)
{
	static const char what[] = "GET /v1/stats";
	json_t *root = load_object(body, len, what, err), *list, *j;
	size_t i;

	memset(stats, 0, sizeof *stats);
	if (!root)
		return -1;
	list = json_object_get(root, "pass_ms");
	if (get_int(root, "passes", 0, INT64_MAX, &stats->passes) < 0 || !json_is_array(list) ||
	    json_array_size(list) > (uint64_t)stats->passes) {
		json_decref(root);
		return malformed(err, what, "has no \"passes\" with a \"pass_ms\" list of at most as many");
	}
	stats->pass_ms = xcalloc(json_array_size(list) + 1, sizeof *stats->pass_ms);
	json_array_foreach(list, i, j) {
		if (!json_is_number(j)) {
			api_stats_clear(stats);
			json_decref(root);
			return malformed(err, what, "has a pass that is not a number of ms");
		}
		stats->pass_ms[i] = json_number_value(j);
	}
	stats->npass_ms = json_array_size(list);
	stats->submitted = num_of(root, "submitted");
	stats->submit_groups = num_of(root, "submit_groups");
	json_decref(root);
	return 0;
}

void api_stats_clear(struct api_stats *stats)
{
	free(stats->pass_ms);
	memset(stats, 0, sizeof *stats);
}

static int read_schedule(const json_t *j, void *row)
{
	const char *name = json_string_value(json_object_get(j, "name"));
	int64_t uid, gid;

	if (!name || get_int(j, "uid", 0, UINT32_MAX, &uid) < 0 || get_int(j, "gid", 0, UINT32_MAX, &gid) < 0)
		return -1;
	*(struct api_schedule_owner *)row = (struct api_schedule_owner){ .name = xstrdup(name),
		.uid = (uid_t)uid, .gid = (gid_t)gid, .created_ms = num_of(j, "created_ms") };
	return 0;
}

static void free_schedules(void *rows, size_t n)
{
	api_schedules_free(rows, n);
}

int api_read_schedules(const char *body, size_t len, struct api_schedule_owner **list, size_t *n,
		       char **err)
{
	static const struct list_kind kind = { "GET /v1/schedules", "schedules",
		"its name, uid and gid", sizeof **list, read_schedule, free_schedules };

	return read_list(&kind, body, len, (void **)list, n, err);
}

void api_schedules_free(struct api_schedule_owner *list, size_t n)
{
	for (size_t i = 0; list && i < n; i++)
		free(list[i].name);
	free(list);
}
