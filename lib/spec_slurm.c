/* A stage's Slurm keys (slurm.partition, slurm.account, slurm.qos): their
 * check, the same for the spec file, the stored JSON and the assignment a
 * runner receives, and their JSON form, the same in all three. */
#include "spec_internal.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* Slurm's own limit on a partition, account or QOS name is larger; a name
 * past this is a mistake, not a site's choice. */
#define SLURM_NAME_MAX 64

static const char *const slurm_keys[] = { "partition", "account", "qos" };

static char **field(struct spec_slurm *s, size_t i)
{
	return i == 0 ? &s->partition : i == 1 ? &s->account : &s->qos;
}

static const char *field_c(const struct spec_slurm *s, size_t i)
{
	return i == 0 ? s->partition : i == 1 ? s->account : s->qos;
}

bool spec_slurm_value_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	/* What sbatch takes as one name: no list (','), nothing a shell, a
	 * #SBATCH line or squeue's output would read otherwise, no option. */
	return n > 0 && n <= SLURM_NAME_MAX && s[0] != '-' &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

bool spec_slurm_any(const struct spec_slurm *s)
{
	return s->partition || s->account || s->qos;
}

void spec_slurm_clear(struct spec_slurm *s)
{
	free(s->partition);
	free(s->account);
	free(s->qos);
	memset(s, 0, sizeof *s);
}

json_t *spec_slurm_to_json(const struct spec_slurm *s)
{
	json_t *obj;

	if (!spec_slurm_any(s))
		return NULL;
	obj = json_object();
	for (size_t i = 0; i < ARRAY_LEN(slurm_keys); i++)
		if (field_c(s, i))
			json_object_set_new(obj, slurm_keys[i], json_string(field_c(s, i)));
	return obj;
}

int spec_slurm_from_json(const json_t *obj, struct spec_slurm *s, const char *where, char **err)
{
	const char *key;
	json_t *v;

	memset(s, 0, sizeof *s);
	if (!obj || json_is_null(obj))
		return 0;
	if (!json_is_object(obj))
		return errprintf(err, "%s.slurm: want an object", where);
	json_object_foreach((json_t *)obj, key, v) {
		size_t i;

		for (i = 0; i < ARRAY_LEN(slurm_keys); i++)
			if (strcmp(key, slurm_keys[i]) == 0)
				break;
		if (i == ARRAY_LEN(slurm_keys)) {
			spec_slurm_clear(s);
			return errprintf(err, "%s.slurm.%s: unknown key", where, key);
		}
		if (!json_is_string(v) || !spec_slurm_value_ok(json_string_value(v))) {
			spec_slurm_clear(s);
			return errprintf(err, "%s.slurm.%s: want a Slurm name", where, key);
		}
		free(*field(s, i));
		*field(s, i) = xstrdup(json_string_value(v));
	}
	return 0;
}

void spec_stage_slurm_key(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	const char *what = e->key + strlen("slurm.");
	char cut[SHOWN_MAX + 4], label[STAGE_NAME_MAX + 16];
	size_t i;

	for (i = 0; i < ARRAY_LEN(slurm_keys); i++)
		if (strcmp(what, slurm_keys[i]) == 0)
			break;
	if (i == ARRAY_LEN(slurm_keys)) {
		const char *near = spec_nearest(what, slurm_keys, ARRAY_LEN(slurm_keys));

		snprintf(label, sizeof label, "[stage %s]", sb->st->name);
		if (near)
			spec_report(p, e->line, "unknown key '%s' in %s (did you mean 'slurm.%s'?)",
				    spec_shown(e->key, cut), label, near);
		else
			spec_report(p, e->line, "unknown key '%s' in %s: a stage's Slurm keys are "
				    "slurm.partition, slurm.account and slurm.qos (its time, cpus, mem and "
				    "gpus come from walltime, cpus, mem and gpus)", spec_shown(e->key, cut),
				    label);
		return;
	}
	if (!spec_slurm_value_ok(v)) {
		spec_report(p, e->line, "%s = %s: want one Slurm %s name: letters, digits, '.', '_' and "
			    "'-', at most %d, e.g. %s = %s%s", e->key, spec_shown(v, cut),
			    i == 2 ? "QOS" : slurm_keys[i], SLURM_NAME_MAX, e->key,
			    i == 0 ? "gpu" : i == 1 ? "lab42" : "normal", spec_value_hint(e, v));
		return;
	}
	free(*field(&sb->st->slurm, i));
	*field(&sb->st->slurm, i) = xstrdup(v);
}
