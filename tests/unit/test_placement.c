/* Placement decisions: fit, live-limit hold-back, host globs, queue order,
 * backfill, and explanations for instances that are not placed. */
#include "placement.h"
#include "tap.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

TAP_STATE;

#define G (1024ULL * 1024 * 1024)

static struct placement_host host(const char *name, int cpus, uint64_t mem)
{
	struct placement_host h = {
		.name = name, .up = 1, .cpus = cpus, .mem = mem,
		.scratch_total = 1000 * G, .scratch_free = 1000 * G,
		.cpu_limit = 90, .mem_limit = 90,
	};
	return h;
}

static struct placement_req req(int64_t job, int index, int cpus, uint64_t mem)
{
	struct placement_req r = {
		.group = job, .cpus = cpus, .mem = mem, .host = -2,
		.order = { .job = job, .index = index, .submitted_ms = job },
	};
	return r;
}

static void test_fit(void)
{
	struct placement_host h[1] = { host("h1", 2, 8 * G) };
	struct placement_req r[3] = { req(1, 0, 1, G), req(1, 1, 1, G), req(1, 2, 1, G) };

	is_int(placement_run(h, 1, r, 3), 2, "two single-cpu instances fit two cpus");
	is_int(r[0].host, 0, "first placed");
	is_int(r[1].host, 0, "second placed");
	is_int(r[2].host, -1, "third waits");
	is_int(h[0].reserved_cpus, 2, "cpus reserved");
	is_int(h[0].reserved_mem, 2 * G, "memory reserved");
	is_int(placement_check(&h[0], &r[2]), PLACE_CPUS_FREE, "verdict: no cpus left");
}

static void test_mem_and_scratch(void)
{
	struct placement_host h[1] = { host("h1", 8, 8 * G) };
	struct placement_req r[2] = { req(1, 0, 1, 6 * G), req(1, 1, 1, 6 * G) };
	struct placement_req s = req(2, 0, 1, 0);
	char buf[256];

	is_int(placement_run(h, 1, r, 2), 1, "memory limits to one instance");
	is_int(placement_check(&h[0], &r[1]), PLACE_MEM_FREE, "verdict: memory");
	placement_explain(&h[0], &r[1], buf, sizeof buf);
	is_str(buf, "h1: needs 6G of memory, 2G of 8G free", "explained");

	h[0].scratch_free = 30 * G;
	h[0].reserved_scratch = 20 * G;
	s.scratch = 20 * G;
	is_int(placement_check(&h[0], &s), PLACE_SCRATCH_FREE, "scratch left is 10G");
	placement_explain(&h[0], &s, buf, sizeof buf);
	is_str(buf, "h1: needs 20G of scratch, 10G free", "scratch explained");
}

static void test_live_limits(void)
{
	struct placement_host h[2] = { host("h1", 4, 8 * G), host("h2", 4, 8 * G) };
	struct placement_req r[1] = { req(1, 0, 1, G) };
	char buf[256];

	h[0].cpu_pct = h[0].outside_cpu_pct = 97;
	h[1].cpu_pct = h[1].outside_cpu_pct = 97;
	is_int(placement_run(h, 2, r, 1), 0, "a CPU hog holds back new instances");
	placement_explain(&h[0], &r[0], buf, sizeof buf);
	is_str(buf, "h1: CPU used outside parsa 97% >= limit 90% (live 97%: parsa 0%, outside 97%)",
	       "why names the CPU limit");

	h[1].cpu_pct = h[1].outside_cpu_pct = 89.9;
	is_int(placement_run(h, 2, r, 1), 1, "below the limit: placed");
	is_int(r[0].host, 1, "on the host below its limit");

	h[1].reserved_cpus = 0;
	h[1].cpu_pct = h[1].outside_cpu_pct = 10;
	h[1].mem_pct = h[1].outside_mem_pct = 95;
	is_int(placement_check(&h[1], &r[0]), PLACE_MEM_LIVE, "memory over its limit");
	placement_explain(&h[1], &r[0], buf, sizeof buf);
	is_str(buf, "h2: memory used outside parsa 95% >= limit 90% (live 95%: parsa 0%, outside 95%)",
	       "memory limit explained");

	h[1].mem_pct = h[1].outside_mem_pct = 100;
	h[1].mem_limit = 100;
	h[1].cpu_pct = h[1].outside_cpu_pct = 100;
	h[1].cpu_limit = 100;
	is_int(placement_check(&h[1], &r[0]), PLACE_FITS, "a limit of 100 disables the check");
	h[1].cpu_limit = 90;
	h[1].cpu_pct = h[1].outside_cpu_pct = 90;
	is_int(placement_check(&h[1], &r[0]), PLACE_CPU_LIVE, "at the limit is not below it");
}

