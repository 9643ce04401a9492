#include "proto.h"
#include "spec.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading members ---- */

/* A number member as an integer (a real is cut), dflt when missing or out of
 * range: converting a real such as 1e300 to an integer is undefined (the
 * fuzzer sent one). */
static int64_t number_or(const json_t *obj, const char *key, int64_t dflt)
{
	json_t *v = json_object_get(obj, key);
	double d;

	if (json_is_integer(v))
		return json_integer_value(v);
	if (!json_is_real(v))
		return dflt;
	d = json_real_value(v);
	return d >= -9223372036854775808.0 && d < 9223372036854775808.0 ? (int64_t)d : dflt;
}

/* The same for an int field (an attempt, a pid, an exit code): a number
 * past its range is dflt, not wrapped into another attempt's number. */
static int int_or(const json_t *obj, const char *key, int dflt)
{
	int64_t v = number_or(obj, key, dflt);

	return v >= INT_MIN && v <= INT_MAX ? (int)v : dflt;
}

/* A number member as a real, dflt when missing. */
static double real_or(const json_t *obj, const char *key, double dflt)
{
	json_t *v = json_object_get(obj, key);

	return json_is_number(v) ? json_number_value(v) : dflt;
}

/* A number member as a real, 0 when missing. */
static double real_or_zero(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_number(v) ? json_number_value(v) : 0;
}

/* A string member, dflt when missing or not a string. */
static const char *string_or(const json_t *obj, const char *key, const char *dflt)
{
	const char *v = json_string_value(json_object_get(obj, key));

	return v ? v : dflt;
}

char *proto_encode(json_t *body)
{
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;

	json_decref(body);
	return text;
}

/* ---- registration ---- */

json_t *host_info_to_json(const struct host_info *info)
{
	json_t *features = json_array(), *body;

	for (size_t i = 0; i < info->nfeatures; i++)
		json_array_append_new(features, json_string(info->features[i]));
	/* The limits are reals on the wire (a runner may be given 92.5). */
	body = json_pack("{s:s, s:i, s:I, s:I, s:I, s:f, s:f, s:o, s:s}",
			 "name", info->name, "cpus", info->cpus, "mem", (json_int_t)info->mem,
			 "scratch_total", (json_int_t)info->scratch_total,
			 "scratch_free", (json_int_t)info->scratch_free,
			 "cpu_limit", (double)info->cpu_limit, "mem_limit", (double)info->mem_limit,
			 "features", features, "mount", info->mount);
	if (body && info->window) {
		json_object_set_new(body, "window", json_string(info->window));
		json_object_set_new(body, "drain_at_window_end", json_boolean(info->window_drain));
	}
	if (body && info->gpus > 0)
		json_object_set_new(body, "gpus", json_integer(info->gpus));
	return body;
}

void host_info_from_json(const json_t *json, struct host_info *info)
{
	json_t *features = json_object_get(json, "features"), *f;
	const char **names;
	size_t i;

	*info = (struct host_info){ 0 };
	info->name = json_string_value(json_object_get(json, "name"));
	info->cpus = int_or(json, "cpus", 0);
	info->mem = (uint64_t)number_or(json, "mem", 0);
	info->scratch_total = (uint64_t)number_or(json, "scratch_total", 0);
	info->scratch_free = (uint64_t)number_or(json, "scratch_free", (int64_t)info->scratch_total);
	info->cpu_limit = int_or(json, "cpu_limit", 0);
	info->mem_limit = int_or(json, "mem_limit", 0);
	info->mount = json_string_value(json_object_get(json, "mount"));
	info->window = json_string_value(json_object_get(json, "window"));
	info->window_drain = json_is_true(json_object_get(json, "drain_at_window_end"));
	info->gpus = int_or(json, "gpus", 0);
	if (info->gpus < 0 || info->gpus > 1024)
		info->gpus = 0;
	names = xcalloc(json_array_size(features) + 1, sizeof *names);
	json_array_foreach(features, i, f)
		if (json_is_string(f))
			names[info->nfeatures++] = json_string_value(f);
	info->features = names;
}

