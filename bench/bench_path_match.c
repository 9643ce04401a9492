/* Measures the path matchers on their own: the mount's fs_match (every FUSE
 * callback matches its path against the tree first, so a `ls -l` of a big
 * folder or a build reading outputs pays it per call) and api_route_find
 * (every request to the scheduler's API, over all of its routes). The paths are the usual ones:
 * a job's files, a stage's instances, outputs, data, hosts, and a miss. Prints
 * "key: value" lines: fs_match_ns and route_match_ns, nanoseconds per call
 * (the best of 5 rounds, so that a busy host shows less). */
#include "fs_node.h"
#include "ops.h"
#include "api_paths.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char *const fs_paths[] = {
	"/", "/jobs", "/jobs/42", "/jobs/42/status", "/jobs/42/ctl", "/jobs/42/stages/main/status",
	"/jobs/42/stages/main/instances/3/log", "/jobs/42/out/main/part-00001.csv", "/data/a/b/c",
	"/hosts/node17/status", "/queue/job.yaml", "/schedules/nightly/ctl", "/jobs/42/nothing",
};

/* Requests to the API, made by its builders (lib/api_paths.h) in main. */
static const struct {
	enum api_route route;
	struct api_ref ref;
} api_requests[] = {
	{ API_JOB_CTL, { .id = 42 } },
	{ API_HOST_CTL, { .name = "node17" } },
	{ API_HOST_WORK, { .name = "node17" } },
	{ API_STAGE_STATUS, { .id = 42, .name = "a" } },
};
static char *api_paths[ARRAY_LEN(api_requests)];

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

/* One round of n requests, each found in the API's routes as the server
 * dispatches them (api_route_find); ns per request. */
static double route_round(long n, long *found)
{
	char buf[256];
	const char *args[4];
	bool known;
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		size_t k = (size_t)(i % (long)ARRAY_LEN(api_requests));

		*found += api_route_find(api_route_method(api_requests[k].route), api_paths[k], buf,
					 sizeof buf, args, 4, &known) >= 0;
	}
	return (now_ns() - t0) / (double)n;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000, found = 0;
	double fs_best = 1e18, route_best = 1e18;

	for (size_t k = 0; k < ARRAY_LEN(api_requests); k++)
		api_paths[k] = api_path(api_requests[k].route, &api_requests[k].ref);

	for (int round = 0; round < 5; round++) {
		double fs = fs_round(n, &found), route = route_round(n, &found);

		fs_best = fs < fs_best ? fs : fs_best;
		route_best = route < route_best ? route : route_best;
	}
	printf("calls_per_round: %ld\n", n);
	printf("matched: %ld\n", found);
	printf("fs_match_ns: %.1f\n", fs_best);
	printf("route_match_ns: %.1f\n", route_best);
	for (size_t k = 0; k < ARRAY_LEN(api_requests); k++)
		free(api_paths[k]);
	return 0;
}
