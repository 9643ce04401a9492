/* Slurm's accounting, read without running anything: whether a cluster has
 * it (`scontrol show config`'s AccountingStorageType, or sacct's own refusal),
 * and the batched `sacct -P` answer for jobs that ended, one record per job
 * or array task with its steps (.batch, .extern, .0) folded in: the state
 * with who cancelled, the CPU time and the peak memory. Pure functions over
 * Slurm 22.05's formats (tests/fixtures/slurm/sacct-*.txt); the poll cycle
 * (slurm_poll.c) runs sacct, once per cycle for the jobs that ended. */
#ifndef PARSA_RUNNER_SLURM_ACCT_H
#define PARSA_RUNNER_SLURM_ACCT_H

#include "slurm_text.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The columns the runner asks sacct for (with -n -P, --jobs=...). */
#define SLURM_SACCT_FORMAT "JobID,State,ExitCode,TotalCPU,MaxRSS"

/* What sacct knows of one job or array task. */
struct slurm_acct {
	char id[48];                  /* "123" or "123_4", as sacct -j takes it */
	char state[SLURM_STATE_MAX];  /* the job's, without " by UID" */
	long cancel_uid;              /* "CANCELLED by 1001"; -1 not said */
	bool has_exit;
	int exit_code, exit_signal;   /* ExitCode=CODE:SIGNAL of the job */
	int64_t cpu_ms;               /* TotalCPU (user + system of every step); -1 unknown */
	int64_t max_rss;              /* bytes: the largest MaxRSS of its steps (the batch
				       * step's, mostly); -1 unknown */
};

/* Whether `scontrol show config`'s answer says the cluster keeps accounting
 * (AccountingStorageType other than accounting_storage/none): 1 yes, 0 no,
 * -1 (errno ENOENT) when the line is missing. */
int slurm_config_accounting(const char *text);

/* Whether sacct's stderr says the cluster keeps none ("Slurm accounting
 * storage is disabled"). */
bool slurm_acct_disabled(const char *text);

/* sacct's TotalCPU ("00:00.012", "01:02:03", "1-02:03:04", "12:03.500") in
 * ms. 0, or -1 with errno EINVAL. */
int slurm_acct_duration(const char *s, size_t n, int64_t *ms);

/* sacct's MaxRSS ("0", "1234K", "12.50M", "2G"; K is KiB) in bytes; "" is
 * unknown (-1). 0, or -1 with errno EINVAL. */
int slurm_acct_size(const char *s, size_t n, int64_t *bytes);

/* Parse the answer of sacct -n -P -o SLURM_SACCT_FORMAT: *out is a malloc'ed
 * array of *n records, one per job or task, steps folded in (NULL when none).
 * 0, or -1 with errno EINVAL and *err naming the line. */
int slurm_acct_parse(const char *text, struct slurm_acct **out, size_t *n, char **err);

/* The record of id ("123", "123_4"); NULL when sacct said nothing of it. */
const struct slurm_acct *slurm_acct_find(const struct slurm_acct *recs, size_t n, const char *id);

/* Whether a record's state is one a job ends in (sacct may lag behind
 * squeue: RUNNING or COMPLETING for a job squeue says ended). */
bool slurm_acct_final(const struct slurm_acct *a);

#endif
