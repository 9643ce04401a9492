/* A stage's parameter sweep: matrix.NAME = v1, v2, ... (several axes allowed)
 * gives the stage one instance per combination of the values, times its
 * instances (or its foreach entries). An instance's point follows from its
 * index alone (index % points, the last axis varying fastest), so nothing of
 * it is stored beside the spec, and the scheduler, the views and the runner
 * agree on it. */
#include "spec_internal.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A value becomes part of a folder name (out/STAGE/NAME=VALUE,...) and of
 * an environment variable: letters, digits and ._+-:@% only. */
static bool value_ok(const char *v)
{
	size_t n = strlen(v);

	if (n == 0 || n > SPEC_MATRIX_VALUE_MAX || strcmp(v, ".") == 0 || strcmp(v, "..") == 0)
		return false;
	for (; *v; v++)
		if (!(('a' <= *v && *v <= 'z') || ('A' <= *v && *v <= 'Z') || ('0' <= *v && *v <= '9') ||
		      strchr("._+-:@%", *v)))
			return false;
	return true;
}

static void axis_clear(struct spec_axis *a)
{
	free(a->name);
	spec_free_list(a->values, a->nvalues);
}

void spec_matrix_clear(struct spec_stage *st)
{
	for (size_t i = 0; i < st->nmatrix; i++)
		axis_clear(&st->matrix[i]);
	free(st->matrix);
	st->matrix = NULL;
	st->nmatrix = 0;
}

/* Split "2M, 4M ,8M" into values; -1 with the message reported. */
static int split_values(struct parser *p, const struct entry *e, const char *v, struct spec_axis *a)
{
	char *copy = xstrdup(v), cut[SHOWN_MAX + 4];
	int ret = -1;

	for (char *tok = copy, *end; tok; tok = end) {
		end = strchr(tok, ',');
		if (end)
			*end++ = '\0';
		while (*tok == ' ' || *tok == '\t')
			tok++;
		for (size_t n = strlen(tok); n > 0 && (tok[n - 1] == ' ' || tok[n - 1] == '\t');)
			tok[--n] = '\0';
		if (*tok == '\0') {
			spec_report(p, e->line, "%s: an empty value in the list: write v1, v2, ... with a value "
			            "between each two commas", e->key);
			goto out;
		}
		if (!value_ok(tok)) {
			spec_report(p, e->line, "%s: value '%s': use letters, digits and . _ + - : @ %% (at most "
			            "%d; it becomes part of the instance's folder name)", e->key,
			            spec_shown(tok, cut), SPEC_MATRIX_VALUE_MAX);
			goto out;
		}
		for (size_t i = 0; i < a->nvalues; i++) {
			if (strcmp(a->values[i], tok) == 0) {
				spec_report(p, e->line, "%s lists '%s' twice: keep one", e->key, tok);
				goto out;
			}
		}
		if (a->nvalues == SPEC_MATRIX_VALUES_MAX) {
			spec_report(p, e->line, "%s has more than %d values", e->key, SPEC_MATRIX_VALUES_MAX);
			goto out;
		}
		a->values = xrealloc(a->values, (a->nvalues + 1) * sizeof *a->values);
		a->values[a->nvalues++] = xstrdup(tok);
	}
	ret = 0;
out:
	free(copy);
	return ret;
}

void spec_stage_matrix_key(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	const char *name = e->key + 7;
	struct spec_stage *st = sb->st;
	struct spec_axis a = { 0 };
	char cut[SHOWN_MAX + 4];

	if (!spec_is_identifier(name) || strncmp(name, "PARSA_", 6) == 0) {
		spec_report(p, e->line, "%s: bad name '%s': use letters, digits and '_', not starting with a "
		            "digit or PARSA_ (it is the instance's $%s)", spec_shown(e->key, cut),
		            spec_shown(name, cut), name);
		return;
	}
	if (st->nmatrix == SPEC_MATRIX_AXES_MAX) {
		spec_report(p, e->line, "%s: a stage sweeps at most %d parameters", e->key, SPEC_MATRIX_AXES_MAX);
		return;
	}
	if (split_values(p, e, v, &a) < 0) {
		axis_clear(&a);
		return;
	}
	a.name = xstrdup(name);
	st->matrix = xrealloc(st->matrix, (st->nmatrix + 1) * sizeof *st->matrix);
	st->matrix[st->nmatrix++] = a;
	if (!sb->matrix_line)
		sb->matrix_line = e->line;
}

void spec_check_matrix(struct parser *p, const struct stage_build *sb)
{
	const struct spec_stage *st = sb->st;
	uint64_t points = 1, total;

	if (st->nmatrix == 0)
		return;
	for (size_t i = 0; i < st->nmatrix; i++) {
		points *= st->matrix[i].nvalues;
		if (points > SPEC_MAX_INSTANCES)
			break;
		if (spec_is_var(p, st->matrix[i].name))
			spec_report(p, sb->matrix_line, "matrix.%s has the name of a [vars] entry: ${%s} would "
			            "mean both; rename one", st->matrix[i].name, st->matrix[i].name);
	}
	total = points * (uint64_t)(st->foreach_stage ? 1 : st->instances);
	if (total > SPEC_MAX_INSTANCES)
		spec_report(p, sb->matrix_line, "matrix: %llu points%s is more than the %d instances a stage "
		            "may have: sweep fewer values", (unsigned long long)points,
		            st->instances > 1 && !st->foreach_stage ? " times instances" : "",
		            SPEC_MAX_INSTANCES);
}

