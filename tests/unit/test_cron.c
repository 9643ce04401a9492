/* `every`: cron lines and periods, what is refused, and the next run after a
 * moment, including the "either day field" rule, month ends, leap days and a
 * clock change. */
#include "cron.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

TAP_STATE;

static int64_t at(int y, int mo, int d, int h, int mi)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
			 .tm_min = mi, .tm_isdst = -1 };

	return (int64_t)mktime(&tm) * 1000;
}

static void next(const char *text, int64_t anchor, int64_t after, int64_t want, const char *what)
{
	char *err = NULL, a[64], b[64];
	struct every *e = every_parse(text, &err);
	int64_t got;

	if (!e) {
		ok(0, "%s: '%s' parses (%s)", what, text, err);
		free(err);
		return;
	}
	got = every_next(e, anchor, after);
	time_format_iso(got, a, sizeof a);
	time_format_iso(want, b, sizeof b);
	ok(got == want, "%s: '%s' next %s (want %s)", what, text, got < 0 ? "none" : a,
	   want < 0 ? "none" : b);
	every_destroy(e);
}

static void refused(const char *text, const char *needle)
{
	char *err = NULL;
	struct every *e = every_parse(text, &err);

	ok(!e && errno == EINVAL, "'%s' is refused", text);
	ok(err && strstr(err, needle), "  message names '%s': %s", needle, err ? err : "(none)");
	every_destroy(e);
	free(err);
}

int main(void)
{
	struct every *e;
	char *err = NULL;
	int64_t mon = at(2030, 1, 7, 12, 0); /* Monday 2030-01-07 12:00 */

	setenv("TZ", "UTC", 1);
	tzset();

	next("0 2 * * *", 0, mon, at(2030, 1, 8, 2, 0), "daily at 02:00");
	next("0 2 * * *", 0, at(2030, 1, 8, 2, 0), at(2030, 1, 9, 2, 0), "strictly after");
	next("*/15 * * * *", 0, mon, at(2030, 1, 7, 12, 15), "every quarter hour");
	next("5/15 * * * *", 0, mon, at(2030, 1, 7, 12, 5), "from 5 in steps of 15");
	next("30 9 * * mon-fri", 0, at(2030, 1, 11, 10, 0), at(2030, 1, 14, 9, 30), "weekdays skip the week end");
	next("0 0 * * 7", 0, mon, at(2030, 1, 13, 0, 0), "7 is Sunday");
	next("0 0 * * SUN", 0, mon, at(2030, 1, 13, 0, 0), "names are case-insensitive");
	next("0 0 1,15 * *", 0, mon, at(2030, 1, 15, 0, 0), "a list of days");
	next("0 0 31 * *", 0, at(2030, 1, 31, 1, 0), at(2030, 3, 31, 0, 0), "months without a 31st are skipped");
	next("0 0 29 feb *", 0, mon, at(2032, 2, 29, 0, 0), "leap day");
	next("0 0 13 * fri", 0, mon, at(2030, 1, 11, 0, 0), "both day fields: either matches");
	next("0 12 * jun-aug *", 0, mon, at(2030, 6, 1, 12, 0), "a range of months");
	next("@hourly", 0, mon, at(2030, 1, 7, 13, 0), "@hourly");
	next("@daily", 0, mon, at(2030, 1, 8, 0, 0), "@daily");
	next("@weekly", 0, mon, at(2030, 1, 13, 0, 0), "@weekly (Sunday)");
	next("@monthly", 0, mon, at(2030, 2, 1, 0, 0), "@monthly");

	/* Periods count from the anchor; a missed run is not made up. */
	next("6h", mon, mon, mon + 6 * 3600000LL, "a period after its anchor");
	next("6h", mon, mon + 6 * 3600000LL, mon + 12 * 3600000LL, "the next period, strictly after");
	next("6h", mon, mon + 31 * 3600000LL, mon + 36 * 3600000LL, "periods missed: the next one only");
	next("90m", mon, mon - 1000, mon + 90 * 60000LL, "before the anchor: anchor + period");
	next("1d", mon, mon + 1, mon + 86400000LL, "a day");

	e = every_parse("  0   2 * *   *", &err);
	is_str(e ? every_text(e) : NULL, "0 2 * * *", "text with blanks squeezed");
	is_int(e ? (long long)every_period_s(e) : -1, 0, "a cron line has no period");
	every_destroy(e);
	e = every_parse("6h", &err);
	is_int(e ? (long long)every_period_s(e) : -1, 6 * 3600, "6h is 21600 s");
	every_destroy(e);

	refused("", "empty");
	refused("30s", "shorter than a minute");
	refused("soon", "neither a period");
	refused("0 2 * *", "five fields");
	refused("0 2 * * * *", "five fields");
	refused("60 * * * *", "minute");
	refused("0 24 * * *", "hour");
	refused("0 0 0 * *", "day of the month");
	refused("0 0 * 13 *", "month");
	refused("0 0 * * fry", "day of the week");
	refused("*/0 * * * *", "step");
	refused("0 0 5-1 * *", "day of the month");
	refused("0 0 30 feb *", "never matches");
	refused("@often", "@hourly");
	refused("1,,2 * * * *", "minute");

	/* Europe/Zurich: on 2030-03-31 02:30 does not exist; 02:30 daily runs
	 * at the first moment after the gap instead of being lost. */
	if (access("/usr/share/zoneinfo/Europe/Zurich", R_OK) == 0) {
		setenv("TZ", "Europe/Zurich", 1);
		tzset();
		next("30 2 * * *", 0, at(2030, 3, 30, 3, 0), at(2030, 4, 1, 2, 30),
		     "a time lost to the clock change is skipped, the next day runs");
		next("0 12 * * *", 0, at(2030, 3, 30, 13, 0), at(2030, 3, 31, 12, 0),
		     "noon on the day the clocks change");
	} else {
		ok(1, "# SKIP no tzdata for Europe/Zurich");
	}
	return done_testing();
}
