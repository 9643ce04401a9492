/* The instances this runner has started, keyed by instance id and attempt: their
 * processes, scratch folders, walltime and cancel deadlines. It starts and stops
 * them and turns what happens to them into events (running, exited, failed) for
 * the caller to report. It also remembers recently finished ones, so an
 * assignment sent again is never started twice. Single-threaded: the main loop
 * calls everything. */
#ifndef PARSA_RUNNER_INSTANCES_H
#define PARSA_RUNNER_INSTANCES_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "assign.h"

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
	const char *reason;  /* "cancelled", "walltime", "runner stopped", "cannot start: ...", or NULL */
};

struct instances_config {
	const char *mount;        /* where parsafs is mounted */
	const char *scratch_root; /* instances' scratch folders go below it */
	int64_t grace_ms;         /* SIGTERM, then SIGKILL this much later */
	/* Called for every event, from inside the instances_* call that saw it. */
	void (*on_event)(void *arg, const struct instance_event *ev);
	void *arg;
};

struct instances *instances_create(const struct instances_config *cfg);
/* Forgets the table; processes still running are left alone. */
void instances_destroy(struct instances *t);

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

/* Reap ended children (after SIGCHLD) and report them. When an instance's shell
 * has exited, whatever it left running in its process group is killed: nothing
 * outlives the reservation it ran under. */
void instances_reap(struct instances *t, int64_t now_ms);

/* Status pipes of instances still setting up, to poll for POLLIN; returns how
 * many were written to fds (at most max). */
size_t instances_status_fds(const struct instances *t, int *fds, size_t max);
/* One of those pipes is readable (or closed). */
void instances_status_ready(struct instances *t, int fd);

/* Act on walltime and kill deadlines that have passed; forget old finished
 * entries. Returns the next deadline (monotonic ms), or -1 if none. */
int64_t instances_tick(struct instances *t, int64_t now_ms);

/* Instances with a live process. */
size_t instances_active(const struct instances *t);

/* [{"id", "attempt", "pid"}...] for the heartbeat (new reference). */
json_t *instances_list_json(const struct instances *t);

#endif
