/* The job spec parser's entry point. Parsing runs in two passes, like OpenBSD's
 * parse.y daemons: the first (spec_read.c) collects every raw value, the second
 * expands ${vars} (spec_vars.c), checks values (spec_keys.c) and the stage DAG
 * (spec_dag.c), and builds a struct spec only when nothing is wrong. Every
 * problem is collected, not just the first, and reported sorted by line. */
#include "spec_internal.h"
#include "timewin.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void stage_clear(struct spec_stage *st)
{
	free(st->name);
	free(st->run);
	spec_free_list(st->after, st->nafter);
	free(st->foreach_stage);
	free(st->foreach_glob);
	spec_free_list(st->hosts, st->nhosts);
	spec_free_list(st->env, st->nenv);
	free(st->window);
	timewin_destroy(st->win);
	spec_slurm_clear(&st->slurm);
	spec_matrix_clear(st);
}

void spec_destroy(struct spec *spec)
{
	if (!spec)
		return;
	free(spec->name);
	free(spec->team);
	free(spec->after_jobs);
	for (size_t i = 0; i < spec->nstages; i++)
		stage_clear(&spec->stages[i]);
	free(spec->stages);
	free(spec->window);
	timewin_destroy(spec->win);
	free(spec->every);
	free(spec->workdir);
	spec_free_list(spec->notify, spec->nnotify);
	free(spec);
}

const char *spec_file_stem(const char *filename, size_t *len)
{
	static const char *const exts[] = { ".conf", ".ini", ".spec" };
	const char *base = strrchr(filename, '/');
	size_t n;

	base = base ? base + 1 : filename;
	n = strlen(base);
	for (size_t i = 0; i < ARRAY_LEN(exts); i++) {
		size_t el = strlen(exts[i]);

		if (n > el && strcmp(base + n - el, exts[i]) == 0) {
			n -= el;
			break;
		}
	}
	*len = n;
	return base;
}

/* The job name a file gives by default (spec_file_stem), never empty and
 * at most JOB_NAME_MAX bytes of whole UTF-8 characters. */
static char *default_name(const char *filename)
{
	size_t n;
	const char *base = spec_file_stem(filename, &n);

	if (n == 0)
		return xstrdup("spec");
	if (n > JOB_NAME_MAX)
		n = JOB_NAME_MAX;
	while (n > 0 && ((unsigned char)base[n] & 0xC0) == 0x80)
		n--; /* keep whole UTF-8 characters */
	return xasprintf("%.*s", (int)n, base);
}

static struct spec *build_spec(struct parser *p)
{
	struct spec *spec = xcalloc(1, sizeof *spec);
	struct stage_build *builds;
	size_t nbuilds = 0, order[SPEC_MAX_STAGES];
	char label[STAGE_NAME_MAX + 16];
	struct spec_stage *sorted = NULL;

	for (size_t i = 0; i < p->nsects; i++)
		spec_find_duplicates(p, &p->sects[i]);
	spec_collect_vars(p);

	spec->name = default_name(p->file);
	builds = xcalloc(p->nstages ? p->nstages : 1, sizeof *builds);
	spec->stages = xcalloc(p->nstages ? p->nstages : 1, sizeof *spec->stages);
	for (size_t i = 0; i < p->nsects; i++) {
		struct section *s = &p->sects[i];

		if (s->kind == SECT_JOB) {
			for (size_t k = 0; k < s->n; k++)
				if (!s->entries[k].dup)
					spec_apply_job_key(p, s, spec, &s->entries[k]);
		} else if (s->kind == SECT_STAGE) {
			struct spec_stage *st = &spec->stages[spec->nstages++];
			struct stage_build *sb = &builds[nbuilds++];

			st->name = xstrdup(s->name);
			st->line = s->line;
			st->cpus = 1;
			st->instances = 1;
			st->max_failed = -1;
			sb->st = st;
			for (size_t k = 0; k < s->n; k++)
				if (!s->entries[k].dup)
					spec_apply_stage_key(p, s, sb, &s->entries[k]);
			spec_check_matrix(p, sb);
			if (!sb->has_run && !s->lost_key)
				spec_report(p, s->line, "%s has no run: add run = COMMAND",
				            spec_section_label(s, label, sizeof label));
		}
	}
	if (nbuilds == 0 && !p->stage_tried) /* else its header's error says enough */
		spec_report(p, 1, "has no stage: a spec needs at least one [stage NAME] with run = COMMAND");
	if (spec_dag_order(p, builds, nbuilds, order) && p->nerrs == 0) {
		sorted = xcalloc(nbuilds ? nbuilds : 1, sizeof *sorted);
		for (size_t i = 0; i < nbuilds; i++)
			sorted[i] = spec->stages[order[i]];
		free(spec->stages);
		spec->stages = sorted;
	}
	for (size_t i = 0; i < nbuilds; i++)
		free(builds[i].after_idx);
	free(builds);
	if (p->nerrs > 0) {
		spec_destroy(spec);
		return NULL;
	}
	return spec;
}

