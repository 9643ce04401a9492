/* Measures parsa's submission path through a mounted /parsa: submissions per
 * second (open/write/close into queue/ in one process, each acknowledged only
 * after the scheduler committed it), submit-to-start latency on an idle
 * machine, the hand-off from a stage's end to its dependent's start, and how
 * many trivial jobs finish per second. Prints "key: value" lines. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int submit(const char *mount, const char *name, const char *spec)
{
	char *path = xasprintf("%s/queue/%s", mount, name);
	int fd, rc = -1;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		goto out;
	if (write_all(fd, spec, strlen(spec)) < 0) {
		close(fd);
		goto out;
	}
	rc = close(fd);
out:
	if (rc < 0)
		fprintf(stderr, "bench: submitting %s: %s\n", path, strerror(errno));
	free(path);
	return rc;
}

/* jobs submissions of spec in a row, as PREFIX-<i>.conf. */
static int burst(const char *mount, const char *prefix, const char *spec, int jobs)
{
	for (int i = 0; i < jobs; i++) {
		char name[64];

		snprintf(name, sizeof name, "%s-%d.conf", prefix, i);
		if (submit(mount, name, spec) < 0)
			return -1;
	}
	return 0;
}

static long last_job(const char *mount)
{
	char *path = xasprintf("%s/jobs/last", mount);
	char buf[64];
	ssize_t n = readlink(path, buf, sizeof buf - 1);

	free(path);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

static int wait_job(const char *mount, long id)
{
	char *path = xasprintf("%s/jobs/%ld/wait", mount, id);
	char *state = read_file(path, 4096, NULL);
	int ok = state && strncmp(state, "succeeded", 9) == 0;

	if (!ok)
		fprintf(stderr, "bench: job %ld ended %s\n", id, state ? state : strerror(errno));
	free(state);
	free(path);
	return ok ? 0 : -1;
}

static int64_t read_stamp(const char *mount, long id, const char *rel)
{
	char *path = xasprintf("%s/jobs/%ld/out/%s", mount, id, rel);
	char *text = read_file(path, 4096, NULL);
	int64_t v = text ? strtoll(text, NULL, 10) : -1;

	free(text);
	free(path);
	return v;
}

static int64_t job_ended_ms(const char *mount, long id)
{
	char *path = xasprintf("%s/jobs/%ld/status.json", mount, id);
	char *text = read_file(path, 1 << 20, NULL);
	json_t *root = text ? json_loads(text, 0, NULL) : NULL;
	int64_t v = root ? json_integer_value(json_object_get(root, "ended_ms")) : -1;

	json_decref(root);
	free(text);
	free(path);
	return v;
}

/* The stage's start (its first instance given to a runner) and end, as the
 * scheduler recorded them in the job's status.json: the same fields in every
 * build since the first, so an older scheduler can be measured alike. */
static int stage_span_ms(const char *mount, long id, int64_t *started, int64_t *ended)
{
	char *path = xasprintf("%s/jobs/%ld/status.json", mount, id);
	char *text = read_file(path, 1 << 20, NULL);
	json_t *root = text ? json_loads(text, 0, NULL) : NULL;
	json_t *stage = json_array_get(json_object_get(root, "stages"), 0);
	int rc = -1;

	*started = json_integer_value(json_object_get(stage, "started_ms"));
	*ended = json_integer_value(json_object_get(stage, "ended_ms"));
	if (*started > 0 && *ended >= *started)
		rc = 0;
	else
		fprintf(stderr, "bench: job %ld: no stage start and end in %s\n", id, path);
	json_decref(root);
	free(text);
	free(path);
	return rc;
}

/* Stages of the fan-out measured: their median is the figure (one stage
 * takes about 2 s here, and a neighbour's burst moves one by a third). */
#define STAGE_RUNS 3

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double percentile(double *v, int n, double p)
{
	int i;

	qsort(v, (size_t)n, sizeof *v, cmp_double);
	i = (int)(p * (n - 1) + 0.5);
	return v[i];
}

int main(int argc, char **argv)
{
	const char *mount = NULL;
	int jobs = 200, samples = 30, stage_n = 1000, opt;
	double *lat = NULL, *hand = NULL;
	int64_t t0, t1, t2, t3, last_end = 0, stage_start, stage_end;
	double stage_rate[STAGE_RUNS];
	long first, last, stage_job;
	char *fanout = NULL;
	int rc = 1;
	static const struct option longopts[] = {
		{ "mount", required_argument, NULL, 'm' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "samples", required_argument, NULL, 's' },
		{ "stage", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	static const char trivial[] = "[stage t]\nrun = true\n";
	/* Waits an hour to start: the held burst measures the submission path
	 * alone, as bench/submit's cp loops do, with no instance of its own
	 * running beside it. */
	static const char held[] = "[job]\nstart = +1h\n[stage t]\nrun = true\n";
	static const char stamp[] = "[stage t]\nrun = date +%s%N > \"$PARSA_OUT/start\"\n";
	static const char pair[] =
		"[stage a]\nrun = date +%s%N > \"$PARSA_OUT/end\"\n"
		"[stage b]\nafter = a\nrun = date +%s%N > \"$PARSA_OUT/start\"\n";

	while ((opt = getopt_long(argc, argv, "m:j:s:n:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'm': mount = optarg; break;
		case 'j': jobs = atoi(optarg); break;
		case 's': samples = atoi(optarg); break;
		case 'n': stage_n = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: bench_submit --mount DIR [--jobs N] [--samples N] [--stage N]\n");
			return 2;
		}
	}
	if (!mount || jobs < 1 || samples < 1 || stage_n < 1) {
		fprintf(stderr, "usage: bench_submit --mount DIR [--jobs N] [--samples N] [--stage N]\n");
		return 2;
	}
	lat = xcalloc((size_t)samples, sizeof *lat);
	hand = xcalloc((size_t)samples, sizeof *hand);

	/* Latency on an idle machine: one job at a time. */
	for (int i = 0; i < samples; i++) {
		long id;
		int64_t sent = now_ns(), started;

		if (submit(mount, "lat.conf", stamp) < 0 || (id = last_job(mount)) < 0 ||
		    wait_job(mount, id) < 0 || (started = read_stamp(mount, id, "t/start")) < 0)
			goto out;
		lat[i] = (double)(started - sent) / 1e6;
	}
	for (int i = 0; i < samples; i++) {
		long id;
		int64_t end, start;

		if (submit(mount, "pair.conf", pair) < 0 || (id = last_job(mount)) < 0 ||
		    wait_job(mount, id) < 0)
			goto out;
		end = read_stamp(mount, id, "a/end");
		start = read_stamp(mount, id, "b/start");
		if (end < 0 || start < 0)
			goto out;
		hand[i] = (double)(start - end) / 1e6;
	}

	/* Throughput: a burst of trivial jobs that start at once, then wait for
	 * all of them (drain_per_s; the burst's own rate is submit_running_per_s,
	 * submissions while the first of them already run). */
	t0 = now_ns();
	if (burst(mount, "burst", trivial, jobs) < 0)
		goto out;
	t1 = now_ns();
	last = last_job(mount);
	first = last - jobs + 1;
	for (long id = first; id <= last; id++) {
		int64_t e;

		if (wait_job(mount, id) < 0)
			goto out;
		e = job_ended_ms(mount, id);
		if (e > last_end)
			last_end = e;
	}

	/* Each instance's cost: one stage of stage_n instances of `true`, from
	 * the stage's start to its end as the scheduler recorded them (no shell
	 * or submission in the span). */
	fanout = xasprintf("[stage t]\ninstances = %d\nrun = true\n", stage_n);
	for (int i = 0; i < STAGE_RUNS; i++) {
		if (submit(mount, "fanout.conf", fanout) < 0 || (stage_job = last_job(mount)) < 0 ||
		    wait_job(mount, stage_job) < 0 ||
		    stage_span_ms(mount, stage_job, &stage_start, &stage_end) < 0)
			goto out;
		stage_rate[i] = stage_n / ((double)(stage_end - stage_start + (stage_end == stage_start)) / 1e3);
	}

	/* The submission path alone: the same burst of jobs that wait. */
	t2 = now_ns();
	if (burst(mount, "held", held, jobs) < 0)
		goto out;
	t3 = now_ns();

	printf("jobs: %d\n", jobs);
	printf("samples: %d\n", samples);
	printf("handoff_ms_p99: %.2f\n", percentile(hand, samples, 0.99));
	printf("submit_per_s: %.1f\n", jobs / ((double)(t3 - t2) / 1e9));
	printf("submit_running_per_s: %.1f\n", jobs / ((double)(t1 - t0) / 1e9));
	printf("start_ms_p50: %.2f\n", percentile(lat, samples, 0.50));
	printf("start_ms_p99: %.2f\n", percentile(lat, samples, 0.99));
	printf("handoff_ms_p50: %.2f\n", percentile(hand, samples, 0.50));
	printf("drain_per_s: %.1f\n", jobs / ((double)(last_end * 1000000 - t0) / 1e9));
	printf("stage_instances: %d\n", stage_n);
	printf("stage1000_per_s: %.1f\n", percentile(stage_rate, STAGE_RUNS, 0.5));
	rc = 0;
out:
	free(fanout);
	free(lat);
	free(hand);
	return rc;
}
