/* Measures the scheduler's full scheduling pass (dependencies, fair share,
 * placement, the commit of the assignments) with many hosts and a long queue,
 * through the real API of a running parsa-sched: it registers simulated hosts,
 * queues jobs of several teams until QUEUED instances wait beyond what the
 * hosts can hold, then plays the hosts' runners (work polls, running and
 * exited reports, heartbeats listing what they run) so that every pass has
 * free slots to fill from the long queue. The pass durations come from GET
 * /v1/stats. Prints "key: value" lines ending with pass_ms_p50 and pass_ms_p99. */
#include "api_answers.h"
#include "api_client.h"
#include "api_paths.h"
#include "api_requests.h"
#include "proto.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct running {
	int64_t id;
	int attempt;
};

struct sim_host {
	char name[32];
	int cpus;
	struct running *run;
	size_t nrun, cap;
};

static struct api_client *api;

/* One request to path (api_paths.h; freed here); exits on a transport
 * failure (the benchmark is meaningless then). */
static json_t *call(const char *method, char *path, json_t *body, long want)
{
	struct api_reply reply;
	char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
	json_t *answer;

	json_decref(body);
	if (api_call(api, method, path, text, text ? strlen(text) : 0, NULL, 30000, &reply, NULL) < 0) {
		fprintf(stderr, "bench: %s %s: %s\n", method, path, strerror(errno));
		exit(1);
	}
	if (want && reply.status != want) {
		fprintf(stderr, "bench: %s %s: HTTP %ld: %s\n", method, path, reply.status, reply.body);
		exit(1);
	}
	answer = json_loadb(reply.body, reply.len, 0, NULL);
	api_reply_clear(&reply);
	free(text);
	free(path);
	return answer;
}

static void register_host(struct sim_host *h, int i)
{
	json_t *features = json_array();

	snprintf(h->name, sizeof h->name, "sim%03d", i);
	/* A lab's mix: mostly 16-core boxes, some big ones, a few small. */
	h->cpus = i % 10 == 0 ? 64 : i % 4 == 0 ? 8 : 16;
	if (i % 5 == 0)
		json_array_append_new(features, json_string("bigmem"));
	if (i % 3 == 0)
		json_array_append_new(features, json_string("avx512"));
	json_decref(call("POST", api_path(API_HOSTS_REGISTER, NULL), json_pack("{s:s,s:i,s:I,s:I,s:I,s:i,s:i,s:o,s:s}",
		"name", h->name, "cpus", h->cpus, "mem", (json_int_t)(h->cpus * 8LL << 30),
		"scratch_total", (json_int_t)(2LL << 40), "scratch_free", (json_int_t)(2LL << 40),
		"cpu_limit", 100, "mem_limit", 100, "features", features, "mount", "/parsa"), 200));
}

static void heartbeat(struct sim_host *h)
{
	json_t *list = json_array();

	for (size_t i = 0; i < h->nrun; i++)
		json_array_append_new(list, json_pack("{s:I,s:i,s:i}", "id", (json_int_t)h->run[i].id,
						      "attempt", h->run[i].attempt, "pid", 1000));
	json_decref(call("POST", api_path_name(API_HOST_HEARTBEAT, h->name), json_pack("{s:f,s:f,s:f,s:o}", "cpu_pct", 10.0, "mem_pct", 10.0,
						 "load1", 1.0, "instances", list), 200));
}

static void report(int64_t id, int attempt, const char *state)
{
	char *path = api_path_id(API_INSTANCE_STATE, id);

	if (strcmp(state, "running") == 0)
		json_decref(call("POST", path, json_pack("{s:i,s:s,s:i}", "attempt", attempt,
							 "state", state, "pid", 1000), 200));
	else
		json_decref(call("POST", path, json_pack("{s:i,s:s,s:i}", "attempt", attempt,
							 "state", state, "exit_code", 0), 200));
}

