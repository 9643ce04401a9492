/* Walltime-aware backfill (EASY backfill): the first request of a pass that
 * fits nowhere gets a reservation, the host where, and the time when, it could
 * start once running instances reach their walltimes. Later, smaller requests
 * may still start on that host only if their own walltime ends by then, or if
 * they fit in what the reservation leaves over; other hosts are not held. When
 * the time cannot be told (something in the way has no walltime), nothing is
 * reserved and every request that fits starts, as plain backfill.
 * A pure computation over the pass's hosts, driven by placement_run_gated()
 * through a placement_gate, so unit tests decide every case. */
#ifndef PARSA_BACKFILL_H
#define PARSA_BACKFILL_H

#include "model.h"
#include "placement.h"

#include <stddef.h>
#include <stdint.h>

struct backfill;

/* When the instances at work on a host end, by their walltime. */
struct backfill_release {
	size_t host;             /* index into the pass's hosts */
	int64_t end_ms;          /* INT64_MAX: no walltime, unknown */
	int cpus;
	uint64_t mem, scratch;
};

/* The reservation made in a pass, for `why`. */
struct backfill_reservation {
	const void *cookie;      /* the blocked request's cookie (an instance) */
	int64_t group;
	size_t host;
	int64_t at_ms;           /* when it can start */
};

struct backfill *backfill_create(int64_t now_ms);
void backfill_destroy(struct backfill *bf);

/* What already runs (or is assigned). */
void backfill_add_release(struct backfill *bf, const struct backfill_release *r);

/* Every active instance of the model's hosts, in model_host_at() order (the
 * order of engine_placement_hosts()), ending at its start (or assignment) plus
 * its stage's walltime. */
void backfill_add_model(struct backfill *bf, struct model *m);

/* The gate to pass to placement_run_gated(); it points into bf. */
struct placement_gate backfill_gate(struct backfill *bf);

/* Does the last pass's reservation on h (held_job, held_stage, held_ms) keep
 * req off it at now, as this pass's keeps another request off its host (the
 * gate's rule: other requests go there only if they end by then)? For why. */
int backfill_holds_host(const struct placement_host *h, const struct placement_req *req,
			int64_t now);

/* When req fits h but the reservation there keeps it off (backfill_holds_host):
 * the line why prints for h instead of placement_explain()'s, "h: fits, but is
 * held for job 7 from ...", and 1; else 0. Always NUL-terminates buf when 1. */
int backfill_explain_held(const struct placement_host *h, const struct placement_req *req,
			  int64_t now, char *buf, size_t len);

/* The reservation this pass made, or NULL. */
const struct backfill_reservation *backfill_reserved(const struct backfill *bf);

#endif
