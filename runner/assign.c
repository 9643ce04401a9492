#include "assign.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int assignment_safe_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > 255 || name[0] == '.')
		return 0;
	for (const char *p = name; *p; p++) {
		char c = *p;

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
			return 0;
	}
	return 1;
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
	    get_str(json, "user", 0, &a->user, err) < 0 ||
	    get_env(json, a, err) < 0 ||
	    get_groups(json, a, err) < 0)
		goto fail;
	/* The stage name becomes part of the scratch and log paths the runner
	 * creates, possibly as root. */
	if (!assignment_safe_name(a->stage)) {
		errprintf(err, "assignment: stage name '%s' is not a safe file name", a->stage);
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
	free(a->run);
	for (size_t i = 0; i < a->nenv; i++)
		free(a->env[i]);
	free(a->env);
	free(a->user);
	free(a->groups);
	free(a);
}

json_t *assignment_to_json(const struct assignment *a)
{
	json_t *env = json_array(), *groups = json_array();

	for (size_t i = 0; i < a->nenv; i++)
		json_array_append_new(env, json_string(a->env[i]));
	for (size_t i = 0; i < a->ngroups; i++)
		json_array_append_new(groups, json_integer(a->groups[i]));
	return json_pack("{s:I,s:I,s:I,s:s,s:I,s:s,s:s,s:I,s:I,s:I,s:I,s:o,s:I,s:I,s:s,s:o,s:I}",
			 "id", (json_int_t)a->id, "attempt", (json_int_t)a->attempt,
			 "job", (json_int_t)a->job, "stage", a->stage, "index", (json_int_t)a->index,
			 "item", a->item, "run", a->run, "cpus", (json_int_t)a->cpus,
			 "mem", (json_int_t)a->mem, "scratch", (json_int_t)a->scratch,
			 "walltime_s", (json_int_t)a->walltime_s, "env", env,
			 "uid", (json_int_t)a->uid, "gid", (json_int_t)a->gid, "user", a->user,
			 "groups", groups, "progress_files", (json_int_t)a->progress_files);
}
