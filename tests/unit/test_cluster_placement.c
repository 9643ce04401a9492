/* The cluster's additions to placement: hosts = feature:NAME (with and beside
 * name globs), fair share ahead of priority in the queue order, a fan-out
 * spread over every host and packed to each host's cores and memory, and the
 * decayed usage of fairshare.c. */
#include "fairshare.h"
#include "placement.h"
#include "tap.h"
#include "util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

TAP_STATE;

#define G (1024ULL * 1024 * 1024)

static struct placement_host host(const char *name, int cpus, uint64_t mem,
				  const char *const *features, size_t nfeatures)
{
	struct placement_host h = {
		.name = name, .up = 1, .cpus = cpus, .mem = mem,
		.scratch_total = 1000 * G, .scratch_free = 1000 * G,
		.cpu_limit = 100, .mem_limit = 100, .features = features, .nfeatures = nfeatures,
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

static void test_features(void)
{
	static const char *const big[] = { "avx512", "bigmem" }, *const avx[] = { "avx512" };
	static const char *const want_big[] = { "feature:bigmem" };
	static const char *const want_both[] = { "n*", "feature:avx512", "feature:bigmem" };
	struct placement_host h[3] = {
		host("n1", 4, 8 * G, avx, 1), host("n2", 4, 8 * G, big, 2), host("x3", 4, 8 * G, big, 2),
	};
	struct placement_req r = req(1, 0, 1, G);
	char buf[256];

	r.hosts = want_big;
	r.nhosts = 1;
	is_int(placement_check(&h[0], &r), PLACE_NO_FEATURE, "a host without the feature does not qualify");
	placement_explain(&h[0], &r, buf, sizeof buf);
	is_str(buf, "n1: lacks feature bigmem", "and why says which");
	is_int(placement_check(&h[1], &r), PLACE_FITS, "a host with it does");
	r.hosts = want_both;
	r.nhosts = 3;
	is_int(placement_check(&h[1], &r), PLACE_FITS, "globs and features together: n2 has both");
	is_int(placement_check(&h[2], &r), PLACE_NOT_IN_HOSTS, "x3 has the features but not the name");
	is_int(placement_check(&h[0], &r), PLACE_NO_FEATURE, "n1 has the name but not every feature");
	is_int(placement_run(h, 3, &r, 1), 1, "placed");
	is_int(r.host, 1, "on the only host with name and features");
}

static void test_spread_and_pack(void)
{
	struct placement_host h[3] = {
		host("h1", 4, 16 * G, NULL, 0), host("h2", 4, 16 * G, NULL, 0), host("h3", 4, 4 * G, NULL, 0),
	};
	struct placement_req r[14];
	int per[3] = { 0 };

	for (int i = 0; i < 14; i++)
		r[i] = req(1, i, 1, 2 * G);
	is_int(placement_run(h, 3, r, 14), 10, "ten fit: 4 + 4 cores, and 2 where memory is 4G");
	for (int i = 0; i < 14; i++)
		if (r[i].host >= 0)
			per[r[i].host]++;
	is_int(per[0], 4, "h1 packed to its cores");
	is_int(per[1], 4, "h2 packed to its cores");
	is_int(per[2], 2, "h3 packed to its memory");
	/* A small fan-out is spread, not piled on one host. */
	for (int i = 0; i < 3; i++)
		h[i].reserved_cpus = 0, h[i].reserved_mem = 0;
	for (int i = 0; i < 3; i++)
		r[i] = req(2, i, 1, G);
	placement_run(h, 3, r, 3);
	ok(r[0].host != r[1].host && r[1].host != r[2].host && r[0].host != r[2].host,
	   "three instances on three hosts (%d %d %d)", r[0].host, r[1].host, r[2].host);
}

static void test_order(void)
{
	struct placement_req r[3] = { req(1, 0, 1, G), req(2, 0, 1, G), req(3, 0, 1, G) };

	/* Job 1: a busy team, high priority, oldest. Job 3: an idle team. */
	r[0].order.usage = 5000;
	r[0].order.priority = 10;
	r[1].order.usage = 5000;
	r[2].order.usage = 10;
	placement_sort(r, 3);
	is_int(r[0].order.job, 3, "the team that used least goes first, whatever its priority or age");
	is_int(r[1].order.job, 1, "then priority");
	is_int(r[2].order.job, 2, "then age");
}

static void test_fairshare(void)
{
	struct fairshare *f = fairshare_create(3600 * 1000);
	int64_t t0 = 1000000000000LL;
	char *text;

	is_int(fairshare_half_life_ms(f), 3600 * 1000, "half-life as configured");
	ok(fairshare_usage(f, "arch", t0) == 0, "an unknown team has used nothing");
	fairshare_charge(f, "arch", 100, t0);
	ok(fabs(fairshare_usage(f, "arch", t0) - 100) < 1e-9, "charged usage counts in full at once");
	ok(fabs(fairshare_usage(f, "arch", t0 + 3600 * 1000) - 50) < 1e-6, "half of it after one half-life");
	ok(fabs(fairshare_usage(f, "arch", t0 + 2 * 3600 * 1000) - 25) < 1e-6, "a quarter after two");
	fairshare_charge(f, "arch", 100, t0 - 3600 * 1000);
	ok(fabs(fairshare_usage(f, "arch", t0) - 150) < 1e-6,
	   "usage charged out of order (at start) is decayed from when it happened");
	fairshare_add_running(f, "sys", 30);
	ok(fabs(fairshare_usage(f, "sys", t0) - 30) < 1e-9, "running instances count with what they used");
	fairshare_clear_running(f);
	ok(fairshare_usage(f, "sys", t0) == 0, "until the next pass recounts them");
	text = fairshare_text(f, t0);
	ok(strstr(text, "half-life 1h") && strstr(text, "team sys: usage 0") &&
	   strstr(text, "team arch: usage 150") && strstr(text, "team sys") < strstr(text, "team arch"),
	   "the status lists teams, least used first");
	free(text);
	fairshare_destroy(f);
	f = fairshare_create(0);
	is_int(fairshare_half_life_ms(f), FAIRSHARE_HALF_LIFE_MS, "the default half-life is a day");
	fairshare_destroy(f);
}

int main(void)
{
	test_features();
	test_spread_and_pack();
	test_order();
	test_fairshare();
	return done_testing();
}
