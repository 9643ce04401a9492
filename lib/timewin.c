/* Windows are a bitmap of the minutes of a week (Monday 00:00 is minute 0):
 * 10,080 bits answer "inside?" with one lookup and "until when?" with one
 * scan, whatever the rule looked like. */
#include "timewin.h"
#include "units.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define DAY_MIN 1440
#define WEEK_MIN (7 * DAY_MIN)

struct timewin {
	char *text;
	unsigned char bits[WEEK_MIN / 8];
};

static const char *const day_names[7] = { "mon", "tue", "wed", "thu", "fri", "sat", "sun" };
static const char *const day_full[7] = { "monday", "tuesday", "wednesday", "thursday", "friday",
	"saturday", "sunday" };

static void set_bit(struct timewin *w, int i)
{
	i %= WEEK_MIN;
	w->bits[i / 8] |= (unsigned char)(1u << (i % 8));
}

static bool get_bit(const struct timewin *w, int i)
{
	i %= WEEK_MIN;
	return w->bits[i / 8] & (1u << (i % 8));
}

/* Monday = 0. -1 when name is not a day. */
static int parse_day(const char *name, size_t n)
{
	for (int d = 0; d < 7; d++) {
		if (n == 3 && strncasecmp(name, day_names[d], 3) == 0)
			return d;
		if (n == strlen(day_full[d]) && strncasecmp(name, day_full[d], n) == 0)
			return d;
	}
	return -1;
}

/* "mon-fri,sun" into days[7]. 0, or -1 with *err. */
static int parse_days(const char *text, bool days[7], char **err)
{
	const char *p = text;

	while (*p) {
		const char *end = p + strcspn(p, ",");
		const char *dash = memchr(p, '-', (size_t)(end - p));
		int a, b;

		a = parse_day(p, (size_t)((dash ? dash : end) - p));
		b = dash ? parse_day(dash + 1, (size_t)(end - dash - 1)) : a;
		if (a < 0 || b < 0)
			return errprintf(err, "'%.*s' is not a day or a range of days: use mon, tue, wed, "
					 "thu, fri, sat, sun, e.g. mon-fri or sat,sun", (int)(end - p), p);
		/* fri-mon wraps over the week end. */
		for (int d = a;; d = (d + 1) % 7) {
			days[d] = true;
			if (d == b)
				break;
		}
		p = *end ? end + 1 : end;
	}
	return 0;
}

/* "HH:MM" with 00:00 <= t <= 24:00 into minutes of the day. */
static int parse_hhmm(const char *s, size_t n, int *out)
{
	int h, m;

	if (n != 5 || !isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]) || s[2] != ':' ||
	    !isdigit((unsigned char)s[3]) || !isdigit((unsigned char)s[4]))
		return -1;
	h = (s[0] - '0') * 10 + (s[1] - '0');
	m = (s[3] - '0') * 10 + (s[4] - '0');
	if (m > 59 || h > 24 || (h == 24 && m != 0))
		return -1;
	*out = h * 60 + m;
	return 0;
}

/* One "HH:MM-HH:MM" on the given days. A range that ends at or before its
 * start goes on past midnight: it belongs to the day it starts on. */
static int add_range(struct timewin *w, const bool days[7], const char *s, size_t n, char **err)
{
	const char *dash = memchr(s, '-', n);
	int from, to;

	if (!dash || parse_hhmm(s, (size_t)(dash - s), &from) < 0 ||
	    parse_hhmm(dash + 1, (size_t)(s + n - dash - 1), &to) < 0)
		return errprintf(err, "'%.*s' is not a time range: want HH:MM-HH:MM, e.g. 22:00-07:00 "
				 "or 00:00-24:00", (int)n, s);
	if (from == DAY_MIN)
		return errprintf(err, "'%.*s': a range cannot start at 24:00 (write 00:00)", (int)n, s);
	if (from == to)
		return errprintf(err, "'%.*s' starts where it ends: for a whole day write 00:00-24:00",
				 (int)n, s);
	for (int d = 0; d < 7; d++) {
		int len = to > from ? to - from : DAY_MIN - from + to;

		if (!days[d])
			continue;
		for (int i = 0; i < len; i++)
			set_bit(w, d * DAY_MIN + from + i);
	}
	return 0;
}