/* Take the host's new assignments and confirm each as running. */
static size_t take_work(struct sim_host *h)
{
	struct work_answer work;
	json_t *answer, *item;
	size_t i, n = 0;

	answer = call("GET", api_path_work(h->name, 0), NULL, 200);
	work_answer_from_json(answer, &work);
	json_array_foreach(work.start, i, item) {
		struct attempt_ref ref;
		struct running r;

		if (attempt_ref_from_json(item, &ref) < 0) {
			fprintf(stderr, "bench: an assignment without its id and attempt\n");
			exit(1);
		}
		r = (struct running){ ref.id, (int)ref.attempt };

		report(r.id, r.attempt, "running");
		if (h->nrun == h->cap) {
			h->cap = h->cap ? h->cap * 2 : 16;
			h->run = xrealloc(h->run, h->cap * sizeof *h->run);
		}
		h->run[h->nrun++] = r;
		n++;
	}
	json_decref(answer);
	return n;
}

/* End up to k of the host's running instances (the oldest). */
static void finish(struct sim_host *h, size_t k)
{
	if (k > h->nrun)
		k = h->nrun;
	for (size_t i = 0; i < k; i++)
		report(h->run[i].id, h->run[i].attempt, "exited");
	memmove(h->run, h->run + k, (h->nrun - k) * sizeof *h->run);
	h->nrun -= k;
}

static void submit(int job, int instances, int cpus, const char *team, const char *hosts)
{
	char *spec = xasprintf("[job]\nname = sim-%d\nteam = %s\npriority = %d\n\n"
			       "[stage work]\ninstances = %d\ncpus = %d\nmem = %dG\n%s%s%s"
			       "run = true\n", job, team, job % 3, instances, cpus, cpus * 4,
			       hosts ? "hosts = " : "", hosts ? hosts : "", hosts ? "\n" : "");
	char name[32];
	bool bad;

	snprintf(name, sizeof name, "sim-%d.conf", job);
	json_decref(call("POST", api_path(API_JOBS_SUBMIT, NULL),
			 api_submission_json(name, spec, strlen(spec), NULL, NULL, &bad), 201));
	free(spec);
}

/* "instances: N queued, ..." of the cluster status. */
static long queued_now(void)
{
	struct api_reply reply;
	char *path = api_path(API_STATUS, NULL);
	const char *line;
	long n = -1;
	int rc = api_call(api, "GET", path, NULL, 0, NULL, 30000, &reply, NULL);

	free(path);
	if (rc < 0)
		return -1;
	line = strstr(reply.body, "\ninstances: ");
	if (line)
		n = strtol(line + strlen("\ninstances: "), NULL, 10);
	api_reply_clear(&reply);
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p)
{
	size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);

	return n ? v[i < n ? i : n - 1] : 0;
}

/* Durations of the passes after the first *seen ones, appended to *v (*n of
 * them, room for *cap); *seen becomes the number of passes so far. */
