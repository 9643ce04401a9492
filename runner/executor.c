/* What every executor shares (executor.h): the callback to the instance table
 * and the status's clean-up. The implementations are executor_local.c and,
 * for the unit tests, tests/unit/fake_executor.c. */
#include "executor.h"

#include <stdlib.h>

void exec_status_clear(struct exec_status *st)
{
	free(st->reason);
	st->reason = NULL;
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
