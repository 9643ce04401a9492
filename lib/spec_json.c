/* The spec's JSON form, what the scheduler stores and status.json shows: a
 * struct spec written out, and read back with every member checked (specs
 * stored before a key existed lack it). */
#include "spec_internal.h"
#include "timewin.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static json_t *strings_json(char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++) {
		if (json_array_append_new(a, json_string(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

/* on_failure, max_failed (null for on_failure's default, N, or "P%") and
 * max_running (0 = no limit). */
static int failure_to_json(const struct spec_stage *st, json_t *j)
{
	json_t *max = json_null();

	if (st->max_failed >= 0)
		max = st->max_failed_pct ? json_sprintf("%lld%%", st->max_failed) :
					   json_integer(st->max_failed);
	if (json_object_set_new(j, "on_failure", json_string(spec_on_failure_name(st->on_failure))) < 0 ||
	    json_object_set_new(j, "max_failed", max) < 0 ||
	    json_object_set_new(j, "max_running", json_integer(st->max_running)) < 0)
		return -1;
	return 0;
}

static json_t *stage_json(const struct spec_stage *st)
{
	json_t *foreach = json_null();

	if (st->foreach_stage)
		foreach = json_sprintf("%s/%s", st->foreach_stage,
				       st->foreach_glob ? st->foreach_glob : "*");
	json_t *j;

	/* "o" steals each reference, also when packing fails. */
	j = json_pack("{s:s, s:i, s:s, s:i, s:I, s:I, s:I, s:i, s:o, s:o, s:I, s:i, s:o, s:o}",
			 "name", st->name, "line", st->line, "run", st->run, "cpus", st->cpus,
			 "mem", (json_int_t)st->mem, "disk", (json_int_t)st->disk,
			 "scratch", (json_int_t)st->scratch, "instances", st->instances,
			 "after", strings_json(st->after, st->nafter), "foreach", foreach,
			 "walltime_s", (json_int_t)st->walltime, "retries", st->retries,
			 "hosts", strings_json(st->hosts, st->nhosts),
			 "env", strings_json(st->env, st->nenv));
	if (j && (json_object_set_new(j, "window", st->window ? json_string(st->window) : json_null()) < 0 ||
		  json_object_set_new(j, "progress_files", json_integer((json_int_t)st->progress_files)) < 0 ||
		  (st->gpus > 0 && json_object_set_new(j, "gpus", json_integer(st->gpus)) < 0) ||
		  (spec_slurm_any(&st->slurm) &&
		   json_object_set_new(j, "slurm", spec_slurm_to_json(&st->slurm)) < 0) ||
		  (st->nmatrix > 0 && json_object_set_new(j, "matrix", spec_matrix_to_json(st)) < 0) ||
		  failure_to_json(st, j) < 0)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

/* The [job] keys of time: start, window, every, notify. */
static int time_to_json(const struct spec *spec, json_t *root)
{
	json_t *notify = strings_json(spec->notify, spec->nnotify);

	if (!notify ||
	    json_object_set_new(root, "start_at_s", json_integer(spec->start_at_s)) < 0 ||
	    json_object_set_new(root, "start_in_s", json_integer(spec->start_in_s)) < 0 ||
	    json_object_set_new(root, "window", spec->window ? json_string(spec->window) : json_null()) < 0 ||
	    json_object_set_new(root, "every", spec->every ? json_string(spec->every) : json_null()) < 0 ||
	    json_object_set_new(root, "notify", notify) < 0 ||
	    (spec->workdir && (json_object_set_new(root, "workdir", json_string(spec->workdir)) < 0 ||
			       json_object_set_new(root, "workdir_submitted",
						   json_boolean(spec->workdir_submitted)) < 0)))
		return -1;
	return 0;
}

json_t *spec_to_json(const struct spec *spec)
{
	json_t *after = json_array(), *stages = json_array(), *root;

	for (size_t i = 0; after && i < spec->nafter_jobs; i++)
		if (json_array_append_new(after, json_integer(spec->after_jobs[i])) < 0)
			goto fail;
	for (size_t i = 0; stages && i < spec->nstages; i++) {
		json_t *st = stage_json(&spec->stages[i]);

		if (!st || json_array_append_new(stages, st) < 0)
			goto fail;
	}
	root = json_pack("{s:s, s:o, s:i, s:o, s:o}", "name", spec->name,
			 "team", spec->team ? json_string(spec->team) : json_null(),
			 "priority", spec->priority, "after", after, "stages", stages);
	if (root && time_to_json(spec, root) < 0) {
		json_decref(root);
		root = NULL;
	}
	if (!root)
		errno = EINVAL;
	return root;
fail:
	json_decref(after);
	json_decref(stages);
	errno = ENOMEM;
	return NULL;
}

/* Readers of the JSON form: each returns 0, or -1 with a message naming the
 * member (where is "spec" or "stages[3]"). */
static int json_get_string(const json_t *obj, const char *key, bool null_ok, char **out,
			   const char *where, char **err)
{
	const json_t *v = json_object_get(obj, key);

	if (null_ok && (!v || json_is_null(v))) {
		*out = NULL;
		return 0;
	}
	if (!json_is_string(v))
		return errprintf(err, "%s.%s: want a string", where, key);
	*out = xstrdup(json_string_value(v));
	return 0;
}

static int json_get_int(const json_t *obj, const char *key, long long min, long long max,
			long long *out, const char *where, char **err)
{
	const json_t *v = json_object_get(obj, key);

	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return errprintf(err, "%s.%s: want an integer from %lld to %lld", where, key, min, max);
	*out = json_integer_value(v);
	return 0;
}

static int json_get_strings(const json_t *obj, const char *key, char ***out, size_t *n,
			    const char *where, char **err)
{
	const json_t *a = json_object_get(obj, key);
	size_t count = json_array_size(a);

	*out = NULL;
	*n = 0;
	if (!json_is_array(a))
		return errprintf(err, "%s.%s: want an array of strings", where, key);
	*out = xcalloc(count ? count : 1, sizeof **out);
	for (size_t i = 0; i < count; i++) {
		const json_t *s = json_array_get(a, i);

		if (!json_is_string(s))
			return errprintf(err, "%s.%s[%zu]: want a string", where, key, i);
		(*out)[(*n)++] = xstrdup(json_string_value(s));
	}
	return 0;
}

/* "window": a window's text or null; absent in specs stored before windows. */
static int window_from_json(const json_t *obj, char **text, struct timewin **win, const char *where,
			    char **err)
{
	char *why = NULL;

	if (json_get_string(obj, "window", true, text, where, err) < 0)
		return -1;
	if (!*text)
		return 0;
	*win = timewin_parse(*text, &why);
	if (!*win) {
		errprintf(err, "%s.window: %s", where, why ? why : "not a window");
		free(why);
		return -1;
	}
	return 0;
}

/* The [job] keys of time; each may be absent (specs stored before them). */
static int time_from_json(const json_t *json, struct spec *spec, char **err)
{
	const json_t *notify = json_object_get(json, "notify");
	long long v = 0;

	if (json_object_get(json, "start_at_s")) {
		if (json_get_int(json, "start_at_s", 0, INT64_MAX, &v, "spec", err) < 0)
			return -1;
		spec->start_at_s = v;
	}
	if (json_object_get(json, "start_in_s")) {
		if (json_get_int(json, "start_in_s", 0, INT64_MAX, &v, "spec", err) < 0)
			return -1;
		spec->start_in_s = v;
	}
	if (window_from_json(json, &spec->window, &spec->win, "spec", err) < 0 ||
	    json_get_string(json, "every", true, &spec->every, "spec", err) < 0 ||
	    json_get_string(json, "workdir", true, &spec->workdir, "spec", err) < 0)
		return -1;
	spec->workdir_submitted = json_is_true(json_object_get(json, "workdir_submitted"));
	if (notify && !json_is_null(notify) &&
	    json_get_strings(json, "notify", &spec->notify, &spec->nnotify, "spec", err) < 0)
		return -1;
	return 0;
}

/* The keys of failure; each may be absent (specs stored before them): then
 * finish, the default max_failed and no max_running. */
static int failure_from_json(const json_t *j, struct spec_stage *st, const char *where, char **err)
{
	const json_t *how = json_object_get(j, "on_failure"), *max = json_object_get(j, "max_failed");
	long long running = 0;
	int parsed;

	st->max_failed = -1;
	if (how) {
		parsed = json_is_string(how) ? spec_on_failure_parse(json_string_value(how)) : -1;
		if (parsed < 0)
			return errprintf(err, "%s.on_failure: want \"finish\", \"stop\" or \"ignore\"", where);
		st->on_failure = (enum spec_on_failure)parsed;
	}
	if (json_is_integer(max) && json_integer_value(max) >= 0 &&
	    json_integer_value(max) <= SPEC_MAX_INSTANCES) {
		st->max_failed = json_integer_value(max);
	} else if (json_is_string(max) && strchr(json_string_value(max), '%')) {
		if (spec_parse_max_failed(json_string_value(max), &st->max_failed, &st->max_failed_pct) < 0)
			return errprintf(err, "%s.max_failed: want null, N or \"P%%\"", where);
	} else if (max && !json_is_null(max)) {
		return errprintf(err, "%s.max_failed: want null, N or \"P%%\"", where);
	}
	if (json_object_get(j, "max_running") &&
	    json_get_int(j, "max_running", 0, SPEC_MAX_INSTANCES, &running, where, err) < 0)
		return -1;
	st->max_running = (int)running;
	return 0;
}

static int stage_from_json(const json_t *j, struct spec_stage *st, const char *where, char **err)
{
	long long line = 0, cpus = 0, mem = 0, disk = 0, scratch = 0, instances = 0, walltime = 0;
	long long retries = 0, progress = 0, gpus = 0;
	char *foreach = NULL;
	int rc = -1;

	if (!json_is_object(j))
		return errprintf(err, "%s: want an object", where);
	if (json_get_string(j, "name", false, &st->name, where, err) < 0 ||
	    json_get_string(j, "run", false, &st->run, where, err) < 0 ||
	    json_get_int(j, "line", 0, INT32_MAX, &line, where, err) < 0 ||
	    json_get_int(j, "cpus", 1, 4096, &cpus, where, err) < 0 ||
	    json_get_int(j, "mem", 0, INT64_MAX, &mem, where, err) < 0 ||
	    json_get_int(j, "disk", 0, INT64_MAX, &disk, where, err) < 0 ||
	    json_get_int(j, "scratch", 0, INT64_MAX, &scratch, where, err) < 0 ||
	    json_get_int(j, "instances", 1, SPEC_MAX_INSTANCES, &instances, where, err) < 0 ||
	    json_get_int(j, "walltime_s", 0, INT64_MAX, &walltime, where, err) < 0 ||
	    json_get_int(j, "retries", 0, 100, &retries, where, err) < 0 ||
	    json_get_strings(j, "after", &st->after, &st->nafter, where, err) < 0 ||
	    json_get_strings(j, "hosts", &st->hosts, &st->nhosts, where, err) < 0 ||
	    json_get_strings(j, "env", &st->env, &st->nenv, where, err) < 0 ||
	    json_get_string(j, "foreach", true, &foreach, where, err) < 0)
		goto out;
	if (!spec_is_stage_name(st->name)) {
		errprintf(err, "%s.name: '%s' is not a stage name", where, st->name);
		goto out;
	}
	for (size_t i = 0; i < st->nenv; i++) {
		if (!strchr(st->env[i], '=')) {
			errprintf(err, "%s.env[%zu]: want NAME=value", where, i);
			goto out;
		}
	}
	if (foreach) {
		char *slash = strchr(foreach, '/');

		if (!slash || slash == foreach || slash[1] == '\0') {
			errprintf(err, "%s.foreach: want \"STAGE/GLOB\"", where);
			goto out;
		}
		*slash = '\0';
		st->foreach_stage = xstrdup(foreach);
		st->foreach_glob = xstrdup(slash + 1);
	}
	if (window_from_json(j, &st->window, &st->win, where, err) < 0 ||
	    failure_from_json(j, st, where, err) < 0)
		goto out;
	if (json_object_get(j, "progress_files") &&
	    json_get_int(j, "progress_files", 0, SPEC_MAX_PROGRESS, &progress, where, err) < 0)
		goto out;
	st->progress_files = (uint64_t)progress;
	if (json_object_get(j, "gpus") &&
	    json_get_int(j, "gpus", 0, SPEC_MAX_GPUS, &gpus, where, err) < 0)
		goto out;
	st->gpus = (int)gpus;
	if (spec_slurm_from_json(json_object_get(j, "slurm"), &st->slurm, where, err) < 0 ||
	    spec_matrix_from_json(json_object_get(j, "matrix"), st, where, err) < 0)
		goto out;
	st->line = (int)line;
	st->cpus = (int)cpus;
	st->mem = (uint64_t)mem;
	st->disk = (uint64_t)disk;
	st->scratch = (uint64_t)scratch;
	st->instances = (int)instances;
	st->walltime = (uint64_t)walltime;
	st->retries = (int)retries;
	rc = 0;
out:
	free(foreach);
	return rc;
}

/* Stage names unique, and every after and foreach naming one of them. */
static int check_json_refs(const struct spec *spec, char **err)
{
	for (size_t i = 0; i < spec->nstages; i++) {
		const struct spec_stage *st = &spec->stages[i];

		if (spec_stage_index(spec, st->name) != (int)i)
			return errprintf(err, "stages[%zu]: stage '%s' appears twice", i, st->name);
		for (size_t a = 0; a < st->nafter; a++)
			if (spec_stage_index(spec, st->after[a]) < 0)
				return errprintf(err, "stages[%zu].after: unknown stage '%s'", i, st->after[a]);
		if (st->foreach_stage && spec_stage_index(spec, st->foreach_stage) < 0)
			return errprintf(err, "stages[%zu].foreach: unknown stage '%s'", i, st->foreach_stage);
	}
	return 0;
}

struct spec *spec_from_json(const json_t *json, char **err)
{
	struct spec *spec = xcalloc(1, sizeof *spec);
	const json_t *after, *stages;
	long long priority = 0;
	size_t n;

	if (!json_is_object(json)) {
		errprintf(err, "spec: want an object");
		goto fail;
	}
	if (json_get_string(json, "name", false, &spec->name, "spec", err) < 0 ||
	    json_get_string(json, "team", true, &spec->team, "spec", err) < 0 ||
	    json_get_int(json, "priority", -1000, 1000, &priority, "spec", err) < 0)
		goto fail;
	spec->priority = (int)priority;
	after = json_object_get(json, "after");
	if (!json_is_array(after)) {
		errprintf(err, "spec.after: want an array of job ids");
		goto fail;
	}
	n = json_array_size(after);
	spec->after_jobs = xcalloc(n ? n : 1, sizeof *spec->after_jobs);
	for (size_t i = 0; i < n; i++) {
		const json_t *id = json_array_get(after, i);

		if (!json_is_integer(id) || json_integer_value(id) < 1) {
			errprintf(err, "spec.after[%zu]: want a job id", i);
			goto fail;
		}
		spec->after_jobs[spec->nafter_jobs++] = json_integer_value(id);
	}
	stages = json_object_get(json, "stages");
	n = json_array_size(stages);
	if (!json_is_array(stages) || n < 1 || n > SPEC_MAX_STAGES) {
		errprintf(err, "spec.stages: want an array of 1 to %d stages", SPEC_MAX_STAGES);
		goto fail;
	}
	spec->stages = xcalloc(n, sizeof *spec->stages);
	for (size_t i = 0; i < n; i++) {
		char where[32];

		snprintf(where, sizeof where, "stages[%zu]", i);
		spec->nstages++; /* counted first, so that destroy frees a half-read stage */
		if (stage_from_json(json_array_get(stages, i), &spec->stages[i], where, err) < 0)
			goto fail;
	}
	if (check_json_refs(spec, err) < 0 || time_from_json(json, spec, err) < 0)
		goto fail;
	return spec;
fail:
	spec_destroy(spec);
	errno = EINVAL;
	return NULL;
}
