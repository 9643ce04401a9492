/* Walltime-aware backfill decisions (sched/policy/backfill.c through
 * placement_run_gated): a blocked request keeps its place; smaller ones go
 * ahead only if they end before it could start or fit in what it leaves over;
 * other hosts are free; without walltimes in the way, plain backfill. */
#include "backfill.h"
#include "placement.h"
#include "tap.h"

#include <stdint.h>
#include <string.h>

TAP_STATE;

#define NOW 1000000000LL
#define HOUR 3600000LL
#define G (UINT64_C(1) << 30)

static struct placement_host host(const char *name, int cpus, int reserved)
{
	return (struct placement_host){
		.name = name, .up = 1, .cpus = cpus, .mem = 64 * G, .scratch_total = 100 * G,
		.scratch_free = 100 * G, .reserved_cpus = reserved, .cpu_limit = 100, .mem_limit = 100,
		.opens_ms = -1,
	};
}

static struct placement_req req(int64_t group, int cpus, int64_t walltime_ms)
{
	return (struct placement_req){
		.group = group, .order = { .job = group }, .cpus = cpus, .walltime_ms = walltime_ms,
		.host = -1,
	};
}

static void release(struct backfill *bf, size_t h, int64_t end, int cpus)
{
	struct backfill_release r = { .host = h, .end_ms = end, .cpus = cpus };

	backfill_add_release(bf, &r);
}

