/* Each cron field is a bit set of the values it allows; the next run is found
 * field by field (month, then day, hour, minute), letting mktime() carry and
 * handle the clock changes, as Vixie cron's successors do. */
#include "cron.h"
#include "units.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* Shorter periods would be a busy loop, not a schedule. */
#define PERIOD_MIN_S 60
#define SEARCH_YEARS 8
/* Longer periods would overflow the milliseconds of every_next() (a fuzzed
 * 9223372036854775807s did); a century is more than any schedule needs. */
#define PERIOD_MAX_S (100ULL * 366 * 24 * 3600)

enum field { F_MIN, F_HOUR, F_DOM, F_MON, F_DOW, NFIELDS };

static const struct field_info {
	const char *name;
	int lo, hi;
	const char *const *names;  /* names for lo, lo+1, ... or NULL */
} fields[NFIELDS] = {
	[F_MIN] = { "minute", 0, 59, NULL },
	[F_HOUR] = { "hour", 0, 23, NULL },
	[F_DOM] = { "day of the month", 1, 31, NULL },
	[F_MON] = { "month", 1, 12, (const char *const[]){ "jan", "feb", "mar", "apr", "may", "jun",
							  "jul", "aug", "sep", "oct", "nov", "dec" } },
	/* 7 is Sunday too, as in every cron. */
	[F_DOW] = { "day of the week", 0, 7, (const char *const[]){ "sun", "mon", "tue", "wed", "thu",
								   "fri", "sat", "sun" } },
};

static const struct {
	const char *alias;
	const char *line;
} aliases[] = {
	{ "@yearly", "0 0 1 1 *" },
	{ "@annually", "0 0 1 1 *" },
	{ "@monthly", "0 0 1 * *" },
	{ "@weekly", "0 0 * * 0" },
	{ "@daily", "0 0 * * *" },
	{ "@midnight", "0 0 * * *" },
	{ "@hourly", "0 * * * *" },
};

struct every {
	char *text;
	uint64_t period_s;          /* a period, or 0 for a cron line */
	uint64_t bits[NFIELDS];     /* allowed values, bit v for value v */
	bool dom_star, dow_star;    /* the day fields were '*' (see day_matches) */
};

/* A number or (for months and weekdays) a name. */
static int field_value(const struct field_info *f, const char *s, size_t n, int *out)
{
	char *end;
	long v;

	if (n > 0 && isdigit((unsigned char)s[0])) {
		v = strtol(s, &end, 10);
		if ((size_t)(end - s) != n || v < f->lo || v > f->hi)
			return -1;
		*out = (int)v;
		return 0;
	}
	for (int i = 0; f->names && n == 3 && i <= f->hi - f->lo; i++) {
		if (strncasecmp(s, f->names[i], 3) == 0) {
			*out = f->lo + i;
			return 0;
		}
	}
	return -1;
}

/* One field: comma-separated items, each '*', V or A-B, optionally /STEP. */
static int parse_field(struct every *e, enum field which, const char *text, char **err)
{
	const struct field_info *f = &fields[which];
	const char *p = text;

	while (*p) {
		size_t n = strcspn(p, ","), rn;
		const char *slash = memchr(p, '/', n), *dash;
		int a = f->lo, b = f->hi, step = 1;

		rn = slash ? (size_t)(slash - p) : n;
		if (slash) {
			char *end;
			long v = strtol(slash + 1, &end, 10);

			if (!isdigit((unsigned char)slash[1]) || end != p + n || v < 1 || v > f->hi)
				return errprintf(err, "%s field '%s': a step is /N with N from 1 to %d",
						 f->name, text, f->hi);
			step = (int)v;
		}
		dash = memchr(p, '-', rn);
		if (rn == 1 && *p == '*') {
			/* the whole range */
		} else if (dash) {
			if (field_value(f, p, (size_t)(dash - p), &a) < 0 ||
			    field_value(f, dash + 1, (size_t)(p + rn - dash - 1), &b) < 0 || b < a)
				goto bad;
		} else {
			if (field_value(f, p, rn, &a) < 0)
				goto bad;
			/* "5/15" means from 5 to the end in steps of 15. */
			b = slash ? f->hi : a;
		}
		for (int v = a; v <= b; v += step)
			e->bits[which] |= 1ull << (which == F_DOW && v == 7 ? 0 : v);
		p += n;
		if (*p == ',') {
			p++;
			if (!*p)
				goto bad;
		}
	}
	return 0;
bad:
	if (f->names)
		return errprintf(err, "%s field '%s': want *, N, A-B, lists A,B and /STEP with N from %d "
				 "to %d or names such as %s", f->name, text, f->lo, f->hi, f->names[1]);
	return errprintf(err, "%s field '%s': want *, N, A-B, lists A,B and /STEP with N from %d to %d",
			 f->name, text, f->lo, f->hi);
}