static void test_outside_use(void)
{
	struct placement_host h = host("h1", 4, 8 * G);
	struct placement_req r[4] = { req(1, 0, 1, G), req(1, 1, 1, G), req(1, 2, 1, G),
				      req(1, 3, 1, G) };
	char buf[256];

	/* parsa's own work is not load: at 100% busy with only parsa's, it fills. */
	h.cpu_pct = 100;
	h.outside_cpu_pct = 1;
	h.reserved_cpus = 3;
	is_int(placement_check(&h, &r[0]), PLACE_FITS, "busy with parsa's work: the free core fits");
	h.reserved_cpus = 0;
	h.outside_cpus = 2;
	h.outside_cpu_pct = 50;
	is_int(placement_free_cpus(&h), 2, "two cores busy outside parsa leave two");
	is_int(placement_run(&h, 1, r, 4), 2, "two instances placed");
	h.reserved_cpus = 2;
	placement_explain(&h, &r[2], buf, sizeof buf);
	is_str(buf, "h1: needs 1 cpus, 0 of 4 free (2 reserved, 2 busy outside parsa)",
	       "why counts the cores busy outside parsa");
	h.reserved_cpus = 0;
	h.reserved_mem = 0;
	h.outside_cpus = 0;
	h.outside_mem = 7 * G + G / 2;
	is_int(placement_check(&h, &r[0]), PLACE_MEM_FREE, "memory used outside parsa holds it back");
	placement_explain(&h, &r[0], buf, sizeof buf);
	is_str(buf, "h1: needs 1G of memory, 512M of 8G free (7.5G used outside parsa's reservations)",
	       "and says so");
	h.outside_mem = 9 * G;
	is_int((int)placement_free_mem(&h), 0, "outside use past the capacity leaves nothing");

	/* Limits of 100 turn admission by outside load off: two busy loops
	 * and a memory hog beside a test suite hold nothing back. */
	h.cpu_limit = 100;
	h.mem_limit = 100;
	h.outside_cpus = 4;
	h.outside_cpu_pct = 100;
	h.outside_mem_pct = 100;
	is_int(placement_free_cpus(&h), 4, "cpu limit 100: cores busy outside parsa do not count");
	is_int((int)(placement_free_mem(&h) / G), 8, "mem limit 100: memory used outside does not count");
	is_int(placement_check(&h, &r[0]), PLACE_FITS, "limits of 100: a fully busy host still fits");
	h.cpu_limit = 90;
	placement_explain(&h, &r[0], buf, sizeof buf);
	is_str(buf, "h1: CPU used outside parsa 100% >= limit 90% (live 100%: parsa 0%, outside 100%)",
	       "cpu limit 90 again: held back");
}

static void test_gpus(void)
{
	struct placement_host h[2] = { host("h1", 8, 8 * G), host("h2", 8, 8 * G) };
	struct placement_req r[3] = { req(1, 0, 1, G), req(1, 1, 1, G), req(1, 2, 1, G) };
	char buf[256];

	h[0].gpus = 2;
	for (int i = 0; i < 3; i++)
		r[i].gpus = 1;
	is_int(placement_run(h, 2, r, 3), 2, "two GPUs: two of three placed");
	ok(r[0].host == 0 && r[1].host == 0 && r[2].host == -1, "on the host with GPUs only");
	placement_explain(&h[0], &r[2], buf, sizeof buf);
	is_str(buf, "h1: needs 1 gpus, 0 of 2 free", "GPUs explained");
	placement_explain(&h[1], &r[2], buf, sizeof buf);
	is_str(buf, "h2: needs 1 gpus, host has 0", "a host without GPUs");
	r[2].gpus = 4;
	ok(placement_never_fits(h, 2, &r[2], buf, sizeof buf) && strcmp(buf, "no host has 4 gpus") == 0,
	   "no host has 4 gpus");
}