int main(void)
{
	struct placement_host hosts[2];
	struct placement_req r[4];
	const struct backfill_reservation *res;
	struct placement_gate gate;
	struct backfill *bf;

	/* 4 cores; A holds 2 for another hour. B needs 4: blocked until then. */
	hosts[0] = host("h1", 4, 2);
	bf = backfill_create(NOW);
	release(bf, 0, NOW + HOUR, 2);
	gate = backfill_gate(bf);
	r[0] = req(1, 4, HOUR);          /* B */
	r[1] = req(2, 2, 2 * HOUR);      /* C: would end after B could start */
	r[2] = req(3, 2, HOUR / 2);      /* D: ends before */
	placement_run_gated(hosts, 1, r, 3, &gate);
	is_int(r[0].host, -1, "the big request waits");
	is_int(r[1].host, -1, "a request that would delay it waits too");
	is_int(r[2].host, 0, "a request that ends before it could start goes ahead");
	res = backfill_reserved(bf);
	ok(res && res->group == 1 && res->host == 0 && res->at_ms == NOW + HOUR,
	   "the reservation: the big one's host, when A's walltime ends");
	backfill_destroy(bf);

	/* The same, but A has no walltime: its end is unknown, nothing can be
	 * reserved, and plain backfill lets C start. */
	hosts[0] = host("h1", 4, 2);
	bf = backfill_create(NOW);
	release(bf, 0, INT64_MAX, 2);
	gate = backfill_gate(bf);
	r[0] = req(1, 4, HOUR);
	r[1] = req(2, 2, 2 * HOUR);
	placement_run_gated(hosts, 1, r, 2, &gate);
	ok(!backfill_reserved(bf), "no reservation when the way out has no walltime");
	is_int(r[1].host, 0, "then what fits starts (plain backfill)");
	backfill_destroy(bf);

	/* 8 cores, A holds 4 for an hour, B needs 6: at A's end 8 are free and
	 * B leaves 2 over, which a long request may take now; a third may not. */
	hosts[0] = host("h1", 8, 4);
	bf = backfill_create(NOW);
	release(bf, 0, NOW + HOUR, 4);
	gate = backfill_gate(bf);
	r[0] = req(1, 6, HOUR);
	r[1] = req(2, 2, 0);             /* no walltime, but fits in what is left over */
	r[2] = req(3, 2, 0);             /* no room left over for it */
	placement_run_gated(hosts, 1, r, 3, &gate);
	is_int(r[0].host, -1, "B waits for 6 cores");
	is_int(r[1].host, 0, "a request that fits in B's leftovers starts whatever its walltime");
	is_int(r[2].host, -1, "the next one would take B's cores: it waits");
	backfill_destroy(bf);

	/* Two hosts: the reservation holds one; the other takes anything. */
	hosts[0] = host("h1", 4, 2);
	hosts[1] = host("h2", 2, 0);
	bf = backfill_create(NOW);
	release(bf, 0, NOW + HOUR, 2);
	gate = backfill_gate(bf);
	r[0] = req(1, 4, HOUR);
	r[1] = req(2, 2, 5 * HOUR);
	r[2] = req(3, 2, 5 * HOUR);
	placement_run_gated(hosts, 2, r, 3, &gate);
	res = backfill_reserved(bf);
	ok(res && res->host == 0, "the reservation is on the host where B fits (h2 is too small)");
	is_int(r[1].host, 1, "a long request goes to the other host");
	is_int(r[2].host, -1, "and not to the held one once the other is full");
	backfill_destroy(bf);

	/* The soonest host wins; a host outside its window is not considered. */
	hosts[0] = host("h1", 4, 4);
	hosts[1] = host("h2", 4, 4);
	bf = backfill_create(NOW);
	release(bf, 0, NOW + 3 * HOUR, 4);
	release(bf, 1, NOW + HOUR, 4);
	gate = backfill_gate(bf);
	r[0] = req(1, 4, HOUR);
	placement_run_gated(hosts, 2, r, 1, &gate);
	res = backfill_reserved(bf);
	ok(res && res->host == 1 && res->at_ms == NOW + HOUR, "the host that frees up first is held");
	backfill_destroy(bf);
	hosts[1].closed = 1;
	bf = backfill_create(NOW);
	release(bf, 0, NOW + 3 * HOUR, 4);
	release(bf, 1, NOW + HOUR, 4);
	gate = backfill_gate(bf);
	placement_run_gated(hosts, 2, r, 1, &gate);
	res = backfill_reserved(bf);
	ok(res && res->host == 0, "a closed host is not held");
	backfill_destroy(bf);

	/* A request larger than any host reserves nothing. */
	hosts[0] = host("h1", 4, 2);
	bf = backfill_create(NOW);
	release(bf, 0, NOW + HOUR, 2);
	gate = backfill_gate(bf);
	r[0] = req(1, 16, HOUR);
	r[1] = req(2, 2, 5 * HOUR);
	placement_run_gated(hosts, 1, r, 2, &gate);
	ok(!backfill_reserved(bf), "a request that never fits holds nothing");
	is_int(r[1].host, 0, "so the next one starts");
	backfill_destroy(bf);

	/* Only the first blocked request is reserved for (EASY backfill). */
	hosts[0] = host("h1", 4, 2);
	bf = backfill_create(NOW);
	release(bf, 0, NOW + HOUR, 2);
	gate = backfill_gate(bf);
	r[0] = req(1, 4, HOUR);
	r[1] = req(2, 3, HOUR);
	placement_run_gated(hosts, 1, r, 2, &gate);
	res = backfill_reserved(bf);
	ok(res && res->group == 1, "the first blocked request holds the reservation");
	backfill_destroy(bf);

	/* Free cores, but live use over the limit (work outside parsa): no
	 * walltime says when that ends, so nothing is held (a reservation "from
	 * now" showed in why as a time gone by, with nothing of parsa there). */
	hosts[0] = host("h1", 4, 0);
	hosts[0].cpu_limit = 90;
	hosts[0].cpu_pct = hosts[0].outside_cpu_pct = 100;
	bf = backfill_create(NOW);
	gate = backfill_gate(bf);
	r[0] = req(1, 2, HOUR);
	placement_run_gated(hosts, 1, r, 1, &gate);
	is_int(r[0].host, -1, "a host over its live limit takes nothing");
	ok(!backfill_reserved(bf), "and is held for no one");
	backfill_destroy(bf);
	/* The same host full of parsa's work with walltimes is held as before. */
	hosts[0] = host("h1", 4, 4);
	hosts[0].cpu_limit = 90;
	hosts[0].cpu_pct = 100;
	bf = backfill_create(NOW);
	release(bf, 0, NOW + HOUR, 4);
	gate = backfill_gate(bf);
	placement_run_gated(hosts, 1, r, 1, &gate);
	res = backfill_reserved(bf);
	ok(res && res->at_ms == NOW + HOUR, "a full host is held from when its work reaches its walltime");
	backfill_destroy(bf);

	/* Walltime and a window that stops work (drain-at-window-end no). */
	hosts[0] = host("h1", 4, 0);
	hosts[0].closes_in_ms = HOUR;
	r[0] = req(1, 1, 2 * HOUR);
	r[1] = req(2, 1, HOUR / 2);
	r[2] = req(3, 1, 0);
	placement_run(hosts, 1, r, 3);
	is_int(r[0].host, -1, "a walltime longer than the window left does not start");
	is_int(r[1].host, 0, "one that ends before the window closes does");
	is_int(r[2].host, 0, "one without walltime does (it is stopped and requeued at the end)");
	is_int(placement_check(&hosts[0], &r[0]), PLACE_WINDOW_ENDS, "the verdict says why");
	hosts[0].closed = 1;
	is_int(placement_check(&hosts[0], &r[1]), PLACE_WINDOW, "outside its window: closed");
	return done_testing();
}