static int parse_cron(struct every *e, const char *line, char **err)
{
	char *copy = xstrdup(line), *save = NULL, *tok;
	int n = 0, ret = -1;

	for (tok = strtok_r(copy, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		if (n == NFIELDS) {
			errprintf(err, "a cron line has five fields (minute hour day month weekday), "
				  "e.g. 0 2 * * * for 02:00 every day");
			goto out;
		}
		if (n == F_DOM)
			e->dom_star = tok[0] == '*';
		if (n == F_DOW)
			e->dow_star = tok[0] == '*';
		if (parse_field(e, (enum field)n, tok, err) < 0)
			goto out;
		n++;
	}
	if (n != NFIELDS) {
		errprintf(err, "a cron line has five fields (minute hour day month weekday), "
			  "e.g. 0 2 * * * for 02:00 every day");
		goto out;
	}
	ret = 0;
out:
	free(copy);
	return ret;
}

/* Cron's rule: when both day fields are restricted, either may match. */
static bool day_matches(const struct every *e, const struct tm *tm)
{
	bool dom = e->bits[F_DOM] & (1ull << tm->tm_mday);
	bool dow = e->bits[F_DOW] & (1ull << tm->tm_wday);

	if (e->dom_star || e->dow_star)
		return dom && dow;
	return dom || dow;
}

/* Let mktime() carry overflowing fields and pick the offset in force. */
static time_t normalize(struct tm *tm)
{
	time_t t;

	tm->tm_isdst = -1;
	t = mktime(tm);
	localtime_r(&t, tm);
	return t;
}

static int64_t cron_next(const struct every *e, int64_t after_ms)
{
	time_t t = (time_t)(after_ms / 1000);
	struct tm tm;
	int last_year;

	if (after_ms < 0)
		t = 0;
	localtime_r(&t, &tm);
	tm.tm_sec = 0;
	tm.tm_min++;
	t = normalize(&tm);
	last_year = tm.tm_year + SEARCH_YEARS;
	while (tm.tm_year <= last_year) {
		if (!(e->bits[F_MON] & (1ull << (tm.tm_mon + 1)))) {
			tm.tm_mon++;
			tm.tm_mday = 1;
			tm.tm_hour = tm.tm_min = 0;
		} else if (!day_matches(e, &tm)) {
			tm.tm_mday++;
			tm.tm_hour = tm.tm_min = 0;
		} else if (!(e->bits[F_HOUR] & (1ull << tm.tm_hour))) {
			tm.tm_hour++;
			tm.tm_min = 0;
		} else if (!(e->bits[F_MIN] & (1ull << tm.tm_min))) {
			tm.tm_min++;
		} else {
			return (int64_t)t * 1000;
		}
		t = normalize(&tm);
	}
	return -1;
}

struct every *every_parse(const char *text, char **err)
{
	struct every *e = xcalloc(1, sizeof *e);
	const char *line = text;
	uint64_t secs;

	while (*line == ' ' || *line == '\t')
		line++;
	if (!*line) {
		errprintf(err, "empty: want a cron line such as 0 2 * * * or a period such as 6h");
		goto fail;
	}
	if (line[0] == '@') {
		const char *found = NULL;

		for (size_t i = 0; i < ARRAY_LEN(aliases) && !found; i++)
			if (strcasecmp(line, aliases[i].alias) == 0)
				found = aliases[i].line;
		if (!found) {
			errprintf(err, "'%s' is not one of @hourly, @daily, @midnight, @weekly, @monthly, "
				  "@yearly", line);
			goto fail;
		}
		line = found;
	}
	if (!strpbrk(line, " \t")) {
		if (parse_duration(line, &secs) < 0) {
			errprintf(err, "'%s' is neither a period (e.g. 6h, 90m, 1d) nor a cron line "
				  "(e.g. 0 2 * * *)", line);
			goto fail;
		}
		if (secs < PERIOD_MIN_S) {
			errprintf(err, "'%s' is shorter than a minute", line);
			goto fail;
		}
		if (secs > PERIOD_MAX_S) {
			errprintf(err, "'%s' is longer than a century: give a period up to 36600d", line);
			goto fail;
		}
		e->period_s = secs;
	} else {
		if (parse_cron(e, line, err) < 0)
			goto fail;
		/* Feb 30 never comes: say so now rather than never run. */
		if (cron_next(e, 0) < 0 && cron_next(e, time_now_ms()) < 0) {
			errprintf(err, "'%s' never matches a date", line);
			goto fail;
		}
	}
	e->text = squeeze_blanks(text);
	return e;
fail:
	free(e);
	errno = EINVAL;
	return NULL;
}

void every_destroy(struct every *e)
{
	if (!e)
		return;
	free(e->text);
	free(e);
}

const char *every_text(const struct every *e)
{
	return e->text;
}

uint64_t every_period_s(const struct every *e)
{
	return e->period_s;
}

int64_t every_next(const struct every *e, int64_t anchor_ms, int64_t after_ms)
{
	int64_t period;

	if (!e->period_s)
		return cron_next(e, after_ms);
	period = (int64_t)e->period_s * 1000;
	if (after_ms < anchor_ms)
		return anchor_ms + period;
	return anchor_ms + ((after_ms - anchor_ms) / period + 1) * period;
}