void host_info_clear(struct host_info *info)
{
	free((void *)info->features);
	info->features = NULL;
	info->nfeatures = 0;
}

json_t *registration_answer_to_json(const struct registration_answer *answer)
{
	return json_pack("{s:s,s:I}", "name", answer->name, "lease_ms", (json_int_t)answer->lease_ms);
}

void registration_answer_from_json(const json_t *json, struct registration_answer *answer)
{
	answer->name = json_string_value(json_object_get(json, "name"));
	answer->lease_ms = json_integer_value(json_object_get(json, "lease_ms"));
}

/* ---- heartbeat ---- */

static void usage_to_json(json_t *obj, const struct instance_usage *u)
{
	if (u->cpu_ms >= 0)
		json_object_set_new(obj, "cpu_ms", json_integer(u->cpu_ms));
	if (u->rss >= 0)
		json_object_set_new(obj, "rss", json_integer(u->rss));
	if (u->max_rss >= 0)
		json_object_set_new(obj, "max_rss", json_integer(u->max_rss));
}

static void usage_from_json(const json_t *obj, struct instance_usage *u)
{
	u->cpu_ms = number_or(obj, "cpu_ms", -1);
	u->rss = number_or(obj, "rss", -1);
	u->max_rss = number_or(obj, "max_rss", -1);
	if (u->cpu_ms < -1)
		u->cpu_ms = -1;
	if (u->rss < -1)
		u->rss = -1;
	if (u->max_rss < -1)
		u->max_rss = -1;
}

/* A member written only when given (>= 0). */
static void set_real_given(json_t *obj, const char *key, double v)
{
	if (v >= 0)
		json_object_set_new(obj, key, json_real(v));
}

json_t *heartbeat_instances_to_json(const struct heartbeat_entry *entries, size_t n)
{
	json_t *list = json_array();

	for (size_t i = 0; i < n; i++) {
		const struct heartbeat_entry *e = &entries[i];
		json_t *item = json_pack("{s:I, s:I, s:i}", "id", (json_int_t)e->id,
					 "attempt", (json_int_t)e->attempt, "pid", e->pid);

		/* Only what has reported: a restarted scheduler learns it here. */
		if (e->progress_total > 0)
			json_object_set_new(item, "progress", json_pack("{s:f,s:f}", "done", e->progress_done,
									 "total", e->progress_total));
		usage_to_json(item, &e->usage);
		if (e->slurm_job && *e->slurm_job)
			json_object_set_new(item, "slurm_job", json_string(e->slurm_job));
		if (e->slurm_reason && *e->slurm_reason)
			json_object_set_new(item, "slurm_reason", json_string(e->slurm_reason));
		json_array_append_new(list, item);
	}
	return list;
}

static json_t *executor_to_json(const struct heartbeat_executor *x)
{
	json_t *obj = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I}", "kind", x->kind,
				"partition", x->partition ? x->partition : "",
				"pending", (json_int_t)x->pending, "running", (json_int_t)x->running,
				"last_poll_ms", (json_int_t)x->last_poll_ms,
				"cpus_up", (json_int_t)x->cpus_up, "cpus_outside", (json_int_t)x->cpus_outside);

	if (obj && x->poll_error)
		json_object_set_new(obj, "poll_error", json_string(x->poll_error));
	if (obj && x->accounting)
		json_object_set_new(obj, "accounting", json_string(x->accounting));
	return obj;
}

