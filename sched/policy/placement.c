#include "placement.h"

#include "units.h"
#include "util.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FEATURE_PREFIX "feature:"
#define FEATURE_PREFIX_LEN (sizeof FEATURE_PREFIX - 1)

static int is_feature(const char *entry)
{
	return strncmp(entry, FEATURE_PREFIX, FEATURE_PREFIX_LEN) == 0;
}

static int has_feature(const struct placement_host *h, const char *name)
{
	for (size_t i = 0; i < h->nfeatures; i++)
		if (strcmp(h->features[i], name) == 0)
			return 1;
	return 0;
}

/* The first feature the request names that h lacks, or NULL. */
static const char *missing_feature(const struct placement_host *h, const struct placement_req *req)
{
	for (size_t i = 0; i < req->nhosts; i++)
		if (is_feature(req->hosts[i]) && !has_feature(h, req->hosts[i] + FEATURE_PREFIX_LEN))
			return req->hosts[i] + FEATURE_PREFIX_LEN;
	return NULL;
}

/* Names and globs: any of them (when there are some). */
static int matches_names(const struct placement_host *h, const struct placement_req *req)
{
	int globs = 0;

	for (size_t i = 0; i < req->nhosts; i++) {
		if (is_feature(req->hosts[i]))
			continue;
		globs = 1;
		if (fnmatch(req->hosts[i], h->name, 0) == 0)
			return 1;
	}
	return !globs;
}

static int matches_hosts(const struct placement_host *h, const struct placement_req *req)
{
	if (req->nhosts == 0)
		return 1;
	return matches_names(h, req) && !missing_feature(h, req);
}

/* A limit of 100 or more means "no live check": a host at 100% busy would
 * otherwise never take work. */
static int over_limit(double pct, int limit)
{
	return limit < 100 && pct >= (double)limit;
}

/* What runs outside parsa takes part of the host only while its limit is
 * below 100: a limit of 100 or more turns admission by outside load off
 * altogether (a dedicated host, or a test suite on a shared machine, where
 * no one else's programs may hold parsa's work back). */
static int outside_cpus(const struct placement_host *h)
{
	return h->cpu_limit < 100 && h->outside_cpus > 0 ? h->outside_cpus : 0;
}

static uint64_t outside_mem(const struct placement_host *h)
{
	return h->mem_limit < 100 ? h->outside_mem : 0;
}

int placement_free_cpus(const struct placement_host *h)
{
	int left = h->cpus - h->reserved_cpus - outside_cpus(h);

	return left > 0 ? left : 0;
}

int placement_startable_cpus(const struct placement_host *h)
{
	if (!h->up || h->draining || over_limit(h->outside_cpu_pct, h->cpu_limit) ||
	    over_limit(h->outside_mem_pct, h->mem_limit))
		return 0;
	return placement_free_cpus(h);
}

uint64_t placement_free_mem(const struct placement_host *h)
{
	uint64_t used = h->reserved_mem + outside_mem(h);

	/* Either alone may pass mem (an overcommitted host, a runner's --mem
	 * below what the machine's other users take). */
	if (used < h->reserved_mem || used >= h->mem)
		return 0;
	return h->mem - used;
}

/* Everything but the host-name globs, which placement_run() caches per group. */
static enum placement_verdict check_resources(const struct placement_host *h,
					      const struct placement_req *req)
{
	uint64_t scratch_left;

	if (req->cpus > h->cpus)
		return PLACE_CPUS_TOTAL;
	if (req->mem > h->mem)
		return PLACE_MEM_TOTAL;
	if (req->scratch > h->scratch_total)
		return PLACE_SCRATCH_TOTAL;
	if (req->gpus > h->gpus)
		return PLACE_GPUS_TOTAL;
	if (h->closes_in_ms > 0 && req->walltime_ms > h->closes_in_ms)
		return PLACE_WINDOW_ENDS;
	if (over_limit(h->outside_cpu_pct, h->cpu_limit))
		return PLACE_CPU_LIVE;
	if (over_limit(h->outside_mem_pct, h->mem_limit))
		return PLACE_MEM_LIVE;
	if (req->cpus > placement_free_cpus(h))
		return PLACE_CPUS_FREE;
	if (req->mem > placement_free_mem(h))
		return PLACE_MEM_FREE;
	scratch_left = h->scratch_free > h->reserved_scratch ? h->scratch_free - h->reserved_scratch : 0;
	if (req->scratch > scratch_left)
		return PLACE_SCRATCH_FREE;
	if (req->gpus > h->gpus - h->reserved_gpus)
		return PLACE_GPUS_FREE;
	return PLACE_FITS;
}

