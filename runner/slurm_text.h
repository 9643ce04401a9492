/* Slurm's text, read and written without running anything: the batched
 * squeue and `scontrol show job -o` answers parsed into records, sinfo's
 * partition lines, every job state mapped to what it means for a parsa
 * instance, a stage's instances split into job arrays that respect
 * MaxArraySize and MaxSubmitJobs, and the sbatch argument vector of an
 * instance or an array. Pure functions over Slurm 22.05's formats (the
 * fixtures in tests/fixtures/slurm/ were made by a real one); the runner's
 * Slurm executor owns the processes and the polling. */
#ifndef PARSA_RUNNER_SLURM_TEXT_H
#define PARSA_RUNNER_SLURM_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The one squeue format the runner asks for (with --noheader -t all, for its
 * partitions, everyone's jobs): job id as squeue writes it ("123", "123_4",
 * "123_[4-9%2]"), the job's own id, the array's id, the task id or pending
 * range, the long state, the reason, the nodes, the partition, the user, the
 * CPUs (asked for, or allocated once it runs), and the name last, so that
 * nothing in it can shift the fields. */
#define SLURM_SQUEUE_FORMAT "%i|%A|%F|%K|%T|%r|%N|%P|%u|%C|%j"
/* A runner gives all its jobs, whoever they run as, one name of its own
 * (parsa-<runner>) and tells them apart by job id and task; the other
 * names in the answer are other users' jobs: the partition's outside load. */

/* sinfo's per-partition line: name ("debug*" for the default), up/down,
 * CPUs alloc/idle/other/total, memory per node (MB), node count, the state
 * the line groups and its nodes. One partition may take several lines. */
#define SLURM_SINFO_FORMAT "%P|%a|%C|%m|%D|%T|%N"

/* Slurm's limits on ids and names the records below keep. */
#define SLURM_STATE_MAX 32
#define SLURM_TEXT_MAX 256

/* One job, one array task, or the pending tasks of an array that Slurm
 * still keeps as one record, from squeue or scontrol. */
struct slurm_job {
	uint64_t job_id;       /* the record's own id (an array task has its own) */
	uint64_t array_job_id; /* the array's id; 0 when not an array */
	/* The task ids: -1/-1 for a job that is not an array, lo == hi for one
	 * task, and for pending tasks the list Slurm prints ("4-9", "2,4,7-9")
	 * in tasks with lo/hi its smallest and largest. */
	long task_lo, task_hi;
	char tasks[SLURM_TEXT_MAX];
	int task_throttle;              /* the "%N" of a pending range; 0 none */
	char state[SLURM_STATE_MAX];    /* the long form: PENDING, NODE_FAIL */
	char reason[SLURM_TEXT_MAX];    /* "Resources", "None"; "" if not said */
	char nodes[SLURM_TEXT_MAX];     /* "n1", "n[1-2]"; "" while pending */
	char name[SLURM_TEXT_MAX];
	char partition[SLURM_STATE_MAX * 2]; /* "" when not said */
	char user[SLURM_STATE_MAX * 2];      /* the user's name; "" when not said */
	long cpus;                           /* -1 when not said */
	/* From scontrol's ExitCode=CODE:SIGNAL; squeue has none. */
	bool has_exit;
	int exit_code, exit_signal;
	long cancel_uid; /* "CANCELLED by UID" (sacct's form); -1 unknown */
};

/* What a Slurm state means for the instance. */
enum slurm_outcome {
	SLURM_QUEUED,    /* waiting in Slurm: the reason says on what */
	SLURM_RUNNING,   /* the script runs (or is suspended, or finishing) */
	SLURM_SUCCEEDED, /* ended with 0 */
	SLURM_FAILED,    /* ended badly because of the instance (or a person) */
	SLURM_LOST,      /* ended by Slurm's machinery, not the instance: retry */
};

/* The mapping of a record's state, with the reason text parsa shows (a
 * static string, or the record's own words written into why). */
