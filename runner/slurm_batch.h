/* How queued starts of the Slurm executor become sbatch calls, as pure
 * functions: starts that can share one submission (the same sbatch
 * arguments and user) grouped and cut into job arrays that respect Slurm's
 * limits and a script size; the "123_4" ids of array tasks written and read;
 * an instance's record found in the cycle's squeue answer; a value of
 * `scontrol show config`. The executor (slurm_submit.c) runs the commands. */
#ifndef PARSA_RUNNER_SLURM_BATCH_H
#define PARSA_RUNNER_SLURM_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "slurm_text.h"

/* One queued start: key is what must be equal for two starts to share an
 * sbatch (its arguments and its user, slurm_submit.c), script_len the size of
 * its wrapper. */
struct slurm_plan_item {
	const char *key;
	size_t script_len;
};

/* One submission: count instances, a plain job when count is 1 (spec ""),
 * else an array with spec "0-N". Its members are the items whose batch_of is
 * its index, in the items' order: the k-th of them is task k. */
struct slurm_plan_batch {
	long count;
	char spec[48];
};

/* Group items by key (first come, first grouped) and cut each group into
 * batches of at most lim->max_array_size tasks whose array script stays under
 * max_script bytes, no more tasks in all than lim->submit_room and no more
 * than max_batches batches. batch_of[i] gets item i's batch, or -1 when it
 * waits for a later cycle (a limit, not a failure). Returns the number of
 * batches written, -1 with errno EINVAL for a NULL key or max_batches 0 with
 * items to place. */
int slurm_plan(const struct slurm_plan_item *items, size_t n, const struct slurm_limits *lim,
	       size_t max_script, struct slurm_plan_batch *batches, size_t max_batches, long *batch_of);

/* The bytes the array script (slurm_array_script) adds to each wrapper. */
#define SLURM_ARRAY_BRANCH_BYTES 32

/* An instance's Slurm id as scancel and the user read it: "123" for a plain
 * job (task < 0), "123_4" for an array task. */
void slurm_format_ref(uint64_t job_id, long task, char *buf, size_t len);
/* The reverse; 0, or -1 with errno EINVAL. Trailing blanks are ignored. */
int slurm_parse_ref(const char *text, uint64_t *job_id, long *task);

/* The record of the cycle's answer that says how the instance is: the plain
 * job job_id (task < 0), or task of the array job_id, pending in a range or
 * a task of its own. NULL when squeue no longer has it. */
const struct slurm_job *slurm_find_ref(const struct slurm_job *jobs, size_t n, uint64_t job_id, long task);

/* The number after "KEY = " in `scontrol show config`'s answer. 0, or -1
 * with errno ENOENT when no line has it (or EINVAL when it is no number). */
int slurm_config_long(const char *text, const char *key, long *value);

#endif