/* A kind is one word, as the views print it; anything else is ignored. */
static void executor_from_json(const json_t *obj, struct heartbeat_executor *x)
{
	const char *kind = json_string_value(json_object_get(obj, "kind"));

	*x = (struct heartbeat_executor){ .pending = -1, .running = -1, .cpus_up = -1, .cpus_outside = -1 };
	if (!kind || !proto_safe_name(kind))
		return;
	x->kind = kind;
	x->partition = string_or(obj, "partition", "");
	x->pending = number_or(obj, "pending", -1);
	x->running = number_or(obj, "running", -1);
	x->last_poll_ms = number_or(obj, "last_poll_ms", 0);
	x->poll_error = json_string_value(json_object_get(obj, "poll_error"));
	x->cpus_up = number_or(obj, "cpus_up", -1);
	x->cpus_outside = number_or(obj, "cpus_outside", -1);
	x->accounting = json_string_value(json_object_get(obj, "accounting"));
	if (x->accounting && strcmp(x->accounting, "on") != 0 && strcmp(x->accounting, "off") != 0)
		x->accounting = NULL;
	if (x->last_poll_ms < 0)
		x->last_poll_ms = 0;
}

json_t *heartbeat_to_json(const struct heartbeat *hb)
{
	json_t *body = json_pack("{s:f, s:f, s:f}", "cpu_pct", hb->cpu_pct, "mem_pct", hb->mem_pct,
				 "load1", hb->load1);

	if (hb->scratch_free >= 0)
		json_object_set_new(body, "scratch_free", json_integer(hb->scratch_free));
	set_real_given(body, "parsa_cpu_pct", hb->parsa_cpu_pct);
	set_real_given(body, "outside_cpu_pct", hb->outside_cpu_pct);
	set_real_given(body, "parsa_mem_pct", hb->parsa_mem_pct);
	set_real_given(body, "outside_mem_pct", hb->outside_mem_pct);
	set_real_given(body, "outside_cores", hb->outside_cores);
	if (hb->outside_mem >= 0)
		json_object_set_new(body, "outside_mem", json_integer(hb->outside_mem));
	/* Only while it is down: a heartbeat without them says "reachable",
	 * which is what an older scheduler assumes anyway. */
	if (hb->storage_down_since > 0) {
		json_object_set_new(body, "storage_down_since", json_integer(hb->storage_down_since));
		json_object_set_new(body, "storage_reason",
				    json_string(hb->storage_reason ? hb->storage_reason : ""));
	}
	if (hb->executor.kind)
		json_object_set_new(body, "executor", executor_to_json(&hb->executor));
	json_object_set_new(body, "instances", heartbeat_instances_to_json(hb->instances, hb->ninstances));
	return body;
}

void heartbeat_from_json(const json_t *json, struct heartbeat *hb)
{
	json_t *list = json_object_get(json, "instances"), *item;
	struct heartbeat_entry *entries;
	size_t i;

	*hb = (struct heartbeat){ 0 };
	hb->cpu_pct = real_or_zero(json, "cpu_pct");
	hb->mem_pct = real_or_zero(json, "mem_pct");
	hb->load1 = real_or_zero(json, "load1");
	hb->scratch_free = number_or(json, "scratch_free", -1);
	hb->parsa_cpu_pct = real_or(json, "parsa_cpu_pct", -1);
	hb->outside_cpu_pct = real_or(json, "outside_cpu_pct", -1);
	hb->parsa_mem_pct = real_or(json, "parsa_mem_pct", -1);
	hb->outside_mem_pct = real_or(json, "outside_mem_pct", -1);
	hb->outside_cores = real_or(json, "outside_cores", -1);
	hb->outside_mem = number_or(json, "outside_mem", -1);
	hb->storage_down_since = number_or(json, "storage_down_since", 0);
	if (hb->storage_down_since < 0)
		hb->storage_down_since = 0;
	hb->storage_reason = hb->storage_down_since ? string_or(json, "storage_reason", "") : NULL;
	executor_from_json(json_object_get(json, "executor"), &hb->executor);
	entries = xcalloc(json_array_size(list) + 1, sizeof *entries);
	json_array_foreach(list, i, item) {
		const json_t *progress = json_object_get(item, "progress");
		struct heartbeat_entry *e = &entries[hb->ninstances++];

		e->id = number_or(item, "id", 0);
		e->attempt = int_or(item, "attempt", 0);
		e->pid = int_or(item, "pid", 0);
		e->progress_done = real_or_zero(progress, "done");
		e->progress_total = real_or_zero(progress, "total");
		usage_from_json(item, &e->usage);
		e->slurm_job = json_string_value(json_object_get(item, "slurm_job"));
		e->slurm_reason = json_string_value(json_object_get(item, "slurm_reason"));
	}
	hb->instances = entries;
}