struct slurm_verdict {
	enum slurm_outcome outcome;
	char why[SLURM_TEXT_MAX + 64];
	/* Slurm ended it (TIMEOUT, OUT_OF_MEMORY, CANCELLED, NODE_FAIL, ...),
	 * not the stage's command: why says more than an exit code would. */
	bool ended_by_slurm;
};

/* The next '|'-separated field of a line that ends at end: its start (NULL
 * past the end), its length in *n; *pp moves past it. */
const char *slurm_field(const char **pp, const char *end, size_t *n);

/* Parse one line of SLURM_SQUEUE_FORMAT. 0, or -1 with errno EINVAL and *err
 * saying which field is wrong. */
int slurm_squeue_parse_line(const char *line, struct slurm_job *job, char **err);

/* Parse one `scontrol show job -o` record (one line, KEY=VALUE words). 0, or
 * -1 with errno EINVAL when JobId or JobState is missing or malformed. */
int slurm_scontrol_parse_line(const char *line, struct slurm_job *job, char **err);

/* Parse a whole answer (squeue's when scontrol is false), one record a line,
 * blank lines skipped, "No jobs in the system" (scontrol's empty answer)
 * giving none. *jobs is a malloc'ed array of *n records (NULL when none),
 * freed by the caller. 0, or -1 with errno EINVAL and *err naming the line. */
int slurm_parse_jobs(const char *text, bool scontrol, struct slurm_job **jobs, size_t *n,
		     char **err);

/* The CPUs that other users' jobs (a name other than own_name) hold in
 * partition now: the sum over RUNNING, SUSPENDED and COMPLETING records
 * there (their CPUs are allocated). */
long slurm_outside_cpus(const struct slurm_job *jobs, size_t n, const char *own_name, const char *partition);

/* Whether a record covers array task id (a pending range or list counts). */
bool slurm_job_has_task(const struct slurm_job *job, long task);

/* Map a long state name ("PENDING"; sacct's "CANCELLED by 0" too) to an
 * outcome. 0, or -1 with errno EINVAL for a state this module does not know
 * (the caller keeps the last known outcome and warns). */
int slurm_state_outcome(const char *state, enum slurm_outcome *outcome);

/* A record's verdict: the outcome of its state, and why in words: Slurm's
 * reason while queued ("waiting in Slurm: Resources"), the exit code or the
 * signal of a failure, who cancelled, "node failure (NODE_FAIL)". 0, or -1
 * with errno EINVAL for an unknown state (v->why then names it). */
int slurm_job_verdict(const struct slurm_job *job, struct slurm_verdict *v);

/* How an ended instance reads to parsa (an exec_status's exit code, signal
 * and reason), from the wrapper's exit file (have_exit: it held code) and
 * what Slurm said last (v; NULL when the job is gone from squeue). The exit
 * file decides, unless Slurm ended the job itself (v->ended_by_slurm) and the
 * code is not 0: then Slurm's words are the reason. Without the file: v's
 * SLURM_FAILED is a SIGTERM with Slurm's words ("slurm job 12: walltime
 * exceeded in Slurm (TIMEOUT)"), and anything else is lost, a SIGKILL with
 * a reason that starts with "lost: " (the scheduler retries it by the
 * stage's retries). *reason is malloc'ed, NULL when the code says all. */
void slurm_end_status(const char *id, const struct slurm_verdict *v, bool have_exit, int code,
		      int *exit_code, int *signal, char **reason);

/* One line of SLURM_SINFO_FORMAT. */
struct slurm_partition_line {
	char name[SLURM_STATE_MAX * 2]; /* without the default's "*" */
	bool is_default, up;
	long cpus_alloc, cpus_idle, cpus_other, cpus_total;
	long mem_mb; /* per node; the smallest when sinfo writes "4000+" */
	long nodes;
	char state[SLURM_STATE_MAX];     /* "idle", "mixed", "down*" */
	char node_list[SLURM_TEXT_MAX];
};
int slurm_sinfo_parse_line(const char *line, struct slurm_partition_line *p, char **err);