static void test_host_globs(void)
{
	static const char *const big[] = { "big*" };
	static const char *const two[] = { "small1", "big2" };
	struct placement_host h[3] = { host("small1", 4, 8 * G), host("big1", 4, 8 * G),
				       host("big2", 4, 8 * G) };
	struct placement_req r[1] = { req(1, 0, 4, G) };
	char buf[256];

	r[0].hosts = big;
	r[0].nhosts = 1;
	is_int(placement_check(&h[0], &r[0]), PLACE_NOT_IN_HOSTS, "small1 is not big*");
	placement_explain(&h[0], &r[0], buf, sizeof buf);
	is_str(buf, "small1: not in hosts = big*", "glob explained");
	is_int(placement_run(h, 3, r, 1), 1, "placed on a big host");
	is_str(h[r[0].host].name, "big1", "the first big host");

	r[0].hosts = two;
	r[0].nhosts = 2;
	h[0].reserved_cpus = 0;
	is_int(placement_check(&h[1], &r[0]), PLACE_NOT_IN_HOSTS, "big1 is not in the list");
	is_int(placement_check(&h[2], &r[0]), PLACE_FITS, "big2 is");
	is_int(placement_check(&h[0], &r[0]), PLACE_FITS, "small1 is");
}

static void test_down_and_draining(void)
{
	struct placement_host h[2] = { host("h1", 4, 8 * G), host("h2", 4, 8 * G) };
	struct placement_req r[1] = { req(1, 0, 1, G) };
	char buf[256];

	h[0].up = 0;
	h[1].draining = 1;
	is_int(placement_run(h, 2, r, 1), 0, "no host takes work");
	placement_explain(&h[0], &r[0], buf, sizeof buf);
	is_str(buf, "h1: down (no heartbeat)", "down explained");
	placement_explain(&h[1], &r[0], buf, sizeof buf);
	is_str(buf, "h2: draining", "draining explained");
}

static void test_order(void)
{
	struct placement_req r[5] = {
		req(3, 0, 1, 0), req(1, 1, 1, 0), req(2, 0, 1, 0), req(1, 0, 1, 0), req(4, 0, 1, 0),
	};

	r[4].order.priority = 5; /* job 4 jumps the queue */
	r[2].order.stage = 0;
	r[3].order.stage = 0;
	r[1].order.stage = 0;
	placement_sort(r, 5);
	is_int(r[0].order.job, 4, "higher priority first");
	is_int(r[1].order.job, 1, "then the oldest");
	is_int(r[1].order.index, 0, "index 0 before 1");
	is_int(r[2].order.index, 1, "then index 1");
	is_int(r[3].order.job, 2, "then job 2");
	is_int(r[4].order.job, 3, "then job 3");

	{
		struct placement_req s[2] = { req(7, 0, 1, 0), req(7, 0, 1, 0) };

		s[0].order.stage = 2;
		s[1].order.stage = 1;
		placement_sort(s, 2);
		is_int(s[0].order.stage, 1, "earlier stage first within a job");
	}
}

static void test_backfill(void)
{
	struct placement_host h[1] = { host("h1", 4, 64 * G) };
	/* Job 1 asks 8 cpus and can never fit now; job 2's small instances follow. */
	struct placement_req r[3] = { req(1, 0, 8, G), req(2, 0, 2, G), req(2, 1, 2, G) };

	h[0].reserved_cpus = 0;
	is_int(placement_run(h, 1, r, 3), 2, "smaller jobs behind a big one are placed");
	is_int(r[0].host, -1, "the big one waits");
	is_int(r[1].host, 0, "small 0 placed");
	is_int(r[2].host, 0, "small 1 placed");

	/* A wide instance that does not fit now (3 of 4 cpus taken) does not
	 * stop a later narrow one. */
	{
		struct placement_host g[1] = { host("h1", 4, 64 * G) };
		struct placement_req s[2] = { req(3, 0, 2, G), req(4, 0, 1, G) };

		g[0].reserved_cpus = 3;
		is_int(placement_run(g, 1, s, 2), 1, "backfill what fits");
		is_int(s[1].host, 0, "the narrow one runs");
	}
}

