/* hosts/ and the cluster status (see hosts_dir.h). */
#include "hosts_dir.h"
#include "api_answers.h"
#include "api_paths.h"
#include "ctl_file.h"
#include "log.h"
#include "sched_link.h"
#include "storage_watch.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct hosts_dir {
	struct fs_ctx *fs;
	int64_t ttl_ms;
	pthread_mutex_t lock;
	char **names;              /* protected by lock */
	size_t n;                  /* protected by lock */
	int64_t fetched_ms;        /* monotonic; protected by lock */
};

struct hosts_dir *hosts_dir_create(struct fs_ctx *fs, int64_t ttl_ms)
{
	struct hosts_dir *h = xcalloc(1, sizeof *h);

	h->fs = fs;
	h->ttl_ms = ttl_ms;
	pthread_mutex_init(&h->lock, NULL);
	return h;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

void hosts_dir_destroy(struct hosts_dir *h)
{
	if (!h)
		return;
	free_names(h->names, h->n);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* A copy of the host names, refreshed when older than the lifetime or when
 * fresh is set. -1 with errno when the scheduler cannot be asked. */
static int host_names(struct hosts_dir *h, bool fresh, char ***out, size_t *nout)
{
	struct fs_identity who;
	struct api_host *hosts;
	char **names, *url, *text, *err = NULL;
	size_t i, n, len = 0;
	int64_t now = time_mono_ms();
	int rc;

	pthread_mutex_lock(&h->lock);
	if (!fresh && h->fetched_ms && now - h->fetched_ms < h->ttl_ms)
		goto copy;
	pthread_mutex_unlock(&h->lock);

	fs_identity_basic(h->fs, &who);
	url = api_path(API_HOSTS_LIST, NULL);
	text = sched_link_get_text(h->fs->link, &who, url, false, &len);
	fs_identity_clear(&who);
	free(url);
	if (!text)
		return -1;
	rc = api_read_hosts(text, len, &hosts, &n, &err);
	free(text);
	if (rc < 0)
		return sched_link_unreadable(err);
	names = xcalloc(n ? n : 1, sizeof *names);
	for (i = 0; i < n; i++) {
		names[i] = hosts[i].name;
		hosts[i].name = NULL;
	}
	api_hosts_free(hosts, n);
	pthread_mutex_lock(&h->lock);
	free_names(h->names, h->n);
	h->names = names;
	h->n = n;
	h->fetched_ms = now;
copy:
	*out = xcalloc(h->n ? h->n : 1, sizeof **out);
	for (i = 0; i < h->n; i++)
		(*out)[i] = xstrdup(h->names[i]);
	*nout = h->n;
	pthread_mutex_unlock(&h->lock);
	return 0;
}

/* 0 when host name is registered. A name not in the cached list is asked for
 * again: a runner polls for its own host right after registering. */
static int host_exists(struct hosts_dir *h, const char *name)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		char **names;
		size_t n;
		bool found = false;

		if (host_names(h, attempt > 0, &names, &n) < 0)
			return -1;
		for (size_t i = 0; i < n; i++)
			found = found || strcmp(names[i], name) == 0;
		free_names(names, n);
		if (found)
			return 0;
	}
	errno = ENOENT;
	return -1;
}

static int root_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	(void)p;
	fs_stat_dir(fs, st, 0555, fs->uid, fs->gid);
	return 0;
}

static int root_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	char **names;
	size_t n;

	(void)p;
	if (host_names(fs->hosts, false, &names, &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (fill(arg, names[i], NULL))
			break;
	free_names(names, n);
	return 0;
}

const struct node_ops hosts_root_ops = {
	.getattr = root_getattr,
	.readdir = root_readdir,
};

static int host_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	if (host_exists(fs->hosts, p->arg[0]) < 0)
		return -1;
	fs_stat_dir(fs, st, 0555, fs->uid, fs->gid);
	return 0;
}

static int host_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	if (host_exists(fs->hosts, p->arg[0]) < 0)
		return -1;
	fill(arg, "status", NULL);
	fill(arg, "ctl", NULL);
	return 0;
}