/* One part of a window: "[DAYS] RANGE[,RANGE...]". */
static int parse_part(struct timewin *w, char *part, char **err)
{
	bool days[7] = { true, true, true, true, true, true, true };
	char *save = NULL, *tok = strtok_r(part, " \t", &save);
	int nranges = 0;

	if (!tok)
		return errprintf(err, "an empty part between ';': remove the extra ';'");
	if (isalpha((unsigned char)tok[0])) {
		memset(days, 0, sizeof days);
		if (parse_days(tok, days, err) < 0)
			return -1;
		tok = strtok_r(NULL, " \t", &save);
	}
	for (; tok; tok = strtok_r(NULL, " \t", &save)) {
		char *p = tok;

		while (*p) {
			size_t n = strcspn(p, ",");

			if (n > 0) {
				if (add_range(w, days, p, n, err) < 0)
					return -1;
				nranges++;
			}
			p += n;
			if (*p == ',')
				p++;
		}
	}
	if (nranges == 0)
		return errprintf(err, "days without a time range: add one, e.g. sat,sun 00:00-24:00");
	return 0;
}

struct timewin *timewin_parse(const char *text, char **err)
{
	struct timewin *w = xcalloc(1, sizeof *w);
	char *copy = xstrdup(text ? text : ""), *save = NULL, *part;
	bool any = false;

	for (part = strtok_r(copy, ";", &save); part; part = strtok_r(NULL, ";", &save)) {
		if (parse_part(w, part, err) < 0)
			goto fail;
		any = true;
	}
	if (!any) {
		errprintf(err, "empty: want e.g. 22:00-07:00 or sat,sun 00:00-24:00; mon-fri 20:00-08:00");
		goto fail;
	}
	w->text = squeeze_blanks(text);
	free(copy);
	return w;
fail:
	free(copy);
	free(w);
	errno = EINVAL;
	return NULL;
}

void timewin_destroy(struct timewin *w)
{
	if (!w)
		return;
	free(w->text);
	free(w);
}

const char *timewin_text(const struct timewin *w)
{
	return w->text;
}

/* Minute of the week of ms, and the milliseconds since that minute began. */
static int week_minute(int64_t ms, int64_t *into)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;

	localtime_r(&secs, &tm);
	*into = (int64_t)tm.tm_sec * 1000 + ms % 1000;
	return ((tm.tm_wday + 6) % 7) * DAY_MIN + tm.tm_hour * 60 + tm.tm_min;
}

bool timewin_contains(const struct timewin *w, int64_t ms)
{
	int64_t into;

	return get_bit(w, week_minute(ms, &into));
}

int64_t timewin_next_change(const struct timewin *w, int64_t ms)
{
	int64_t into;
	int i0 = week_minute(ms, &into);
	bool cur = get_bit(w, i0);

	/* Minutes are added as 60 s each: on the two days a year the clocks
	 * change the answer is an hour off, but contains() is always exact. */
	for (int k = 1; k <= WEEK_MIN; k++)
		if (get_bit(w, i0 + k) != cur)
			return ms - into + (int64_t)k * 60000;
	return -1;
}

int timewin_parse_start(const char *text, int64_t *at_s, int64_t *in_s, char **err)
{
	static const char want[] = "want a local time such as 2026-12-24T22:00 or 2026-12-24, "
				   "or +DURATION such as +2h";
	struct tm tm = { 0 }, back;
	int y, mo, d, h = 0, mi = 0, s = 0, n = 0;
	uint64_t secs;
	time_t t;

	*at_s = *in_s = 0;
	if (text[0] == '+') {
		if (parse_duration(text + 1, &secs) < 0 || secs > (uint64_t)INT32_MAX) {
			errno = EINVAL;
			return errprintf(err, "not a duration after '+': %s", want);
		}
		*in_s = (int64_t)secs;
		return 0;
	}
	if (sscanf(text, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10)
		goto bad;
	if (text[n] == 'T' || text[n] == ' ') {
		int m = 0;

		if (sscanf(text + n + 1, "%2d:%2d%n", &h, &mi, &m) != 2 || m != 5)
			goto bad;
		n += 1 + m;
		if (text[n] == ':') {
			if (sscanf(text + n + 1, "%2d%n", &s, &m) != 1 || m != 2)
				goto bad;
			n += 1 + m;
		}
	}
	if (text[n] != '\0')
		goto bad;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = s;
	tm.tm_isdst = -1;
	back = tm;
	t = mktime(&tm);
	/* mktime() moves 2026-02-30 to March: a date that moved did not exist. */
	if (t == (time_t)-1 || tm.tm_year != back.tm_year || tm.tm_mon != back.tm_mon ||
	    tm.tm_mday != back.tm_mday || h > 23 || mi > 59 || s > 59) {
		errno = EINVAL;
		return errprintf(err, "that date and time do not exist");
	}
	*at_s = (int64_t)t;
	return 0;
bad:
	errno = EINVAL;
	return errprintf(err, "not a start time: %s", want);
}
