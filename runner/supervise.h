/* Each stage instance runs under a small supervisor that outlives the runner:
 * `parsa-runner --supervise DIR`, forked and exec'ed by the runner. The
 * supervisor starts the instance (launch.h: its own session and process group,
 * the submitter's credentials), waits for it, kills whatever it left in its
 * group, and keeps the instance's state in DIR/status. A runner killed and
 * started again (an upgrade, a crash) reattaches to the supervisors that still
 * run and learns from DIR/status how the others ended, so a runner restart
 * neither kills an instance nor starts it twice.
 *
 * DIR (<state>/instances/<id>.<attempt>/) holds assignment.json (written by
 * the runner before the supervisor starts, with what it chose for the
 * instance: its cores, GPUs and cgroup, runner/resources.h), status (by the
 * supervisor: first written aside and renamed into place, then rewritten in
 * place under an exclusive flock, which its readers take shared; at the end
 * with the times and the rusage) and stop (the reason the runner stopped it,
 * if it did). */
#ifndef PARSA_RUNNER_SUPERVISE_H
#define PARSA_RUNNER_SUPERVISE_H

#include <jansson.h>
#include <stdint.h>
#include <sys/types.h>

struct supervised;

enum sup_state {
	SUP_STARTING,   /* the supervisor has not said how the set-up went */
	SUP_RUNNING,    /* the instance reached exec */
	SUP_FAILED,     /* it could not be started: reason */
	SUP_EXITED,     /* it ended: exit_code or signal */
};

struct sup_status {
	enum sup_state state;
	pid_t pid;            /* the instance (its process group), 0 before it exists */
	int64_t started_ms;   /* wall clock, when it reached exec */
	int64_t ended_ms;     /* SUP_EXITED: wall clock, when its wait returned; else 0 */
	int exit_code;
	int signal;
	int64_t cpu_ms;       /* SUP_EXITED: user + system time of it and what it waited for
			       * (wait4's rusage); -1 when not known */
	int64_t max_rss;      /* SUP_EXITED: ru_maxrss, bytes: its largest process's peak; -1 */
	char *reason;         /* SUP_FAILED: "cannot start: ..."; else NULL */
};

void sup_status_clear(struct sup_status *st);

/* Write DIR/assignment.json (the assignment as received, with the mount,
 * scratch folder, progress file and the identity of launch_identity(), whose
 * reference it takes) and start a supervisor for it. NULL with errno and
 * *err when nothing was started. */
struct supervised *supervised_start(const char *dir, const json_t *assignment, const char *mount,
				    const char *scratch, const char *progress, json_t *identity,
				    char **err);

/* Take over the supervisor of DIR left by an earlier runner. *assignment gets
 * a new reference to DIR/assignment.json. NULL with errno ENOENT and *err when
 * DIR holds no assignment. The supervisor may have ended already:
 * supervised_status() tells. */
struct supervised *supervised_attach(const char *dir, json_t **assignment, char **err);

/* Closes descriptors; neither signals nor removes anything. */
void supervised_destroy(struct supervised *s);

/* Readable when the supervisor wrote a new status (started by this runner
 * only; -1 otherwise, or once it closed). Call supervised_notified() then. */
int supervised_notify_fd(const struct supervised *s);
void supervised_notified(struct supervised *s);

/* A pidfd of the supervisor: readable once it has ended. -1 if unavailable. */
int supervised_exit_fd(const struct supervised *s);
/* The supervisor has ended (it is not necessarily reaped). */
int supervised_done(const struct supervised *s);

/* Read DIR/status. When the supervisor is gone without saying how the
 * instance ended, the state is SUP_EXITED with signal 9 and a reason. */
void supervised_status(struct supervised *s, struct sup_status *st);

/* The supervisor's pid (the runner reaps its own children by it). */
pid_t supervised_supervisor_pid(const struct supervised *s);

/* Signal the instance's process group. 0, or -1 with errno (ESRCH: gone). */
int supervised_signal(struct supervised *s, int sig);

/* Remember (in DIR/stop) why the runner stops the instance, for a runner that
 * reattaches; NULL when none was written. */
void supervised_set_stop(struct supervised *s, const char *reason);
const char *supervised_stop_reason(const struct supervised *s);

/* Remove DIR and everything in it (after the end has been reported). */
void supervised_forget(struct supervised *s);

/* The supervisor process itself: `parsa-runner --supervise DIR`. Returns its
 * exit status. */
int supervise_main(const char *dir);

#endif