/* One sbatch --array submission of a stage's instances: Slurm task ids
 * 0..count-1 are instances first..first+count-1 (task ids start at 0 in
 * every chunk so that none reaches MaxArraySize). spec is "0-999" (or "0"),
 * with "%T" added when a throttle was asked for. */
struct slurm_chunk {
	long first, count;
	char spec[48];
};

/* Slurm's limits, as the operator configured the runner or Slurm says. */
struct slurm_limits {
	long max_array_size; /* MaxArraySize: task ids < this; 0 means 1001 */
	/* How many more jobs the user may have in Slurm now (MaxSubmitJobs less
	 * those it has; each array task counts); < 0: no limit. */
	long submit_room;
};

/* Split instances first..first+count-1 into chunks of at most max_array_size
 * tasks, no more tasks in all than submit_room and no more than max_chunks
 * chunks; throttle > 0 adds "%throttle" (at most that many running at once).
 * Returns the number of chunks written and sets *left to the instances that
 * did not fit (a limit: wait, not a failure); -1 with errno EINVAL for a
 * negative count or first, or max_chunks 0 with count > 0. */
int slurm_split(long first, long count, const struct slurm_limits *lim, long throttle,
		struct slurm_chunk *chunks, size_t max_chunks, long *left);

/* What one sbatch call submits. */
struct slurm_submit {
	const char *script;      /* the wrapper, its last argument; required */
	const char *job_name;    /* -J: the runner's prefix and the instance's names */
	int cpus;                /* --cpus-per-task; 0 leaves Slurm's default */
	uint64_t mem_mb;         /* --mem in MB; 0 leaves Slurm's default */
	int64_t walltime_s;      /* --time, rounded up to Slurm's minutes; 0 none */
	int gpus;                /* --gres=gpu:N; 0 none */
	const char *partition, *account, *qos; /* NULL or "": not passed */
	const char *log_path;    /* -o and -e; "%a" in it is the array task */
	const char *chdir;       /* --chdir; NULL: not passed */
	const char *array_spec;  /* --array; NULL: a single job */
	bool allow_requeue;      /* else --no-requeue */
	/* --export, as given ("NONE,PARSA_JOB=12"); NULL means "NONE". With
	 * NONE Slurm 22.05 starts the job in the user's login environment
	 * (HOME, PATH of the user: --get-user-env is implied) plus the
	 * variables named; ALL would hand the instance the runner's own
	 * environment (root's HOME and PATH). Values cannot hold a comma. */
	const char *export_vars;
};

/* The argument vector of `sbatch --parsable ...` for s: argv[0] "sbatch",
 * NULL-terminated, every string malloc'ed; free with slurm_argv_free. NULL
 * with errno EINVAL and *err when s has no script, negative resources, or a
 * name, path or value with a character Slurm would read otherwise (a
 * newline; a comma in --export values is the caller's). */
char **slurm_sbatch_argv(const struct slurm_submit *s, char **err);
void slurm_argv_free(char **argv);

/* What a failed sbatch's message means for the instances it carried. */
enum slurm_refusal {
	SLURM_REFUSED_ERROR, /* wrong for good (a partition that does not exist): fail */
	SLURM_REFUSED_BUSY,  /* slurmctld full or unreachable for now: retry later */
	SLURM_REFUSED_LIMIT, /* a submit limit (MaxSubmitJobs): wait for room */
	SLURM_REFUSED_ARRAY, /* the array is over MaxArraySize: split smaller */
};

/* Classify sbatch's stderr. The texts are Slurm 22.05's (the fixtures
 * sbatch-*.txt, and slurm_errno.c's words for the accounting limits). */
enum slurm_refusal slurm_sbatch_refusal(const char *text);

/* The job id in `sbatch --parsable`'s answer ("123" or "123;cluster"). 0, or
 * -1 with errno EINVAL. */
int slurm_parse_sbatch_id(const char *text, uint64_t *job_id);

#endif
