/* The spec keys of time and progress: [job] start, window, every, notify and
 * [stage] window, progress. What they parse to, the file:line errors for bad
 * values, and that the JSON form reads back what it wrote (and still reads
 * specs stored before these keys existed). */
#include "spec.h"
#include "tap.h"
#include "timewin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

TAP_STATE;

static struct spec *parse(const char *text, char **err)
{
	return spec_parse(text, strlen(text), "t.conf", err);
}

static void expect_error(const char *text, const char *want)
{
	char *err = NULL;
	struct spec *spec = parse(text, &err);

	ok(!spec && errno == EINVAL, "refused: %s", want);
	if (!err || !strstr(err, want))
		diag("got: %s", err ? err : "(no message)");
	ok(err && strstr(err, want), "message: %s", want);
	spec_destroy(spec);
	free(err);
}

static int64_t local_s(int y, int mo, int d, int h, int mi)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
			 .tm_min = mi, .tm_isdst = -1 };

	return (int64_t)mktime(&tm);
}

static void round_trip(const struct spec *spec, const char *what)
{
	json_t *a = spec_to_json(spec), *b = NULL;
	struct spec *back;
	char *err = NULL, *ta = NULL, *tb = NULL;

	back = a ? spec_from_json(a, &err) : NULL;
	if (back)
		b = spec_to_json(back);
	ta = a ? json_dumps(a, JSON_SORT_KEYS) : NULL;
	tb = b ? json_dumps(b, JSON_SORT_KEYS) : NULL;
	ok(ta && tb && strcmp(ta, tb) == 0, "%s: the JSON form reads back the same (%s)", what,
	   err ? err : "ok");
	free(ta);
	free(tb);
	free(err);
	json_decref(a);
	json_decref(b);
	spec_destroy(back);
}

int main(void)
{
	struct spec *spec;
	char *err = NULL;
	json_t *json;

	setenv("TZ", "UTC", 1);
	tzset();

	spec = parse("[vars]\nn = 200\nw = 22:00-07:00\n"
		     "[job]\nstart = 2026-12-24T22:00\nwindow = ${w}\n"
		     "notify = exec:/usr/local/bin/tell | mail:alice@example.org\n"
		     "[stage warm]\nrun = x\nprogress = files:${n}\n"
		     "window = sat,sun 00:00-24:00; mon-fri 20:00-08:00\n"
		     "[stage next]\nafter = warm\nrun = y\n", &err);
	ok(spec != NULL, "a spec with every time key parses (%s)", err ? err : "ok");
	if (spec) {
		is_int(spec->start_at_s, local_s(2026, 12, 24, 22, 0), "start is local time");
		is_int(spec->start_in_s, 0, "no relative start");
		is_str(spec->window, "22:00-07:00", "the job's window, ${vars} expanded");
		ok(spec->win && timewin_contains(spec->win, local_s(2030, 1, 7, 23, 0) * 1000),
		   "the job's window is parsed");
		is_int(spec->nnotify, 2, "two notify targets");
		is_str(spec->nnotify > 1 ? spec->notify[1] : NULL, "mail:alice@example.org", "mail target");
		is_int(spec->stages[0].progress_files, 200, "progress = files:${n}");
		is_str(spec->stages[0].window, "sat,sun 00:00-24:00; mon-fri 20:00-08:00", "stage window");
		ok(spec->stages[1].window == NULL && spec->stages[1].win == NULL, "a stage without window has none");
		ok(spec->every == NULL, "no every");
		round_trip(spec, "time keys");
	}
	spec_destroy(spec);

	spec = parse("[job]\nstart = +2h\nevery = 0 2 * * *\n[stage a]\nrun = x\n", &err);
	ok(spec && spec->start_in_s == 7200 && spec->start_at_s == 0, "start = +2h is relative");
	ok(spec && spec->every && strcmp(spec->every, "0 2 * * *") == 0 && spec->every_line == 3,
	   "every keeps its text and line");
	if (spec)
		round_trip(spec, "every and a relative start");
	spec_destroy(spec);

	spec = parse("[job]\nevery = 6h\n[stage a]\nrun = x\n", &err);
	ok(spec && spec->every && strcmp(spec->every, "6h") == 0, "every = 6h");
	spec_destroy(spec);

	expect_error("[job]\nstart = tomorrow\n[stage a]\nrun = x\n",
		     "t.conf:2: start = tomorrow: not a start time: want a local time such as 2026-12-24T22:00");
	expect_error("[job]\nstart = 2026-02-30T10:00\n[stage a]\nrun = x\n",
		     "t.conf:2: start = 2026-02-30T10:00: that date and time do not exist");
	expect_error("[job]\nwindow = 22:00-7:00\n[stage a]\nrun = x\n",
		     "t.conf:2: window = 22:00-7:00: '22:00-7:00' is not a time range: want HH:MM-HH:MM");
	expect_error("[stage a]\nrun = x\nwindow = mon-fry 20:00-08:00\n",
		     "t.conf:3: window = mon-fry 20:00-08:00: 'mon-fry' is not a day or a range of days");
	expect_error("[job]\nevery = 0 2 * *\n[stage a]\nrun = x\n",
		     "t.conf:2: every = 0 2 * *: a cron line has five fields");
	expect_error("[job]\nevery = 10s\n[stage a]\nrun = x\n",
		     "t.conf:2: every = 10s: '10s' is shorter than a minute");
	expect_error("[job]\nnotify = sms:12345\n[stage a]\nrun = x\n",
		     "t.conf:2: notify: 'sms:12345' is not exec:/absolute/path/to/program or mail:user@host");
	expect_error("[job]\nnotify = exec:relative/path\n[stage a]\nrun = x\n",
		     "t.conf:2: notify: 'exec:relative/path' is not exec:/absolute/path/to/program");
	expect_error("[stage a]\nrun = x\nprogress = 200\n",
		     "t.conf:3: progress = 200: want files:N");
	expect_error("[stage a]\nrun = x\nprogress = files:0\n", "t.conf:3: progress = files:0: want files:N");
	expect_error("[stage a]\nrun = x\nprogres = files:3\n",
		     "t.conf:3: unknown key 'progres' in [stage a] (did you mean 'progress'?)");
	expect_error("[job]\nstrat = +1h\n[stage a]\nrun = x\n",
		     "t.conf:2: unknown key 'strat' in [job] (did you mean 'start'?)");
	expect_error("[stage a]\nrun = x\nevery = 1h\n",
		     "t.conf:3: unknown key 'every' in [stage a]: it belongs in [job]");

	/* A spec stored before these keys existed has none of their members. */
	json = json_pack("{s:s, s:n, s:i, s:[], s:[{s:s, s:i, s:s, s:i, s:I, s:I, s:I, s:i, s:[], "
			 "s:n, s:I, s:i, s:[], s:[]}]}", "name", "old", "team", "priority", 0, "after",
			 "stages", "name", "a", "line", 1, "run", "x", "cpus", 1, "mem", (json_int_t)0,
			 "disk", (json_int_t)0, "scratch", (json_int_t)0, "instances", 1, "after",
			 "foreach", "walltime_s", (json_int_t)0, "retries", 0, "hosts", "env");
	spec = spec_from_json(json, &err);
	ok(spec && !spec->window && !spec->every && spec->nnotify == 0 && spec->start_at_s == 0 &&
	   spec->stages[0].progress_files == 0 && !spec->stages[0].window,
	   "an older stored spec still reads, with no time keys (%s)", err ? err : "ok");
	spec_destroy(spec);
	json_decref(json);
	free(err);
	return done_testing();
}
