/* The Slurm executor (executor.h): each instance is one `sbatch` job run as
 * the instance's user, whose wrapper script records the stage's exit code on
 * the job's volume; one batched squeue per poll cycle watches them all. This
 * header also has the pure pieces (the wrapper's text, the path map, the exit
 * file's parsing) for the unit tests. */
#ifndef PARSA_RUNNER_EXECUTOR_SLURM_H
#define PARSA_RUNNER_EXECUTOR_SLURM_H

#include <stdint.h>

#include "assign.h"
#include "executor.h"

struct executor_slurm_config {
	const char *runner;        /* the runner's host name: jobs are named parsa-<runner> */
	const char *partition, *account, *qos; /* NULL: Slurm's defaults */
	/* --slurm-path-map FROM=TO: the mount as compute nodes see it (a path
	 * under FROM is written as TO... there); NULL: the same path. */
	const char *map_from, *map_to;
	int64_t lost_grace_ms;     /* a job gone from squeue without an exit file: lost after this */
	int64_t max_interval_ms;   /* squeue at most this far apart (1000 while something waits) */
};

/* NULL with errno and *err. */
struct executor *executor_slurm_create(const struct executor_slurm_config *cfg, char **err);

/* The calls made to slurmctld so far (for slurm_rpc_per_min). */
struct slurm_rpc_counts {
	uint64_t sbatch, squeue, scancel;
};
void executor_slurm_counts(const struct executor *e, struct slurm_rpc_counts *c);

/* path with a leading from replaced by to (both NULL: a copy). Malloc'ed. */
char *slurm_map_path(const char *path, const char *from, const char *to);

/* The file the wrapper writes the exit code to, as the runner sees it. */
char *slurm_exit_path(const char *mount, const struct assignment *a);

/* The wrapper script for a (mount as the nodes see it): the environment a
 * local instance gets, its log appended to, the stage's command, the exit
 * code written (through a temporary name) to the exit file. Malloc'ed. */
char *slurm_wrapper_text(const struct assignment *a, const char *node_mount);

/* The exit file's text ("0\n"): 0 and *code, or -1 (incomplete, garbage). */
int slurm_exit_parse(const char *text, int *code);

#endif
