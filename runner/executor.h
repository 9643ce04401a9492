/* Where a stage instance runs: an ops table, so that the instance table
 * (instances.h) neither knows nor cares whether an instance is a local process
 * under a supervisor (executor_local.c, the first implementation), a Slurm job
 * (issue 36) or a fake in a unit test. The instance table keeps everything
 * that is parsa's (which id and attempt runs, walltime and grace deadlines,
 * cores and GPUs, reports); an executor only starts, signals, watches and
 * finds again what it started.
 *
 * Every instance has a folder of its own, DIR (<state>/instances/<id>.<attempt>/),
 * which belongs to the executor: start writes DIR/assignment.json and, before
 * it returns, whatever a restarted runner needs to find the instance again or
 * to know it was never handed over (the local one: its supervisor's status; a
 * Slurm one queues it for the cycle's sbatch --array: its DIR has no batch
 * tag yet, which says "never handed over"; the tag goes in before sbatch,
 * the job id after, executor_slurm.c). An
 * instance is reported running only after that, so a start the runner reports
 * is never one the next runner cannot find, nor submits again.
 *
 * Changes reach the instance table through one callback, per executor, not
 * per instance: an executor may learn them from a descriptor per instance
 * (local) or from one batched query per poll cycle for all of its instances
 * (squeue). Single-threaded: the runner's main loop calls everything. */
#ifndef PARSA_RUNNER_EXECUTOR_H
#define PARSA_RUNNER_EXECUTOR_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct executor;
struct executor_job;  /* one instance in one executor; each implementation defines it */
struct assignment;

enum exec_state {
	EXEC_STARTING,   /* handed over; not known yet whether it got going (reason:
			  * why it waits, e.g. Slurm's "Priority"; may be NULL). May be
			  * reported again while it waits, with the reason of now */
	EXEC_RUNNING,    /* it runs (locally: it reached exec) */
	EXEC_FAILED,     /* it could not be started: reason */
	EXEC_EXITED,     /* it ended: exit_code or signal (and a reason where one is known:
			  * "its supervisor was killed", a Slurm NODE_FAIL, "lost") */
};

/* What an executor knows of one instance. */
struct exec_status {
	enum exec_state state;
	pid_t pid;            /* its process (group) on this host; 0 when none is known
			       * here (before it exists, or it runs elsewhere) */
	int64_t started_ms;   /* wall clock when it started running; 0 unknown */
	int64_t ended_ms;     /* EXEC_EXITED: wall clock when it ended; 0 unknown */
	int exit_code;
	int signal;
	int64_t cpu_ms;       /* EXEC_EXITED: CPU time of its tree; -1 unknown */
	int64_t max_rss;      /* EXEC_EXITED: peak resident bytes; -1 unknown */
	char *reason;         /* malloc'ed or NULL; see enum exec_state */
	/* EXEC_EXITED: how the batch system's accounting says it ended
	 * ("COMPLETED", "TIMEOUT", "CANCELLED by alice"); malloc'ed or NULL */
	char *batch_state;
};

void exec_status_clear(struct exec_status *st);

/* What an executor that hands instances to a batch system says of itself,
 * for the heartbeat (the scheduler shows it in hosts/<h>/status, the web
 * page and /metrics). The strings are valid until the next call on the
 * executor. */
struct executor_facts {
	const char *partition;     /* NULL: the batch system's default */
	int64_t pending, running;  /* its jobs there that wait, that run */
	int64_t last_poll_ms;      /* wall clock of the last query that answered; 0 none */
	const char *poll_error;    /* why the last query failed; NULL when it answered */
	/* CPUs other users' jobs hold in the partition, from the same query;
	 * -1 unknown. outside_at_ms: wall clock of that query. */
	int64_t cpus_outside, outside_at_ms;
	/* "on" when the batch system keeps accounting (and the executor asks
	 * it how ended jobs went), "off" when not; NULL not known yet. */
	const char *accounting;
};

/* Called by the executor when what it knows of a job changed, with the job's
 * owner (as given to start or reattach), what it knows now (only valid during
 * the call) and the monotonic time of the call that found out. Once a job was
 * reported EXEC_FAILED or EXEC_EXITED it is never reported again, and its
 * owner is expected to retire it (forget, then release). */
typedef void (*executor_changed_fn)(void *arg, void *owner, const struct exec_status *st, int64_t now_ms);

/* What start needs. The strings are only read during the call. */
struct executor_start {
	const char *dir;           /* DIR, see above; need not exist yet */
	const json_t *assignment;  /* as received, with what the runner chose for it
				    * (resources_describe) */
	const char *mount;         /* where parsafs is mounted */
	const char *scratch;       /* its scratch folder, already made */
	const char *progress;      /* its progress file; NULL: none */
	json_t *identity;          /* who it runs as (identity_decide); start takes the
				    * reference, whether it succeeds or not */
};

struct executor_ops {
	const char *name;          /* "local", "slurm", "fake" */
	/* How the log names a job's id: "supervisor pid" (local), "slurm job". */
	const char *id_label;
	void (*destroy)(struct executor *e);