enum placement_verdict placement_check(const struct placement_host *h, const struct placement_req *req)
{
	if (!h->up)
		return PLACE_DOWN;
	if (h->draining)
		return PLACE_DRAINING;
	if (h->closed)
		return PLACE_WINDOW;
	if (h->storage_down_since > 0)
		return PLACE_STORAGE;
	if (!matches_names(h, req))
		return PLACE_NOT_IN_HOSTS;
	if (missing_feature(h, req))
		return PLACE_NO_FEATURE;
	return check_resources(h, req);
}

static void join_globs(const struct placement_req *req, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < req->nhosts && used < len; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i ? " " : "", req->hosts[i]);
		if (n < 0)
			break;
		used += (size_t)n;
	}
}

/* The part of a live use that is parsa's. */
static double parsa_share(double whole, double outside)
{
	return whole > outside ? whole - outside : 0;
}

void placement_explain(const struct placement_host *h, const struct placement_req *req,
		       char *buf, size_t len)
{
	char a[32], b[32], c[32], globs[256];
	uint64_t free_bytes;

	switch (placement_check(h, req)) {
	case PLACE_FITS:
		if (h->held_ms > 0 && h->held_job != req->order.job) {
			time_format_iso(h->held_ms, a, sizeof a);
			snprintf(buf, len, "%s: fits, but is held for job %lld from %s (backfill): it "
				 "starts here only if its walltime ends by then", h->name,
				 (long long)h->held_job, a);
		} else {
			snprintf(buf, len, "%s: fits (starts on the next pass)", h->name);
		}
		break;
	case PLACE_DOWN:
		snprintf(buf, len, "%s: down (no heartbeat)", h->name);
		break;
	case PLACE_DRAINING:
		snprintf(buf, len, "%s: draining", h->name);
		break;
	case PLACE_WINDOW:
		if (h->opens_ms > 0) {
			time_format_iso(h->opens_ms, a, sizeof a);
			snprintf(buf, len, "%s: outside its window (%s) until %s", h->name,
				 h->window ? h->window : "?", a);
		} else {
			snprintf(buf, len, "%s: outside its window (%s)", h->name, h->window ? h->window : "?");
		}
		break;
	case PLACE_STORAGE:
		time_format_iso(h->storage_down_since * 1000, a, sizeof a);
		snprintf(buf, len, "%s: storage unreachable since %s (%s): nothing starts there until "
			 "the volume answers", h->name, a, h->storage_reason && *h->storage_reason ?
			 h->storage_reason : "no reason given");
		break;
	case PLACE_WINDOW_ENDS:
		format_duration((uint64_t)(req->walltime_ms / 1000), a, sizeof a);
		format_duration((uint64_t)(h->closes_in_ms / 1000), b, sizeof b);
		snprintf(buf, len, "%s: walltime %s is longer than the %s left in its window (%s), "
			 "which stops what runs", h->name, a, b, h->window ? h->window : "?");
		break;
	case PLACE_NOT_IN_HOSTS:
		join_globs(req, globs, sizeof globs);
		snprintf(buf, len, "%s: not in hosts = %s", h->name, globs);
		break;
	case PLACE_NO_FEATURE:
		snprintf(buf, len, "%s: lacks feature %s", h->name, missing_feature(h, req));
		break;
	case PLACE_CPUS_TOTAL:
		snprintf(buf, len, "%s: needs %d cpus, host has %d", h->name, req->cpus, h->cpus);
		break;
	case PLACE_MEM_TOTAL:
		format_size(req->mem, a, sizeof a);
		format_size(h->mem, b, sizeof b);
		snprintf(buf, len, "%s: needs %s of memory, host has %s", h->name, a, b);
		break;
	case PLACE_SCRATCH_TOTAL:
		format_size(req->scratch, a, sizeof a);
		format_size(h->scratch_total, b, sizeof b);
		snprintf(buf, len, "%s: needs %s of scratch, host has %s", h->name, a, b);
		break;
	case PLACE_GPUS_TOTAL:
		snprintf(buf, len, "%s: needs %d gpus, host has %d", h->name, req->gpus, h->gpus);
		break;
	case PLACE_CPU_LIVE:
		snprintf(buf, len, "%s: CPU used outside parsa %.0f%% >= limit %d%% (live %.0f%%: "
			 "parsa %.0f%%, outside %.0f%%)", h->name, h->outside_cpu_pct, h->cpu_limit,
			 h->cpu_pct, parsa_share(h->cpu_pct, h->outside_cpu_pct), h->outside_cpu_pct);
		break;
	case PLACE_MEM_LIVE:
		snprintf(buf, len, "%s: memory used outside parsa %.0f%% >= limit %d%% (live %.0f%%: "
			 "parsa %.0f%%, outside %.0f%%)", h->name, h->outside_mem_pct, h->mem_limit,
			 h->mem_pct, parsa_share(h->mem_pct, h->outside_mem_pct), h->outside_mem_pct);
		break;
	case PLACE_CPUS_FREE:
		if (outside_cpus(h) > 0)
			snprintf(buf, len, "%s: needs %d cpus, %d of %d free (%d reserved, %d busy "
				 "outside parsa)", h->name, req->cpus, placement_free_cpus(h), h->cpus,
				 h->reserved_cpus, outside_cpus(h));
		else
			snprintf(buf, len, "%s: needs %d cpus, %d of %d free", h->name, req->cpus,
				 placement_free_cpus(h), h->cpus);
		break;
	case PLACE_MEM_FREE:
		format_size(req->mem, a, sizeof a);
		format_size(placement_free_mem(h), b, sizeof b);
		format_size(h->mem, c, sizeof c);
		if (outside_mem(h) > 0) {
			char d[32];

			format_size(outside_mem(h), d, sizeof d);
			snprintf(buf, len, "%s: needs %s of memory, %s of %s free (%s used outside "
				 "parsa's reservations)", h->name, a, b, c, d);
		} else {
			snprintf(buf, len, "%s: needs %s of memory, %s of %s free", h->name, a, b, c);
		}
		break;
	case PLACE_GPUS_FREE:
		snprintf(buf, len, "%s: needs %d gpus, %d of %d free", h->name, req->gpus,
			 h->gpus > h->reserved_gpus ? h->gpus - h->reserved_gpus : 0, h->gpus);
		break;
	case PLACE_SCRATCH_FREE:
		free_bytes = h->scratch_free > h->reserved_scratch ? h->scratch_free - h->reserved_scratch : 0;
		format_size(req->scratch, a, sizeof a);
		format_size(free_bytes, b, sizeof b);
		snprintf(buf, len, "%s: needs %s of scratch, %s free", h->name, a, b);
		break;
	}
}

