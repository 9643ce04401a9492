/* What the Slurm executor's two files share (executor_slurm.c: start,
 * reattach and the ops; slurm_poll.c: the poll cycle of squeue, scancel and
 * queued starts): the executor's and a job's structs. Not for other modules. */
#ifndef PARSA_RUNNER_SLURM_INTERNAL_H
#define PARSA_RUNNER_SLURM_INTERNAL_H

#include "executor_slurm.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#define CMD_TIMEOUT_MS 30000
/* At MaxJobCount sbatch itself sleeps and retries for ever: stopped after
 * this, the start waits and is tried again (looked for by its tag first). */
#define SBATCH_TIMEOUT_MS 10000
/* sbatch time the main loop spends between two ticks before further starts
 * wait for the next one: a fan-out of hundreds must not hold the heartbeat
 * back past the lease (sbatch takes 30 ms idle, much more under load). */
#define SBATCH_BUDGET_MS 1000
#define FAST_INTERVAL_MS 1000
#define RETRY_FIRST_MS 5000      /* a start Slurm refused for now, tried again after */
#define RETRY_MAX_MS 60000

struct slurm_executor {
	struct executor base;      /* first: the executor's header */
	char *runner, *job_name, *partition, *account, *qos, *map_from, *map_to;
	int64_t lost_grace_ms, max_interval_ms;
	bool allow_requeue;
	int64_t interval_ms, next_query_ms;
	struct slurm_rpc_counts counts;
	int64_t sbatch_spent_ms;   /* in sbatch since the last tick */
	int64_t last_poll_ms;      /* wall clock: the last squeue that answered; 0 none */
	char *poll_error;          /* why the last squeue failed; NULL when it answered */
	struct executor_job *jobs;
};

struct executor_job {
	struct slurm_executor *se;
	void *owner;
	char *dir;
	char *exit_path;           /* as the runner sees it */
	char id[32];               /* the Slurm job id; "" while the start is queued */
	uint64_t job_id;           /* 0 while queued: sbatch refused it for now */
	bool ended, running, cancel;
	/* What a queued start submits when it is tried again. */
	char **argv;
	char *script;
	json_t *identity;
	int64_t retry_at_ms, retry_ms;
	int64_t gone_since_ms;     /* monotonic: first squeue without it; 0 */
	int64_t ended_wait_ms;     /* monotonic: squeue says ended, no exit file yet; 0 */
	char *stop;
	struct executor_job *prev, *next;
};

static inline struct slurm_executor *slurm_of(struct executor *e)
{
	return (struct slurm_executor *)e;
}

/* Count one call to slurmctld (counter: one of se->counts') and log it. */
void slurm_rpc_counted(struct slurm_executor *se, const char *what, uint64_t *counter);
/* One sbatch of j's wrapper as its user; on success the id is recorded in
 * DIR. A retry first looks for the job by its tag: an sbatch killed by the
 * timeout may have been taken all the same. -1 with *err and *retry (Slurm
 * busy or at a submit limit: try again later). */
int slurm_submit_job(struct executor_job *j, bool *retry, char **err);
/* Forget what a queued start kept for its retries. */
void slurm_drop_submission(struct executor_job *j);
/* The ops' tick (slurm_poll.c): queued starts, one scancel, one squeue. */
int64_t slurm_poll_tick(struct executor *e, int64_t now_ms);

#endif
