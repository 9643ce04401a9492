#include "backfill.h"

#include "util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct backfill {
	int64_t now;
	struct backfill_release *rel;
	size_t n, cap;
	bool tried;              /* the first blocked request came: one reservation a pass */
	bool reserved;
	struct backfill_reservation res;
	/* What is left on the reserved host at res.at_ms once the blocked
	 * request has its share: later requests that outlast the reservation
	 * may use it. */
	int extra_cpus;
	uint64_t extra_mem, extra_scratch;
};

struct backfill *backfill_create(int64_t now_ms)
{
	struct backfill *bf = xcalloc(1, sizeof *bf);

	bf->now = now_ms;
	return bf;
}

void backfill_destroy(struct backfill *bf)
{
	if (!bf)
		return;
	free(bf->rel);
	free(bf);
}

void backfill_add_release(struct backfill *bf, const struct backfill_release *r)
{
	if (bf->n == bf->cap) {
		bf->cap = bf->cap ? bf->cap * 2 : 64;
		bf->rel = xrealloc(bf->rel, bf->cap * sizeof *bf->rel);
	}
	bf->rel[bf->n] = *r;
	/* An instance past its walltime is being stopped: it ends any moment. */
	if (bf->rel[bf->n].end_ms < bf->now)
		bf->rel[bf->n].end_ms = bf->now;
	bf->n++;
}

void backfill_add_model(struct backfill *bf, struct model *m)
{
	for (size_t h = 0; h < model_nhosts(m); h++) {
		const struct host *host = model_host_at(m, h);

		for (size_t i = 0; i < host->nactive; i++) {
			const struct instance *inst = host->active[i];
			const struct spec_stage *ss = inst->stage->spec;
			int64_t from = inst->started_ms ? inst->started_ms : inst->assigned_ms;
			struct backfill_release r = {
				.host = h, .end_ms = INT64_MAX, .cpus = ss->cpus, .mem = ss->mem,
				.scratch = ss->scratch,
			};

			if (ss->walltime > 0)
				r.end_ms = (from ? from : bf->now) + (int64_t)ss->walltime * 1000;
			backfill_add_release(bf, &r);
		}
	}
}

/* By host, then by end time. */
static int by_host_end(const void *a, const void *b)
{
	const struct backfill_release *x = a, *y = b;

	if (x->host != y->host)
		return (x->host > y->host) - (x->host < y->host);
	return (x->end_ms > y->end_ms) - (x->end_ms < y->end_ms);
}

/* When req could start on host ph as the instances there end, given its
 * releases mine[0..n) in end order: -1 when it cannot be told (also when it
 * fits there now: then something else blocks it). *cpus, *mem,
 * *scratch get what is free at that time. */
static int64_t start_on(const struct placement_host *ph,
			const struct backfill_release *mine, size_t n, const struct placement_req *req,
			int *cpus, uint64_t *mem, uint64_t *scratch)
{
	*cpus = placement_free_cpus(ph);
	*mem = placement_free_mem(ph);
	*scratch = ph->scratch_free > ph->reserved_scratch ? ph->scratch_free - ph->reserved_scratch : 0;
	/* Free now but blocked all the same: by live use over the limit (work
	 * outside parsa, whose end nobody knows) or by a gate. No walltime tells
	 * when that ends, so the host is not held: a reservation "from now"
	 * would name a time already past by the next look, and hold the host
	 * against work that fits. */
	if (req->cpus <= *cpus && req->mem <= *mem && req->scratch <= *scratch)
		return -1;
	for (size_t i = 0; i < n && mine[i].end_ms != INT64_MAX; i++) {
		*cpus += mine[i].cpus;
		*mem += mine[i].mem;
		*scratch += mine[i].scratch;
		if (req->cpus <= *cpus && req->mem <= *mem && req->scratch <= *scratch)
			return mine[i].end_ms;
	}
	return -1;
}

