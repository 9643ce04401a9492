/* The keys of a spec: a table for [stage NAME] and one for [job], each key's
 * handler checking its (expanded) value into the struct spec, and the message
 * for an unknown key, with the key it most likely meant. */
#include "spec_internal.h"
#include "cron.h"
#include "timewin.h"
#include "units.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define TEAM_MAX 64

typedef void (*stage_key_fn)(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v);
typedef void (*job_key_fn)(struct parser *p, struct spec *spec, const struct entry *e, const char *v);

static void stage_run(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	(void)p;
	(void)e;
	sb->st->run = xstrdup(v);
}

static void stage_cpus(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	long long n;

	if (spec_parse_int(v, 1, 4096, &n) < 0) {
		spec_report(p, e->line, "cpus = %s: want a whole number of cores from 1 to 4096%s",
		            spec_shown(v, cut), spec_value_hint(e, v));
		return;
	}
	sb->st->cpus = (int)n;
}

static void stage_gpus(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	long long n;

	if (spec_parse_int(v, 0, SPEC_MAX_GPUS, &n) < 0) {
		spec_report(p, e->line, "gpus = %s: want a whole number of GPUs from 0 to %d (each instance "
		            "gets that many devices of its own)%s", spec_shown(v, cut), SPEC_MAX_GPUS,
		            spec_value_hint(e, v));
		return;
	}
	sb->st->gpus = (int)n;
}

static void stage_mem(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	spec_set_size(p, e, v, &sb->st->mem);
}

static void stage_disk(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	spec_set_size(p, e, v, &sb->st->disk);
}

static void stage_scratch(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	spec_set_size(p, e, v, &sb->st->scratch);
}

static void stage_instances(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	long long n;

	sb->instances_line = e->line;
	if (spec_parse_int(v, 1, SPEC_MAX_INSTANCES, &n) < 0) {
		spec_report(p, e->line, "instances = %s: want a whole number from 1 to %d%s",
		            spec_shown(v, cut), SPEC_MAX_INSTANCES, spec_value_hint(e, v));
		return;
	}
	sb->st->instances = (int)n;
}

static void stage_after(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	(void)p;
	sb->after_line = e->line;
	sb->st->after = spec_split_list(v, &sb->st->nafter);
}

/* GLOB, or FOLDER/GLOB with FOLDER a plain name (one point of a sweep's
 * output, out/sim/cache=2M,quantum=1000/). */
static bool foreach_glob_ok(const char *glob)
{
	const char *slash = strchr(glob, '/');
	size_t n = slash ? (size_t)(slash - glob) : 0;

	if (!slash)
		return true;
	if (n == 0 || strchr(slash + 1, '/') || slash[1] == '\0' || strcspn(glob, "*?[") < n ||
	    (n == 1 && glob[0] == '.') || (n == 2 && glob[0] == '.' && glob[1] == '.'))
		return false;
	return true;
}

static void stage_foreach(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	const char *slash = strchr(v, '/');
	size_t n = slash ? (size_t)(slash - v) : strlen(v);
	char *stage = xmalloc(n + 1);
	const char *glob = slash ? slash + 1 : "*";

	memcpy(stage, v, n);
	stage[n] = '\0';
	sb->foreach_line = e->line;
	if (!spec_is_stage_name(stage) || *glob == '\0' || !foreach_glob_ok(glob) ||
	    strpbrk(glob, " \t")) {
		spec_report(p, e->line, "foreach = %s: want STAGE, STAGE/GLOB or STAGE/FOLDER/GLOB, e.g. warm, "
		            "warm/ckpt-* or sim/cache=2M,quantum=1000/* (GLOB matches names in STAGE's output "
		            "folder, or in one folder of it named without wildcards)%s",
		            spec_shown(v, cut), spec_value_hint(e, v));
		free(stage);
		return;
	}
	sb->st->foreach_stage = stage;
	sb->st->foreach_glob = xstrdup(glob);
}

static void stage_walltime(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	uint64_t secs;

	if (parse_duration(v, &secs) < 0) {
		if (errno == ERANGE)
			spec_report(p, e->line, "walltime = %s: too large", spec_shown(v, cut));
		else
			spec_report(p, e->line, "walltime = %s: not a duration; write e.g. 90s, 45m, 12h, 1h30m or 2d%s",
			            spec_shown(v, cut), spec_value_hint(e, v));
		return;
	}
	if (secs > VALUE_MAX) {
		spec_report(p, e->line, "walltime = %s: too large", spec_shown(v, cut));
		return;
	}
	sb->st->walltime = secs;
}