void heartbeat_clear(struct heartbeat *hb)
{
	free((void *)hb->instances);
	hb->instances = NULL;
	hb->ninstances = 0;
}

/* ---- work ---- */

json_t *attempt_ref_to_json(const struct attempt_ref *ref)
{
	return json_pack("{s:I,s:I}", "id", (json_int_t)ref->id, "attempt", (json_int_t)ref->attempt);
}

int attempt_ref_from_json(const json_t *json, struct attempt_ref *ref)
{
	const json_t *id = json_object_get(json, "id"), *attempt = json_object_get(json, "attempt");

	if (!json_is_integer(id) || !json_is_integer(attempt)) {
		errno = EINVAL;
		return -1;
	}
	ref->id = json_integer_value(id);
	ref->attempt = json_integer_value(attempt);
	return 0;
}

json_t *work_answer_to_json(json_t *start, json_t *cancel)
{
	return json_pack("{s:o,s:o}", "start", start, "cancel", cancel);
}

void work_answer_from_json(const json_t *json, struct work_answer *work)
{
	work->start = json_object_get(json, "start");
	work->cancel = json_object_get(json, "cancel");
}

bool work_answer_has_items(const json_t *json)
{
	struct work_answer work;

	work_answer_from_json(json, &work);
	return json_array_size(work.start) > 0 || json_array_size(work.cancel) > 0;
}

/* ---- assignments ---- */

bool proto_safe_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 255 || name[0] == '.')
		return false;
	for (const char *p = name; *p; p++) {
		char c = *p;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* A relative path without ".." components (empty is fine). */
static int relative_inside(const char *path)
{
	const char *p = path;

	if (path[0] == '/')
		return 0;
	while (*p) {
		size_t n = strcspn(p, "/");

		if (n == 2 && p[0] == '.' && p[1] == '.')
			return 0;
		p += n;
		if (*p == '/')
			p++;
	}
	return 1;
}

/* An integer member within [min, max]; a missing member is an error unless
 * def is not NULL. */
static int get_int(const json_t *obj, const char *key, int64_t min, int64_t max,
		   const int64_t *def, int64_t *out, char **err)
{
	const json_t *v = json_object_get(obj, key);

	if (!v && def) {
		*out = *def;
		return 0;
	}
	if (!json_is_integer(v))
		return errprintf(err, "assignment: '%s' is missing or not an integer", key);
	if (json_integer_value(v) < min || json_integer_value(v) > max)
		return errprintf(err, "assignment: '%s' = %lld is out of range", key,
				 (long long)json_integer_value(v));
	*out = json_integer_value(v);
	return 0;
}

/* A sweep point's folder: NAME=VALUE pairs joined by ',' (lib/spec_matrix.c
 * keeps names and values to these characters). */
static bool point_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 255 || name[0] == '.')
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      strchr("._+-:@%=,", *p)))
			return false;
	return true;
}

static int get_str(const json_t *obj, const char *key, int required, char **out, char **err)
{
	const json_t *v = json_object_get(obj, key);

	if ((!v || json_is_null(v)) && !required) {
		*out = xstrdup("");
		return 0;
	}
	if (!json_is_string(v))
		return errprintf(err, "assignment: '%s' is missing or not a string", key);
	/* Strings end up in C strings and the environment: no embedded NULs. */
	if (strlen(json_string_value(v)) != json_string_length(v))
		return errprintf(err, "assignment: '%s' contains a NUL byte", key);
	*out = xstrdup(json_string_value(v));
	return 0;
}

