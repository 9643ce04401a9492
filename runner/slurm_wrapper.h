/* The Slurm job's side of an instance, as text: the wrapper script that runs
 * the stage on a compute node with the environment a local instance gets and
 * records its exit code on the job's volume, where that exit file is, and how
 * paths on the runner's mount read on the nodes. Pure functions, unit-tested
 * (test_executor_slurm); runner/executor_slurm.c submits the script. */
#ifndef PARSA_RUNNER_SLURM_WRAPPER_H
#define PARSA_RUNNER_SLURM_WRAPPER_H

#include <stddef.h>
#include <stdint.h>

#include "assign.h"

/* path with a leading from replaced by to (both NULL: a copy). Malloc'ed. */
char *slurm_map_path(const char *path, const char *from, const char *to);

/* The file the wrapper writes the exit code to, under mount. Malloc'ed. */
char *slurm_exit_path(const char *mount, const struct assignment *a);
/* The instance's $PARSA_PROGRESS under mount, beside its exit file. Malloc'ed. */
char *slurm_progress_path(const char *mount, const struct assignment *a);

/* The wrapper script for a (mount as the nodes see it): the environment a
 * local instance gets (its progress file made, on the volume), its log appended to, the stage's command, the exit
 * code written to the exit file in one line (a reader that sees it cut short
 * sees no newline: slurm_exit_parse refuses it). Malloc'ed. */
char *slurm_wrapper_text(const struct assignment *a, const char *node_mount);

/* One script for a job array whose task k runs wrappers[k] (each a text of
 * slurm_wrapper_text): the instances' own wrappers, chosen by
 * SLURM_ARRAY_TASK_ID, so that every task appends to its instance's log and
 * writes its instance's exit file. It goes to sbatch on stdin, as a single
 * wrapper does: the instance's user cannot read the runner's state folder.
 * A task id it does not know exits 125. Malloc'ed. */
char *slurm_array_script(const char *const *wrappers, size_t n);

/* The exit file's text ("CODE START_MS END_MS\n", the node's wall clock; the
 * times 0 when missing): 0 and *code, or -1 (incomplete, garbage). */
int slurm_exit_parse(const char *text, int *code, int64_t *started_ms, int64_t *ended_ms);

#endif
