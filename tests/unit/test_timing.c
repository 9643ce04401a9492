/* Time in the scheduling decisions (sched/policy/timing.c), on specs parsed as users
 * write them: a job's start (a date, or +DURATION from its submission) holds
 * every stage until then; a stage starts only inside its own window, else the
 * job's; the reasons `why` shows read as docs/spec.md says; a host outside
 * its window is closed until it opens, and inside it limits what may start to
 * what ends before it closes (unless the host drains at its end). The clock is
 * the caller's: these are moments passed in, in UTC for the test. */
#include "model.h"
#include "placement.h"
#include "spec.h"
#include "tap.h"
#include "timewin.h"
#include "timing.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

TAP_STATE;

#define MIN_MS (60 * 1000LL)
#define HOUR_MS (60 * MIN_MS)

/* Epoch ms of a UTC wall-clock time (TZ is UTC in this test). */
static int64_t at(int y, int mo, int d, int h, int mi)
{
	struct tm tm = { .tm_year = y - 1900, .tm_mon = mo - 1, .tm_mday = d, .tm_hour = h,
			 .tm_min = mi, .tm_isdst = 0 };

	return (int64_t)timegm(&tm) * 1000;
}

static struct job *job_of(const char *text, int64_t submitted_ms)
{
	char *err = NULL;
	struct spec *spec = spec_parse(text, strlen(text), "t.conf", &err);
	struct job *job;

	if (!spec) {
		diag("spec: %s", err ? err : "?");
		free(err);
		exit(1);
	}
	job = model_job_new(1, spec);
	job->submitted_ms = submitted_ms;
	return job;
}

static int starts_with(const char *text, const char *prefix)
{
	return strncmp(text, prefix, strlen(prefix)) == 0;
}

/* The reason stage s of job gives at now, or "open". */
static const char *reason(const struct job *job, size_t s, int64_t now, char *buf, size_t len)
{
	if (timing_stage_open(&job->stages[s], now, buf, len))
		snprintf(buf, len, "open");
	return buf;
}

static void test_start(void)
{
	int64_t christmas = at(2026, 12, 24, 22, 0), now = christmas - 3 * HOUR_MS - 12 * MIN_MS;
	struct job *job = job_of("[job]\nstart = 2026-12-24T22:00\n[stage a]\nrun = true\n", now);
	char buf[256];

	is_int(timing_job_start_ms(job), christmas, "start = a date: that moment");
	is_str(reason(job, 0, now, buf, sizeof buf), "starts at 2026-12-24T22:00:00 (in 3h12m)",
	       "before it, why says when (docs/spec.md)");
	is_str(reason(job, 0, christmas - 1, buf, sizeof buf), "starts at 2026-12-24T22:00:00 (in 1s)",
	       "a millisecond before, 'in 1s', never 'in 0s'");
	ok(!timing_stage_open(&job->stages[0], christmas - 1, NULL, 0), "no buffer: still closed");
	is_str(reason(job, 0, christmas, buf, sizeof buf), "open", "at the start it may run");
	model_job_free(job);

	now = at(2026, 11, 30, 14, 0);
	job = job_of("[job]\nstart = +2h\n[stage a]\nrun = true\n", now);
	is_int(timing_job_start_ms(job), now + 2 * HOUR_MS, "start = +2h counts from the submission");
	is_str(reason(job, 0, now + HOUR_MS, buf, sizeof buf), "starts at 2026-11-30T16:00:00 (in 1h)",
	       "an hour after the submission, an hour to go");
	is_str(reason(job, 0, now + 2 * HOUR_MS, buf, sizeof buf), "open", "two hours after, open");
	model_job_free(job);

	job = job_of("[stage a]\nrun = true\n", now);
	is_int(timing_job_start_ms(job), 0, "no start: 0");
	is_str(reason(job, 0, now, buf, sizeof buf), "open", "and open at once");
	model_job_free(job);
}