static int get_env(const json_t *obj, struct assignment *a, char **err)
{
	const json_t *list = json_object_get(obj, "env"), *v;
	size_t i;

	if (!list || json_is_null(list))
		return 0;
	if (!json_is_array(list))
		return errprintf(err, "assignment: 'env' is not a list");
	a->env = xcalloc(json_array_size(list) + 1, sizeof *a->env);
	json_array_foreach(list, i, v) {
		const char *s = json_string_value(v), *eq;

		if (!s || strlen(s) != json_string_length(v))
			return errprintf(err, "assignment: env entry %zu is not a string", i);
		eq = strchr(s, '=');
		if (!eq || eq == s)
			return errprintf(err, "assignment: env entry '%s' is not NAME=value", s);
		a->env[a->nenv++] = xstrdup(s);
	}
	return 0;
}

static int get_groups(const json_t *obj, struct assignment *a, char **err)
{
	const json_t *list = json_object_get(obj, "groups"), *v;
	size_t i;

	if (!list || json_is_null(list))
		return 0;
	if (!json_is_array(list))
		return errprintf(err, "assignment: 'groups' is not a list");
	a->groups = xcalloc(json_array_size(list) + 1, sizeof *a->groups);
	json_array_foreach(list, i, v) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) >= (json_int_t)UINT32_MAX)
			return errprintf(err, "assignment: group entry %zu is not a group id", i);
		a->groups[a->ngroups++] = (gid_t)json_integer_value(v);
	}
	return 0;
}

struct assignment *assignment_from_json(const json_t *json, char **err)
{
	struct assignment *a = xcalloc(1, sizeof *a);
	static const int64_t zero = 0, one = 1;
	const int64_t big = INT64_MAX / 2;
	int64_t v;

	if (!json_is_object(json)) {
		errprintf(err, "assignment: not a JSON object");
		goto fail;
	}
	if (get_int(json, "id", 1, big, NULL, &a->id, err) < 0 ||
	    get_int(json, "attempt", 0, big, NULL, &a->attempt, err) < 0 ||
	    get_int(json, "job", 1, big, NULL, &a->job, err) < 0 ||
	    get_int(json, "index", 0, big, NULL, &a->index, err) < 0 ||
	    get_int(json, "cpus", 0, 1 << 20, &one, &a->cpus, err) < 0)
		goto fail;
	if (get_int(json, "mem", 0, big, &zero, &v, err) < 0)
		goto fail;
	a->mem = (uint64_t)v;
	if (get_int(json, "scratch", 0, big, &zero, &v, err) < 0)
		goto fail;
	a->scratch = (uint64_t)v;
	if (get_int(json, "walltime_s", 0, big, &zero, &v, err) < 0)
		goto fail;
	a->walltime_s = (uint64_t)v;
	if (get_int(json, "progress_files", 0, big, &zero, &v, err) < 0)
		goto fail;
	a->progress_files = (uint64_t)v;
	if (get_int(json, "gpus", 0, 1024, &zero, &a->gpus, err) < 0)
		goto fail;
	/* The identity has no default: a missing uid must never mean root. */
	if (get_int(json, "uid", 0, (int64_t)UINT32_MAX - 1, NULL, &v, err) < 0)
		goto fail;
	a->uid = (uid_t)v;
	if (get_int(json, "gid", 0, (int64_t)UINT32_MAX - 1, NULL, &v, err) < 0)
		goto fail;
	a->gid = (gid_t)v;
	if (get_str(json, "stage", 1, &a->stage, err) < 0 ||
	    get_str(json, "run", 1, &a->run, err) < 0 ||
	    get_str(json, "item", 0, &a->item, err) < 0 ||
	    get_str(json, "point", 0, &a->point, err) < 0 ||
	    get_str(json, "workdir", 0, &a->workdir, err) < 0 ||
	    get_str(json, "user", 0, &a->user, err) < 0 ||
	    get_env(json, a, err) < 0 ||
	    get_groups(json, a, err) < 0 ||
	    spec_slurm_from_json(json_object_get(json, "slurm"), &a->slurm, "assignment", err) < 0)
		goto fail;
	/* The stage name becomes part of the scratch and log paths the runner
	 * creates, possibly as root. */
	if (!proto_safe_name(a->stage)) {
		errprintf(err, "assignment: stage name '%s' is not a safe file name", a->stage);
		goto fail;
	}
	a->workdir_fallback = json_is_true(json_object_get(json, "workdir_fallback"));
	if (a->workdir[0] && a->workdir[0] != '/') {
		errprintf(err, "assignment: workdir '%s' is not an absolute folder", a->workdir);
		goto fail;
	}
	/* Made below out/STAGE by the runner, as the instance's user. */
	if (a->point[0] && !point_name_ok(a->point)) {
		errprintf(err, "assignment: point '%s' is not a safe folder name", a->point);
		goto fail;
	}
	if (!relative_inside(a->item)) {
		errprintf(err, "assignment: item '%s' is not a path inside the job's out/ folder", a->item);
		goto fail;
	}
	return a;
fail:
	assignment_destroy(a);
	errno = EINVAL;
	return NULL;
}

