/* The local executor (executor.h): each instance runs on this host under a
 * supervisor of its own (supervise.h) that outlives the runner. Changes come
 * from the supervisor's notification pipe and pidfd, and from SIGCHLD (poll),
 * so the executor keeps a list of the jobs it watches. Nothing here decides
 * anything: it translates supervise.h into the executor's terms. */
#include "executor.h"
#include "supervise.h"
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

struct local_executor {
	struct executor base;    /* first: the executor's header */
	struct executor_job *jobs; /* every job not released yet, watched or not */
};

struct executor_job {
	struct local_executor *le;
	struct supervised *sup;
	void *owner;
	bool ended;              /* reported ended: no longer watched */
	char id[24];             /* the supervisor's pid */
	struct executor_job *prev, *next;
};

static struct local_executor *local_of(struct executor *e)
{
	return (struct local_executor *)e;
}

static struct executor_job *job_add(struct local_executor *le, struct supervised *sup, void *owner)
{
	struct executor_job *j = xcalloc(1, sizeof *j);

	j->le = le;
	j->sup = sup;
	j->owner = owner;
	snprintf(j->id, sizeof j->id, "%d", (int)supervised_supervisor_pid(sup));
	j->next = le->jobs;
	if (le->jobs)
		le->jobs->prev = j;
	le->jobs = j;
	return j;
}

/* The supervisor's status in the executor's terms (st takes the reason). */
static void read_status(struct executor_job *j, struct exec_status *st)
{
	struct sup_status ss;
	static const enum exec_state map[] = {
		[SUP_STARTING] = EXEC_STARTING, [SUP_RUNNING] = EXEC_RUNNING,
		[SUP_FAILED] = EXEC_FAILED, [SUP_EXITED] = EXEC_EXITED,
	};

	supervised_status(j->sup, &ss);
	*st = (struct exec_status){
		.state = map[ss.state], .pid = ss.pid, .started_ms = ss.started_ms, .ended_ms = ss.ended_ms,
		.exit_code = ss.exit_code, .signal = ss.signal, .cpu_ms = ss.cpu_ms, .max_rss = ss.max_rss,
		.reason = ss.reason,
	};
	if (st->state == EXEC_FAILED || st->state == EXEC_EXITED)
		j->ended = true;
}

/* Read what the supervisor says now and tell the instance table. */
static void look(struct executor_job *j, int64_t now_ms)
{
	struct exec_status st;

	read_status(j, &st);
	executor_report(&j->le->base, j->owner, &st, now_ms);
	exec_status_clear(&st);
}

static struct executor_job *local_start(struct executor *e, const struct executor_start *req, void *owner,
					char **err)
{
	struct supervised *sup = supervised_start(req->dir, req->assignment, req->mount, req->scratch,
						  req->progress, req->identity, err);

	return sup ? job_add(local_of(e), sup, owner) : NULL;
}

static struct executor_job *local_reattach(struct executor *e, const char *dir, void *owner,
					   json_t **assignment, struct exec_status *st, char **err)
{
	struct supervised *sup = supervised_attach(dir, assignment, err);
	struct executor_job *j;

	if (!sup)
		return NULL;
	j = job_add(local_of(e), sup, owner);
	read_status(j, st);
	return j;
}

static const char *local_id(const struct executor_job *j)
{
	return j->id;
}

static int local_signal(struct executor_job *j, int sig)
{
	return supervised_signal(j->sup, sig);
}

static void local_set_stop(struct executor_job *j, const char *reason)
{
	supervised_set_stop(j->sup, reason);
}

static const char *local_stop_reason(const struct executor_job *j)
{
	return supervised_stop_reason(j->sup);
}

/* A notification pipe (started by this runner) and a pidfd per watched job. */
static size_t local_fds(struct executor *e, int *fds, size_t max)
{
	size_t n = 0;

	for (struct executor_job *j = local_of(e)->jobs; j && n < max; j = j->next) {
		int notify, exit_fd;

		if (j->ended)
			continue;
		notify = supervised_notify_fd(j->sup);
		exit_fd = supervised_exit_fd(j->sup);
		if (notify >= 0)
			fds[n++] = notify;
		if (exit_fd >= 0 && n < max)
			fds[n++] = exit_fd;
	}
	return n;
}

static void local_ready(struct executor *e, int fd, int64_t now_ms)
{
	for (struct executor_job *j = local_of(e)->jobs; j; j = j->next) {
		if (j->ended)
			continue;
		if (supervised_notify_fd(j->sup) == fd) {
			supervised_notified(j->sup);
			look(j, now_ms);
			return;
		}
		if (supervised_exit_fd(j->sup) == fd) {
			/* Reaped by local_poll() when it is our child. */
			look(j, now_ms);
			return;
		}
	}
}

static void local_poll(struct executor *e, int64_t now_ms)
{
	pid_t pid;

	/* Our children are supervisors; how their instance ended is in their
	 * status file, so the exit status itself does not matter. */
	while ((pid = waitpid(-1, NULL, WNOHANG)) > 0 || (pid < 0 && errno == EINTR))
		;
	for (struct executor_job *j = local_of(e)->jobs, *next; j; j = next) {
		next = j->next;  /* the callback may not release, but be safe */
		if (!j->ended && supervised_done(j->sup))
			look(j, now_ms);
	}
}

static void local_forget(struct executor_job *j)
{
	supervised_forget(j->sup);
}

static void local_release(struct executor_job *j)
{
	if (!j)
		return;
	if (j->prev)
		j->prev->next = j->next;
	else
		j->le->jobs = j->next;
	if (j->next)
		j->next->prev = j->prev;
	supervised_destroy(j->sup);
	free(j);
}

static void local_destroy(struct executor *e)
{
	struct local_executor *le = local_of(e);

	/* Jobs not released are left running, as release leaves them. */
	while (le->jobs)
		local_release(le->jobs);
	free(le);
}

static const struct executor_ops local_ops = {
	.name = "local",
	.id_label = "supervisor pid",
	.destroy = local_destroy,
	.start = local_start,
	.reattach = local_reattach,
	.id = local_id,
	.signal = local_signal,
	.set_stop = local_set_stop,
	.stop_reason = local_stop_reason,
	.fds = local_fds,
	.ready = local_ready,
	.poll = local_poll,
	.forget = local_forget,
	.release = local_release,
};

struct executor *executor_local_create(void)
{
	struct local_executor *le = xcalloc(1, sizeof *le);

	le->base.ops = &local_ops;
	return &le->base;
}