size_t spec_stage_points(const struct spec_stage *st)
{
	size_t points = 1;

	/* Saturated past the limit: 8 axes of 1,000 values would overflow. */
	for (size_t i = 0; i < st->nmatrix; i++) {
		points *= st->matrix[i].nvalues;
		if (points > SPEC_MAX_INSTANCES)
			return SPEC_MAX_INSTANCES + 1;
	}
	return points;
}

const char *spec_point_value(const struct spec_stage *st, int64_t index, size_t axis)
{
	size_t rest = (size_t)(index < 0 ? 0 : index) % spec_stage_points(st);

	for (size_t i = st->nmatrix; i-- > axis + 1;)
		rest /= st->matrix[i].nvalues;
	return st->matrix[axis].values[rest % st->matrix[axis].nvalues];
}

char *spec_point_text(const struct spec_stage *st, int64_t index, const char *sep)
{
	struct spec_buf b = { 0 };

	for (size_t i = 0; i < st->nmatrix; i++)
		spec_buf_addf(&b, "%s%s=%s", i ? sep : "", st->matrix[i].name,
		                spec_point_value(st, index, i));
	return b.s ? b.s : xstrdup("");
}

/* text with each ${NAME} of a matrix axis replaced by the point's value. */
static char *point_expand(const struct spec_stage *ss, int64_t index, const char *text)
{
	size_t cap = strlen(text) + 1, len = 0;
	char *out = xmalloc(cap);

	for (const char *s = text; *s;) {
		const char *value = NULL;
		size_t skip = 0;

		for (size_t i = 0; s[0] == '$' && s[1] == '{' && i < ss->nmatrix && !value; i++) {
			size_t n = strlen(ss->matrix[i].name);

			if (strncmp(s + 2, ss->matrix[i].name, n) == 0 && s[2 + n] == '}') {
				value = spec_point_value(ss, index, i);
				skip = n + 3;
			}
		}
		if (!value) {
			value = s;
			skip = 1;
		}
		if (len + (value == s ? 1 : strlen(value)) + 1 > cap) {
			cap = 2 * cap + strlen(value);
			out = xrealloc(out, cap);
		}
		if (value == s) {
			out[len++] = *s;
		} else {
			memcpy(out + len, value, strlen(value));
			len += strlen(value);
		}
		s += skip;
	}
	out[len] = '\0';
	return out;
}

/* A sweep instance's environment: each axis as NAME=value, PARSA_POINT
 * ("cache=2M quantum=1000"), then the stage's env.* with ${NAME} of the axes
 * replaced (the shell sees $NAME in run itself). */
char **spec_point_env(const struct spec_stage *ss, int64_t index)
{
	char **env = xcalloc(ss->nmatrix + 1 + ss->nenv, sizeof *env), *text;
	size_t n = 0;

	for (size_t i = 0; i < ss->nmatrix; i++)
		env[n++] = xasprintf("%s=%s", ss->matrix[i].name, spec_point_value(ss, index, i));
	text = spec_point_text(ss, index, " ");
	env[n++] = xasprintf("PARSA_POINT=%s", text);
	free(text);
	for (size_t i = 0; i < ss->nenv; i++)
		env[n++] = point_expand(ss, index, ss->env[i]);
	return env;
}

json_t *spec_matrix_to_json(const struct spec_stage *st)
{
	json_t *list = json_array();

	for (size_t i = 0; i < st->nmatrix; i++) {
		json_t *values = json_array();

		for (size_t v = 0; v < st->matrix[i].nvalues; v++)
			json_array_append_new(values, json_string(st->matrix[i].values[v]));
		json_array_append_new(list, json_pack("{s:s,s:o}", "name", st->matrix[i].name,
						      "values", values));
	}
	return list;
}

int spec_matrix_from_json(const json_t *list, struct spec_stage *st, const char *where, char **err)
{
	size_t i;
	json_t *axis;

	if (!list || json_is_null(list))
		return 0;
	if (!json_is_array(list) || json_array_size(list) > SPEC_MATRIX_AXES_MAX)
		return errprintf(err, "%s.matrix: want a list of at most %d axes", where, SPEC_MATRIX_AXES_MAX);
	json_array_foreach(list, i, axis) {
		const char *name = json_string_value(json_object_get(axis, "name"));
		json_t *values = json_object_get(axis, "values"), *value;
		struct spec_axis a = { 0 };
		size_t k;

		if (!name || !spec_is_identifier(name) || !json_is_array(values) ||
		    json_array_size(values) == 0 || json_array_size(values) > SPEC_MATRIX_VALUES_MAX)
			return errprintf(err, "%s.matrix[%zu]: want {\"name\": NAME, \"values\": [...]}", where, i);
		json_array_foreach(values, k, value) {
			const char *v = json_string_value(value);

			if (!v || !value_ok(v)) {
				spec_free_list(a.values, a.nvalues);
				return errprintf(err, "%s.matrix[%zu].values[%zu]: not a sweep value", where, i, k);
			}
			a.values = xrealloc(a.values, (a.nvalues + 1) * sizeof *a.values);
			a.values[a.nvalues++] = xstrdup(v);
		}
		a.name = xstrdup(name);
		st->matrix = xrealloc(st->matrix, (st->nmatrix + 1) * sizeof *st->matrix);
		st->matrix[st->nmatrix++] = a;
	}
	if (spec_stage_points(st) > SPEC_MAX_INSTANCES)
		return errprintf(err, "%s.matrix: more than %d points", where, SPEC_MAX_INSTANCES);
	return 0;
}