void assignment_destroy(struct assignment *a)
{
	if (!a)
		return;
	free(a->stage);
	free(a->item);
	free(a->point);
	free(a->workdir);
	free(a->run);
	for (size_t i = 0; i < a->nenv; i++)
		free(a->env[i]);
	free(a->env);
	free(a->user);
	free(a->groups);
	spec_slurm_clear(&a->slurm);
	free(a);
}

char *assignment_out_dir(const char *mount, const struct assignment *a)
{
	if (a->point && a->point[0])
		return xasprintf("%s/jobs/%" PRId64 "/out/%s/%s", mount, a->job, a->stage, a->point);
	return xasprintf("%s/jobs/%" PRId64 "/out/%s", mount, a->job, a->stage);
}

json_t *assignment_to_json(const struct assignment *a)
{
	json_t *env = json_array(), *groups = json_array();

	for (size_t i = 0; i < a->nenv; i++)
		json_array_append_new(env, json_string(a->env[i]));
	for (size_t i = 0; i < a->ngroups; i++)
		json_array_append_new(groups, json_integer(a->groups[i]));
	json_t *body;

	body = json_pack("{s:I,s:I,s:I,s:s,s:I,s:s,s:s,s:I,s:I,s:I,s:I,s:o,s:I,s:I,s:s,s:o,s:I}",
			 "id", (json_int_t)a->id, "attempt", (json_int_t)a->attempt,
			 "job", (json_int_t)a->job, "stage", a->stage, "index", (json_int_t)a->index,
			 "item", a->item, "run", a->run, "cpus", (json_int_t)a->cpus,
			 "mem", (json_int_t)a->mem, "scratch", (json_int_t)a->scratch,
			 "walltime_s", (json_int_t)a->walltime_s, "env", env,
			 "uid", (json_int_t)a->uid, "gid", (json_int_t)a->gid, "user", a->user,
			 "groups", groups, "progress_files", (json_int_t)a->progress_files);
	if (body && a->gpus > 0)
		json_object_set_new(body, "gpus", json_integer(a->gpus));
	if (body && a->point && a->point[0])
		json_object_set_new(body, "point", json_string(a->point));
	if (body && a->workdir && a->workdir[0]) {
		json_object_set_new(body, "workdir", json_string(a->workdir));
		json_object_set_new(body, "workdir_fallback", json_boolean(a->workdir_fallback));
	}
	if (body && spec_slurm_any(&a->slurm))
		json_object_set_new(body, "slurm", spec_slurm_to_json(&a->slurm));
	return body;
}

/* ---- state reports ---- */

static const struct report_kind_name {
	const char *name;
	enum report_kind kind;
} report_kinds[] = {
	{ "running", REPORT_RUNNING },
	{ "exited", REPORT_EXITED },
	{ "failed", REPORT_FAILED },
};

