/* Starting one stage instance: fork, then in the child its cgroup (when it has
 * one), its cores (sched_setaffinity), a new session and process group, the
 * submitter's credentials, the log on the mount as stdout and stderr, a clean
 * environment, and exec of /bin/sh -c RUN. A struct launch is the
 * runner's handle on that process: its pid, its process group, and a status
 * pipe that says whether the child got as far as exec (and if not, why). */
#ifndef PARSA_RUNNER_LAUNCH_H
#define PARSA_RUNNER_LAUNCH_H

#include <stdbool.h>
#include <sys/types.h>

#include "assign.h"

#include <jansson.h>

struct launch;

struct launch_request {
	const struct assignment *a;
	const char *mount;    /* where parsafs is mounted: PARSA_JOBDIR etc. and the log live there */
	const char *scratch;  /* this instance's scratch folder (PARSA_SCRATCH), already created */
	const char *progress; /* its progress file (PARSA_PROGRESS), already created; NULL: none */
	/* Who it runs as, from identity_decide() (runner/identity.h); required. */
	const json_t *identity;
	/* What the runner chose for it (runner/resources.h), each NULL for none:
	 * the cores it is pinned to ($PARSA_CPU_LIST), its GPUs ($PARSA_GPUS,
	 * $CUDA_VISIBLE_DEVICES; "" hides the host's GPUs from it), and the
	 * cgroup folder it enters before exec. */
	const char *cpu_list;
	const char *gpu_list;
	const char *cgroup;
};


/* Fork the instance as the identity of req (runner/identity.h for the rules).
 * Returns the handle, or NULL with errno and *err = "cannot start: <why>" when
 * nothing was started.
 * Call from the thread that will reap the child; the child only makes
 * async-signal-safe calls, so other threads do not matter. */
struct launch *launch_create(const struct launch_request *req, char **err);

/* Closes the status pipe; neither signals nor reaps the process. */
void launch_destroy(struct launch *l);

pid_t launch_pid(const struct launch *l);

/* The read end of the status pipe while the outcome of the set-up is unknown
 * (poll it for POLLIN), -1 afterwards. */
int launch_status_fd(const struct launch *l);

/* Collect the outcome of the set-up without blocking: 1 when the child reached
 * exec (or died before saying anything), 0 when not known yet, -1 when the set-up
 * failed, with *reason = "cannot start: <why>" (the child then exits 127). */
int launch_poll(struct launch *l, char **reason);

/* Send sig to the instance's whole process group (to the child alone if it has
 * not made its group yet). 0, or -1 with errno (ESRCH when nothing is left). */
int launch_signal(struct launch *l, int sig);

/* Is err what a file system returns when its server does not answer (EIO,
 * ETIMEDOUT, ENOTCONN, ESTALE, EHOSTDOWN, ECONNREFUSED)? An instance whose log
 * or folder on the mount fails so was not started for a reason of the
 * volume's, "storage unreachable: ..." (API_REASON_STORAGE_UNREACHABLE). */
bool launch_volume_errno(int err);

/* The mount-relative pieces of an instance, shared with whoever reports on it. */
char *launch_log_path(const char *mount, const struct assignment *a);

#endif
