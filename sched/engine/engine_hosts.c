/* An operator's commands on a host: drain, resume, remove (hosts/<h>/ctl). */
#include "engine_internal.h"
#include "ctl_commands.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*host_ctl_fn)(struct engine *e, struct host *h, int64_t now, char **err);

static int host_drain(struct engine *e, struct host *h, int64_t now, char **err)
{
	(void)now;
	(void)err;
	h->draining = true;
	log_info("host %s draining: no new work, %zu instance(s) left to finish", h->name, h->nactive);
	model_dirty_host(e->model, h);
	return 0;
}

static int host_resume(struct engine *e, struct host *h, int64_t now, char **err)
{
	(void)now;
	(void)err;
	h->draining = false;
	log_info("host %s resumed", h->name);
	model_dirty_host(e->model, h);
	return 0;
}

static int host_remove(struct engine *e, struct host *h, int64_t now, char **err)
{
	(void)now;
	errno = EBUSY;
	if (!h->draining)
		return errprintf(err, "host %s is not drained: write 'drain' first, wait for its"
				 " instances to end, stop its runner, then 'remove'", h->name);
	if (h->nactive > 0)
		return errprintf(err, "host %s still runs %zu instance(s): wait for them to end",
				 h->name, h->nactive);
	if (engine_host_up(e, h))
		return errprintf(err, "the runner of host %s still runs: stop it first (it would"
				 " register the host again)", h->name);
	if (store_delete_host(e->store, h->name, err) < 0)
		return -1;
	log_info("host %s removed", h->name);
	model_remove_host(e->model, h);
	return 0;
}

/* The handler of each command of ctl_host_table, by its index. */
static const host_ctl_fn host_handlers[CTL_HOST_COMMANDS] = {
	[CTL_HOST_DRAIN] = host_drain,
	[CTL_HOST_RESUME] = host_resume,
	[CTL_HOST_REMOVE] = host_remove,
};

char *engine_host_ctl_commands(const char *last_sep)
{
	return ctl_list(&ctl_host_table, last_sep);
}

/* The index in ctl_host_table of the command of line (command as written), or
 * -1 with errno EINVAL and *err. */
static int host_command_of(const struct ctl_line *line, const char *command, char **err)
{
	int i = ctl_find(&ctl_host_table, line->word);
	char *list;

	if (i >= 0 && ctl_arity_ok(&ctl_host_table.entries[i], line))
		return i;
	errno = EINVAL;
	list = ctl_list(&ctl_host_table, ", ");
	errprintf(err, "unknown host command '%s': valid commands are %s", command, list);
	free(list);
	return -1;
}

int engine_host_ctl_check(const char *command, char **err)
{
	struct ctl_line line;

	ctl_split(command, &line);
	return host_command_of(&line, command, err) < 0 ? -1 : 0;
}

int engine_host_ctl(struct engine *e, const struct caller *who, const char *name,
		    const char *command, char **err)
{
	struct ctl_line line;
	struct host *h;
	int ret = -1, i;

	ctl_split(command, &line);
	i = host_command_of(&line, command, err);
	if (i < 0)
		return -1;
	pthread_mutex_lock(&e->lock);
	if (!engine_is_admin(e, who)) {
		errno = EACCES;
		errprintf(err, "only root%s may %s a host", e->cfg.admin_set ?
			  " and the admin group" : "", line.word);
		goto out;
	}
	h = model_host(e->model, name);
	if (!h) {
		errno = ENOENT;
		errprintf(err, "no host '%s'", name);
		goto out;
	}
	if (host_handlers[i](e, h, engine_now(e), err) < 0)
		goto out;
	if (engine_flush(e, err) < 0)
		goto out;
	engine_kick(e);
	ret = 0;
out:
	engine_unlock(e);
	return ret;
}