json_t *report_to_json(const struct report *r)
{
	json_t *body = json_pack("{s:I}", "attempt", (json_int_t)r->attempt);

	for (size_t i = 0; i < ARRAY_LEN(report_kinds); i++)
		if (report_kinds[i].kind == r->kind)
			json_object_set_new(body, "state", json_string(report_kinds[i].name));
	switch (r->kind) {
	case REPORT_RUNNING:
		json_object_set_new(body, "pid", json_integer(r->pid));
		break;
	case REPORT_EXITED:
		if (r->pid > 0)
			json_object_set_new(body, "pid", json_integer(r->pid));
		if (r->signal)
			json_object_set_new(body, "signal", json_integer(r->signal));
		else
			json_object_set_new(body, "exit_code", json_integer(r->exit_code));
		break;
	case REPORT_FAILED:
		break;
	}
	if (r->reason)
		json_object_set_new(body, "reason", json_string(r->reason));
	if (r->started_ms > 0)
		json_object_set_new(body, "started_ms", json_integer(r->started_ms));
	if (r->ended_ms > 0)
		json_object_set_new(body, "ended_ms", json_integer(r->ended_ms));
	usage_to_json(body, &r->usage);
	if (r->cpu_list)
		json_object_set_new(body, "cpu_list", json_string(r->cpu_list));
	if (r->gpu_list)
		json_object_set_new(body, "gpu_list", json_string(r->gpu_list));
	if (r->slurm_job)
		json_object_set_new(body, "slurm_job", json_string(r->slurm_job));
	if (r->slurm_state)
		json_object_set_new(body, "slurm_state", json_string(r->slurm_state));
	return body;
}

int report_from_json(const json_t *json, struct report *r, char **err)
{
	const char *state = json_string_value(json_object_get(json, "state"));
	const char *reason = json_string_value(json_object_get(json, "reason"));
	bool known = false;

	*r = (struct report){ 0 };
	for (size_t i = 0; i < ARRAY_LEN(report_kinds) && state; i++) {
		if (strcmp(report_kinds[i].name, state) == 0) {
			r->kind = report_kinds[i].kind;
			known = true;
		}
	}
	r->attempt = int_or(json, "attempt", 0);
	r->pid = int_or(json, "pid", 0);
	r->exit_code = int_or(json, "exit_code", -1);
	r->signal = int_or(json, "signal", 0);
	r->reason = reason && *reason ? reason : NULL;
	r->started_ms = number_or(json, "started_ms", 0);
	r->ended_ms = number_or(json, "ended_ms", 0);
	if (r->started_ms < 0)
		r->started_ms = 0;
	if (r->ended_ms < 0)
		r->ended_ms = 0;
	usage_from_json(json, &r->usage);
	r->cpu_list = json_string_value(json_object_get(json, "cpu_list"));
	r->gpu_list = json_string_value(json_object_get(json, "gpu_list"));
	r->slurm_job = json_string_value(json_object_get(json, "slurm_job"));
	r->slurm_state = json_string_value(json_object_get(json, "slurm_state"));
	if (!known) {
		errno = EINVAL;
		return errprintf(err, "\"state\" must be running, exited or failed");
	}
	return 0;
}

/* ---- progress ---- */

json_t *progress_report_to_json(const struct progress_report *p)
{
	return json_pack("{s:I,s:f,s:f}", "attempt", (json_int_t)p->attempt, "done", p->done,
			 "total", p->total);
}

void progress_report_from_json(const json_t *json, struct progress_report *p)
{
	json_t *percent = json_object_get(json, "percent");

	p->attempt = int_or(json, "attempt", 0);
	if (json_is_number(percent)) {
		p->done = json_number_value(percent);
		p->total = 100;
	} else {
		p->done = real_or_zero(json, "done");
		p->total = real_or_zero(json, "total");
	}
}
