/* Measures the path matchers on their own: the mount's fs_match (every FUSE
 * callback matches its path against the tree first, so a `ls -l` of a big
 * folder or a build reading outputs pays it per call) and route_match (every
 * request to the scheduler's API and web page). The paths are the usual ones:
 * a job's files, a stage's instances, outputs, data, hosts, and a miss. Prints
 * "key: value" lines: fs_match_ns and route_match_ns, nanoseconds per call
 * (the best of 5 rounds, so that a busy host shows less). */
#include "fs_node.h"
#include "ops.h"
#include "route.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char *const fs_paths[] = {
	"/", "/jobs", "/jobs/42", "/jobs/42/status", "/jobs/42/ctl", "/jobs/42/stages/main/status",
	"/jobs/42/stages/main/instances/3/log", "/jobs/42/out/main/part-00001.csv", "/data/a/b/c",
	"/hosts/node17/status", "/queue/job.yaml", "/schedules/nightly/ctl", "/jobs/42/nothing",
};

static const char *const api_patterns[] = {
	"/v1/jobs", "/v1/jobs/*", "/v1/jobs/*/status", "/v1/jobs/*/ctl", "/v1/jobs/*/stages/*/status",
	"/v1/hosts/*/ctl", "/v1/runners/*/work",
};
static const char *const api_paths[] = {
	"/v1/jobs/42/ctl", "/v1/hosts/node17/ctl", "/v1/runners/node17/work", "/v1/jobs/42/stages/a/status",
};

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One round of n fs_match calls over fs_paths; ns per call. */
static double fs_round(long n, long *found)
{
	struct fs_path p;
	double t0 = now_ns();

	for (long i = 0; i < n; i++)
		*found += fs_match(fs_paths[i % (long)ARRAY_LEN(fs_paths)], &p) == 0;
	return (now_ns() - t0) / (double)n;
}

/* One round of n requests, each tried against the patterns in order as the
 * API's table is; ns per request. */
static double route_round(long n, long *found)
{
	char buf[256];
	const char *args[4];
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		const char *path = api_paths[i % (long)ARRAY_LEN(api_paths)];

		for (size_t r = 0; r < ARRAY_LEN(api_patterns); r++)
			if (route_match(api_patterns[r], path, buf, sizeof buf, args, 4)) {
				(*found)++;
				break;
			}
	}
	return (now_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000, found = 0;
	double fs_best = 1e18, route_best = 1e18;

	for (int round = 0; round < 5; round++) {
		double fs = fs_round(n, &found), route = route_round(n, &found);

		fs_best = fs < fs_best ? fs : fs_best;
		route_best = route < route_best ? route : route_best;
	}
	printf("calls_per_round: %ld\n", n);
	printf("matched: %ld\n", found);
	printf("fs_match_ns: %.1f\n", fs_best);
	printf("route_match_ns: %.1f\n", route_best);
	return 0;
}