static void stage_retries(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	long long n;

	if (spec_parse_int(v, 0, 100, &n) < 0) {
		spec_report(p, e->line, "retries = %s: want a whole number from 0 to 100%s",
		            spec_shown(v, cut), spec_value_hint(e, v));
		return;
	}
	sb->st->retries = (int)n;
}

static void stage_hosts(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	size_t n;
	char **hosts = spec_split_list(v, &n);

	for (size_t i = 0; i < n; i++) {
		if (strlen(hosts[i]) > 255 || strchr(hosts[i], '/')) {
			spec_report(p, e->line, "hosts: '%s' is not a host name or glob", spec_shown(hosts[i], cut));
			spec_free_list(hosts, n);
			return;
		}
		/* feature:NAME asks for a host feature (a runner's --features). */
		if (strncmp(hosts[i], "feature:", 8) == 0 &&
		    (!hosts[i][8] || strspn(hosts[i] + 8, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					    "0123456789._-") != strlen(hosts[i] + 8))) {
			spec_report(p, e->line, "hosts: '%s': a feature name has letters, digits, '.', '_' and '-'"
			            " (e.g. feature:bigmem)", spec_shown(hosts[i], cut));
			spec_free_list(hosts, n);
			return;
		}
	}
	sb->st->hosts = hosts;
	sb->st->nhosts = n;
}

static void stage_window(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	spec_set_window(p, e, v, &sb->st->window, &sb->st->win);
}

static void stage_progress(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	long long n;

	if (strncmp(v, "files:", 6) != 0 || spec_parse_int(v + 6, 1, SPEC_MAX_PROGRESS, &n) < 0) {
		spec_report(p, e->line, "progress = %s: want files:N, the number of entries in the stage's "
		            "output folder when it is done, e.g. files:${samples} (without progress, an "
		            "instance reports by writing DONE/TOTAL to $PARSA_PROGRESS)%s", spec_shown(v, cut),
		            spec_value_hint(e, v));
		return;
	}
	sb->st->progress_files = (uint64_t)n;
}

static void stage_on_failure(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	int how = spec_on_failure_parse(v);

	if (how < 0) {
		spec_report(p, e->line, "on_failure = %s: want finish (the default: the other instances run "
		            "to the end, then the stage fails), stop (the others are cancelled at once) or "
		            "ignore (failures are counted and the stage succeeds)%s", spec_shown(v, cut),
		            spec_value_hint(e, v));
		return;
	}
	sb->st->on_failure = (enum spec_on_failure)how;
}

static void stage_max_failed(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	long long n;
	bool pct;

	if (spec_parse_max_failed(v, &n, &pct) < 0) {
		spec_report(p, e->line, "max_failed = %s: want how many instances may fail with the stage "
		            "still succeeding, a whole number from 0 to %d (e.g. 5) or a percentage of its "
		            "instances from 0%% to 100%% (e.g. 10%%)%s", spec_shown(v, cut), SPEC_MAX_INSTANCES,
		            spec_value_hint(e, v));
		return;
	}
	sb->st->max_failed = n;
	sb->st->max_failed_pct = pct;
}

static void stage_max_running(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	long long n;

	if (spec_parse_int(v, 1, SPEC_MAX_INSTANCES, &n) < 0) {
		spec_report(p, e->line, "max_running = %s: want a whole number from 1 to %d, the most "
		            "instances of the stage that run at once (leave it out for no limit)%s",
		            spec_shown(v, cut), SPEC_MAX_INSTANCES, spec_value_hint(e, v));
		return;
	}
	sb->st->max_running = (int)n;
}

static const struct {
	const char *name;
	stage_key_fn fn;
} stage_keys[] = {
	{ "run", stage_run },
	{ "cpus", stage_cpus },
	{ "gpus", stage_gpus },
	{ "mem", stage_mem },
	{ "disk", stage_disk },
	{ "scratch", stage_scratch },
	{ "instances", stage_instances },
	{ "after", stage_after },
	{ "foreach", stage_foreach },
	{ "walltime", stage_walltime },
	{ "retries", stage_retries },
	{ "hosts", stage_hosts },
	{ "window", stage_window },
	{ "progress", stage_progress },
	{ "on_failure", stage_on_failure },
	{ "max_failed", stage_max_failed },
	{ "max_running", stage_max_running },
};

