/* Running Slurm's client commands (sbatch, squeue, scancel) from the runner:
 * a child with a clean environment, optionally as another user (sbatch runs as
 * the instance's user, never as the runner's), text fed on stdin and both
 * outputs captured, under a timeout. Synchronous: each call is one short RPC
 * to slurmctld (about 30 ms measured), made at most a few times a poll cycle. */
#ifndef PARSA_RUNNER_SLURM_RUN_H
#define PARSA_RUNNER_SLURM_RUN_H

#include <jansson.h>

/* What a command said. out and err are malloc'ed ("" when silent). */
struct slurm_run_result {
	int status;   /* exit status; 128+N when killed by signal N (or by the timeout) */
	char *out;
	char *err;
};

void slurm_run_result_clear(struct slurm_run_result *r);

/* Run argv (argv[0] looked up in the runner's PATH) with input on stdin (NULL: /dev/null),
 * as identity (the JSON of identity_decide(); NULL: as the runner) and
 * timeout_ms at most. 0 when it ran (whatever its status), -1 with errno and
 * *err when it could not be started. */
int slurm_run(char *const *argv, const char *input, const json_t *identity, int timeout_ms,
	      struct slurm_run_result *res, char **err);

#endif
