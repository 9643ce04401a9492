/* Pass 1 of the spec parser: inih splits lines into sections and KEY = VALUE
 * pairs; our reader feeds it one line at a time, so every handler call is for
 * the line the reader just handed over and we know its number. It keeps every
 * raw value (so [vars] may come anywhere) and reports each unreadable line. */
#include "spec_internal.h"
#include "util.h"

#include <ctype.h>
#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *lskip(char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	return s;
}

/* inih's rule: the first of chars, or an inline comment (';' after a space). */
static char *find_chars_or_comment(char *s, const char *chars)
{
	bool was_space = false;

	while (*s && (!chars || !strchr(chars, *s)) && !(was_space && *s == ';')) {
		was_space = isspace((unsigned char)*s);
		s++;
	}
	return s;
}

const char *spec_section_label(const struct section *s, char *out, size_t len)
{
	switch (s->kind) {
	case SECT_JOB: return "[job]";
	case SECT_VARS: return "[vars]";
	case SECT_STAGE: snprintf(out, len, "[stage %s]", s->name); return out;
	default: return "[?]";
	}
}

static void add_section(struct parser *p, enum sect_kind kind, const char *name, int line)
{
	struct section *s;

	if (p->nsects == p->cap_sects) {
		p->cap_sects = p->cap_sects ? 2 * p->cap_sects : 8;
		p->sects = xrealloc(p->sects, p->cap_sects * sizeof *p->sects);
	}
	s = &p->sects[p->nsects];
	memset(s, 0, sizeof *s);
	s->kind = kind;
	s->name = name ? xstrdup(name) : NULL;
	s->line = line;
	p->cur_sect = (long)p->nsects++;
	p->cur_entry = -1;
}

/* A [header]: text is what stands between the brackets. */
static void begin_section(struct parser *p, char *text)
{
	static const char *const kinds[] = { "job", "vars", "stage" };
	char *start = lskip(text), *end = start + strlen(start), *word_end;
	int line = p->lineno;

	while (end > start && isspace((unsigned char)end[-1]))
		*--end = '\0';
	if (strcmp(start, "job") == 0 || strcmp(start, "vars") == 0) {
		bool job = start[0] == 'j';
		int *seen = job ? &p->job_line : &p->vars_line;

		if (*seen) {
			spec_report(p, line, "[%s] appears twice (first at line %d): put all its keys in one section",
			            start, *seen);
			add_section(p, SECT_IGNORED, NULL, line);
			return;
		}
		*seen = line;
		add_section(p, job ? SECT_JOB : SECT_VARS, NULL, line);
		return;
	}
	for (word_end = start; *word_end && !isspace((unsigned char)*word_end); word_end++)
		;
	if (word_end - start == 5 && strncmp(start, "stage", 5) == 0) {
		char *name = lskip(word_end);

		p->stage_tried = true;
		char cut[SHOWN_MAX + 4];

		if (*name == '\0') {
			spec_report(p, line, "[stage] needs a name: write [stage NAME], e.g. [stage warm]");
		} else if (!spec_is_stage_name(name)) {
			spec_report(p, line, "bad stage name '%s': use 1 to %d letters, digits, '_', '.' or '-'",
			            spec_shown(name, cut), STAGE_NAME_MAX);
		} else if (p->nstages >= SPEC_MAX_STAGES) {
			if (!p->stage_limit_reported)
				spec_report(p, line, "more than %d stages: split the job into several jobs "
				            "(a job's after = waits for other jobs)", SPEC_MAX_STAGES);
			p->stage_limit_reported = true;
		} else {
			for (size_t i = 0; i < p->nstages; i++) {
				const struct section *other = &p->sects[p->stage_sects[i]];

				if (strcmp(other->name, name) == 0) {
					spec_report(p, line, "stage '%s' is defined twice (first at line %d): rename one",
					            name, other->line);
					add_section(p, SECT_IGNORED, NULL, line);
					return;
				}
			}
			p->stage_sects[p->nstages++] = p->nsects;
			add_section(p, SECT_STAGE, name, line);
			return;
		}
		add_section(p, SECT_IGNORED, NULL, line);
		return;
	}
	{
		char first[STAGE_NAME_MAX + 1], cut[SHOWN_MAX + 4];
		size_t n = (size_t)(word_end - start);
		const char *near;

		if (n > STAGE_NAME_MAX)
			n = STAGE_NAME_MAX;
		memcpy(first, start, n);
		first[n] = '\0';
		near = spec_nearest(first, kinds, ARRAY_LEN(kinds));
		if (near && strcmp(near, "stage") == 0)
			p->stage_tried = true;
		if (near && strcmp(near, "stage") == 0 && *lskip(word_end))
			spec_report(p, line, "unknown section [%s] (did you mean [stage %s]?)",
			            spec_shown(start, cut), lskip(word_end));
		else if (near && strcmp(near, "stage") != 0)
			spec_report(p, line, "unknown section [%s] (did you mean [%s]?)", spec_shown(start, cut), near);
		else
			spec_report(p, line, "unknown section [%s]: sections are [job], [vars] and [stage NAME]",
			            spec_shown(start, cut));
		add_section(p, SECT_IGNORED, NULL, line);
	}
}

