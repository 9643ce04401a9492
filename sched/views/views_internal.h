/* What the two halves of the views share (views.c: jobs, stages and
 * instances; views_hosts.c: hosts and the cluster): the text buffer a view
 * is written into, user strings escaped into it, times and sizes as the
 * views print them. Private to the views; static inline so that each half
 * keeps them as its own. */
#ifndef PARSA_VIEWS_INTERNAL_H
#define PARSA_VIEWS_INTERNAL_H

#include "escape.h"
#include "units.h"
#include "util.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing text buffer on open_memstream, and the escaped copies of the
 * user strings written into it (freed with it). */
struct text {
	FILE *f;
	char *buf;
	size_t len;
	char **held;
	size_t nheld;
};

static inline void text_open(struct text *t)
{
	t->buf = NULL;
	t->len = 0;
	t->held = NULL;
	t->nheld = 0;
	t->f = open_memstream(&t->buf, &t->len);
	if (!t->f)
		abort();
}

static inline char *text_close(struct text *t)
{
	fclose(t->f);
	for (size_t i = 0; i < t->nheld; i++)
		free(t->held[i]);
	free(t->held);
	return t->buf;
}

/* s as a view may write it (escape.h): a file name, a name, a reason or
 * anything else a user or a runner chose cannot start a line or a field of
 * the view. s itself when nothing needs escaping, else a copy t frees. */
static inline const char *esc(struct text *t, const char *s)
{
	char *e;

	if (!s)
		return "";
	if (!escape_needed(s))
		return s;
	e = escape_text(s);
	t->held = xrealloc(t->held, (t->nheld + 1) * sizeof *t->held);
	t->held[t->nheld++] = e;
	return e;
}

static inline const char *iso(int64_t ms, char *buf, size_t len)
{
	time_format_iso(ms, buf, len);
	return buf;
}

/* "2026-11-30T14:02:11.123" */
static inline const char *iso_ms(int64_t ms, char *buf, size_t len)
{
	size_t n;

	time_format_iso(ms, buf, len);
	n = strlen(buf);
	if (ms > 0 && n + 5 <= len)
		snprintf(buf + n, len - n, ".%03d", (int)(ms % 1000));
	return buf;
}

static inline const char *size(uint64_t bytes, char *buf, size_t len)
{
	format_size(bytes, buf, len);
	return buf;
}

/* A moment of today as "04:41:07", of another day as "2026-12-05T04:41:07"
 * (local time, like every other time of the views). */
static inline const char *clock_time(int64_t ms, int64_t now, char *buf, size_t len)
{
	char today[64];

	time_format_iso(ms, buf, len);
	time_format_iso(now, today, sizeof today);
	if (strlen(buf) > 11 && strncmp(buf, today, 11) == 0)
		memmove(buf, buf + 11, strlen(buf + 11) + 1);
	return buf;
}

static inline json_t *strings_json(char *const *strings, size_t n)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, json_string(strings[i]));
	return arr;
}

/* The part of a live use that is parsa's instances'. */
static inline double share(double whole, double outside)
{
	return whole > outside ? whole - outside : 0;
}

#endif
