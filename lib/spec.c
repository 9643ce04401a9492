/* The job spec parser. inih splits lines into sections and KEY = VALUE pairs;
 * our reader feeds it one line at a time, so every handler call is for the line
 * the reader just handed over and we know its number. Parsing runs in two
 * passes, like OpenBSD's parse.y daemons: the first collects every raw value
 * (so [vars] may come anywhere), the second expands ${vars}, checks values and
 * the stage DAG, and builds a struct spec only when nothing is wrong. Every
 * problem is collected, not just the first, and reported sorted by line. */
#include "spec.h"
#include "cron.h"
#include "log.h"
#include "timewin.h"
#include "units.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Past this many errors a file is not a spec at all; the rest are counted. */
#define SPEC_MAX_ERRORS 100
#define STAGE_NAME_MAX 64
#define JOB_NAME_MAX 128
#define TEAM_MAX 64
/* ${var} nesting deeper than this is a mistake, and it bounds our recursion. */
#define VAR_DEPTH_MAX 32
/* All expanded values together; ${a}${a} chains could otherwise grow without
 * bound from a small file. */
#define EXPAND_BUDGET (4 * (size_t)SPEC_MAX_BYTES)
/* Sizes and durations must fit the signed 64-bit integers of the JSON form. */
#define VALUE_MAX ((uint64_t)INT64_MAX)
/* Values quoted in messages are cut to this many bytes. */
#define SHOWN_MAX 60

/* What the reader decided about the line it just handed to inih. */
enum line_kind {
	LINE_OTHER,     /* blank, comment, section header or error: no handler call */
	LINE_KEY,       /* KEY = VALUE: one handler call */
	LINE_CONT,      /* indented continuation of the previous key: one call */
};

enum sect_kind { SECT_JOB, SECT_VARS, SECT_STAGE, SECT_IGNORED };

struct entry {
	char *key;
	char *value;      /* continuation lines joined */
	size_t vlen, vcap;
	int line;         /* line of KEY = */
	int ncont;        /* continuation lines joined into value */
	bool dup;         /* set twice: reported, the later one is skipped */
};

struct section {
	enum sect_kind kind;
	char *name;       /* the stage name for SECT_STAGE, else NULL */
	int line;
	struct entry *entries;
	size_t n, cap;
};

struct error {
	int line;
	size_t seq;       /* report order, to keep the sort stable */
	char *text;
};

enum var_state { VAR_NEW, VAR_BUSY, VAR_DONE, VAR_FAILED };

struct var {
	const char *name;  /* owned by the entry */
	const char *raw;
	int line;
	enum var_state state;
	char *value;       /* expanded, when VAR_DONE */
};

struct parser {
	const char *file;          /* for messages */
	const char *text;
	size_t len, pos;           /* the reader's position in text */
	int lineno;                /* line the reader handed over last */
	enum line_kind kind;
	bool inih_prev;            /* mirrors inih's "a key was seen in this section" */
	long cur_sect;             /* -1 before any header, -2 after an unreadable one */
	long cur_entry;            /* entry continuation lines extend, -1: drop them */
	struct section *sects;
	size_t nsects, cap_sects;
	size_t stage_sects[SPEC_MAX_STAGES]; /* indexes of the SECT_STAGE sections */
	size_t nstages;
	int job_line, vars_line;   /* header lines, 0 if absent */
	bool stage_limit_reported;
	bool stage_tried;          /* a header meant as [stage NAME] was seen */
	struct error *errs;
	size_t nerrs, cap_errs, dropped;
	size_t seq;                /* errors reported so far, kept or not */
	size_t last;               /* the kept error that sorts last, once errs is full */
	struct var *vars;          /* sorted by name for lookup */
	size_t nvars;
	size_t budget;             /* bytes ${var} expansion may still produce */
	bool budget_reported, depth_reported;
};

/* A growing string. */
struct buf {
	char *s;
	size_t len, cap;
};

static void buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;

		while (b->len + n + 1 > cap)
			cap *= 2;
		b->s = xrealloc(b->s, cap);
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void buf_addf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		fatalx("out of memory");
	buf_add(b, s, (size_t)n);
	free(s);
}

/* ---- errors ---- */

static int error_cmp(const void *a, const void *b)
{
	const struct error *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The kept error that sorts last. */
static size_t last_error(const struct parser *p)
{
	size_t last = 0;

	for (size_t i = 1; i < p->nerrs; i++)
		if (error_cmp(&p->errs[i], &p->errs[last]) > 0)
			last = i;
	return last;
}

/* Would an error at this line be kept? Only SPEC_MAX_ERRORS are, those of the
 * first lines (what the reader sees first, whatever order the checks ran
 * in). Callers with costly messages (suggestions) ask first, so that a
 * file of a million mistakes stays cheap to refuse. */
static bool error_wanted(struct parser *p, int line)
{
	if (p->nerrs < SPEC_MAX_ERRORS || line < p->errs[p->last].line)
		return true;
	p->dropped++;
	p->seq++;
	return false;
}

static void report(struct parser *p, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void report(struct parser *p, int line, const char *fmt, ...)
{
	struct buf b = { 0 };
	va_list ap;
	char *msg;

	if (!error_wanted(p, line))
		return;
	if (p->nerrs == SPEC_MAX_ERRORS) {
		p->dropped++;
		free(p->errs[p->last].text);
		p->errs[p->last] = p->errs[--p->nerrs];
	}
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) < 0)
		fatalx("out of memory");
	va_end(ap);
	buf_addf(&b, "%s:%d: %s", p->file, line, msg);
	free(msg);
	if (p->nerrs == p->cap_errs) {
		p->cap_errs = p->cap_errs ? 2 * p->cap_errs : 16;
		p->errs = xrealloc(p->errs, p->cap_errs * sizeof *p->errs);
	}
	p->errs[p->nerrs].line = line;
	p->errs[p->nerrs].seq = p->seq++;
	p->errs[p->nerrs].text = b.s;
	p->nerrs++;
	if (p->nerrs == SPEC_MAX_ERRORS)
		p->last = last_error(p);
}

