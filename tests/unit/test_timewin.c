/* Windows of the week and start times: what parses, what is refused with
 * which message, what is inside, and when a window opens or closes next. In
 * UTC, and across a clock change in Europe/Zurich. */
#include "tap.h"
#include "timewin.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

TAP_STATE;

/* Local time as epoch milliseconds. */
static int64_t at(int y, int mo, int d, int h, int mi)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
			 .tm_min = mi, .tm_isdst = -1 };

	return (int64_t)mktime(&tm) * 1000;
}

static void in_window(const char *text, int64_t ms, int want, const char *what)
{
	char *err = NULL;
	struct timewin *w = timewin_parse(text, &err);

	if (!w) {
		ok(0, "%s: '%s' parses (%s)", what, text, err);
		free(err);
		return;
	}
	is_int(timewin_contains(w, ms), want, "%s: '%s'", what, text);
	timewin_destroy(w);
}

static void refused(const char *text, const char *needle)
{
	char *err = NULL;
	struct timewin *w = timewin_parse(text, &err);

	ok(!w && errno == EINVAL, "'%s' is refused", text);
	ok(err && strstr(err, needle), "  message names '%s': %s", needle, err ? err : "(none)");
	timewin_destroy(w);
	free(err);
}

static void next_change(const char *text, int64_t from, int64_t want, const char *what)
{
	char *err = NULL;
	struct timewin *w = timewin_parse(text, &err);
	char a[64], b[64];
	int64_t got;

	if (!w) {
		ok(0, "%s: parses (%s)", what, err);
		free(err);
		return;
	}
	got = timewin_next_change(w, from);
	time_format_iso(got, a, sizeof a);
	time_format_iso(want, b, sizeof b);
	ok(got == want, "%s: next change %s (want %s)", what, a, b);
	timewin_destroy(w);
}

static void start(const char *text, int64_t want_at_s, int64_t want_in_s)
{
	int64_t at_s = -1, in_s = -1;
	char *err = NULL;

	if (timewin_parse_start(text, &at_s, &in_s, &err) < 0) {
		ok(0, "start '%s' parses (%s)", text, err);
		free(err);
		return;
	}
	ok(at_s == want_at_s && in_s == want_in_s, "start '%s' -> at %lld, in %lld", text,
	   (long long)at_s, (long long)in_s);
}

static void bad_start(const char *text)
{
	int64_t at_s, in_s;
	char *err = NULL;

	ok(timewin_parse_start(text, &at_s, &in_s, &err) < 0 && errno == EINVAL && err,
	   "start '%s' is refused: %s", text, err ? err : "(no message)");
	free(err);
}

