/* What every executor shares (executor.h): the callback to the instance table
 * and the status's clean-up. The implementations are executor_local.c and,
 * for the unit tests, tests/unit/fake_executor.c. */
#include "executor.h"

#include <stdlib.h>

void exec_status_clear(struct exec_status *st)
{
	free(st->reason);
	free(st->batch_state);
	st->reason = NULL;
	st->batch_state = NULL;
}

void executor_set_callback(struct executor *e, executor_changed_fn fn, void *arg)
{
	e->changed = fn;
	e->changed_arg = arg;
}

void executor_report(struct executor *e, void *owner, const struct exec_status *st, int64_t now_ms)
{
	if (e->changed)
		e->changed(e->changed_arg, owner, st, now_ms);
}

void executor_destroy(struct executor *e)
{
	if (e)
		e->ops->destroy(e);
}

struct executor_job *executor_start(struct executor *e, const struct executor_start *req, void *owner,
				    char **err)
{
	return e->ops->start(e, req, owner, err);
}

struct executor_job *executor_reattach(struct executor *e, const char *dir, void *owner, json_t **assignment,
				       struct exec_status *st, char **err)
{
	return e->ops->reattach(e, dir, owner, assignment, st, err);
}

const char *executor_name(const struct executor *e)
{
	return e->ops->name;
}

const char *executor_id_label(const struct executor *e)
{
	return e->ops->id_label;
}

const char *executor_job_id(const struct executor *e, const struct executor_job *j)
{
	return e->ops->id(j);
}

int executor_signal(struct executor *e, struct executor_job *j, int sig)
{
	return e->ops->signal(j, sig);
}

void executor_set_stop(struct executor *e, struct executor_job *j, const char *reason)
{
	e->ops->set_stop(j, reason);
}

const char *executor_stop_reason(const struct executor *e, const struct executor_job *j)
{
	return e->ops->stop_reason(j);
}

size_t executor_fds(struct executor *e, int *fds, size_t max)
{
	return e->ops->fds ? e->ops->fds(e, fds, max) : 0;
}

void executor_ready(struct executor *e, int fd, int64_t now_ms)
{
	if (e->ops->ready)
		e->ops->ready(e, fd, now_ms);
}

void executor_poll(struct executor *e, int64_t now_ms)
{
	if (e->ops->poll)
		e->ops->poll(e, now_ms);
}

bool executor_facts(const struct executor *e, struct executor_facts *f)
{
	if (!e->ops->facts)
		return false;
	e->ops->facts(e, f);
	return true;
}

int64_t executor_tick(struct executor *e, int64_t now_ms)
{
	return e->ops->tick ? e->ops->tick(e, now_ms) : -1;
}

int64_t executor_walltime_ms(const struct executor *e, uint64_t walltime_s)
{
	return e->ops->walltime_ms ? e->ops->walltime_ms(e, walltime_s) : -1;
}

char *executor_progress_file(const struct executor *e, const char *mount, const struct assignment *a)
{
	return e->ops->progress_file ? e->ops->progress_file(e, mount, a) : NULL;
}

void executor_forget(struct executor *e, struct executor_job *j)
{
	e->ops->forget(j);
}

void executor_release(struct executor *e, struct executor_job *j)
{
	if (j)
		e->ops->release(j);
}
