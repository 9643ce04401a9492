/* The instances this runner has started, keyed by instance id and attempt:
 * where they run (executor.h; locally under supervisors, supervise.h),
 * scratch folders, walltime and cancel deadlines, the cores, GPUs and cgroup
 * each holds (resources.h) and what each one's process tree uses (usage.h),
 * which must stay under its mem. It starts and stops them and turns what
 * happens to them into events (running, exited, failed) for the caller to
 * report. It also remembers recently finished ones, so an assignment sent
 * again is never started twice, and reattaches at start to the instances an
 * earlier runner left running. Single-threaded: the main loop calls
 * everything. */
#ifndef PARSA_RUNNER_INSTANCES_H
#define PARSA_RUNNER_INSTANCES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "assign.h"

struct clock;
struct executor;

struct instances;

enum instance_event_kind {
	INSTANCE_RUNNING,    /* it reached exec */
	INSTANCE_EXITED,     /* it ended: exit_code, or signal */
	INSTANCE_FAILED,     /* it could not start: reason */
};

struct instance_event {
	enum instance_event_kind kind;
	int64_t id;
	int64_t attempt;
	pid_t pid;
	int exit_code;
	int signal;          /* the signal that ended it, 0 if it exited */
	const char *reason;  /* "cancelled", "walltime", "runner stopped", "out of memory: ...",
			      * "cannot start: ...", or NULL */
	int64_t started_ms;  /* running, exited: wall clock at exec, stamped by the supervisor; 0 unknown */
	int64_t ended_ms;    /* exited: wall clock when it ended; 0 unknown */
	struct instance_usage usage; /* exited: the totals; else unknown (-1) */
	const char *cpu_list;        /* running, exited: its cores ("0-1"); NULL: not pinned */
	const char *gpu_list;        /* its GPUs ("0,1"); NULL or "": none */
	const char *slurm_job;       /* running, exited: its Slurm job id; NULL: not one */
	const char *slurm_state;     /* exited: Slurm's end state from its accounting; NULL: not known */
};

struct instances_config {
	const char *mount;        /* where parsafs is mounted */
	const char *scratch_root; /* instances' scratch folders go below it */
	const char *progress_dir; /* and their progress files ($PARSA_PROGRESS) in it */
	const char *state_dir;    /* <state_dir>/instances/<id>.<attempt>/: executors' state */
	int64_t grace_ms;         /* SIGTERM, then SIGKILL this much later */
	/* Called for every event, from inside the instances_* call that saw it. */
	void (*on_event)(void *arg, const struct instance_event *ev);
	void *arg;
	/* Walltime is measured on this clock (lib/clock.h; NULL: the system's),
	 * so that tests can move it. */
	struct clock *clock;
	/* Called (when not NULL) with the same arg before an instance starts
	 * (fresh) or is reattached (not fresh), and once it has been retired:
	 * the progress watch of runner/progress.h. remote: the progress file
	 * is on the job's volume, made and written on another machine (the
	 * executor's progress_file, executor.h), not in progress_dir. */
	void (*on_prepare)(void *arg, const struct assignment *a, const char *progress, bool remote,
			   bool fresh);
	void (*on_retire)(void *arg, const struct assignment *a, const char *progress);
	/* Cores, GPUs and cgroups to hand out (NULL: none, nothing pinned). */
	struct resources *resources;
	/* How process trees are measured (NULL: they are not). */
	struct usage *usage;
	/* Where instances run (executor.h), the caller's to destroy after the
	 * table; NULL: locally under supervisors (executor_local.c), owned by
	 * the table. */
	struct executor *executor;
};

/* What the instances use, as instances_sample() found it. */
struct instances_use {
	int64_t cpu_ms;      /* CPU time of every instance this table has run, ever
			      * (of reattached ones, from when they were reattached) */
	uint64_t rss;        /* the running ones' resident bytes now */
};

struct instances *instances_create(const struct instances_config *cfg);
/* Forgets the table; processes still running are left alone (their
 * supervisors keep them, for the next runner to reattach). */
void instances_destroy(struct instances *t);

/* Take over what an earlier runner left in the state folder: instances still
 * running join the table; the end of those that ended meanwhile is reported.
 * Returns how many still run. */
size_t instances_reattach(struct instances *t, int64_t now_ms);

/* Never start this id and attempt (its end is already on its way to the
 * scheduler, e.g. in a report left by an earlier runner). */
void instances_remember(struct instances *t, int64_t id, int64_t attempt, int64_t now_ms);

/* Start an assignment (the table takes it) unless that id and attempt runs or
 * ran here recently. A failure to start is an INSTANCE_FAILED event, not an
 * error. Returns 1 when started, 0 when ignored or failed. */
int instances_start(struct instances *t, struct assignment *a, int64_t now_ms);

/* Stop an instance: SIGTERM to its process group now, SIGKILL after the grace
 * period; its end is reported with reason. An unknown id and attempt is
 * remembered so a late assignment for it is not started, and reported failed. */
void instances_cancel(struct instances *t, int64_t id, int64_t attempt, const char *reason, int64_t now_ms);

/* Report an assignment that cannot even be parsed as failed, once: the id and
 * attempt are remembered so a copy sent again is not reported again. */
void instances_refuse(struct instances *t, int64_t id, int64_t attempt, const char *reason, int64_t now_ms);

/* Stop every instance (shutdown); kill_now skips the grace period. */
void instances_stop_all(struct instances *t, const char *reason, int kill_now, int64_t now_ms);

/* Ask the executor to look now (after SIGCHLD; locally: reap ended
 * supervisors) and report the instances that ended.
 * When an instance's shell has exited, its supervisor has killed whatever it
 * left in its process group: nothing outlives the reservation it ran under. */
void instances_reap(struct instances *t, int64_t now_ms);

/* Clean up after the instances that ended since the last call (scratch
 * folder, progress watch, executor's folder): after their reports went. */
void instances_cleanup(struct instances *t);

/* Descriptors to poll for POLLIN, the executor's (locally: supervisors'
 * notifications and pidfds); returns how many were written to fds (at most
 * max). */
size_t instances_status_fds(const struct instances *t, int *fds, size_t max);
/* One of those is readable (or closed). */
void instances_status_ready(struct instances *t, int fd, int64_t now_ms);

/* Act on walltime and kill deadlines that have passed; forget old finished
 * entries; run the executor's timers. Returns the next deadline (monotonic
 * ms), or -1 if none. */
int64_t instances_tick(struct instances *t, int64_t now_ms);

/* Measure every running instance's tree now (usage.h), stop those past their
 * mem (SIGKILL; their end is reported with reason "out of memory: used 1.2G
 * of mem = 1G"), and add up what all use into *use. Call it at least every
 * USAGE_INTERVAL_MS, and right before a heartbeat's probe of the machine. */
void instances_sample(struct instances *t, int64_t now_ms, struct instances_use *use);

/* Instances with a live process. */
size_t instances_active(const struct instances *t);

/* The heartbeat's entries for what runs here: id, attempt, pid and the last
 * sample's usage, no progress yet. Returns how many; the caller frees *out. */
size_t instances_heartbeat(const struct instances *t, struct heartbeat_entry **out);
/* The CPUs the instances that run (past their start) asked for, 1 at least
 * each: with a Slurm executor, what Slurm allocates to them. */
long instances_running_cpus(const struct instances *t);
/* The same as the heartbeat's "instances" list (new reference). */
json_t *instances_list_json(const struct instances *t);

#endif
