/* What a runner that fronts a Slurm partition (--executor slurm) offers the
 * scheduler and tells it with every heartbeat: the partition's usable CPUs
 * from sinfo, capped by the operator (--slurm-max-jobs), asked at
 * registration and again at most every SLURM_HOST_SINFO_MS; other users'
 * jobs there, which the executor's squeue of every poll cycle counts
 * (executor_facts' cpus_outside), as the host's outside load; and the
 * executor's facts (its jobs pending and running in Slurm, the last poll)
 * for hosts/<h>/status, the web page and /metrics. */
#ifndef PARSA_RUNNER_SLURM_HOST_H
#define PARSA_RUNNER_SLURM_HOST_H

#include <stdbool.h>
#include <stdint.h>

struct executor;
struct heartbeat;

/* sinfo is asked at most this often (besides at registration): nodes up
 * and down change rarely, and the load of the moment comes with the poll
 * cycle's squeue, which slurmctld answers anyway. */
#define SLURM_HOST_SINFO_MS (10 * 60 * 1000)

/* A partition's CPUs in sinfo's answer (SLURM_SINFO_FORMAT). */
struct slurm_partition_use {
	long usable;   /* allocated + idle on nodes that are up (not down or drained) */
	long alloc;    /* allocated to any job, parsa's or not */
	char name[64]; /* the partition's name (the default's, when asked for it) */
};

/* Sum the lines of partition (NULL: the default one). 0, or -1 when no line
 * is that partition's. */
int slurm_partition_use_parse(const char *sinfo_text, const char *partition, struct slurm_partition_use *u);

/* What the heartbeat says of the partition's CPUs: of the outside CPUs
 * other users hold, the part that eats into what parsa was offered (a cap
 * below the usable CPUs leaves room for them first). */
struct slurm_cpu_split {
	long outside;      /* held by others */
	long outside_eff;  /* of offered, held by others: the host's outside cores */
};
void slurm_cpu_split(long usable, long outside, long offered, struct slurm_cpu_split *s);

struct slurm_host;

/* partition NULL: Slurm's default; cap 0: none. */
struct slurm_host *slurm_host_create(const char *partition, int cap);
void slurm_host_destroy(struct slurm_host *sh);

/* The CPUs to register with: sinfo now (logged); when it fails, the cap,
 * else fallback (what this machine has). */
int slurm_host_offer(struct slurm_host *sh, int fallback, int64_t now_ms);

/* The partition's name as sinfo gave it (the default's, for a runner
 * without one); NULL before sinfo answered. */
const char *slurm_host_partition(const struct slurm_host *sh);

/* sinfo again once SLURM_HOST_SINFO_MS have passed since the last; parsa_cpus:
 * the CPUs of the instances Slurm runs for this runner now. true when the
 * CPUs it would offer changed from the registered ones (the caller
 * registers again). */
bool slurm_host_refresh(struct slurm_host *sh, long parsa_cpus, int64_t now_ms);

/* Fill hb's executor object from ex's facts and, once sinfo has answered,
 * its CPU figures: cpu_pct and outside_cpu_pct of what the host offers,
 * outside_cores (the login node's own load is not the partition's). Other
 * users' CPUs are the executor's last squeue's, else (before its first)
 * sinfo's allocated CPUs less parsa's; parsa_cpus: its instances' now. */
void slurm_host_heartbeat(const struct slurm_host *sh, const struct executor *ex, long parsa_cpus,
			  struct heartbeat *hb);

#endif