static void job_name(struct parser *p, struct spec *spec, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];

	for (const char *s = v; *s; s++) {
		if (iscntrl((unsigned char)*s)) {
			spec_report(p, e->line, "name = %s: control characters are not allowed", spec_shown(v, cut));
			return;
		}
	}
	if (strlen(v) > JOB_NAME_MAX) {
		spec_report(p, e->line, "name is longer than %d bytes: shorten it", JOB_NAME_MAX);
		return;
	}
	free(spec->name);
	spec->name = xstrdup(v);
}

static void job_team(struct parser *p, struct spec *spec, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	size_t n = strlen(v);

	for (const char *s = v; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-$", *s))
			n = 0;
	if (n == 0 || n > TEAM_MAX) {
		spec_report(p, e->line, "team = %s: want a group name (letters, digits, '_', '.', '-', at most %d)%s",
		            spec_shown(v, cut), TEAM_MAX, spec_value_hint(e, v));
		return;
	}
	spec->team = xstrdup(v);
	spec->team_line = e->line;
}

static void job_priority(struct parser *p, struct spec *spec, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	long long n;

	if (spec_parse_int(v, -1000, 1000, &n) < 0) {
		spec_report(p, e->line, "priority = %s: want a whole number from -1000 to 1000 (higher runs first)%s",
		            spec_shown(v, cut), spec_value_hint(e, v));
		return;
	}
	spec->priority = (int)n;
}

static int id_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static void job_after(struct parser *p, struct spec *spec, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	size_t n, kept = 0;
	char **items = spec_split_list(v, &n);
	int64_t *ids = xcalloc(n, sizeof *ids);

	for (size_t i = 0; i < n; i++) {
		long long id;

		if (spec_parse_int(items[i], 1, INT64_MAX, &id) < 0) {
			spec_report(p, e->line, "after = %s: want ids of other jobs, whole numbers from 1 up, "
			            "separated by commas or spaces ('%s' is not one)%s", spec_shown(v, cut), items[i],
			            spec_value_hint(e, v));
			free(ids);
			spec_free_list(items, n);
			return;
		}
		ids[i] = id;
	}
	/* Sorted and unique: the order of job ids means nothing. */
	qsort(ids, n, sizeof *ids, id_cmp);
	for (size_t i = 0; i < n; i++)
		if (kept == 0 || ids[kept - 1] != ids[i])
			ids[kept++] = ids[i];
	spec_free_list(items, n);
	spec->after_jobs = ids;
	spec->nafter_jobs = kept;
}

static void job_start(struct parser *p, struct spec *spec, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4], *why = NULL;

	if (timewin_parse_start(v, &spec->start_at_s, &spec->start_in_s, &why) < 0)
		spec_report(p, e->line, "start = %s: %s%s", spec_shown(v, cut), why ? why : "not a start time",
		            spec_value_hint(e, v));
	free(why);
}

static void job_window(struct parser *p, struct spec *spec, const struct entry *e, const char *v)
{
	spec_set_window(p, e, v, &spec->window, &spec->win);
}

static void job_every(struct parser *p, struct spec *spec, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4], *why = NULL;
	struct every *ev = every_parse(v, &why);

	if (!ev) {
		spec_report(p, e->line, "every = %s: %s%s", spec_shown(v, cut), why ? why : "not a period",
		            spec_value_hint(e, v));
		free(why);
		return;
	}
	spec->every = xstrdup(every_text(ev));
	spec->every_line = e->line;
	every_destroy(ev);
}

/* exec:/absolute/path or mail:ADDRESS (letters, digits and ._%+-@). */
static bool notify_target_ok(const char *t)
{
	if (strncmp(t, "exec:/", 6) == 0) {
		for (const char *c = t; *c; c++)
			if (iscntrl((unsigned char)*c))
				return false;
		return t[6] != '\0';
	}
	if (strncmp(t, "mail:", 5) == 0 && t[5] && t[5] != '-') {
		for (const char *c = t + 5; *c; c++)
			if (!isalnum((unsigned char)*c) && !strchr("._%+-@", *c))
				return false;
		return true;
	}
	return false;
}