static void test_never_fits(void)
{
	struct placement_host h[2] = { host("h1", 2, 8 * G), host("h2", 4, 16 * G) };
	struct placement_req r = req(1, 0, 8, G);
	char buf[256];

	ok(placement_never_fits(h, 2, &r, buf, sizeof buf), "8 cpus never fit");
	is_str(buf, "no host has 8 cpus", "said so");
	placement_explain(&h[0], &r, buf, sizeof buf);
	is_str(buf, "h1: needs 8 cpus, host has 2", "per host");

	r = req(1, 0, 1, 32 * G);
	ok(placement_never_fits(h, 2, &r, buf, sizeof buf), "32G never fits");
	is_str(buf, "no host has 32G of memory", "memory said");

	r = req(1, 0, 1, G);
	r.scratch = 3 * 1024 * G;
	ok(placement_never_fits(h, 2, &r, buf, sizeof buf), "3T of scratch never fits");
	is_str(buf, "no host has 3T of scratch", "scratch said");
	is_int(placement_run(h, 2, &r, 1), 0, "and it is not placed");
	is_int(r.host, -1, "stays queued");

	r = req(1, 0, 1, G);
	ok(!placement_never_fits(h, 2, &r, buf, sizeof buf), "a small one fits somewhere");
	is_str(buf, "", "nothing said");
	ok(placement_never_fits(h, 0, &r, buf, sizeof buf), "no hosts at all");
	is_str(buf, "no host is registered", "said so");
}

static void test_spread(void)
{
	struct placement_host h[3] = { host("a", 4, 64 * G), host("b", 4, 64 * G), host("c", 4, 64 * G) };
	struct placement_req r[12];
	int per[3] = { 0 };

	for (int i = 0; i < 12; i++)
		r[i] = req(1, i, 1, G);
	is_int(placement_run(h, 3, r, 12), 12, "a fan-out fills every core");
	for (int i = 0; i < 12; i++)
		per[r[i].host]++;
	ok(per[0] == 4 && per[1] == 4 && per[2] == 4, "spread and packed: 4 per host");
	is_int(r[0].host, 0, "first on a");
	is_int(r[1].host, 1, "second on b (most free cpus)");
}

/* The issue-3 budget: 10,000 queued instances and 200 hosts well under 50 ms. */
static void test_speed(void)
{
	enum { NH = 200, NR = 10000 };
	struct placement_host *h = xcalloc(NH, sizeof *h);
	struct placement_req *r = xcalloc(NR, sizeof *r);
	static const char *const any[] = { "h*" };
	char names[NH][8];
	struct timespec t0, t1;
	double ms;
	size_t placed;

	for (int i = 0; i < NH; i++) {
		snprintf(names[i], sizeof names[i], "h%d", i);
		h[i] = host(names[i], 16, 64 * G);
	}
	for (int i = 0; i < NR; i++) {
		r[i] = req(1 + i / 100, i % 100, 1 + i % 2, G);
		r[i].group = 1 + i / 100;
		r[i].hosts = any;
		r[i].nhosts = 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	placement_sort(r, NR);
	placed = placement_run(h, NH, r, NR);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	diag("10000 x 200: %zu placed in %.1f ms", placed, ms);
	ok(placed > 0 && placed <= NH * 16, "placed within capacity");
	ok(ms < 500, "fast enough even under sanitizers (%.1f ms)", ms);
	free(h);
	free(r);
}

int main(void)
{
	test_fit();
	test_mem_and_scratch();
	test_live_limits();
	test_outside_use();
	test_gpus();
	test_host_globs();
	test_down_and_draining();
	test_order();
	test_backfill();
	test_never_fits();
	test_spread();
	test_speed();
	return done_testing();
}