/* All errors, sorted by line, one per line: a malloc'ed string. */
static char *errors_text(struct parser *p)
{
	struct buf b = { 0 };

	qsort(p->errs, p->nerrs, sizeof *p->errs, error_cmp);
	for (size_t i = 0; i < p->nerrs; i++) {
		if (i > 0)
			buf_add(&b, "\n", 1);
		buf_add(&b, p->errs[i].text, strlen(p->errs[i].text));
	}
	if (p->dropped)
		buf_addf(&b, "\n%s: %zu more errors not shown", p->file, p->dropped);
	return b.s ? b.s : xstrdup("");
}

/* A value as quoted in a message: cut at SHOWN_MAX bytes on a character
 * boundary. Writes into out (SHOWN_MAX + 4 bytes). */
static const char *shown(const char *value, char *out)
{
	size_t n = strlen(value);

	if (n <= SHOWN_MAX)
		return value;
	n = SHOWN_MAX;
	while (n > 0 && ((unsigned char)value[n] & 0xC0) == 0x80)
		n--;
	memcpy(out, value, n);
	memcpy(out + n, "...", 4);
	return out;
}

/* ---- names and suggestions ---- */

/* Case-insensitive Levenshtein distance; b is a short candidate. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t row[STAGE_NAME_MAX + 2];
	size_t bl = strlen(b), al = strlen(a);

	if (bl > STAGE_NAME_MAX)
		return (size_t)-1;
	if (al > bl + 8)
		return al - bl; /* too far apart to be a typo; skip the work */
	for (size_t j = 0; j <= bl; j++)
		row[j] = j;
	for (size_t i = 1; i <= al; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= bl; j++) {
			size_t up = row[j];
			size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
			size_t best = diag + cost;

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[bl];
}

/* The candidate nearest to word, if it is close enough to be a typo. */
static const char *nearest(const char *word, const char *const *cands, size_t n)
{
	const char *best = NULL;
	size_t best_d = (size_t)-1;

	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(word, cands[i]);
		size_t limit = strlen(cands[i]) <= 3 ? 1 : 2;

		/* A word cut short ("prio") is as good as a typo. */
		if (strlen(word) >= 3 && strlen(word) < strlen(cands[i]) &&
		    strncasecmp(word, cands[i], strlen(word)) == 0)
			d = 1;
		if (d <= limit && d < strlen(cands[i]) && d < best_d) {
			best = cands[i];
			best_d = d;
		}
	}
	return best;
}