int placement_never_fits(const struct placement_host *hosts, size_t nhosts,
			 const struct placement_req *req, char *buf, size_t len)
{
	int cpus_ok = 0, mem_ok = 0, scratch_ok = 0, gpus_ok = 0, any_match = 0;
	char size[32], globs[256];

	buf[0] = '\0';
	if (nhosts == 0) {
		snprintf(buf, len, "no host is registered");
		return 1;
	}
	for (size_t i = 0; i < nhosts; i++) {
		if (!matches_hosts(&hosts[i], req))
			continue;
		any_match = 1;
		cpus_ok |= req->cpus <= hosts[i].cpus;
		mem_ok |= req->mem <= hosts[i].mem;
		scratch_ok |= req->scratch <= hosts[i].scratch_total;
		gpus_ok |= req->gpus <= hosts[i].gpus;
	}
	if (!any_match) {
		join_globs(req, globs, sizeof globs);
		snprintf(buf, len, "no host matches hosts = %s", globs);
	} else if (!cpus_ok) {
		snprintf(buf, len, "no host has %d cpus", req->cpus);
	} else if (!mem_ok) {
		format_size(req->mem, size, sizeof size);
		snprintf(buf, len, "no host has %s of memory", size);
	} else if (!scratch_ok) {
		format_size(req->scratch, size, sizeof size);
		snprintf(buf, len, "no host has %s of scratch", size);
	} else if (!gpus_ok) {
		snprintf(buf, len, "no host has %d gpus", req->gpus);
	} else {
		return 0;
	}
	return 1;
}