int main(void)
{
	struct timewin *w;
	char *err = NULL;

	setenv("TZ", "UTC", 1);
	tzset();

	/* 2030-01-07 is a Monday. */
	in_window("22:00-07:00", at(2030, 1, 7, 23, 0), 1, "night, before midnight");
	in_window("22:00-07:00", at(2030, 1, 8, 6, 59), 1, "night, after midnight");
	in_window("22:00-07:00", at(2030, 1, 8, 7, 0), 0, "the end is not inside");
	in_window("22:00-07:00", at(2030, 1, 7, 21, 59), 0, "before the start");
	in_window("22:00-07:00", at(2030, 1, 7, 22, 0), 1, "the start is inside");
	in_window("00:00-24:00", at(2030, 1, 9, 12, 0), 1, "the whole day");
	in_window("sat,sun 00:00-24:00; mon-fri 20:00-08:00", at(2030, 1, 12, 13, 0), 1, "Saturday noon");
	in_window("sat,sun 00:00-24:00; mon-fri 20:00-08:00", at(2030, 1, 9, 13, 0), 0, "Wednesday noon");
	in_window("sat,sun 00:00-24:00; mon-fri 20:00-08:00", at(2030, 1, 9, 21, 0), 1, "Wednesday night");
	/* Friday's night goes on into Saturday; Sunday's night range is not there. */
	in_window("mon-fri 20:00-08:00", at(2030, 1, 12, 7, 0), 1, "Friday night into Saturday");
	in_window("mon-fri 20:00-08:00", at(2030, 1, 7, 7, 0), 0, "Monday morning (Sunday has no night)");
	in_window("fri-mon 10:00-11:00", at(2030, 1, 13, 10, 30), 1, "a range of days over the week end");
	in_window("fri-mon 10:00-11:00", at(2030, 1, 9, 10, 30), 0, "Wednesday is not in fri-mon");
	in_window("Mon-Fri 09:00-12:00,13:00-17:00", at(2030, 1, 8, 12, 30), 0, "lunch break");
	in_window("Mon-Fri 09:00-12:00,13:00-17:00", at(2030, 1, 8, 13, 30), 1, "afternoon");
	in_window("saturday 00:00-24:00", at(2030, 1, 12, 1, 0), 1, "full day names");
	in_window("  22:00-07:00  ", at(2030, 1, 7, 23, 0), 1, "blanks around");

	w = timewin_parse("sat,sun   00:00-24:00;mon-fri 20:00-08:00", &err);
	is_str(w ? timewin_text(w) : NULL, "sat,sun 00:00-24:00;mon-fri 20:00-08:00", "text keeps the rule, blanks squeezed");
	timewin_destroy(w);

	refused("", "empty");
	refused("22:00", "HH:MM-HH:MM");
	refused("22-07", "HH:MM-HH:MM");
	refused("25:00-07:00", "HH:MM-HH:MM");
	refused("22:60-07:00", "HH:MM-HH:MM");
	refused("mon-fry 20:00-08:00", "fry");
	refused("sat,sun", "without a time range");
	refused("08:00-08:00", "00:00-24:00");
	refused("24:00-08:00", "24:00");

	next_change("22:00-07:00", at(2030, 1, 7, 12, 0), at(2030, 1, 7, 22, 0), "opens at 22:00");
	next_change("22:00-07:00", at(2030, 1, 7, 23, 30), at(2030, 1, 8, 7, 0), "closes at 07:00");
	next_change("mon-fri 20:00-08:00", at(2030, 1, 12, 9, 0), at(2030, 1, 14, 20, 0),
		    "after Saturday morning it opens on Monday night");
	next_change("00:00-24:00", at(2030, 1, 7, 12, 0), -1, "always open never changes");
	next_change("22:00-07:00", at(2030, 1, 7, 12, 0) + 30500, at(2030, 1, 7, 22, 0),
		    "from within a minute: the minute boundary");

	start("2026-12-24T22:00", at(2026, 12, 24, 22, 0) / 1000, 0);
	start("2026-12-24T22:00:30", at(2026, 12, 24, 22, 0) / 1000 + 30, 0);
	start("2026-12-24 22:00", at(2026, 12, 24, 22, 0) / 1000, 0);
	start("2026-12-24", at(2026, 12, 24, 0, 0) / 1000, 0);
	start("+2h", 0, 7200);
	start("+1h30m", 0, 5400);
	bad_start("tomorrow");
	bad_start("2026-02-30T10:00");
	bad_start("2026-12-24T25:00");
	bad_start("2026-12-24T22");
	bad_start("+soon");
	bad_start("2026-12-24T22:00Z");

	/* Europe/Zurich: 2030-03-31 02:00 does not exist (clocks go to 03:00). */
	if (access("/usr/share/zoneinfo/Europe/Zurich", R_OK) == 0) {
		setenv("TZ", "Europe/Zurich", 1);
		tzset();
		in_window("01:00-04:00", at(2030, 3, 31, 3, 30), 1, "DST day: local 03:30 is inside");
		in_window("02:30-02:45", at(2030, 3, 31, 12, 0), 0, "DST day: noon is outside");
		in_window("mon-fri 20:00-08:00", at(2030, 3, 29, 21, 0), 1, "summer week: Friday night");
	} else {
		ok(1, "# SKIP no tzdata for Europe/Zurich");
	}
	return done_testing();
}