/* The text inih will drop from a value as an inline comment (its rule: a ';'
 * after a space, not at the value's start), kept for the one key where a
 * dropped comment changes what runs: run (spec_handler). A bare ' ;' at the
 * end drops nothing the shell needed. */
static void keep_comment(struct parser *p, char *value)
{
	char *c = find_chars_or_comment(value, NULL);
	size_t n;

	p->comment[0] = '\0';
	if (*c != ';')
		return;
	c = lskip(c + 1);
	n = strcspn(c, "\r\n");
	while (n > 0 && isspace((unsigned char)c[n - 1]))
		n--;
	snprintf(p->comment, sizeof p->comment, "%.*s", (int)n, c);
}

/* In run, a ' ;' ends the command: inih drops the rest of the line, so
 * `run = a ; b` would silently run only a. Refused with the ways to say it. */
static void refuse_run_comment(struct parser *p)
{
	spec_report(p, p->lineno,
		    "in run, ' ;' starts a comment, so '%.60s' would never reach the shell: write "
		    "'a; b' (no space before ';') or 'a && b', or put the next command on an "
		    "indented line below; a note goes on a line of its own starting with ';'",
		    p->comment);
}

/* Decide, with inih's own rules (ini.c, ini_parse_stream), what inih will do
 * with this line, and keep our section state. buf holds the line and its
 * '\n'. The rules must match inih's exactly: inih calls the handler for
 * LINE_KEY and LINE_CONT lines and for no others. */
static void classify(struct parser *p, char *buf)
{
	char copy[256];
	char *line = copy, *start, *end;

	/* Work on a copy: inih parses buf after we return. */
	snprintf(copy, sizeof copy, "%s", buf);
	p->kind = LINE_OTHER;
	if (p->lineno == 1 && strncmp(line, "\xEF\xBB\xBF", 3) == 0)
		start = lskip(line + 3);
	else
		start = lskip(line);
	if (*start == '\0' || *start == ';' || *start == '#')
		return;
	if (p->inih_prev && start > line) {
		/* inih 55 keeps ' ;' on continuation lines as text: nothing lost. */
		p->kind = LINE_CONT;
		p->comment[0] = '\0';
		return;
	}
	if (*start == '[') {
		end = find_chars_or_comment(start + 1, "]");
		if (*end != ']') {
			spec_report(p, p->lineno, "no ']' on this section line: write [job], [vars] or [stage NAME]");
			return;
		}
		*end = '\0';
		p->inih_prev = false;
		begin_section(p, start + 1);
		end = lskip(end + 1);
		if (*end && *end != ';' && *end != '#')
			spec_report(p, p->lineno, "unexpected text after ']': put comments after ' ;'");
		return;
	}
	end = find_chars_or_comment(start, "=:");
	if (*end == '=' || *end == ':') {
		p->inih_prev = end > start; /* inih keeps the name; an empty one is "none" */
		p->kind = LINE_KEY;
		keep_comment(p, lskip(end + 1));
		return;
	}
	if (*end == ';')
		spec_report(p, p->lineno, "expected KEY = VALUE, but ' ;' starts a comment before any '='");
	else
		spec_report(p, p->lineno, "expected KEY = VALUE, a [section] header or a ; comment");
}

/* A line too long for inih is handed over as a blank line, so inih never
 * truncates it; keep our own state as if it had been read. */
static void classify_long(struct parser *p, const char *line, size_t n)
{
	size_t i = 0;

	while (i < n && isspace((unsigned char)line[i]))
		i++;
	if (i == n || line[i] == ';' || line[i] == '#')
		return;
	if (p->inih_prev && i > 0)
		return; /* a continuation: later ones still extend the same key */
	if (line[i] == '[')
		p->cur_sect = -2; /* we cannot tell which section: drop its keys */
	else if (p->cur_sect >= 0)
		p->sects[p->cur_sect].lost_key = 1; /* maybe its run: no "has no run" */
	p->cur_entry = -1;
}