static void test_windows(void)
{
	/* Monday 2026-11-30. */
	int64_t afternoon = at(2026, 11, 30, 14, 0), night = at(2026, 11, 30, 23, 0);
	int64_t morning = at(2026, 12, 1, 7, 0), saturday = at(2026, 12, 5, 14, 0);
	struct job *job = job_of("[job]\nwindow = 22:00-07:00\n"
				 "[stage a]\nrun = true\n"
				 "[stage b]\nrun = true\nwindow = sat,sun 00:00-24:00\n", afternoon);
	char buf[256];

	is_str(timewin_text(timing_stage_window(&job->stages[0])), "22:00-07:00",
	       "a stage without a window has the job's");
	is_str(timewin_text(timing_stage_window(&job->stages[1])), "sat,sun 00:00-24:00",
	       "a stage's own window wins over the job's");
	is_str(reason(job, 0, afternoon, buf, sizeof buf),
	       "outside its window (22:00-07:00) until 2026-11-30T22:00:00 (in 8h)",
	       "outside the window, why says until when (docs/spec.md)");
	is_str(reason(job, 0, night, buf, sizeof buf), "open", "at night, inside");
	is_str(reason(job, 0, morning - 1, buf, sizeof buf), "open", "until just before 07:00");
	ok(starts_with(reason(job, 0, morning, buf, sizeof buf),
		       "outside its window (22:00-07:00) until 2026-12-01T22:00:00 "),
	   "the end is not in it: %s", buf);
	ok(starts_with(reason(job, 1, night, buf, sizeof buf),
		       "outside its window (sat,sun 00:00-24:00) until 2026-12-05T00:00:00 "),
	   "the week-end stage is closed on a Monday night (the job's window does not open it): %s",
	   buf);
	is_str(reason(job, 1, saturday, buf, sizeof buf), "open", "and open on Saturday afternoon");
	model_job_free(job);

	job = job_of("[job]\nstart = 2026-12-05T12:00\nwindow = 22:00-07:00\n[stage a]\nrun = true\n",
		     afternoon);
	ok(starts_with(reason(job, 0, night, buf, sizeof buf), "starts at 2026-12-05T12:00:00 "),
	   "inside the window but before the start, the start is the reason: %s", buf);
	ok(strstr(buf, ", then waits for its window (22:00-07:00) until 2026-12-05T22:00:00 ") != NULL,
	   "and the window that blocks it at its start comes next: %s", buf);
	model_job_free(job);

	job = job_of("[job]\nstart = 2026-12-05T23:00\nwindow = 22:00-07:00\n[stage a]\nrun = true\n",
		     afternoon);
	ok(starts_with(reason(job, 0, afternoon, buf, sizeof buf), "starts at 2026-12-05T23:00:00 ") &&
	   !strstr(buf, "window"), "a start inside the window: only the start: %s", buf);
	model_job_free(job);
}

static void test_hosts(void)
{
	int64_t afternoon = at(2026, 11, 30, 14, 0), night = at(2026, 11, 30, 23, 0);
	struct host h = { .name = "desk" };
	struct placement_host ph;
	char *err = NULL;

	memset(&ph, 0xff, sizeof ph);
	timing_host_fill(&h, afternoon, &ph);
	ok(!ph.closed && ph.window == NULL && ph.opens_ms == -1 && ph.closes_in_ms == 0,
	   "a host without a window is open and has no limit");
	ok(!timing_host_closed(&h, afternoon), "and is never closed");

	h.window = "22:00-06:00";
	h.win = timewin_parse(h.window, &err);
	ok(h.win != NULL, "the host's window parses (%s)", err ? err : "ok");
	ok(timing_host_closed(&h, afternoon), "in the afternoon it is closed");
	timing_host_fill(&h, afternoon, &ph);
	ok(ph.closed && ph.opens_ms == at(2026, 11, 30, 22, 0) && ph.closes_in_ms == 0,
	   "closed, opening at 22:00, for why");
	is_str(ph.window, "22:00-06:00", "with its window's text");

	ok(!timing_host_closed(&h, night), "at night it is open");
	timing_host_fill(&h, night, &ph);
	ok(!ph.closed && ph.closes_in_ms == 7 * HOUR_MS,
	   "open, and what starts must end within the 7 h left (work stops at its end)");
	h.window_drain = true;
	timing_host_fill(&h, night, &ph);
	ok(!ph.closed && ph.closes_in_ms == 0, "a host that drains at its end sets no such limit");
	timewin_destroy(h.win);
	free(err);
}

int main(void)
{
	setenv("TZ", "UTC", 1);
	tzset();
	test_start();
	test_windows();
	test_hosts();
	return done_testing();
}
