/* The spec file's slurm.* keys of a stage (spec_slurm.c has their values'
 * check and JSON form): a misspelt key or a bad value is reported with its
 * line and the fix. */
#include "spec_internal.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

void spec_stage_slurm_key(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	const char *what = e->key + strlen("slurm.");
	char cut[SHOWN_MAX + 4], label[STAGE_NAME_MAX + 16];
	size_t i;

	for (i = 0; i < SPEC_SLURM_KEYS; i++)
		if (strcmp(what, spec_slurm_keys[i]) == 0)
			break;
	if (i == SPEC_SLURM_KEYS) {
		const char *near = spec_nearest(what, spec_slurm_keys, SPEC_SLURM_KEYS);

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
			    i == 2 ? "QOS" : spec_slurm_keys[i], SLURM_NAME_MAX, e->key,
			    i == 0 ? "gpu" : i == 1 ? "lab42" : "normal", spec_value_hint(e, v));
		return;
	}
	free(*spec_slurm_field(&sb->st->slurm, i));
	*spec_slurm_field(&sb->st->slurm, i) = xstrdup(v);
}
