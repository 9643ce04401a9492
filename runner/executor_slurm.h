/* The Slurm executor (executor.h): each instance is a Slurm job, or a task of
 * a job array that carries the starts of a poll cycle, run as the instance's
 * user, whose wrapper script records the stage's exit code on the job's
 * volume (slurm_wrapper.h); one batched squeue per poll cycle watches them
 * all. */
#ifndef PARSA_RUNNER_EXECUTOR_SLURM_H
#define PARSA_RUNNER_EXECUTOR_SLURM_H

#include <stdbool.h>
#include <stdint.h>

#include "executor.h"

struct executor_slurm_config {
	const char *runner;        /* the runner's host name: jobs are named parsa-<runner> */
	const char *partition, *account, *qos; /* NULL: Slurm's defaults */
	/* --slurm-path-map FROM=TO: the mount as compute nodes see it (a path
	 * under FROM is written as TO... there); NULL: the same path. */
	const char *map_from, *map_to;
	int64_t lost_grace_ms;     /* a job gone from squeue without an exit file: lost after this */
	int64_t max_interval_ms;   /* squeue at most this far apart (1000 while something waits) */
	bool allow_requeue;        /* sbatch --requeue; else --no-requeue (the default) */
	long max_array;            /* --slurm-max-array: tasks per sbatch --array at most; 0: MaxArraySize */
};

/* NULL with errno and *err. */
struct executor *executor_slurm_create(const struct executor_slurm_config *cfg, char **err);

/* The name of Slurm's default partition (sinfo's "*"), for a runner without
 * a partition of its own: the cycle's squeue then asks for it alone, and
 * other users' jobs there are the host's outside load. */
void executor_slurm_default_partition(struct executor *e, const char *name);

/* The next tick runs the poll's squeue, whatever the interval. */
void executor_slurm_look_now(struct executor *e);

/* The calls made to slurmctld so far (for slurm_rpc_per_min). */
struct slurm_rpc_counts {
	uint64_t sbatch, squeue, scancel, scontrol;
	uint64_t sacct; /* to slurmdbd, not slurmctld */
};
void executor_slurm_counts(const struct executor *e, struct slurm_rpc_counts *c);

#endif
