/* The fake executor of fake_executor.h. Each instance started is a "remote"
 * record keyed by id and attempt that lives as long as the executor; a
 * handle (struct executor_job) points at it while a table watches it. */
#include "fake_executor.h"
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct remote {
	int64_t id, attempt;
	char *dir;
	json_t *assignment;
	struct exec_status st;
	char *stop;
	char jobid[24];
	int starts, nsignals, last_signal, forgotten;
	bool pending;              /* st not told yet */
	struct executor_job *job;  /* the handle watching it, or NULL */
	struct remote *next;
};

struct fake_executor {
	struct executor base;
	struct remote *remotes;
	char *fail_next;
	int efd;                   /* readable while something is pending */
	int handles;
	int next_id;
};

struct executor_job {
	struct fake_executor *fe;
	struct remote *r;
	void *owner;
	bool ended;
};

static struct fake_executor *fake_of(struct executor *e)
{
	return (struct fake_executor *)e;
}

static struct remote *find(struct fake_executor *fe, int64_t id, int64_t attempt)
{
	for (struct remote *r = fe->remotes; r; r = r->next)
		if (r->id == id && r->attempt == attempt)
			return r;
	return NULL;
}

static void copy_status(struct exec_status *to, const struct exec_status *from)
{
	*to = *from;
	to->reason = from->reason ? xstrdup(from->reason) : NULL;
}

static struct executor_job *watch(struct fake_executor *fe, struct remote *r, void *owner)
{
	struct executor_job *j = xcalloc(1, sizeof *j);

	j->fe = fe;
	j->r = r;
	j->owner = owner;
	j->ended = r->st.state == EXEC_FAILED || r->st.state == EXEC_EXITED;
	r->job = j;
	fe->handles++;
	return j;
}

static struct executor_job *fake_start(struct executor *e, const struct executor_start *req, void *owner,
				       char **err)
{
	struct fake_executor *fe = fake_of(e);
	int64_t id = json_integer_value(json_object_get(req->assignment, "id"));
	int64_t attempt = json_integer_value(json_object_get(req->assignment, "attempt"));
	struct remote *r;

	json_decref(req->identity);
	if (fe->fail_next) {
		*err = fe->fail_next;
		fe->fail_next = NULL;
		errno = EAGAIN;
		return NULL;
	}
	r = find(fe, id, attempt);
	if (!r) {
		r = xcalloc(1, sizeof *r);
		r->id = id;
		r->attempt = attempt;
		r->next = fe->remotes;
		fe->remotes = r;
	}
	/* As a real executor records its id in DIR before it returns. */
	free(r->dir);
	r->dir = xstrdup(req->dir);
	mkdir_p(r->dir, 0700);
	json_decref(r->assignment);
	r->assignment = json_deep_copy(req->assignment);
	snprintf(r->jobid, sizeof r->jobid, "%d", ++fe->next_id);
	r->starts++;
	r->forgotten = 0;
	exec_status_clear(&r->st);
	r->st = (struct exec_status){ .state = EXEC_STARTING, .cpu_ms = -1, .max_rss = -1 };
	return watch(fe, r, owner);
}

static struct executor_job *fake_reattach(struct executor *e, const char *dir, void *owner, json_t **assignment,
					  struct exec_status *st, char **err)
{
	struct fake_executor *fe = fake_of(e);

	for (struct remote *r = fe->remotes; r; r = r->next) {
		if (r->forgotten || !r->dir || strcmp(r->dir, dir) != 0)
			continue;
		*assignment = json_incref(r->assignment);
		copy_status(st, &r->st);
		r->pending = false;
		return watch(fe, r, owner);
	}
	*err = xasprintf("%s: no job recorded", dir);
	errno = ENOENT;
	return NULL;
}

static const char *fake_id(const struct executor_job *j)
{
	return j->r->jobid;
}

static int fake_signal(struct executor_job *j, int sig)
{
	if (j->ended) {
		errno = ESRCH;
		return -1;
	}
	j->r->last_signal = sig;
	j->r->nsignals++;
	return 0;
}

static void fake_set_stop(struct executor_job *j, const char *reason)
{
	if (!j->r->stop)
		j->r->stop = xstrdup(reason);
}

static const char *fake_stop_reason(const struct executor_job *j)
{
	return j->r->stop;
}

