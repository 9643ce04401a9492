/* An operator's commands on a host: drain, resume, remove (hosts/<h>/ctl). */
#include "engine_internal.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
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

static const struct host_command {
	const char *name;
	host_ctl_fn fn;
} host_commands[] = {
	{ "drain", host_drain },
	{ "resume", host_resume },
	{ "remove", host_remove },
};

int engine_host_ctl(struct engine *e, const struct caller *who, const char *name,
		    const char *command, char **err)
{
	const struct host_command *cmd = NULL;
	char word[32] = "", extra[8] = "";
	struct host *h;
	int n, ret = -1, saved;

	n = sscanf(command, "%31s %7s", word, extra);
	for (size_t i = 0; i < ARRAY_LEN(host_commands) && n == 1; i++)
		if (strcmp(host_commands[i].name, word) == 0)
			cmd = &host_commands[i];
	if (!cmd) {
		errno = EINVAL;
		return errprintf(err, "unknown host command '%s': valid commands are drain, resume,"
				 " remove", command);
	}
	pthread_mutex_lock(&e->lock);
	if (!engine_is_admin(e, who)) {
		errno = EACCES;
		errprintf(err, "only root%s may %s a host", e->cfg.admin_set ?
			  " and the admin group" : "", word);
		goto out;
	}
	h = model_host(e->model, name);
	if (!h) {
		errno = ENOENT;
		errprintf(err, "no host '%s'", name);
		goto out;
	}
	if (cmd->fn(e, h, engine_now(e), err) < 0)
		goto out;
	if (engine_flush(e, err) < 0)
		goto out;
	engine_kick(e);
	ret = 0;
out:
	saved = errno;
	pthread_mutex_unlock(&e->lock);
	errno = saved;
	return ret;
}