	/* Hand one instance over. NULL with errno and *err ("cannot start:
	 * ...") when nothing was started. On success what finds it again is
	 * recorded in DIR already (see above), and the job is watched until it
	 * has been reported ended. Never calls the callback itself. */
	struct executor_job *(*start)(struct executor *e, const struct executor_start *req, void *owner,
				      char **err);
	/* Find again the job an earlier runner left in DIR: *assignment gets a
	 * new reference to what start was given, *st what is known of it now
	 * (the caller clears it; EXEC_EXITED with a reason when it ended, or
	 * was lost, while no runner watched). A job found ended is not
	 * watched. NULL with errno and *err when DIR holds nothing usable
	 * (the caller removes DIR). Never calls the callback itself. */
	struct executor_job *(*reattach)(struct executor *e, const char *dir, void *owner, json_t **assignment,
					 struct exec_status *st, char **err);
	/* The job's id, as recorded in DIR: the supervisor's pid, a Slurm job
	 * id ("" while a start is only queued). Valid until the next call on
	 * the job, or release. */
	const char *(*id)(const struct executor_job *j);

	/* Send sig to the instance (locally its whole process group, at once;
	 * Slurm: scancel --signal, batched with the others of the cycle, or a
	 * queued start dropped). 0, or -1 with errno (ESRCH: nothing left to
	 * signal). */
	int (*signal)(struct executor_job *j, int sig);
	/* Keep why the runner stops it, in DIR, for a runner that reattaches;
	 * the first reason sticks. stop_reason: the one kept, or NULL. */
	void (*set_stop)(struct executor_job *j, const char *reason);
	const char *(*stop_reason)(const struct executor_job *j);

	/* Descriptors to poll for POLLIN (at most max written; returns how
	 * many), and one of them readable: the executor reads it and reports
	 * what changed. Optional (a Slurm executor may have none). */
	size_t (*fds)(struct executor *e, int *fds, size_t max);
	void (*ready)(struct executor *e, int fd, int64_t now_ms);
	/* Something may have changed (the runner got SIGCHLD): look now and
	 * report. Local: reap the supervisors and report those that ended. */
	void (*poll)(struct executor *e, int64_t now_ms);
	/* Optional: the executor's own timers (a Slurm executor's batched
	 * query and scancel per poll cycle). Returns the next deadline
	 * (monotonic ms), or -1 for none. */
	int64_t (*tick)(struct executor *e, int64_t now_ms);
	/* Optional: fill f (executor_facts above); a local executor has none. */
	void (*facts)(const struct executor *e, struct executor_facts *f);
	/* Optional, for an executor whose instances may wait in a queue first
	 * (Slurm's) and which enforces walltime itself: the instance table's
	 * own walltime kill then counts from when the instance is reported
	 * running, and comes this long after it (ms), behind the executor's
	 * limit. Absent: the walltime, counted from the start. */
	int64_t (*walltime_ms)(const struct executor *e, uint64_t walltime_s);
	/* Optional, for an executor whose instances run on other machines
	 * (Slurm's), which cannot write the runner's progress folder: where
	 * the instance's $PARSA_PROGRESS is, as the runner sees it under
	 * mount: on the job's volume, where the instance makes it. The
	 * progress watch reads it and removes it when the instance is
	 * retired, as it does the runner's own. Malloc'ed. Absent: the
	 * runner's own file (start's progress). */
	char *(*progress_file)(const struct executor *e, const char *mount, const struct assignment *a);

	/* The end has been reported: remove what the executor keeps of the job
	 * (DIR). The handle stays valid until release. */
	void (*forget)(struct executor_job *j);
	/* Drop the handle; the instance is left as it is (a runner that stops
	 * leaves its instances to the next one). NULL is fine. */
	void (*release)(struct executor_job *j);
};

/* Every executor struct starts with this header. */
struct executor {
	const struct executor_ops *ops;
	executor_changed_fn changed;  /* set by the instance table before use */
	void *changed_arg;
};

void executor_set_callback(struct executor *e, executor_changed_fn fn, void *arg);
/* Tell the callback (implementations call it). */
void executor_report(struct executor *e, void *owner, const struct exec_status *st, int64_t now_ms);

/* Callers never touch the ops table: one function per op, as for the
 * storage backends (storage/backend.h). An optional op the executor lacks
 * does nothing there (fds: none, tick: no deadline, poll: nothing to look
 * at). The ops above say what each does. */
struct executor_job *executor_start(struct executor *e, const struct executor_start *req, void *owner,
				    char **err);
struct executor_job *executor_reattach(struct executor *e, const char *dir, void *owner, json_t **assignment,
				       struct exec_status *st, char **err);
const char *executor_name(const struct executor *e);
const char *executor_id_label(const struct executor *e);
const char *executor_job_id(const struct executor *e, const struct executor_job *j);
int executor_signal(struct executor *e, struct executor_job *j, int sig);
void executor_set_stop(struct executor *e, struct executor_job *j, const char *reason);
const char *executor_stop_reason(const struct executor *e, const struct executor_job *j);
size_t executor_fds(struct executor *e, int *fds, size_t max);
void executor_ready(struct executor *e, int fd, int64_t now_ms);
void executor_poll(struct executor *e, int64_t now_ms);
int64_t executor_tick(struct executor *e, int64_t now_ms);
/* false (f untouched) for an executor without facts. */
bool executor_facts(const struct executor *e, struct executor_facts *f);
/* The walltime op's answer, or -1 when the executor has none. */
int64_t executor_walltime_ms(const struct executor *e, uint64_t walltime_s);
/* The progress_file op's answer, or NULL when the executor has none. */
char *executor_progress_file(const struct executor *e, const char *mount, const struct assignment *a);
void executor_forget(struct executor *e, struct executor_job *j);
void executor_release(struct executor *e, struct executor_job *j);

/* The local executor: a supervisor process per instance (supervise.h). */
struct executor *executor_local_create(void);

/* Jobs not released are left as they are (running). NULL is fine. */
void executor_destroy(struct executor *e);

#endif