static void job_notify(struct parser *p, struct spec *spec, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4], *copy = xstrdup(v), **items;
	size_t n;

	/* "exec:/x | mail:y" reads well too: '|' separates like ',' does. */
	for (char *c = copy; *c; c++)
		if (*c == '|')
			*c = ' ';
	items = spec_split_list(copy, &n);
	free(copy);
	for (size_t i = 0; i < n; i++) {
		if (!notify_target_ok(items[i])) {
			spec_report(p, e->line, "notify: '%s' is not exec:/absolute/path/to/program or "
			            "mail:user@host", spec_shown(items[i], cut));
			spec_free_list(items, n);
			return;
		}
	}
	if (n == 0) {
		spec_free_list(items, n);
		spec_report(p, e->line, "notify has no value: give exec:/path or mail:user@host");
		return;
	}
	spec->notify = items;
	spec->nnotify = n;
}

/* workdir = /absolute/folder, or out: where each instance starts. */
static void job_workdir(struct parser *p, struct spec *spec, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];

	for (const char *s = v; *s; s++) {
		if (iscntrl((unsigned char)*s)) {
			spec_report(p, e->line, "workdir = %s: control characters are not allowed", spec_shown(v, cut));
			return;
		}
	}
	if (strcmp(v, "out") != 0 && (v[0] != '/' || strlen(v) > 4095)) {
		spec_report(p, e->line, "workdir = %s: want an absolute folder (/home/you/lab) or out (each "
		            "stage's output folder)%s", spec_shown(v, cut), spec_value_hint(e, v));
		return;
	}
	free(spec->workdir);
	spec->workdir = xstrdup(v);
	spec->workdir_submitted = false;
}

static const struct {
	const char *name;
	job_key_fn fn;
} job_keys[] = {
	{ "name", job_name },
	{ "team", job_team },
	{ "priority", job_priority },
	{ "after", job_after },
	{ "start", job_start },
	{ "window", job_window },
	{ "every", job_every },
	{ "notify", job_notify },
	{ "workdir", job_workdir },
};

static const char *const stage_key_names[] = {
	"run", "cpus", "gpus", "mem", "disk", "scratch", "instances", "after", "foreach",
	"walltime", "retries", "hosts", "window", "progress", "on_failure", "max_failed", "max_running",
};
static const char *const job_key_names[] = { "name", "team", "priority", "after", "start", "window",
	"every", "notify", "workdir" };

static bool in_list(const char *key, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(key, names[i]) == 0)
			return true;
	return false;
}

static void unknown_key(struct parser *p, const struct section *s, const struct entry *e)
{
	char label[STAGE_NAME_MAX + 16], cut[SHOWN_MAX + 4], foreign[160];
	const char *where = spec_section_label(s, label, sizeof label);
	const char *key = spec_shown(e->key, cut);
	bool stage = s->kind == SECT_STAGE;
	const char *near, *dot = strchr(e->key, '.');

	if (!spec_error_wanted(p, e->line))
		return;
	near = stage ? spec_nearest(e->key, stage_key_names, ARRAY_LEN(stage_key_names))
		     : spec_nearest(e->key, job_key_names, ARRAY_LEN(job_key_names));

	if (stage && dot) {
		char prefix[8];
		size_t n = (size_t)(dot - e->key);

		if (n < sizeof prefix) {
			memcpy(prefix, e->key, n);
			prefix[n] = '\0';
			if (spec_edit_distance(prefix, "env") <= 1) {
				spec_report(p, e->line, "unknown key '%s' in %s (did you mean 'env%s'?)", key, where, dot);
				return;
			}
		}
	}
	if (spec_foreign_word(e->key, stage, foreign, sizeof foreign))
		spec_report(p, e->line, "unknown key '%s' in %s: %s", key, where, foreign);
	else if (stage && (strcmp(e->key, "partition") == 0 || strcmp(e->key, "account") == 0 ||
		      strcmp(e->key, "qos") == 0 || strncmp(e->key, "slurm_", 6) == 0))
		spec_report(p, e->line, "unknown key '%s' in %s (did you mean 'slurm.%s'?)", key, where,
		            strncmp(e->key, "slurm_", 6) == 0 ? e->key + 6 : e->key);
	else if (near)
		spec_report(p, e->line, "unknown key '%s' in %s (did you mean '%s'?)", key, where, near);
	else if (stage && strcmp(e->key, "name") == 0)
		spec_report(p, e->line, "unknown key 'name' in %s: a stage's name is in its header, [stage NAME]",
		            where);
	else if (stage && in_list(e->key, job_key_names, ARRAY_LEN(job_key_names)))
		spec_report(p, e->line, "unknown key '%s' in %s: it belongs in [job]", key, where);
	else if (!stage && in_list(e->key, stage_key_names, ARRAY_LEN(stage_key_names)))
		spec_report(p, e->line, "unknown key '%s' in [job]: it belongs in a [stage NAME] section", key);
	else if (!stage && strncmp(e->key, "env.", 4) == 0)
		spec_report(p, e->line, "unknown key '%s' in [job]: env.NAME belongs in a [stage NAME] section", key);
	else if (stage)
		spec_report(p, e->line, "unknown key '%s' in %s: a stage takes run, cpus, mem, disk, scratch, "
		            "instances, after, foreach, walltime, retries, hosts, window, progress, on_failure, "
		            "max_failed, max_running, env.NAME, matrix.NAME and slurm.partition/account/qos",
		            key, where);
	else
		spec_report(p, e->line, "unknown key '%s' in [job]: [job] takes name, team, priority, after, "
		            "start, window, every, notify and workdir", key);
}