/* The ini_reader: hands inih the next line of text, like fgets. */
static char *spec_reader(char *str, int num, void *stream)
{
	struct parser *p = stream;
	const char *line, *nl;
	size_t n, max;

	if (p->pos >= p->len || num < 3)
		return NULL;
	line = p->text + p->pos;
	nl = memchr(line, '\n', p->len - p->pos);
	n = nl ? (size_t)(nl - line) : p->len - p->pos;
	p->pos += n + (nl ? 1 : 0);
	p->lineno++;
	if (n > 0 && line[n - 1] == '\r')
		n--;
	/* inih needs room for the line, its '\n' and a NUL; a line that fills
	 * its buffer is cut and the rest silently dropped. */
	max = (size_t)num - 2;
	if (max > 200)
		max = 200; /* classify()'s copy is 256 bytes */
	if (n > max) {
		spec_report(p, p->lineno, "line too long (max %zu characters); continue it on the next line, indented",
		            max);
		classify_long(p, line, n);
		p->kind = LINE_OTHER;
		memcpy(str, "\n", 2);
		return str;
	}
	memcpy(str, line, n);
	str[n] = '\n';
	str[n + 1] = '\0';
	classify(p, str);
	return str;
}

static void entry_append(struct entry *e, const char *s, const char *sep)
{
	size_t n = strlen(s), sn = e->vlen ? strlen(sep) : 0;

	if (e->vlen + sn + n + 1 > e->vcap) {
		size_t cap = e->vcap ? e->vcap : 64;

		while (e->vlen + sn + n + 1 > cap)
			cap *= 2;
		e->value = xrealloc(e->value, cap);
		e->vcap = cap;
	}
	memcpy(e->value + e->vlen, sep, sn);
	memcpy(e->value + e->vlen + sn, s, n + 1);
	e->vlen += sn + n;
}

/* inih calls this once per KEY = VALUE line and once per continuation line,
 * always for the line spec_reader() handed over last. */
static int spec_handler(void *user, const char *section, const char *name, const char *value)
{
	struct parser *p = user;
	enum line_kind kind = p->kind;

	(void)section; /* inih cuts names at 50 bytes: we track sections ourselves */
	p->kind = LINE_OTHER;
	if (kind == LINE_CONT) {
		struct section *s;
		struct entry *e;
		bool is_run;

		if (p->cur_sect < 0 || p->cur_entry < 0)
			return 1;
		s = &p->sects[p->cur_sect];
		e = &s->entries[p->cur_entry];
		/* run is a script: keep its lines; anything else is one line. */
		is_run = s->kind == SECT_STAGE && strcmp(e->key, "run") == 0;
		entry_append(e, value, is_run ? "\n" : " ");
		e->ncont++;
		return 1;
	}
	if (kind != LINE_KEY)
		return 1; /* cannot happen while classify() mirrors inih */
	p->cur_entry = -1;
	if (*name == '\0') {
		spec_report(p, p->lineno, "no key before '=': write KEY = VALUE");
		return 1;
	}
	if (p->cur_sect == -1) {
		spec_report(p, p->lineno, "'%s' is outside any section: put it under [job] or [stage NAME]", name);
		return 1;
	}
	if (p->cur_sect >= 0 && p->sects[p->cur_sect].kind != SECT_IGNORED) {
		struct section *s = &p->sects[p->cur_sect];
		struct entry *e;

		if (s->n == s->cap) {
			s->cap = s->cap ? 2 * s->cap : 8;
			s->entries = xrealloc(s->entries, s->cap * sizeof *s->entries);
		}
		e = &s->entries[s->n];
		memset(e, 0, sizeof *e);
		e->key = xstrdup(name);
		e->line = p->lineno;
		if (s->kind == SECT_STAGE && strcmp(name, "run") == 0 && p->comment[0])
			refuse_run_comment(p);
		entry_append(e, value, "");
		p->cur_entry = (long)s->n++;
	}
	return 1;
}

static int entry_ptr_cmp(const void *a, const void *b)
{
	const struct entry *x = *(struct entry *const *)a, *y = *(struct entry *const *)b;
	int c = strcmp(x->key, y->key);

	return c ? c : (x->line > y->line) - (x->line < y->line);
}

/* Report keys given twice in a section, and mark the later ones. Sorting
 * keeps this O(n log n) for sections with very many keys. */
void spec_find_duplicates(struct parser *p, struct section *s)
{
	struct entry **v;
	char label[STAGE_NAME_MAX + 16];

	if (s->n < 2)
		return;
	v = xcalloc(s->n, sizeof *v);
	for (size_t i = 0; i < s->n; i++)
		v[i] = &s->entries[i];
	qsort(v, s->n, sizeof *v, entry_ptr_cmp);
	for (size_t i = 1, first = 0; i < s->n; i++) {
		if (strcmp(v[i]->key, v[first]->key) != 0) {
			first = i;
			continue;
		}
		v[i]->dup = true;
		spec_report(p, v[i]->line, "'%s' is set twice in %s (first at line %d): keep one",
		            v[i]->key, spec_section_label(s, label, sizeof label), v[first]->line);
	}
	free(v);
}

void spec_read(struct parser *p)
{
	/* inih's own return value only names the first bad line: our reader
	 * reports each one instead, so it is ignored. */
	(void)ini_parse_stream(spec_reader, p, spec_handler, p);
}
