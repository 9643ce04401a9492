/* The spec parser's errors: every problem is collected as "file:line: message",
 * the first SPEC_MAX_ERRORS lines' kept and the rest counted, and handed back
 * sorted by line. Also the growing string the messages are built in. */
#include "spec_internal.h"
#include "escape.h"
#include "log.h"
#include "util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Past this many errors a file is not a spec at all; the rest are counted. */
#define SPEC_MAX_ERRORS 100

void spec_buf_add(struct spec_buf *b, const char *s, size_t n)
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

void spec_buf_addf(struct spec_buf *b, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		fatalx("out of memory");
	spec_buf_add(b, s, (size_t)n);
	free(s);
}

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
bool spec_error_wanted(struct parser *p, int line)
{
	if (p->nerrs < SPEC_MAX_ERRORS || line < p->errs[p->last].line)
		return true;
	p->dropped++;
	p->seq++;
	return false;
}

void spec_report(struct parser *p, int line, const char *fmt, ...)
{
	struct spec_buf b = { 0 };
	va_list ap;
	char *msg;

	if (!spec_error_wanted(p, line))
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
	/* Messages quote what the spec says (a name, a value): its control
	 * bytes reach whoever reads NAME.rejected or a terminal, an ESC could
	 * recolour it or a newline forge a line, so they are written escaped. */
	if (escape_needed(msg)) {
		char *shown = escape_text(msg);

		free(msg);
		msg = shown;
	}
	spec_buf_addf(&b, "%s:%d: %s", p->file, line, msg);
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
char *spec_errors_text(struct parser *p)
{
	struct spec_buf b = { 0 };

	qsort(p->errs, p->nerrs, sizeof *p->errs, error_cmp);
	for (size_t i = 0; i < p->nerrs; i++) {
		if (i > 0)
			spec_buf_add(&b, "\n", 1);
		spec_buf_add(&b, p->errs[i].text, strlen(p->errs[i].text));
	}
	if (p->dropped)
		spec_buf_addf(&b, "\n%s: %zu more errors not shown", p->file, p->dropped);
	return b.s ? b.s : xstrdup("");
}

/* A value as quoted in a message: cut at SHOWN_MAX bytes on a character
 * boundary. Writes into out (SHOWN_MAX + 4 bytes). */
const char *spec_shown(const char *value, char *out)
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
