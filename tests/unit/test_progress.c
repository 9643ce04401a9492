/* Progress: what the runner makes of what an instance writes to
 * $PARSA_PROGRESS, and how the scheduler sums a stage's instances (a fan-out,
 * files:N, instances that have not reported) into DONE/TOTAL, a rate and an
 * estimated end. */
#include "model.h"
#include "progress.h"
#include "stage_progress.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

TAP_STATE;

/* The text on one line, for the test's name. */
static const char *shown(const char *text)
{
	static char buf[128];
	size_t n = 0;

	for (; *text && n + 3 < sizeof buf; text++) {
		if (*text == '\n' || *text == '\r') {
			buf[n++] = '\\';
			buf[n++] = *text == '\n' ? 'n' : 'r';
		} else {
			buf[n++] = *text;
		}
	}
	buf[n] = '\0';
	return buf;
}

static void parses(const char *text, double done, double total)
{
	double d = -1, t = -1;

	ok(progress_parse(text, strlen(text), &d, &t) == 0 && d == done && t == total,
	   "'%s' -> %g/%g", shown(text), done, total);
}

static void refused(const char *text)
{
	double d, t;

	ok(progress_parse(text, strlen(text), &d, &t) < 0, "'%s' is not progress", shown(text));
}

/* A job of one stage with n instances, started at t0. */
static struct job *job_of(const char *spec_text, size_t n, int64_t t0)
{
	char *err = NULL;
	struct spec *spec = spec_parse(spec_text, strlen(spec_text), "p.conf", &err);
	struct job *job;

	if (!spec) {
		ok(0, "spec parses: %s", err);
		free(err);
		exit(1);
	}
	job = model_job_new(1, spec);
	for (size_t i = 0; i < n; i++)
		model_stage_new_instance(&job->stages[0], (int64_t)i + 1, "");
	job->stages[0].started_ms = t0;
	job->stages[0].state = STAGE_RUNNING;
	return job;
}

static void report(struct instance *inst, double done, double total)
{
	inst->progress_done = done;
	inst->progress_total = total;
	inst->progress_ms = 1;
}

int main(void)
{
	struct stage_progress p;
	struct job *job;
	struct stage *st;
	char line[256];
	int64_t t0 = 1000000000LL;

	is_str(stage_progress_rate(320.4, line, sizeof line), "320", "a rate: whole above 100");
	is_str(stage_progress_rate(8.54, line, sizeof line), "8.5", "one decimal above 1");
	is_str(stage_progress_rate(0.05, line, sizeof line), "0.05", "two digits below 1");
	parses("37/200", 37, 200);
	parses("37 / 200\n", 37, 200);
	parses("1/10\n2/10\n3/10\n", 3, 10);
	parses("18%", 18, 100);
	parses("18.5", 18.5, 100);
	parses("5/20\r\n\n  \n", 5, 20);
	parses("0/7", 0, 7);
	refused("");
	refused("\n\n");
	refused("half");
	refused("3/0");
	refused("-1/5");
	refused("3/5 done");
	refused("1/10\nnonsense\n");

	/* One instance: its own figures, a rate since the stage started, an end. */
	job = job_of("[stage s]\nrun = x\n", 1, t0);
	st = &job->stages[0];
	stage_progress_get(st, t0 + 10000, &p);
	ok(!p.known, "nothing reported: nothing known");
	report(st->inst[0], 37, 200);
	stage_progress_get(st, t0 + 10000, &p);
	ok(p.known && p.done == 37 && p.total == 200, "37/200");
	ok(p.rate_per_s > 3.69 && p.rate_per_s < 3.71, "3.7 per second over 10 s (%g)", p.rate_per_s);
	ok(p.eta_ms == t0 + 10000 + (int64_t)(163 / 3.7 * 1000), "the end at that rate");
	stage_progress_format(&p, t0 + 10000, line, sizeof line);
	ok(strncmp(line, "37/200 (18%), 3.7/s, estimated end ", 35) == 0, "%s", line);
	model_job_free(job);

	/* A fan-out of 4: two report, one has succeeded without reporting, one
	 * has not started. Unreported ones count as the average size. */
	job = job_of("[stage s]\ninstances = 4\nrun = x\n", 4, t0);
	st = &job->stages[0];
	report(st->inst[0], 5, 10);
	report(st->inst[1], 15, 30);
	st->inst[2]->state = INST_SUCCEEDED;
	stage_progress_get(st, t0 + 1000, &p);
	ok(p.known && p.done == 20 + 20 && p.total == 40 + 40, "sum with averages: %g/%g", p.done, p.total);
	ok(p.reporting == 2, "two reported");
	st->inst[0]->state = INST_SUCCEEDED;
	stage_progress_get(st, t0 + 1000, &p);
	ok(p.done == 25 + 20 && p.total == 80, "a succeeded instance counts as done: %g/%g", p.done, p.total);
	model_job_free(job);

	/* files:N: every instance counts the same folder; the stage's figure is
	 * the largest count, out of N. */
	job = job_of("[stage s]\ninstances = 3\nprogress = files:9\nrun = x\n", 3, t0);
	st = &job->stages[0];
	report(st->inst[0], 4, 9);
	report(st->inst[1], 6, 9);
	stage_progress_get(st, t0 + 1000, &p);
	ok(p.done == 6 && p.total == 9, "files:9 -> 6/9 (%g/%g)", p.done, p.total);
	model_job_free(job);

	/* An ended stage has no estimated end. */
	job = job_of("[stage s]\nrun = x\n", 1, t0);
	st = &job->stages[0];
	report(st->inst[0], 10, 10);
	st->state = STAGE_SUCCEEDED;
	stage_progress_get(st, t0 + 1000, &p);
	ok(p.known && p.eta_ms == 0 && p.percent == 100, "done: 100%%, no estimated end");
	instance_progress_format(st->inst[0], line, sizeof line);
	is_str(line, "10/10 (100%)", "the instance's own figures");
	model_job_free(job);
	return done_testing();
}