static void collect_passes(uint64_t *seen, double **v, size_t *n, size_t *cap)
{
	struct api_reply reply;
	struct api_stats stats;
	char *path = api_path(API_STATS, NULL), *err = NULL;
	size_t first;

	if (api_call(api, "GET", path, NULL, 0, NULL, 30000, &reply, NULL) != 200 ||
	    api_read_stats(reply.body, reply.len, &stats, &err) < 0) {
		fprintf(stderr, "bench: GET %s: %s\n", path, err ? err : reply.body ? reply.body : "no answer");
		exit(1);
	}
	api_reply_clear(&reply);
	free(path);
	/* The list holds the last npass_ms of `passes` passes. */
	first = (uint64_t)stats.passes - stats.npass_ms < *seen ?
		(size_t)(*seen - ((uint64_t)stats.passes - stats.npass_ms)) : 0;
	for (size_t i = first; i < stats.npass_ms; i++) {
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 4096;
			*v = xrealloc(*v, *cap * sizeof **v);
		}
		(*v)[(*n)++] = stats.pass_ms[i];
	}
	*seen = (uint64_t)stats.passes;
	api_stats_clear(&stats);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "sched", required_argument, NULL, 's' },
		{ "hosts", required_argument, NULL, 'H' },
		{ "queued", required_argument, NULL, 'q' },
		{ "seconds", required_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	static const char *const teams[] = { "arch", "sys", "theory", "ml" };
	const char *endpoint = NULL;
	int nhosts = 200, queued = 10000, seconds = 10, c, job = 0, capacity = 0, submitted = 0;
	struct sim_host *hosts;
	char *err = NULL;
	double *ms = NULL, fill_ms = 0;
	size_t n = 0, cap = 0;
	uint64_t seen = 0;
	long low = -1;
	int64_t t0, last_beat;
	long rounds = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': endpoint = optarg; break;
		case 'H': nhosts = atoi(optarg); break;
		case 'q': queued = atoi(optarg); break;
		case 't': seconds = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: bench_placement --sched ENDPOINT [--hosts N] [--queued N] [--seconds N]\n");
			return 2;
		}
	}
	if (!endpoint || nhosts < 1 || queued < 1 || seconds < 1) {
		fprintf(stderr, "bench_placement: --sched ENDPOINT is required\n");
		return 2;
	}
	api = api_client_create(endpoint, &err);
	if (!api) {
		fprintf(stderr, "bench_placement: %s\n", err);
		return 1;
	}
	hosts = xcalloc((size_t)nhosts, sizeof *hosts);
	for (int i = 0; i < nhosts; i++) {
		register_host(&hosts[i], i);
		capacity += hosts[i].cpus;
	}
	/* Jobs of four teams, mostly single-core fan-outs, some wider, some that
	 * need a feature, until `queued` instances wait beyond the capacity. */
	for (int units = 0, extra = 0; units < capacity || extra < queued; job++) {
		int cpus = job % 7 == 3 ? 4 : job % 5 == 1 ? 2 : 1;
		int inst = 250 + (job * 37) % 500;

		submit(job, inst, cpus, teams[job % 4], job % 6 == 5 ? "feature:bigmem" : NULL);
		submitted += inst;
		if (units < capacity)
			units += inst * cpus;
		else
			extra += inst;
	}
	/* Fill the cluster: every host takes its first assignments. */
	for (int i = 0; i < nhosts; i++)
		heartbeat(&hosts[i]);
	for (int i = 0; i < nhosts; i++)
		take_work(&hosts[i]);
	printf("instances_queued_after_fill: %ld\n", queued_now());
	collect_passes(&seen, &ms, &n, &cap);
	for (size_t i = 0; i < n; i++)
		fill_ms = ms[i] > fill_ms ? ms[i] : fill_ms;
	n = 0;
	/* Churn: hosts end some instances and take new ones; each report kicks a
	 * pass over the whole queue. */
	t0 = last_beat = time_mono_ms();
	while (time_mono_ms() - t0 < seconds * 1000LL) {
		struct sim_host *h = &hosts[(rounds * 7919) % nhosts];

		finish(h, 1 + (size_t)(rounds % 4));
		take_work(h);
		rounds++;
		if (rounds % 500 == 0) {
			long q;

			/* Keep the queue long: what the churn placed is queued again. */
			collect_passes(&seen, &ms, &n, &cap);
			while ((q = queued_now()) >= 0 && q < queued) {
				submit(job, 500, 1, teams[job % 4], NULL);
				job++;
			}
			if (low < 0 || q < low)
				low = q;
		}
		if (time_mono_ms() - last_beat > 2000) {
			for (int i = 0; i < nhosts; i++)
				heartbeat(&hosts[i]);
			last_beat = time_mono_ms();
		}
	}
	collect_passes(&seen, &ms, &n, &cap);
	qsort(ms, n, sizeof *ms, cmp_double);
	printf("hosts: %d\n", nhosts);
	printf("cores: %d\n", capacity);
	printf("jobs: %d\n", job);
	printf("instances_queued_at_end: %ld\n", queued_now());
	printf("instances_queued_min: %ld\n", low);
	printf("fill_pass_ms_max: %.2f\n", fill_ms);
	printf("churn_rounds: %ld\n", rounds);
	printf("passes_measured: %zu\n", n);
	printf("pass_ms_max: %.2f\n", n ? ms[n - 1] : 0.0);
	printf("pass_ms_p50: %.2f\n", pct(ms, n, 50));
	printf("pass_ms_p99: %.2f\n", pct(ms, n, 99));
	free(ms);
	for (int i = 0; i < nhosts; i++)
		free(hosts[i].run);
	free(hosts);
	api_client_destroy(api);
	return 0;
}