static void stage_env(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	const char *name = e->key + 4;
	char cut[SHOWN_MAX + 4];

	if (!spec_is_identifier(name)) {
		spec_report(p, e->line, "%s: bad variable name '%s': use letters, digits and '_', not starting with a digit",
		            spec_shown(e->key, cut), name);
		return;
	}
	if (strncmp(name, "PARSA_", 6) == 0) {
		spec_report(p, e->line, "%s: parsa sets PARSA_ variables for each instance: choose another name",
		            e->key);
		return;
	}
	if (sb->st->nenv == sb->env_cap) {
		sb->env_cap = sb->env_cap ? 2 * sb->env_cap : 4;
		sb->st->env = xrealloc(sb->st->env, sb->env_cap * sizeof *sb->st->env);
	}
	sb->st->env[sb->st->nenv++] = xasprintf("%s=%s", name, v);
}

/* Apply one [stage] key; v is NULL when its value could not be expanded. */
void spec_apply_stage_key(struct parser *p, const struct section *s, struct stage_build *sb,
			  const struct entry *e)
{
	stage_key_fn fn = NULL;
	char *v;

	if (strncmp(e->key, "env.", 4) == 0) {
		fn = stage_env;
	} else if (strncmp(e->key, "matrix.", 7) == 0) {
		fn = spec_stage_matrix_key;
	} else if (strncmp(e->key, "slurm.", 6) == 0) {
		/* Read by a Slurm runner only (spec_slurm.c). */
		fn = spec_stage_slurm_key;
	} else {
		for (size_t k = 0; k < ARRAY_LEN(stage_keys); k++)
			if (strcmp(e->key, stage_keys[k].name) == 0)
				fn = stage_keys[k].fn;
	}
	if (!fn) {
		unknown_key(p, s, e);
		return;
	}
	if (fn == stage_run)
		sb->has_run = true; /* even if empty or broken: that is its own error */
	if (fn == stage_instances)
		sb->instances_line = e->line;
	v = spec_expand(p, e->value, e->line);
	if (!v)
		return;
	if (*v == '\0' && fn != stage_env) {
		if (fn == stage_run)
			spec_report(p, e->line, "run is empty: write the command after run = "
			            "(or on indented lines below it)");
		else
			spec_report(p, e->line, "%s has no value: give one or remove the line", e->key);
	} else {
		fn(p, sb, e, v);
	}
	free(v);
}

void spec_apply_job_key(struct parser *p, const struct section *s, struct spec *spec, const struct entry *e)
{
	job_key_fn fn = NULL;
	char *v;

	for (size_t k = 0; k < ARRAY_LEN(job_keys); k++)
		if (strcmp(e->key, job_keys[k].name) == 0)
			fn = job_keys[k].fn;
	if (!fn) {
		unknown_key(p, s, e);
		return;
	}
	v = spec_expand(p, e->value, e->line);
	if (!v)
		return;
	if (*v == '\0')
		spec_report(p, e->line, "%s has no value: give one or remove the line", e->key);
	else
		fn(p, spec, e, v);
	free(v);
}
