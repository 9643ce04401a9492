/* The clock: the system clock without a file; a clock file moves it by an
 * offset or sets it to a time that flows on; a change of the file is seen at
 * once; a bad file keeps the last good time; the monotonic time moves too. */
#include "clock.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

TAP_STATE;

static void write_clock(const char *path, const char *text)
{
	char tmp[512];
	FILE *f;

	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) == EOF || fclose(f) == EOF || rename(tmp, path) < 0)
		ok(0, "cannot write %s", path);
}

static int near(int64_t got, int64_t want, int64_t slack)
{
	return got >= want - slack && got <= want + slack;
}

int main(void)
{
	char dir[] = "/tmp/parsa-test-clock.XXXXXX", path[512];
	struct clock *c;
	int64_t off;

	setenv("TZ", "UTC", 1);
	tzset();
	ok(near(clock_now_ms(NULL), time_now_ms(), 50), "no clock: the system clock");
	ok(near(clock_mono_ms(NULL), time_mono_ms(), 50), "no clock: the monotonic clock");

	ok(clock_parse("+1h", 0, &off) == 0 && off == 3600000, "+1h is an hour ahead");
	ok(clock_parse("-90s\n", 0, &off) == 0 && off == -90000, "-90s is behind, newline ignored");
	ok(clock_parse("+3600", 0, &off) == 0 && off == 3600000, "plain seconds");
	ok(clock_parse("", 0, &off) == 0 && off == 0, "empty: the system clock");
	ok(clock_parse("@1000", 400000, &off) == 0 && off == 1000000 - 400000,
	   "@EPOCH flows from the file's time");
	ok(clock_parse("1970-01-01T00:16:40", 400000, &off) == 0 && off == 600000,
	   "a local time flows from the file's time");
	ok(clock_parse("yesterday", 0, &off) < 0 && errno == EINVAL, "nonsense is refused");
	ok(clock_parse("+2026-01-01", 0, &off) < 0, "a date after + is refused");

	if (!mkdtemp(dir))
		return ok(0, "mkdtemp"), done_testing();
	snprintf(path, sizeof path, "%s/clock", dir);
	c = clock_create(path);
	ok(near(clock_now_ms(c), time_now_ms(), 50), "a missing file: the system clock");
	write_clock(path, "+1h\n");
	ok(near(clock_now_ms(c), time_now_ms() + 3600000, 50), "the file moves the clock an hour");
	ok(near(clock_mono_ms(c), time_mono_ms() + 3600000, 50), "and the monotonic clock with it");
	write_clock(path, "+2h\n");
	ok(near(clock_now_ms(c), time_now_ms() + 7200000, 50), "a new file is seen at once");
	write_clock(path, "2030-01-07T06:59:58\n");
	ok(near(clock_now_ms(c), 1893999598000LL, 1000), "an absolute time (UTC here)");
	write_clock(path, "garbage\n");
	ok(near(clock_now_ms(c), 1893999598000LL, 1000), "a bad file keeps the last good time");
	unlink(path);
	ok(near(clock_now_ms(c), time_now_ms(), 50), "a removed file: the system clock again");
	clock_destroy(c);
	rmdir(dir);
	return done_testing();
}