static int cmp_order(const void *pa, const void *pb)
{
	const struct placement_order *a = &((const struct placement_req *)pa)->order;
	const struct placement_order *b = &((const struct placement_req *)pb)->order;

	if (a->usage != b->usage)
		return a->usage < b->usage ? -1 : 1;
	if (a->priority != b->priority)
		return a->priority > b->priority ? -1 : 1;
	if (a->submitted_ms != b->submitted_ms)
		return a->submitted_ms < b->submitted_ms ? -1 : 1;
	if (a->job != b->job)
		return a->job < b->job ? -1 : 1;
	if (a->stage != b->stage)
		return a->stage < b->stage ? -1 : 1;
	if (a->index != b->index)
		return a->index < b->index ? -1 : 1;
	return 0;
}

void placement_sort(struct placement_req *reqs, size_t nreqs)
{
	if (nreqs > 1)
		qsort(reqs, nreqs, sizeof *reqs, cmp_order);
}

int placement_host_open(const struct placement_host *h)
{
	return h->up && !h->draining && !h->closed && h->storage_down_since <= 0;
}

size_t placement_run(struct placement_host *hosts, size_t nhosts,
		     struct placement_req *reqs, size_t nreqs)
{
	return placement_run_gated(hosts, nhosts, reqs, nreqs, NULL);
}

size_t placement_run_gated(struct placement_host *hosts, size_t nhosts,
			   struct placement_req *reqs, size_t nreqs, const struct placement_gate *gate)
{
	/* Per-host glob verdicts for the current group: -1 unknown, 0 no, 1 yes. */
	signed char *match = xmalloc(nhosts ? nhosts : 1);
	int64_t match_group = 0, failed_group = 0;
	int have_match = 0, have_failed = 0;
	size_t placed = 0;

	for (size_t r = 0; r < nreqs; r++) {
		struct placement_req *req = &reqs[r];
		int best = -1, best_free = -1, avoided = -1;

		req->host = -1;
		/* Reservations only grow during a pass, so once one request of a group
		 * fits nowhere the identical ones after it cannot fit either. */
		if (have_failed && req->group == failed_group)
			continue;
		if (!have_match || req->group != match_group) {
			memset(match, -1, nhosts ? nhosts : 1);
			match_group = req->group;
			have_match = 1;
		}
		for (size_t i = 0; i < nhosts; i++) {
			struct placement_host *h = &hosts[i];
			int free_cpus;

			if (!placement_host_open(h))
				continue;
			if (match[i] < 0)
				match[i] = (signed char)matches_hosts(h, req);
			if (!match[i] || check_resources(h, req) != PLACE_FITS)
				continue;
			if (gate && gate->allow && !gate->allow(gate->arg, hosts, i, req))
				continue;
			/* Where it just failed only if nothing else has room. */
			if (req->avoid && strcmp(req->avoid, h->name) == 0) {
				avoided = (int)i;
				continue;
			}
			free_cpus = placement_free_cpus(h);
			if (free_cpus > best_free) {
				best = (int)i;
				best_free = free_cpus;
			}
		}
		if (best < 0)
			best = avoided;
		if (best < 0) {
			failed_group = req->group;
			have_failed = 1;
			if (gate && gate->blocked)
				gate->blocked(gate->arg, hosts, nhosts, req);
			continue;
		}
		hosts[best].reserved_cpus += req->cpus;
		hosts[best].reserved_mem += req->mem;
		hosts[best].reserved_scratch += req->scratch;
		hosts[best].reserved_gpus += req->gpus;
		req->host = best;
		placed++;
		if (gate && gate->placed)
			gate->placed(gate->arg, hosts, (size_t)best, req);
	}
	free(match);
	return placed;
}
