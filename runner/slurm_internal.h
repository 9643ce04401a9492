/* What the Slurm executor's files share (executor_slurm.c: start, reattach
 * and the ops; slurm_submit.c: queued starts become sbatch --array calls;
 * slurm_poll.c: the poll cycle of squeue and scancel): the executor's, a
 * batch's and a job's structs. Not for other modules. */
#ifndef PARSA_RUNNER_SLURM_INTERNAL_H
#define PARSA_RUNNER_SLURM_INTERNAL_H

#include "executor_slurm.h"
#include "slurm_text.h"

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
/* With no job of its own in Slurm, the partition's squeue (the outside load)
 * this often. */
#define LOAD_INTERVAL_MS 30000
#define RETRY_FIRST_MS 5000      /* a start Slurm refused for now, tried again after */
#define RETRY_MAX_MS 60000
/* Starts that arrive within this of the first queued one share the sbatch
 * calls (the scheduler's assignments for a fan-out come over a few reads). */
#define GATHER_MS 250
/* An array's script at most this big: Slurm refuses one over its
 * max_script_size (4 MB by default) and keeps a copy per array. */
#define ARRAY_SCRIPT_MAX (1 << 20)
/* scontrol show config (MaxArraySize, MaxJobCount) read again after this. */
#define CONFIG_REFRESH_MS (10 * 60 * 1000)
/* sacct may lag behind squeue (slurmctld tells slurmdbd a moment later): an
 * ended job it does not know as ended yet waits this long for it. */
#define ACCT_WAIT_MS 10000
#define SACCT_TIMEOUT_MS 10000

/* Queued starts that one sbatch submits: its tag is in every member's DIR
 * (slurm_batch) before sbatch runs, so that a runner killed before it
 * recorded the job id finds the job again by its --comment, and never
 * submits twice. */
struct slurm_batch {
	char tag[96];
	struct executor_job **members; /* member k is task k (a plain job when n is 1) */
	size_t n;
	char spec[48];                 /* --array; "" for a plain job */
	bool uncertain;                /* an sbatch of it was stopped: look for its tag first */
	int64_t retry_at_ms, retry_ms;
	struct slurm_batch *next;
};

struct slurm_executor {
	struct executor base;      /* first: the executor's header */
	char *runner, *job_name, *partition, *account, *qos, *map_from, *map_to;
	int64_t lost_grace_ms, max_interval_ms;
	bool allow_requeue;
	int64_t interval_ms, next_query_ms;
	struct slurm_rpc_counts counts;
	int64_t sbatch_spent_ms;   /* in sbatch since the last tick */
	int64_t last_poll_ms;      /* wall clock: the last squeue that answered; 0 none */
	/* Slurm's default partition's name (from sinfo, slurm_host.h), for a
	 * runner without --slurm-partition; NULL until known. */
	char *default_partition;
	long outside_cpus;         /* other users' CPUs in the partition at the last squeue; -1 */
	int64_t outside_at_ms;     /* wall clock of that squeue; 0 none */
	/* Whether the cluster keeps accounting (scontrol show config, read at
	 * the first tick and every CONFIG_REFRESH_MS; sacct's own refusal):
	 * 1 yes, 0 no, -1 not known. Only with 1 does the cycle ask sacct. */
	int accounting;
	char *poll_error;          /* why the last squeue failed; NULL when it answered */
	int64_t submit_at_ms;      /* monotonic: queued starts go to sbatch then; 0 none */
	long max_array;            /* --slurm-max-array; 0: Slurm's MaxArraySize */
	long slurm_max_array;      /* MaxArraySize (capped by MaxJobCount); 0 unknown */
	int64_t config_at_ms;      /* when scontrol show config was read; 0 never */
	long room_cap;             /* after a submit limit: tasks per sbatch for now; -1 none */
	/* After a refusal for now (a limit, a busy slurmctld) no start goes
	 * to sbatch before this (monotonic; 0 none), doubling while refused. */
	int64_t hold_until_ms, hold_ms;
	unsigned batch_seq;
	struct slurm_batch *batches;
	/* squeue's tags ("%F|%k") for the reattaches of one restart. */
	char *tags_text;
	int64_t tags_at_ms;
	struct executor_job *jobs;
};

struct executor_job {
	struct slurm_executor *se;
	void *owner;
	char *dir;
	char *exit_path;           /* as the runner sees it */
	char id[48];               /* "123", "123_4" for an array task; "" while queued */
	uint64_t job_id;           /* the job, or the array's job id; 0 while queued */
	char *partition;           /* where it was sent; NULL: Slurm's default */
	long task;                 /* its array task; -1 a plain job */
	bool ended, running, cancel;
	/* What a queued start submits: sbatch's options (no script, no
	 * --array, no --comment), its wrapper, its user; key says which starts
	 * can share an sbatch (the options and the user). */
	char **argv;
	char *script;
	json_t *identity;
	char *key;
	struct slurm_batch *batch; /* the batch it is in, until Slurm took it */
	bool waiting_told;         /* a limit's wait was reported */
	int64_t retry_at_ms, retry_ms;
	int64_t gone_since_ms;     /* monotonic: first squeue without it; 0 */
	int64_t ended_wait_ms;     /* monotonic: squeue says ended, no exit file yet; 0 */
	/* Ended, its end told after the cycle's sacct (end_v: what squeue said,
	 * when end_has_v); end_since_ms: monotonic, when it was found ended. */
	bool end_due, end_has_v;
	struct slurm_verdict end_v;
	int64_t end_since_ms;
	char *stop;
	struct executor_job *prev, *next;
};

static inline struct slurm_executor *slurm_of(struct executor *e)
{
	return (struct slurm_executor *)e;
}

/* Count one call to slurmctld (counter: one of se->counts') and log it. */
void slurm_rpc_counted(struct slurm_executor *se, const char *what, uint64_t *counter);
/* Write text to DIR/name through a temporary name (synced when sync). */
int slurm_write_text(const char *dir, const char *name, const char *text, bool sync);
/* The array job id (or the job id) of the job whose --comment is tag, from
 * squeue; 0 when none is there. fresh false: an answer of the last few
 * seconds will do (the reattaches of a restart ask once for all). */
uint64_t slurm_find_tagged(struct slurm_executor *se, const char *tag, bool fresh);
/* Forget what a queued start kept for its submission. */
void slurm_drop_submission(struct executor_job *j);
/* Take j out of its batch (it is stopped, or released). */
void slurm_leave_batch(struct executor_job *j);
/* scontrol show config (MaxArraySize, MaxJobCount, AccountingStorageType)
 * unless read within CONFIG_REFRESH_MS (slurm_submit.c). */
void slurm_read_config(struct slurm_executor *se, int64_t now_ms);
/* slurm_submit.c: queued starts that are due, grouped into batches and
 * submitted (as many sbatch calls as the cycle's budget allows). Returns
 * the next time something waits for (-1 none). */
int64_t slurm_submit_queued(struct slurm_executor *se, int64_t now_ms);
void slurm_batches_free(struct slurm_executor *se);
/* The ops' tick (slurm_poll.c): queued starts, one scancel, one squeue. */
int64_t slurm_poll_tick(struct executor *e, int64_t now_ms);

#endif