const struct node_ops host_dir_ops = {
	.getattr = host_getattr,
	.readdir = host_readdir,
};

static int open_text(struct fs_ctx *fs, const char *url, int flags, struct fs_file **file)
{
	struct fs_identity who;
	size_t len = 0;
	char *text;

	if (fs_check_read_only(flags) < 0)
		return -1;
	fs_identity_basic(fs, &who);
	text = sched_link_get_text(fs->link, &who, url, true, &len);
	fs_identity_clear(&who);
	if (!text)
		return -1;
	*file = text_file_create(text, len);
	return 0;
}

static int host_status_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	if (host_exists(fs->hosts, p->arg[0]) < 0)
		return -1;
	fs_stat_file(fs, st, 0444, fs->uid, fs->gid, 0);
	return 0;
}

static int host_status_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	char *url = api_path_name(API_HOST_STATUS, p->arg[0]);
	int ret = open_text(fs, url, flags, file);

	free(url);
	return ret;
}

const struct node_ops host_status_ops = {
	.getattr = host_status_getattr,
	.open = host_status_open,
	.truncate = fs_refuse_truncate,
};

/* Always there, so `test -e MOUNT/status` tells that the mount answers. */
static int cluster_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	(void)p;
	fs_stat_file(fs, st, 0444, fs->uid, fs->gid, 0);
	return 0;
}

/* The scheduler's view, and first, while the mount cannot reach the volume,
 * a line that says so (the scheduler may not know: it fails fast). */
static int cluster_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	struct fs_identity who;
	size_t len = 0;
	char *text, *line, *url;

	(void)p;
	if (fs_check_read_only(flags) < 0)
		return -1;
	url = api_path(API_STATUS, NULL);
	fs_identity_basic(fs, &who);
	text = sched_link_get_text(fs->link, &who, url, true, &len);
	fs_identity_clear(&who);
	free(url);
	if (!text)
		return -1;
	line = fs->backend ? storage_watch_status_line(fs) : NULL;
	if (line) {
		char *both = xasprintf("%s%.*s", line, (int)len, text);

		free(text);
		text = both;
		len = strlen(both);
		free(line);
	}
	*file = text_file_create(text, len);
	return 0;
}

const struct node_ops cluster_status_ops = {
	.getattr = cluster_getattr,
	.open = cluster_open,
	.truncate = fs_refuse_truncate,
};

/* usage: `parsa usage` of the last 30 days, by team. */
#define USAGE_DAYS 30

static int usage_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	char *url = api_path_usage("team", time_now_ms() - USAGE_DAYS * 86400000LL, "text");
	int ret;

	(void)p;
	ret = open_text(fs, url, flags, file);
	free(url);
	return ret;
}

const struct node_ops cluster_usage_ops = {
	.getattr = cluster_getattr,
	.open = usage_open,
	.truncate = fs_refuse_truncate,
};

/* ---- hosts/<h>/ctl (the commands of ctl_host_table) ---- */

/* Root and the admin group may write it; the scheduler decides again. */
static int host_ctl_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	if (host_exists(fs->hosts, p->arg[0]) < 0)
		return -1;
	fs_stat_file(fs, st, fs->admin_set ? 0664 : 0644, fs->uid, fs->admin_set ? fs->admin_gid : fs->gid, 0);
	return 0;
}

static int host_ctl_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	char *url, *what;

	(void)flags;
	if (host_exists(fs->hosts, p->arg[0]) < 0)
		return -1;
	url = api_path_name(API_HOST_CTL, p->arg[0]);
	what = xasprintf("host %s", p->arg[0]);
	*file = ctl_file_create(fs, p, url, what, &ctl_host_table);
	free(what);
	free(url);
	return 0;
}

const struct node_ops host_ctl_ops = {
	.getattr = host_ctl_getattr,
	.open = host_ctl_open,
	.truncate = ctl_node_truncate,
	.utimens = ctl_node_utimens,
};
