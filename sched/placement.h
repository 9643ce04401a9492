/* Placement: which queued instance goes to which host. A pure computation over
 * plain arrays, with no locks, I/O or clock of its own, so that it can be unit
 * tested exhaustively and benchmarked (issue 3: 10,000 instances x 200 hosts).
 * The same fit test explains, host by host, why an instance is not placed. */
#ifndef PARSA_PLACEMENT_H
#define PARSA_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

/* A host as the pass sees it. Capacity and live use are inputs; the reserved_*
 * fields are inputs too and placement_run() adds what it places. */
struct placement_host {
	const char *name;
	int up;                 /* heartbeat within the timeout */
	int draining;           /* takes no new work */
	int cpus;
	uint64_t mem;
	uint64_t scratch_total; /* size of the scratch file system */
	uint64_t scratch_free;  /* free local scratch, last reported */
	int reserved_cpus;
	uint64_t reserved_mem;
	uint64_t reserved_scratch;
	double cpu_pct;         /* live CPU busy %, last heartbeat (adjusted by the caller) */
	double mem_pct;         /* live memory used % */
	int cpu_limit;          /* % ; >= 100 disables the live check */
	int mem_limit;
	const char *const *features; /* what stages may ask for with hosts = feature:NAME */
	size_t nfeatures;
};

/* Where a request sits in the queue: the team with the least fair-share usage
 * first (fairshare.h), then higher priority, then older submission, then job
 * id, then stage order, then instance index. */
struct placement_order {
	double usage;           /* the job's team's decayed usage, cpu-seconds */
	int priority;
	int64_t submitted_ms;
	int64_t job;
	int stage;
	int index;
};

/* One queued instance. Requests with the same group (one stage of one job)
 * must have identical needs: once one of them fits nowhere, the pass skips the
 * rest of the group, which keeps a 10,000-instance fan-out cheap. */
struct placement_req {
	int64_t group;
	struct placement_order order;
	int cpus;
	uint64_t mem;
	uint64_t scratch;
	const char *const *hosts; /* fnmatch globs and "feature:NAME"; nhosts == 0 means any
				   * host. A host qualifies when it matches one of the globs
				   * (if any) and has every feature named. */
	size_t nhosts;
	void *cookie;             /* the caller's; placement never touches it */
	int host;                 /* out: index into hosts[], or -1 when not placed */
};

/* Why an instance does not fit a host, in the order the checks are made. */
enum placement_verdict {
	PLACE_FITS = 0,
	PLACE_DOWN,
	PLACE_DRAINING,
	PLACE_NOT_IN_HOSTS,
	PLACE_NO_FEATURE,     /* lacks a feature the stage asks for */
	PLACE_CPUS_TOTAL,     /* more than the host has at all */
	PLACE_MEM_TOTAL,
	PLACE_SCRATCH_TOTAL,
	PLACE_CPU_LIVE,       /* live use at or over the limit */
	PLACE_MEM_LIVE,
	PLACE_CPUS_FREE,      /* not enough left after reservations */
	PLACE_MEM_FREE,
	PLACE_SCRATCH_FREE,
};

/* Does req fit host h right now? */
enum placement_verdict placement_check(const struct placement_host *h, const struct placement_req *req);

/* One line for `why`, e.g. "h1: needs 8 cpus, 2 of 2 free" or
 * "h1: live CPU 97% >= limit 90%". Always NUL-terminates buf. */
void placement_explain(const struct placement_host *h, const struct placement_req *req,
		       char *buf, size_t len);

/* When req exceeds the total capacity of every host in some resource, a line
 * such as "no host has 3T of scratch" (returns 1); else 0 and buf is "". With
 * no hosts at all: "no host is registered". */
int placement_never_fits(const struct placement_host *hosts, size_t nhosts,
			 const struct placement_req *req, char *buf, size_t len);

/* Sort requests into queue order (struct placement_order). */
void placement_sort(struct placement_req *reqs, size_t nreqs);

/* Place reqs in their given order: each goes to the fitting host with the most
 * free cpus (ties: the first), whose reservations then grow. A request that
 * fits nowhere is skipped and later ones are still tried (backfill). Sets
 * reqs[i].host and returns how many were placed. */
size_t placement_run(struct placement_host *hosts, size_t nhosts,
		     struct placement_req *reqs, size_t nreqs);

#endif