static bool is_identifier(const char *s)
{
	if (!isalpha((unsigned char)*s) && *s != '_')
		return false;
	for (s++; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

static bool is_stage_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > STAGE_NAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return false;
	return true;
}

/* ---- pass 1: the reader and the inih handler ---- */

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

static const char *section_label(const struct section *s, char *out, size_t len)
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
			report(p, line, "[%s] appears twice (first at line %d): put all its keys in one section",
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
			report(p, line, "[stage] needs a name: write [stage NAME], e.g. [stage warm]");
		} else if (!is_stage_name(name)) {
			report(p, line, "bad stage name '%s': use 1 to %d letters, digits, '_', '.' or '-'",
			       shown(name, cut), STAGE_NAME_MAX);
		} else if (p->nstages >= SPEC_MAX_STAGES) {
			if (!p->stage_limit_reported)
				report(p, line, "more than %d stages: split the job into several jobs "
				       "(a job's after = waits for other jobs)", SPEC_MAX_STAGES);
			p->stage_limit_reported = true;
		} else {
			for (size_t i = 0; i < p->nstages; i++) {
				const struct section *other = &p->sects[p->stage_sects[i]];

				if (strcmp(other->name, name) == 0) {
					report(p, line, "stage '%s' is defined twice (first at line %d): rename one",
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
		near = nearest(first, kinds, ARRAY_LEN(kinds));
		if (near && strcmp(near, "stage") == 0)
			p->stage_tried = true;
		if (near && strcmp(near, "stage") == 0 && *lskip(word_end))
			report(p, line, "unknown section [%s] (did you mean [stage %s]?)",
			       shown(start, cut), lskip(word_end));
		else if (near && strcmp(near, "stage") != 0)
			report(p, line, "unknown section [%s] (did you mean [%s]?)", shown(start, cut), near);
		else
			report(p, line, "unknown section [%s]: sections are [job], [vars] and [stage NAME]",
			       shown(start, cut));
		add_section(p, SECT_IGNORED, NULL, line);
	}
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
		p->kind = LINE_CONT;
		return;
	}
	if (*start == '[') {
		end = find_chars_or_comment(start + 1, "]");
		if (*end != ']') {
			report(p, p->lineno, "no ']' on this section line: write [job], [vars] or [stage NAME]");
			return;
		}
		*end = '\0';
		p->inih_prev = false;
		begin_section(p, start + 1);
		end = lskip(end + 1);
		if (*end && *end != ';' && *end != '#')
			report(p, p->lineno, "unexpected text after ']': put comments after ' ;'");
		return;
	}
	end = find_chars_or_comment(start, "=:");
	if (*end == '=' || *end == ':') {
		p->inih_prev = end > start; /* inih keeps the name; an empty one is "none" */
		p->kind = LINE_KEY;
		return;
	}
	if (*end == ';')
		report(p, p->lineno, "expected KEY = VALUE, but ' ;' starts a comment before any '='");
	else
		report(p, p->lineno, "expected KEY = VALUE, a [section] header or a ; comment");
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
		report(p, p->lineno, "line too long (max %zu characters); continue it on the next line, indented",
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

		if (p->cur_sect < 0 || p->cur_entry < 0)
			return 1;
		s = &p->sects[p->cur_sect];
		e = &s->entries[p->cur_entry];
		/* run is a script: keep its lines; anything else is one line. */
		entry_append(e, value, s->kind == SECT_STAGE && strcmp(e->key, "run") == 0 ? "\n" : " ");
		e->ncont++;
		return 1;
	}
	if (kind != LINE_KEY)
		return 1; /* cannot happen while classify() mirrors inih */
	p->cur_entry = -1;
	if (*name == '\0') {
		report(p, p->lineno, "no key before '=': write KEY = VALUE");
		return 1;
	}
	if (p->cur_sect == -1) {
		report(p, p->lineno, "'%s' is outside any section: put it under [job] or [stage NAME]", name);
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
static void find_duplicates(struct parser *p, struct section *s)
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
		report(p, v[i]->line, "'%s' is set twice in %s (first at line %d): keep one",
		       v[i]->key, section_label(s, label, sizeof label), v[first]->line);
	}
	free(v);
}

/* ---- pass 2: ${var} expansion ---- */

static int var_cmp(const void *a, const void *b)
{
	const struct var *x = a, *y = b;

	return strcmp(x->name, y->name);
}

static struct var *find_var(struct parser *p, const char *name, size_t len)
{
	size_t lo = 0, hi = p->nvars;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strncmp(p->vars[mid].name, name, len);

		if (c == 0 && p->vars[mid].name[len] != '\0')
			c = 1;
		if (c == 0)
			return &p->vars[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The chain of vars being expanded, innermost last, for cycle messages. */
struct var_chain {
	struct var *v[VAR_DEPTH_MAX + 1];
	int depth;
};

static const char *var_value(struct parser *p, struct var *v, struct var_chain *chain);

/* Append text to out with every ${name} of a [vars] name replaced; other
 * ${...} stay for the shell. Returns 0, or -1 when a var could not be expanded
 * or the budget ran out (both reported, at line). */
static int expand_into(struct parser *p, const char *text, int line, struct buf *out,
		       struct var_chain *chain)
{
	const char *s = text;

	while (*s) {
		const char *d = strstr(s, "${"), *name, *end, *lit = s;
		size_t lit_len;
		struct var *v = NULL;

		lit_len = d ? (size_t)(d - s) + 2 : strlen(s);
		if (d) {
			name = d + 2;
			for (end = name; isalnum((unsigned char)*end) || *end == '_'; end++)
				;
			if (*end == '}' && end > name && !isdigit((unsigned char)*name))
				v = find_var(p, name, (size_t)(end - name));
			if (v) {
				lit_len -= 2;
				s = end + 1;
			} else {
				s = d + 2;
			}
		} else {
			s += lit_len;
		}
		if (lit_len > p->budget)
			goto over;
		p->budget -= lit_len;
		buf_add(out, lit, lit_len);
		if (v) {
			const char *val = var_value(p, v, chain);
			size_t n;

			if (!val)
				return -1;
			n = strlen(val);
			if (n > p->budget)
				goto over;
			p->budget -= n;
			buf_add(out, val, n);
		}
	}
	if (!out->s)
		buf_add(out, "", 0);
	return 0;
over:
	if (!p->budget_reported)
		report(p, line, "${vars} expand to more than %zu MiB of text: a spec is text a person reads",
		       EXPAND_BUDGET >> 20);
	p->budget_reported = true;
	p->budget = 0;
	return -1;
}

/* The expanded value of a var, computed once; NULL when it cannot be
 * expanded (a cycle, too deep), which is reported once at the var's line. */
static const char *var_value(struct parser *p, struct var *v, struct var_chain *chain)
{
	struct buf b = { 0 };

	switch (v->state) {
	case VAR_DONE:
		return v->value;
	case VAR_FAILED:
		return NULL;
	case VAR_BUSY: {
		struct buf path = { 0 };
		int first = 0;

		while (chain->v[first] != v)
			first++;
		for (int i = first; i < chain->depth; i++)
			buf_addf(&path, "%s -> ", chain->v[i]->name);
		buf_addf(&path, "%s", v->name);
		report(p, chain->v[first]->line, "var '%s' refers to itself: %s; remove one of these ${...}",
		       v->name, path.s);
		free(path.s);
		return NULL;
	}
	case VAR_NEW:
		break;
	}
	if (chain->depth >= VAR_DEPTH_MAX) {
		if (!p->depth_reported)
			report(p, v->line, "${vars} nest more than %d deep: define vars before the vars that use them",
			       VAR_DEPTH_MAX);
		p->depth_reported = true;
		return NULL; /* not FAILED: the var itself may be fine */
	}
	v->state = VAR_BUSY;
	chain->v[chain->depth++] = v;
	if (expand_into(p, v->raw, v->line, &b, chain) < 0) {
		free(b.s);
		v->state = VAR_FAILED;
	} else {
		v->value = b.s;
		v->state = VAR_DONE;
	}
	chain->depth--;
	return v->value;
}

/* The expanded form of a value (malloc'ed), or NULL if it cannot be. */
static char *expand(struct parser *p, const char *text, int line)
{
	struct var_chain chain = { .depth = 0 };
	struct buf b = { 0 };

	if (expand_into(p, text, line, &b, &chain) < 0) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

static void collect_vars(struct parser *p)
{
	struct section *vs = NULL;
	size_t n = 0;

	for (size_t i = 0; i < p->nsects; i++)
		if (p->sects[i].kind == SECT_VARS)
			vs = &p->sects[i];
	if (!vs)
		return;
	p->vars = xcalloc(vs->n, sizeof *p->vars);
	for (size_t i = 0; i < vs->n; i++) {
		struct entry *e = &vs->entries[i];

		if (e->dup)
			continue;
		if (!is_identifier(e->key)) {
			report(p, e->line, "bad var name '%s': use letters, digits and '_', not starting with a digit",
			       e->key);
			continue;
		}
		p->vars[n].name = e->key;
		p->vars[n].raw = e->value;
		p->vars[n].line = e->line;
		n++;
	}
	p->nvars = n;
	qsort(p->vars, n, sizeof *p->vars, var_cmp);
	/* Expand them all now, in file order, so that a broken var is reported
	 * even when nothing uses it. */
	for (size_t i = 0; i < vs->n; i++) {
		struct entry *e = &vs->entries[i];
		struct var *v;

		if (e->dup || !is_identifier(e->key))
			continue;
		v = find_var(p, e->key, strlen(e->key));
		if (v) {
			struct var_chain chain = { .depth = 0 };

			var_value(p, v, &chain);
		}
	}
}

/* ---- pass 2: values ---- */

/* Extra words for a value error, when the value looks like a layout mistake. */
static const char *value_hint(const struct entry *e, const char *value)
{
	if (e->ncont > 0 && strchr(value, '='))
		return " (the indented line below it continues this value: start keys at the beginning of a line)";
	if (strstr(value, " #") || strstr(value, "\t#"))
		return " (comments after a value start with ' ;', not '#')";
	return "";
}

/* A whole decimal number in [min, max]: 0, or -1 if it is not one. */
static int parse_int(const char *s, long long min, long long max, long long *out)
{
	bool neg = false;
	long long v = 0;

	if (*s == '-') {
		neg = true;
		s++;
	}
	if (!isdigit((unsigned char)*s))
		return -1;
	for (; isdigit((unsigned char)*s); s++) {
		if (v > (INT64_MAX - (*s - '0')) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	if (*s != '\0')
		return -1;
	if (neg)
		v = -v;
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Split a list on commas and white space; empty items are skipped. */
static char **split_list(const char *value, size_t *n)
{
	char **items = NULL;
	size_t count = 0, cap = 0;
	const char *s = value;

	for (;;) {
		size_t len;

		while (*s == ',' || isspace((unsigned char)*s))
			s++;
		if (*s == '\0')
			break;
		len = strcspn(s, ", \t\r\n\v\f");
		if (count == cap) {
			cap = cap ? 2 * cap : 4;
			items = xrealloc(items, cap * sizeof *items);
		}
		items[count] = xmalloc(len + 1);
		memcpy(items[count], s, len);
		items[count][len] = '\0';
		count++;
		s += len;
	}
	*n = count;
	return items;
}

static void free_list(char **items, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(items[i]);
	free(items);
}

/* What a stage's keys say beyond struct spec_stage, for the DAG checks. */
struct stage_build {
	struct spec_stage *st;
	const char *label;       /* "[stage NAME]" */
	bool has_run;
	int after_line, foreach_line, instances_line;
	size_t *after_idx;       /* resolved after, indexes into the file-order stages */
	size_t nafter_idx;
	size_t env_cap;          /* room in st->env */
};

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

	if (parse_int(v, 1, 4096, &n) < 0) {
		report(p, e->line, "cpus = %s: want a whole number of cores from 1 to 4096%s",
		       shown(v, cut), value_hint(e, v));
		return;
	}
	sb->st->cpus = (int)n;
}

static void set_size(struct parser *p, const struct entry *e, const char *v, uint64_t *out)
{
	char cut[SHOWN_MAX + 4];
	uint64_t bytes;

	if (parse_size(v, &bytes) < 0) {
		if (errno == ERANGE)
			report(p, e->line, "%s = %s: too large (the limit is 8191P)", e->key, shown(v, cut));
		else
			report(p, e->line, "%s = %s: not a size; write a number with an optional unit "
			       "K, M, G, T or P, e.g. 512M, 32G, 1.5T%s", e->key, shown(v, cut), value_hint(e, v));
		return;
	}
	if (bytes > VALUE_MAX) {
		report(p, e->line, "%s = %s: too large (the limit is 8191P)", e->key, shown(v, cut));
		return;
	}
	*out = bytes;
}

static void stage_mem(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	set_size(p, e, v, &sb->st->mem);
}

static void stage_disk(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	set_size(p, e, v, &sb->st->disk);
}

static void stage_scratch(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	set_size(p, e, v, &sb->st->scratch);
}

static void stage_instances(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	long long n;

	sb->instances_line = e->line;
	if (parse_int(v, 1, SPEC_MAX_INSTANCES, &n) < 0) {
		report(p, e->line, "instances = %s: want a whole number from 1 to %d%s",
		       shown(v, cut), SPEC_MAX_INSTANCES, value_hint(e, v));
		return;
	}
	sb->st->instances = (int)n;
}

static void stage_after(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	(void)p;
	sb->after_line = e->line;
	sb->st->after = split_list(v, &sb->st->nafter);
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
	if (!is_stage_name(stage) || *glob == '\0' || strchr(glob, '/') ||
	    strpbrk(glob, " \t")) {
		report(p, e->line, "foreach = %s: want STAGE or STAGE/GLOB, e.g. warm or warm/ckpt-* "
		       "(GLOB matches names in STAGE's output folder, without '/')%s",
		       shown(v, cut), value_hint(e, v));
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
			report(p, e->line, "walltime = %s: too large", shown(v, cut));
		else
			report(p, e->line, "walltime = %s: not a duration; write e.g. 90s, 45m, 12h, 1h30m or 2d%s",
			       shown(v, cut), value_hint(e, v));
		return;
	}
	if (secs > VALUE_MAX) {
		report(p, e->line, "walltime = %s: too large", shown(v, cut));
		return;
	}
	sb->st->walltime = secs;
}

static void stage_retries(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	long long n;

	if (parse_int(v, 0, 100, &n) < 0) {
		report(p, e->line, "retries = %s: want a whole number from 0 to 100%s",
		       shown(v, cut), value_hint(e, v));
		return;
	}
	sb->st->retries = (int)n;
}

static void stage_hosts(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	size_t n;
	char **hosts = split_list(v, &n);

	for (size_t i = 0; i < n; i++) {
		if (strlen(hosts[i]) > 255 || strchr(hosts[i], '/')) {
			report(p, e->line, "hosts: '%s' is not a host name or glob", shown(hosts[i], cut));
			free_list(hosts, n);
			return;
		}
		/* feature:NAME asks for a host feature (a runner's --features). */
		if (strncmp(hosts[i], "feature:", 8) == 0 &&
		    (!hosts[i][8] || strspn(hosts[i] + 8, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					    "0123456789._-") != strlen(hosts[i] + 8))) {
			report(p, e->line, "hosts: '%s': a feature name has letters, digits, '.', '_' and '-'"
			       " (e.g. feature:bigmem)", shown(hosts[i], cut));
			free_list(hosts, n);
			return;
		}
	}
	sb->st->hosts = hosts;
	sb->st->nhosts = n;
}

/* window = WHEN, of a stage or of the whole job (lib/timewin.h). */
static void set_window(struct parser *p, const struct entry *e, const char *v, char **text,
		       struct timewin **win)
{
	char cut[SHOWN_MAX + 4], *why = NULL;
	struct timewin *w = timewin_parse(v, &why);

	if (!w) {
		report(p, e->line, "window = %s: %s%s", shown(v, cut), why ? why : "not a window",
		       value_hint(e, v));
		free(why);
		return;
	}
	timewin_destroy(*win);
	free(*text);
	*win = w;
	*text = xstrdup(timewin_text(w));
}

static void stage_window(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	set_window(p, e, v, &sb->st->window, &sb->st->win);
}

static void stage_progress(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	long long n;

	if (strncmp(v, "files:", 6) != 0 || parse_int(v + 6, 1, SPEC_MAX_PROGRESS, &n) < 0) {
		report(p, e->line, "progress = %s: want files:N, the number of entries in the stage's "
		       "output folder when it is done, e.g. files:${samples} (without progress, an "
		       "instance reports by writing DONE/TOTAL to $PARSA_PROGRESS)%s", shown(v, cut),
		       value_hint(e, v));
		return;
	}
	sb->st->progress_files = (uint64_t)n;
}

static const struct {
	const char *name;
	stage_key_fn fn;
} stage_keys[] = {
	{ "run", stage_run },
	{ "cpus", stage_cpus },
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
};

static void job_name(struct parser *p, struct spec *spec, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];

	for (const char *s = v; *s; s++) {
		if (iscntrl((unsigned char)*s)) {
			report(p, e->line, "name = %s: control characters are not allowed", shown(v, cut));
			return;
		}
	}
	if (strlen(v) > JOB_NAME_MAX) {
		report(p, e->line, "name is longer than %d bytes: shorten it", JOB_NAME_MAX);
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
		report(p, e->line, "team = %s: want a group name (letters, digits, '_', '.', '-', at most %d)%s",
		       shown(v, cut), TEAM_MAX, value_hint(e, v));
		return;
	}
	spec->team = xstrdup(v);
}

static void job_priority(struct parser *p, struct spec *spec, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4];
	long long n;

	if (parse_int(v, -1000, 1000, &n) < 0) {
		report(p, e->line, "priority = %s: want a whole number from -1000 to 1000 (higher runs first)%s",
		       shown(v, cut), value_hint(e, v));
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
	char **items = split_list(v, &n);
	int64_t *ids = xcalloc(n, sizeof *ids);

	for (size_t i = 0; i < n; i++) {
		long long id;

		if (parse_int(items[i], 1, INT64_MAX, &id) < 0) {
			report(p, e->line, "after = %s: want ids of other jobs, whole numbers from 1 up, "
			       "separated by commas or spaces ('%s' is not one)%s", shown(v, cut), items[i],
			       value_hint(e, v));
			free(ids);
			free_list(items, n);
			return;
		}
		ids[i] = id;
	}
	/* Sorted and unique: the order of job ids means nothing. */
	qsort(ids, n, sizeof *ids, id_cmp);
	for (size_t i = 0; i < n; i++)
		if (kept == 0 || ids[kept - 1] != ids[i])
			ids[kept++] = ids[i];
	free_list(items, n);
	spec->after_jobs = ids;
	spec->nafter_jobs = kept;
}

static void job_start(struct parser *p, struct spec *spec, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4], *why = NULL;

	if (timewin_parse_start(v, &spec->start_at_s, &spec->start_in_s, &why) < 0)
		report(p, e->line, "start = %s: %s%s", shown(v, cut), why ? why : "not a start time",
		       value_hint(e, v));
	free(why);
}

static void job_window(struct parser *p, struct spec *spec, const struct entry *e, const char *v)
{
	set_window(p, e, v, &spec->window, &spec->win);
}

static void job_every(struct parser *p, struct spec *spec, const struct entry *e, const char *v)
{
	char cut[SHOWN_MAX + 4], *why = NULL;
	struct every *ev = every_parse(v, &why);

	if (!ev) {
		report(p, e->line, "every = %s: %s%s", shown(v, cut), why ? why : "not a period",
		       value_hint(e, v));
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
	items = split_list(copy, &n);
	free(copy);
	for (size_t i = 0; i < n; i++) {
		if (!notify_target_ok(items[i])) {
			report(p, e->line, "notify: '%s' is not exec:/absolute/path/to/program or "
			       "mail:user@host", shown(items[i], cut));
			free_list(items, n);
			return;
		}
	}
	if (n == 0) {
		free_list(items, n);
		report(p, e->line, "notify has no value: give exec:/path or mail:user@host");
		return;
	}
	spec->notify = items;
	spec->nnotify = n;
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
};

static const char *const stage_key_names[] = {
	"run", "cpus", "mem", "disk", "scratch", "instances", "after", "foreach",
	"walltime", "retries", "hosts", "window", "progress",
};
static const char *const job_key_names[] = { "name", "team", "priority", "after", "start", "window",
	"every", "notify" };

static bool in_list(const char *key, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(key, names[i]) == 0)
			return true;
	return false;
}

static void unknown_key(struct parser *p, const struct section *s, const struct entry *e)
{
	char label[STAGE_NAME_MAX + 16], cut[SHOWN_MAX + 4];
	const char *where = section_label(s, label, sizeof label);
	const char *key = shown(e->key, cut);
	bool stage = s->kind == SECT_STAGE;
	const char *near, *dot = strchr(e->key, '.');

	if (!error_wanted(p, e->line))
		return;
	near = stage ? nearest(e->key, stage_key_names, ARRAY_LEN(stage_key_names))
		     : nearest(e->key, job_key_names, ARRAY_LEN(job_key_names));

	if (stage && dot) {
		char prefix[8];
		size_t n = (size_t)(dot - e->key);

		if (n < sizeof prefix) {
			memcpy(prefix, e->key, n);
			prefix[n] = '\0';
			if (edit_distance(prefix, "env") <= 1) {
				report(p, e->line, "unknown key '%s' in %s (did you mean 'env%s'?)", key, where, dot);
				return;
			}
		}
	}
	if (near)
		report(p, e->line, "unknown key '%s' in %s (did you mean '%s'?)", key, where, near);
	else if (stage && strcmp(e->key, "name") == 0)
		report(p, e->line, "unknown key 'name' in %s: a stage's name is in its header, [stage NAME]",
		       where);
	else if (stage && in_list(e->key, job_key_names, ARRAY_LEN(job_key_names)))
		report(p, e->line, "unknown key '%s' in %s: it belongs in [job]", key, where);
	else if (!stage && in_list(e->key, stage_key_names, ARRAY_LEN(stage_key_names)))
		report(p, e->line, "unknown key '%s' in [job]: it belongs in a [stage NAME] section", key);
	else if (!stage && strncmp(e->key, "env.", 4) == 0)
		report(p, e->line, "unknown key '%s' in [job]: env.NAME belongs in a [stage NAME] section", key);
	else if (stage)
		report(p, e->line, "unknown key '%s' in %s: a stage takes run, cpus, mem, disk, scratch, "
		       "instances, after, foreach, walltime, retries, hosts, window, progress and env.NAME",
		       key, where);
	else
		report(p, e->line, "unknown key '%s' in [job]: [job] takes name, team, priority, after, "
		       "start, window, every and notify", key);
}

static void stage_env(struct parser *p, struct stage_build *sb, const struct entry *e, const char *v)
{
	const char *name = e->key + 4;
	char cut[SHOWN_MAX + 4];

	if (!is_identifier(name)) {
		report(p, e->line, "%s: bad variable name '%s': use letters, digits and '_', not starting with a digit",
		       shown(e->key, cut), name);
		return;
	}
	if (strncmp(name, "PARSA_", 6) == 0) {
		report(p, e->line, "%s: parsa sets PARSA_ variables for each instance: choose another name",
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
static void apply_stage_key(struct parser *p, const struct section *s, struct stage_build *sb,
			    const struct entry *e)
{
	stage_key_fn fn = NULL;
	char *v;

	if (strncmp(e->key, "env.", 4) == 0) {
		fn = stage_env;
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
	v = expand(p, e->value, e->line);
	if (!v)
		return;
	if (*v == '\0' && fn != stage_env) {
		if (fn == stage_run)
			report(p, e->line, "run is empty: write the command after run = "
			       "(or on indented lines below it)");
		else
			report(p, e->line, "%s has no value: give one or remove the line", e->key);
	} else {
		fn(p, sb, e, v);
	}
	free(v);
}

static void apply_job_key(struct parser *p, const struct section *s, struct spec *spec, const struct entry *e)
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
	v = expand(p, e->value, e->line);
	if (!v)
		return;
	if (*v == '\0')
		report(p, e->line, "%s has no value: give one or remove the line", e->key);
	else
		fn(p, spec, e, v);
	free(v);
}

/* ---- pass 2: the DAG ---- */

struct dag {
	struct stage_build *sb;   /* file order */
	size_t n;
	size_t by_name[SPEC_MAX_STAGES]; /* indexes into sb, sorted by stage name */
};

/* Sorts by_name: insertion sort, as there are at most SPEC_MAX_STAGES. */
static void dag_index(struct dag *g)
{
	for (size_t i = 0; i < g->n; i++) {
		size_t k = i;

		while (k > 0 && strcmp(g->sb[g->by_name[k - 1]].st->name, g->sb[i].st->name) > 0) {
			g->by_name[k] = g->by_name[k - 1];
			k--;
		}
		g->by_name[k] = i;
	}
}

/* The file-order index of a stage, or -1. A binary search: an after list
 * may name stages hundreds of thousands of times. */
static int stage_by_name(const struct dag *g, const char *name)
{
	size_t lo = 0, hi = g->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(g->sb[g->by_name[mid]].st->name, name);

		if (c == 0)
			return (int)g->by_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static void unknown_stage(struct parser *p, const struct dag *g, int line, const char *what,
			  const char *name)
{
	const char **names;
	char cut[SHOWN_MAX + 4];
	const char *near;

	if (!error_wanted(p, line))
		return;
	names = xcalloc(g->n, sizeof *names);
	for (size_t i = 0; i < g->n; i++)
		names[i] = g->sb[i].st->name;
	near = nearest(name, names, g->n);
	if (near) {
		report(p, line, "%s: unknown stage '%s' (did you mean '%s'?)", what, shown(name, cut), near);
	} else {
		struct buf list = { 0 };

		for (size_t i = 0; i < g->n && i < 8; i++)
			buf_addf(&list, "%s%s", i ? ", " : "", names[i]);
		if (g->n > 8)
			buf_add(&list, ", ...", 5);
		report(p, line, "%s: unknown stage '%s' (stages are: %s)", what, shown(name, cut), list.s);
		free(list.s);
	}
	free(names);
}

/* Turn after names into indexes: unknown names and self references are
 * reported and left out, repeats are dropped. */
static void resolve_after(struct parser *p, struct dag *g)
{
	for (size_t i = 0; i < g->n; i++) {
		struct stage_build *sb = &g->sb[i];
		bool seen[SPEC_MAX_STAGES] = { false };
		size_t kept = 0;

		sb->after_idx = xcalloc(sb->st->nafter ? sb->st->nafter : 1, sizeof *sb->after_idx);
		for (size_t a = 0; a < sb->st->nafter; a++) {
			char *name = sb->st->after[a];
			int j = stage_by_name(g, name);

			if (j < 0) {
				unknown_stage(p, g, sb->after_line, "after", name);
				free(name);
			} else if ((size_t)j == i) {
				report(p, sb->after_line, "stage '%s' cannot come after itself: remove it from after",
				       name);
				free(name);
			} else if (seen[j]) {
				free(name);
			} else {
				seen[j] = true;
				sb->after_idx[sb->nafter_idx++] = (size_t)j;
				sb->st->after[kept++] = name;
			}
		}
		sb->st->nafter = kept;
	}
}

/* Report each cycle among the stages Kahn's algorithm could not place, as
 * "cycle: a -> b -> a" in the order the stages would run. */
static void report_cycles(struct parser *p, const struct dag *g, const bool *placed)
{
	int mark[SPEC_MAX_STAGES]; /* 0 unvisited, walk number while walking */
	size_t walk[SPEC_MAX_STAGES + 1];
	int walks = 0;

	memset(mark, 0, sizeof mark);
	for (size_t start = 0; start < g->n; start++) {
		size_t len = 0, cur = start, first, best;
		struct buf path = { 0 };

		if (placed[start] || mark[start])
			continue;
		walks++;
		/* Every unplaced stage waits for an unplaced one: follow after
		 * edges until a stage repeats. */
		while (!mark[cur]) {
			mark[cur] = walks;
			walk[len++] = cur;
			for (size_t a = 0; a < g->sb[cur].nafter_idx; a++) {
				if (!placed[g->sb[cur].after_idx[a]]) {
					cur = g->sb[cur].after_idx[a];
					break;
				}
			}
		}
		if (mark[cur] != walks)
			continue; /* ran into a cycle already reported */
		for (first = 0; walk[first] != cur; first++)
			;
		/* walk[first..len) is the cycle, each waiting for the next;
		 * start the message at its first stage in the file. */
		best = first;
		for (size_t k = first; k < len; k++)
			if (walk[k] < walk[best])
				best = k;
		for (size_t k = 0, idx = best; k <= len - first; k++) {
			buf_addf(&path, "%s%s", k ? " -> " : "", g->sb[walk[idx]].st->name);
			idx = idx == first ? len - 1 : idx - 1;
		}
		report(p, g->sb[walk[best]].after_line, "cycle: %s; remove one of these after = entries", path.s);
		free(path.s);
	}
}

/* A topological order of the stages, stable: the earliest stage in the file
 * whose upstream stages are all placed goes next. Returns false on a cycle
 * (reported). */
static bool topo_order(struct parser *p, const struct dag *g, size_t *order)
{
	bool placed[SPEC_MAX_STAGES] = { false };
	size_t done = 0;

	while (done < g->n) {
		size_t i;

		for (i = 0; i < g->n; i++) {
			bool ready = !placed[i];

			for (size_t a = 0; ready && a < g->sb[i].nafter_idx; a++)
				ready = placed[g->sb[i].after_idx[a]];
			if (ready)
				break;
		}
		if (i == g->n) {
			report_cycles(p, g, placed);
			return false;
		}
		placed[i] = true;
		order[done++] = i;
	}
	return true;
}

/* Is stage up reachable from stage from through after, transitively? */
static bool is_upstream(const struct dag *g, size_t from, size_t up)
{
	bool seen[SPEC_MAX_STAGES] = { false };
	size_t stack[SPEC_MAX_STAGES], n = 0;

	stack[n++] = from;
	seen[from] = true;
	while (n > 0) {
		size_t cur = stack[--n];

		for (size_t a = 0; a < g->sb[cur].nafter_idx; a++) {
			size_t next = g->sb[cur].after_idx[a];

			if (next == up)
				return true;
			if (!seen[next]) {
				seen[next] = true;
				stack[n++] = next;
			}
		}
	}
	return false;
}

static void check_foreach(struct parser *p, const struct dag *g)
{
	for (size_t i = 0; i < g->n; i++) {
		const struct stage_build *sb = &g->sb[i];
		const char *f = sb->st->foreach_stage;
		int j;

		if (!f)
			continue;
		if (sb->instances_line)
			report(p, sb->instances_line, "instances cannot be used with foreach "
			       "(foreach makes one instance per entry): remove instances");
		j = stage_by_name(g, f);
		if (j < 0)
			unknown_stage(p, g, sb->foreach_line, "foreach", f);
		else if ((size_t)j == i)
			report(p, sb->foreach_line, "foreach: stage '%s' cannot go over its own output", f);
		else if (!is_upstream(g, i, (size_t)j))
			report(p, sb->foreach_line, "foreach: stage '%s' is not upstream of '%s': add after = %s",
			       f, sb->st->name, f);
	}
}

/* ---- building the spec ---- */

static void stage_clear(struct spec_stage *st)
{
	free(st->name);
	free(st->run);
	free_list(st->after, st->nafter);
	free(st->foreach_stage);
	free(st->foreach_glob);
	free_list(st->hosts, st->nhosts);
	free_list(st->env, st->nenv);
	free(st->window);
	timewin_destroy(st->win);
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
	free_list(spec->notify, spec->nnotify);
	free(spec);
}

/* The job name a file gives by default: its base name without .conf, .ini
 * or .spec. */
static char *default_name(const char *filename)
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
	struct dag g = { 0 };
	size_t order[SPEC_MAX_STAGES];
	char label[STAGE_NAME_MAX + 16];
	struct spec_stage *sorted = NULL;

	for (size_t i = 0; i < p->nsects; i++)
		find_duplicates(p, &p->sects[i]);
	collect_vars(p);

	spec->name = default_name(p->file);
	g.sb = xcalloc(p->nstages ? p->nstages : 1, sizeof *g.sb);
	spec->stages = xcalloc(p->nstages ? p->nstages : 1, sizeof *spec->stages);
	for (size_t i = 0; i < p->nsects; i++) {
		struct section *s = &p->sects[i];

		if (s->kind == SECT_JOB) {
			for (size_t k = 0; k < s->n; k++)
				if (!s->entries[k].dup)
					apply_job_key(p, s, spec, &s->entries[k]);
		} else if (s->kind == SECT_STAGE) {
			struct spec_stage *st = &spec->stages[spec->nstages++];
			struct stage_build *sb = &g.sb[g.n++];

			st->name = xstrdup(s->name);
			st->line = s->line;
			st->cpus = 1;
			st->instances = 1;
			sb->st = st;
			for (size_t k = 0; k < s->n; k++)
				if (!s->entries[k].dup)
					apply_stage_key(p, s, sb, &s->entries[k]);
			if (!sb->has_run)
				report(p, s->line, "%s has no run: add run = COMMAND",
				       section_label(s, label, sizeof label));
		}
	}
	if (g.n == 0 && !p->stage_tried) /* else its header's error says enough */
		report(p, 1, "has no stage: a spec needs at least one [stage NAME] with run = COMMAND");
	dag_index(&g);
	resolve_after(p, &g);
	check_foreach(p, &g);
	if (topo_order(p, &g, order) && p->nerrs == 0) {
		sorted = xcalloc(g.n ? g.n : 1, sizeof *sorted);
		for (size_t i = 0; i < g.n; i++)
			sorted[i] = spec->stages[order[i]];
		free(spec->stages);
		spec->stages = sorted;
	}
	for (size_t i = 0; i < g.n; i++)
		free(g.sb[i].after_idx);
	free(g.sb);
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
		report(&p, 1, "is larger than %d KiB (%zu bytes): a spec is text a person writes; "
		       "put data in files that the stages read", SPEC_MAX_BYTES / 1024, len);
		saved = EFBIG;
		goto out;
	}
	for (bad = 0; bad < len && isspace((unsigned char)text[bad]); bad++)
		;
	if (bad == len) {
		report(&p, 1, "is empty: a spec needs at least one [stage NAME] with run = COMMAND");
		goto out;
	}
	bad = first_non_text((const unsigned char *)text, len);
	if (bad < len) {
		int line = 1;

		for (size_t i = 0; i < bad; i++)
			line += text[i] == '\n';
		report(&p, line, "is not a text file (a NUL byte or invalid UTF-8 here): "
		       "a spec is UTF-8 text, e.g. written with a text editor");
		goto out;
	}
	/* inih's own return value only names the first bad line: our reader
	 * reports each one instead, so it is ignored. */
	(void)ini_parse_stream(spec_reader, &p, spec_handler, &p);
	spec = build_spec(&p);
out:
	if (!spec) {
		if (err) {
			free(*err);
			*err = errors_text(&p);
		}
		errno = saved;
	}
	parser_clear(&p);
	return spec;
}

int spec_stage_index(const struct spec *spec, const char *name)
{
	for (size_t i = 0; i < spec->nstages; i++)
		if (strcmp(spec->stages[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* ---- JSON ---- */

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
		  json_object_set_new(j, "progress_files", json_integer((json_int_t)st->progress_files)) < 0)) {
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
	    json_object_set_new(root, "notify", notify) < 0)
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
	    json_get_string(json, "every", true, &spec->every, "spec", err) < 0)
		return -1;
	if (notify && !json_is_null(notify) &&
	    json_get_strings(json, "notify", &spec->notify, &spec->nnotify, "spec", err) < 0)
		return -1;
	return 0;
}

static int stage_from_json(const json_t *j, struct spec_stage *st, const char *where, char **err)
{
	long long line = 0, cpus = 0, mem = 0, disk = 0, scratch = 0, instances = 0, walltime = 0;
	long long retries = 0, progress = 0;
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
	if (!is_stage_name(st->name)) {
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
	if (window_from_json(j, &st->window, &st->win, where, err) < 0)
		goto out;
	if (json_object_get(j, "progress_files") &&
	    json_get_int(j, "progress_files", 0, SPEC_MAX_PROGRESS, &progress, where, err) < 0)
		goto out;
	st->progress_files = (uint64_t)progress;
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
