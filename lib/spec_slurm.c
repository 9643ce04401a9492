/* A stage's Slurm keys (slurm.partition, slurm.account, slurm.qos): their
 * check, the same for the spec file, the stored JSON and the assignment a
 * runner receives, and their JSON form, the same in all three. Nothing of
 * the parser here: the static supervisor links this with proto.c (the
 * spec file's keys are read in spec_slurm_key.c). */
#include "spec_internal.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

const char *const spec_slurm_keys[SPEC_SLURM_KEYS] = { "partition", "account", "qos" };

char **spec_slurm_field(struct spec_slurm *s, size_t i)
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
	for (size_t i = 0; i < SPEC_SLURM_KEYS; i++)
		if (field_c(s, i))
			json_object_set_new(obj, spec_slurm_keys[i], json_string(field_c(s, i)));
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

		for (i = 0; i < SPEC_SLURM_KEYS; i++)
			if (strcmp(key, spec_slurm_keys[i]) == 0)
				break;
		if (i == SPEC_SLURM_KEYS) {
			spec_slurm_clear(s);
			return errprintf(err, "%s.slurm.%s: unknown key", where, key);
		}
		if (!json_is_string(v) || !spec_slurm_value_ok(json_string_value(v))) {
			spec_slurm_clear(s);
			return errprintf(err, "%s.slurm.%s: want a Slurm name", where, key);
		}
		free(*spec_slurm_field(s, i));
		*spec_slurm_field(s, i) = xstrdup(json_string_value(v));
	}
	return 0;
}