/* Offset of the first NUL byte or invalid UTF-8 sequence (overlong forms,
 * surrogates and code points past U+10FFFF included), or len if none. */
static size_t first_non_text(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		size_t n;
		uint32_t cp;

		if (c == 0)
			return i;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF) {
			n = 1;
			cp = c & 0x1F;
		} else if (c >= 0xE0 && c <= 0xEF) {
			n = 2;
			cp = c & 0x0F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return i;
		}
		if (len - i <= n)
			return i;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return i;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
		    (cp >= 0xD800 && cp <= 0xDFFF))
			return i;
		i += n + 1;
	}
	return len;
}

static void parser_clear(struct parser *p)
{
	for (size_t i = 0; i < p->nsects; i++) {
		struct section *s = &p->sects[i];

		for (size_t k = 0; k < s->n; k++) {
			free(s->entries[k].key);
			free(s->entries[k].value);
		}
		free(s->entries);
		free(s->name);
	}
	free(p->sects);
	for (size_t i = 0; i < p->nerrs; i++)
		free(p->errs[i].text);
	free(p->errs);
	for (size_t i = 0; i < p->nvars; i++)
		free(p->vars[i].value);
	free(p->vars);
}

struct spec *spec_parse(const char *text, size_t len, const char *filename, char **err)
{
	struct parser p = {
		.file = filename ? filename : "spec",
		.text = text,
		.len = len,
		.cur_sect = -1,
		.cur_entry = -1,
		.budget = EXPAND_BUDGET,
	};
	struct spec *spec = NULL;
	int saved = EINVAL;
	size_t bad;

	if (!text)
		len = 0;
	if (len > SPEC_MAX_BYTES) {
		spec_report(&p, 1, "is larger than %d KiB (%zu bytes): a spec is text a person writes; "
		            "put data in files that the stages read", SPEC_MAX_BYTES / 1024, len);
		saved = EFBIG;
		goto out;
	}
	for (bad = 0; bad < len && isspace((unsigned char)text[bad]); bad++)
		;
	if (bad == len) {
		spec_report(&p, 1, "is empty: a spec needs at least one [stage NAME] with run = COMMAND");
		goto out;
	}
	bad = first_non_text((const unsigned char *)text, len);
	if (bad < len) {
		int line = 1;

		for (size_t i = 0; i < bad; i++)
			line += text[i] == '\n';
		spec_report(&p, line, "is not a text file (a NUL byte or invalid UTF-8 here): "
		            "a spec is UTF-8 text, e.g. written with a text editor");
		goto out;
	}
	spec_read(&p);
	spec = build_spec(&p);
out:
	if (!spec) {
		if (err) {
			free(*err);
			*err = spec_errors_text(&p);
		}
		errno = saved;
	}
	parser_clear(&p);
	return spec;
}

static const char *const on_failure_names[] = {
	[ON_FAILURE_FINISH] = "finish", [ON_FAILURE_STOP] = "stop", [ON_FAILURE_IGNORE] = "ignore",
};

const char *spec_on_failure_name(enum spec_on_failure how)
{
	return (size_t)how < ARRAY_LEN(on_failure_names) ? on_failure_names[how] : "?";
}

int spec_on_failure_parse(const char *name)
{
	for (size_t i = 0; i < ARRAY_LEN(on_failure_names); i++)
		if (strcmp(name, on_failure_names[i]) == 0)
			return (int)i;
	return -1;
}

size_t spec_stage_max_failed(const struct spec_stage *st, size_t ninst)
{
	if (st->max_failed < 0)
		return st->on_failure == ON_FAILURE_IGNORE ? SIZE_MAX : 0;
	if (st->max_failed_pct)
		return (size_t)((unsigned long long)st->max_failed * ninst / 100);
	return (size_t)st->max_failed;
}

int spec_stage_index(const struct spec *spec, const char *name)
{
	for (size_t i = 0; i < spec->nstages; i++)
		if (strcmp(spec->stages[i].name, name) == 0)
			return (int)i;
	return -1;
}
