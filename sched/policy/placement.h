/* Placement: which queued instance goes to which host. A pure computation over
 * plain arrays, with no locks, I/O or clock of its own, so that it can be unit
 * tested exhaustively and benchmarked (issue 3: 10,000 instances x 200 hosts).
 * The same fit test explains, host by host, why an instance is not placed. */
#ifndef PARSA_PLACEMENT_H
#define PARSA_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

/* A host as the pass sees it. Capacity and live use are inputs; the reserved_*
 * fields are inputs too and placement_run() adds what it places. Live use
 * outside parsa occupies the host like a reservation: an instance fits in
 * cpus - reserved_cpus - outside_cpus cores and mem - reserved_mem -
 * outside_mem bytes, so a host running only parsa's work fills every core
 * while one shared with a user's own programs takes only what they leave.
 * A cpu_limit (mem_limit) of 100 or more turns that off for cores (memory):
 * then outside use neither holds work back nor occupies the host. */
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
	double cpu_pct;         /* live CPU busy % of the whole machine, last heartbeat */
	double mem_pct;         /* live memory used % */
	double outside_cpu_pct; /* of which outside parsa: the limits apply to these */
	double outside_mem_pct;
	int outside_cpus;       /* cores kept busy outside parsa (rounded) */
	uint64_t outside_mem;   /* bytes used outside parsa's reservations */
	int cpu_limit;          /* % ; >= 100: outside use does not count at all */
	int mem_limit;
	int gpus;               /* GPUs the host hands out */
	int reserved_gpus;
	const char *const *features; /* what stages may ask for with hosts = feature:NAME */
	size_t nfeatures;
	int closed;             /* outside its window (sched/policy/timing.c): takes no new work */
	int64_t storage_down_since; /* its mount cannot reach the volume since (epoch s): */
	const char *storage_reason; /* takes no new work; 0 = it can (reason NULL) */
	const char *window;     /* its window's text, for `why`; NULL when it has none */
	int64_t opens_ms;       /* when a closed window opens again (-1: never), for `why` */
	int64_t closes_in_ms;   /* drain-at-window-end = no: ms until the window closes and
				 * stops what runs; 0 = no such limit */
	int64_t held_job;       /* the last pass's backfill reservation (sched/policy/backfill.h), */
	int held_stage;         /* for `why`: this job's stage may start here at held_ms; */
	int64_t held_ms;        /* 0 = not held */
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
	int gpus;
	const char *const *hosts; /* fnmatch globs and "feature:NAME"; nhosts == 0 means any
				   * host. A host qualifies when it matches one of the globs
				   * (if any) and has every feature named. */
	size_t nhosts;
	void *cookie;             /* the caller's; placement never touches it */
	const char *avoid;        /* a host it rather not go to (where it just failed): taken
				   * only when no other fitting host has room; NULL: none */
	int host;                 /* out: index into hosts[], or -1 when not placed */
	int64_t walltime_ms;      /* the stage's walltime; 0 = none (runs until it ends) */
	uint64_t disk;            /* space on the volume (sched/engine/space.h, through a gate) */
};

/* Why an instance does not fit a host, in the order the checks are made. */
enum placement_verdict {
	PLACE_FITS = 0,
	PLACE_DOWN,
	PLACE_DRAINING,
	PLACE_WINDOW,         /* outside the host's window */
	PLACE_STORAGE,        /* its mount cannot reach the volume */
	PLACE_NOT_IN_HOSTS,
	PLACE_NO_FEATURE,     /* lacks a feature the stage asks for */
	PLACE_CPUS_TOTAL,     /* more than the host has at all */
	PLACE_MEM_TOTAL,
	PLACE_SCRATCH_TOTAL,
	PLACE_GPUS_TOTAL,
	PLACE_WINDOW_ENDS,    /* its walltime outlasts the host's window, which stops it */
	PLACE_CPU_LIVE,       /* live use outside parsa at or over the limit */
	PLACE_MEM_LIVE,
	PLACE_CPUS_FREE,      /* not enough left after reservations and outside use */
	PLACE_MEM_FREE,
	PLACE_SCRATCH_FREE,
	PLACE_GPUS_FREE,
};

/* What is left for new work on h: capacity less reservations and less what
 * runs outside parsa (never below 0). */
int placement_free_cpus(const struct placement_host *h);
/* The cores a new instance could get now: placement_free_cpus() on an up,
 * not draining host within its live CPU and memory limits, else 0 (the
 * cluster's status sums it as "free"). */
int placement_startable_cpus(const struct placement_host *h);
uint64_t placement_free_mem(const struct placement_host *h);

/* Does req fit host h right now? */
enum placement_verdict placement_check(const struct placement_host *h, const struct placement_req *req);

/* One line for `why`, e.g. "h1: needs 8 cpus, 2 of 2 free" or
 * "h1: CPU used outside parsa 97% >= limit 90%". Always NUL-terminates buf. */
void placement_explain(const struct placement_host *h, const struct placement_req *req,
		       char *buf, size_t len);

/* When req exceeds the total capacity of every host in some resource, a line
 * such as "no host has 3T of scratch" (returns 1); else 0 and buf is "". With
 * no hosts at all: "no host is registered". */
int placement_never_fits(const struct placement_host *hosts, size_t nhosts,
			 const struct placement_req *req, char *buf, size_t len);

/* Sort requests into queue order (struct placement_order). */
void placement_sort(struct placement_req *reqs, size_t nreqs);

/* Does h take new work at all (up, not draining, inside its window, its
 * volume reachable)? */
int placement_host_open(const struct placement_host *h);

/* Place reqs in their given order: each goes to the fitting host with the most
 * free cpus (ties: the first), other than its avoid host when another fits,
 * whose reservations then grow. A request that
 * fits nowhere is skipped and later ones are still tried (backfill). Sets
 * reqs[i].host and returns how many were placed. */
size_t placement_run(struct placement_host *hosts, size_t nhosts,
		     struct placement_req *reqs, size_t nreqs);

/* A say in placement beyond resources (sched/policy/backfill.c: a blocked job keeps
 * its place). Members may be NULL. */
struct placement_gate {
	/* May req go to hosts[h], which fits it? Asked of every fitting host. */
	int (*allow)(void *arg, const struct placement_host *hosts, size_t h,
		     const struct placement_req *req);
	/* req fits no host now (told for the first request of its group). */
	void (*blocked)(void *arg, const struct placement_host *hosts, size_t nhosts,
			const struct placement_req *req);
	/* req was placed on hosts[h]. */
	void (*placed)(void *arg, const struct placement_host *hosts, size_t h,
		       const struct placement_req *req);
	void *arg;
};

/* placement_run() with a gate (NULL: the same as placement_run). */
size_t placement_run_gated(struct placement_host *hosts, size_t nhosts,
			   struct placement_req *reqs, size_t nreqs, const struct placement_gate *gate);

#endif