static size_t fake_fds(struct executor *e, int *fds, size_t max)
{
	if (max < 1)
		return 0;
	fds[0] = fake_of(e)->efd;
	return 1;
}

/* Tell everything pending at once, as one batched query would. */
static void deliver(struct fake_executor *fe, int64_t now_ms)
{
	for (struct remote *r = fe->remotes; r; r = r->next) {
		struct executor_job *j = r->job;

		if (!r->pending || !j || j->ended)
			continue;
		r->pending = false;
		j->ended = r->st.state == EXEC_FAILED || r->st.state == EXEC_EXITED;
		executor_report(&fe->base, j->owner, &r->st, now_ms);
	}
}

static void fake_ready(struct executor *e, int fd, int64_t now_ms)
{
	uint64_t n;

	if (fd != fake_of(e)->efd)
		return;
	if (read(fd, &n, sizeof n) < 0 && errno != EAGAIN)
		return;
	deliver(fake_of(e), now_ms);
}

static void fake_poll(struct executor *e, int64_t now_ms)
{
	deliver(fake_of(e), now_ms);
}

static void fake_forget(struct executor_job *j)
{
	j->r->forgotten = 1;
	rmdir(j->r->dir);
}

static void fake_release(struct executor_job *j)
{
	if (!j)
		return;
	j->r->job = NULL;
	j->fe->handles--;
	free(j);
}

static void fake_destroy(struct executor *e)
{
	struct fake_executor *fe = fake_of(e);

	while (fe->remotes) {
		struct remote *r = fe->remotes;

		fe->remotes = r->next;
		free(r->job);
		free(r->dir);
		json_decref(r->assignment);
		exec_status_clear(&r->st);
		free(r->stop);
		free(r);
	}
	free(fe->fail_next);
	close(fe->efd);
	free(fe);
}

static const struct executor_ops fake_ops = {
	.name = "fake",
	.id_label = "fake job",
	.destroy = fake_destroy,
	.start = fake_start,
	.reattach = fake_reattach,
	.id = fake_id,
	.signal = fake_signal,
	.set_stop = fake_set_stop,
	.stop_reason = fake_stop_reason,
	.fds = fake_fds,
	.ready = fake_ready,
	.poll = fake_poll,
	.forget = fake_forget,
	.release = fake_release,
};

struct executor *fake_executor_create(void)
{
	struct fake_executor *fe = xcalloc(1, sizeof *fe);

	fe->base.ops = &fake_ops;
	fe->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return &fe->base;
}

void fake_executor_fail_next(struct executor *e, const char *reason)
{
	free(fake_of(e)->fail_next);
	fake_of(e)->fail_next = xstrdup(reason);
}

int fake_executor_set(struct executor *e, int64_t id, int64_t attempt, const struct exec_status *st)
{
	struct fake_executor *fe = fake_of(e);
	struct remote *r = find(fe, id, attempt);
	uint64_t one = 1;

	if (!r) {
		errno = ENOENT;
		return -1;
	}
	exec_status_clear(&r->st);
	copy_status(&r->st, st);
	r->pending = true;
	if (write(fe->efd, &one, sizeof one) < 0)
		return -1;
	return 0;
}

int fake_executor_starts(struct executor *e, int64_t id, int64_t attempt)
{
	struct remote *r = find(fake_of(e), id, attempt);

	return r ? r->starts : 0;
}

int fake_executor_last_signal(struct executor *e, int64_t id, int64_t attempt)
{
	struct remote *r = find(fake_of(e), id, attempt);

	return r ? r->last_signal : 0;
}

int fake_executor_nsignals(struct executor *e, int64_t id, int64_t attempt)
{
	struct remote *r = find(fake_of(e), id, attempt);

	return r ? r->nsignals : 0;
}

const char *fake_executor_stop(struct executor *e, int64_t id, int64_t attempt)
{
	struct remote *r = find(fake_of(e), id, attempt);

	return r ? r->stop : NULL;
}

int fake_executor_forgotten(struct executor *e, int64_t id, int64_t attempt)
{
	struct remote *r = find(fake_of(e), id, attempt);

	return r ? r->forgotten : 0;
}

int fake_executor_handles(struct executor *e)
{
	return fake_of(e)->handles;
}