static void gate_blocked(void *arg, const struct placement_host *hosts, size_t nhosts,
			 const struct placement_req *req)
{
	struct backfill *bf = arg;
	size_t first = 0;

	if (bf->tried)
		return;
	bf->tried = true;
	/* Once per pass: each host's releases in end order, in one sort. */
	if (bf->n > 1)
		qsort(bf->rel, bf->n, sizeof *bf->rel, by_host_end);
	for (size_t h = 0; h < nhosts; h++) {
		size_t n = 0;
		int cpus;
		uint64_t mem, scratch;
		int64_t at;

		while (first < bf->n && bf->rel[first].host < h)
			first++;
		while (first + n < bf->n && bf->rel[first + n].host == h)
			n++;
		/* Only hosts it may use at all: not down, draining, closed, excluded
		 * by hosts =, or too small whatever ends. */
		switch (placement_check(&hosts[h], req)) {
		case PLACE_FITS:
		case PLACE_CPU_LIVE:
		case PLACE_MEM_LIVE:
		case PLACE_CPUS_FREE:
		case PLACE_MEM_FREE:
		case PLACE_SCRATCH_FREE:
			break;
		default:
			continue;
		}
		at = start_on(&hosts[h], &bf->rel[first], n, req, &cpus, &mem, &scratch);
		if (at < 0 || (bf->reserved && at >= bf->res.at_ms))
			continue;
		bf->reserved = true;
		bf->res = (struct backfill_reservation){
			.cookie = req->cookie, .group = req->group, .host = h, .at_ms = at,
		};
		bf->extra_cpus = cpus - req->cpus;
		bf->extra_mem = mem - req->mem;
		bf->extra_scratch = scratch - req->scratch;
	}
}

/* Does a reservation for another request than req, from at_ms, keep req off
 * its host at now? Unless req ends (by its walltime) before it begins. The
 * one rule of the pass's gate and of why (backfill_holds_host). */
static bool keeps_off(bool same_group, int64_t at_ms, const struct placement_req *req, int64_t now)
{
	return !same_group && !(req->walltime_ms > 0 && now + req->walltime_ms <= at_ms);
}

/* Does this pass's reservation keep req off its host? */
static bool held_against(const struct backfill *bf, const struct placement_req *req)
{
	return keeps_off(req->group == bf->res.group, bf->res.at_ms, req, bf->now);
}

int backfill_holds_host(const struct placement_host *h, const struct placement_req *req,
			int64_t now)
{
	if (h->held_ms <= 0)
		return 0;
	return keeps_off(h->held_job == req->order.job && h->held_stage == req->order.stage,
			 h->held_ms, req, now);
}

static int gate_allow(void *arg, const struct placement_host *hosts, size_t h,
		      const struct placement_req *req)
{
	struct backfill *bf = arg;

	(void)hosts;
	if (!bf->reserved || h != bf->res.host || !held_against(bf, req))
		return 1;
	return req->cpus <= bf->extra_cpus && req->mem <= bf->extra_mem &&
	       req->scratch <= bf->extra_scratch;
}

static void gate_placed(void *arg, const struct placement_host *hosts, size_t h,
			const struct placement_req *req)
{
	struct backfill *bf = arg;
	struct backfill_release r = {
		.host = h, .end_ms = req->walltime_ms > 0 ? bf->now + req->walltime_ms : INT64_MAX,
		.cpus = req->cpus, .mem = req->mem, .scratch = req->scratch,
	};

	(void)hosts;
	backfill_add_release(bf, &r);
	if (bf->reserved && h == bf->res.host && held_against(bf, req)) {
		bf->extra_cpus -= req->cpus;
		bf->extra_mem -= req->mem;
		bf->extra_scratch -= req->scratch;
	}
}

struct placement_gate backfill_gate(struct backfill *bf)
{
	return (struct placement_gate){
		.allow = gate_allow, .blocked = gate_blocked, .placed = gate_placed, .arg = bf,
	};
}

const struct backfill_reservation *backfill_reserved(const struct backfill *bf)
{
	return bf->reserved ? &bf->res : NULL;
}

int backfill_explain_held(const struct placement_host *h, const struct placement_req *req,
			  int64_t now, char *buf, size_t len)
{
	char at[32];

	if (placement_check(h, req) != PLACE_FITS || !backfill_holds_host(h, req, now))
		return 0;
	time_format_iso(h->held_ms, at, sizeof at);
	snprintf(buf, len, "%s: fits, but is held for job %lld from %s (backfill): it starts here "
		 "only if its walltime ends by then", h->name, (long long)h->held_job, at);
	return 1;
}
