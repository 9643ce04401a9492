/* schedules/ (see schedules_dir.h). Names that are being written or were
 * refused (<name>.conf, <name>.conf.rejected) belong to queue_dir.c; the
 * others are the scheduler's schedules. */
#include "schedules_dir.h"
#include "api_answers.h"
#include "api_paths.h"
#include "ctl_file.h"
#include "log.h"
#include "queue_dir.h"
#include "sched_link.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const schedule_entries[] = { "spec", "status", "status.json", "ctl" };

struct schedules_dir {
	struct fs_ctx *fs;
	int64_t ttl_ms;
	pthread_mutex_t lock;
	struct api_schedule_owner *list; /* protected by lock */
	size_t n;                  /* protected by lock */
	int64_t fetched_ms;        /* monotonic; protected by lock */
};

struct schedules_dir *schedules_dir_create(struct fs_ctx *fs, int64_t ttl_ms)
{
	struct schedules_dir *s = xcalloc(1, sizeof *s);

	s->fs = fs;
	s->ttl_ms = ttl_ms;
	pthread_mutex_init(&s->lock, NULL);
	return s;
}

void schedules_dir_destroy(struct schedules_dir *s)
{
	if (!s)
		return;
	api_schedules_free(s->list, s->n);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

/* Refresh the list when it is old (or fresh is set). Caller does not hold the lock. */
static int refresh(struct schedules_dir *s, bool fresh)
{
	struct fs_identity who;
	struct api_schedule_owner *owners;
	int64_t now = time_mono_ms();
	char *url, *text, *err = NULL;
	size_t len = 0, n;
	int rc;

	pthread_mutex_lock(&s->lock);
	if (!fresh && s->fetched_ms && now - s->fetched_ms < s->ttl_ms) {
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
	pthread_mutex_unlock(&s->lock);
	fs_identity_basic(s->fs, &who);
	url = api_path(API_SCHEDULES_LIST, NULL);
	text = sched_link_get_text(s->fs->link, &who, url, false, &len);
	fs_identity_clear(&who);
	free(url);
	if (!text)
		return -1;
	rc = api_read_schedules(text, len, &owners, &n, &err);
	free(text);
	if (rc < 0)
		return sched_link_unreadable(err);
	pthread_mutex_lock(&s->lock);
	api_schedules_free(s->list, s->n);
	s->list = owners;
	s->n = n;
	s->fetched_ms = now;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* The owner of schedule name. 0, or -1 with errno (ENOENT: no such schedule).
 * A name not in the cached list is asked for again: it may be brand new. */
static int owner_of(struct schedules_dir *s, const char *name, uid_t *uid, gid_t *gid,
		    int64_t *created_ms)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		bool found = false;

		if (refresh(s, attempt > 0) < 0)
			return -1;
		pthread_mutex_lock(&s->lock);
		for (size_t i = 0; i < s->n && !found; i++) {
			if (strcmp(s->list[i].name, name) == 0) {
				*uid = s->list[i].uid;
				*gid = s->list[i].gid;
				if (created_ms)
					*created_ms = s->list[i].created_ms;
				found = true;
			}
		}
		pthread_mutex_unlock(&s->lock);
		if (found)
			return 0;
	}
	errno = ENOENT;
	return -1;
}

void schedules_dir_forget(void *arg)
{
	struct schedules_dir *s = arg;

	pthread_mutex_lock(&s->lock);
	s->fetched_ms = 0;
	pthread_mutex_unlock(&s->lock);
}

/* ---- schedules/ ---- */

static int root_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	(void)p;
	/* Everyone may write a spec here, as in queue/. */
	fs_stat_dir(fs, st, 01777, fs->uid, fs->gid);
	return 0;
}

static int root_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	struct schedules_dir *s = fs->schedules;
	struct fs_identity who;
	char **names = NULL;
	size_t n = 0, total;
	int full = 0;

	(void)p;
	if (refresh(s, false) < 0)
		return -1;
	fs_identity_basic(fs, &who);
	queue_dir_names(fs->schedules_queue, who.uid, &names, &n);
	pthread_mutex_lock(&s->lock);
	total = n + s->n;
	names = xrealloc(names, (total ? total : 1) * sizeof *names);
	for (size_t i = 0; i < s->n; i++)
		names[n + i] = xstrdup(s->list[i].name);
	pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < total; i++) {
		if (!full && fill(arg, names[i], NULL))
			full = 1;
		free(names[i]);
	}
	free(names);
	return 0;
}

const struct node_ops schedules_root_ops = {
	.getattr = root_getattr,
	.readdir = root_readdir,
};

/* ---- schedules/<name> ---- */

static int entry_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	uid_t uid;
	gid_t gid;
	int64_t created_ms = 0;

	/* A spec being written, or its .rejected report, first; ESTALE (a name
	 * just submitted, see queue_dir.c) goes back to the kernel as it is. */
	if (queue_entry_ops.getattr(fs, p, st) == 0)
		return 0;
	if (errno != ENOENT)
		return -1;
	if (owner_of(fs->schedules, p->name, &uid, &gid, &created_ms) < 0)
		return -1;
	fs_stat_dir(fs, st, 0755, uid, gid);
	if (created_ms > 0) {
		st->st_mtim.tv_sec = st->st_ctim.tv_sec = created_ms / 1000;
		st->st_mtim.tv_nsec = st->st_ctim.tv_nsec = (long)(created_ms % 1000) * 1000000;
	}
	return 0;
}

static int entry_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	uid_t uid;
	gid_t gid;

	if (owner_of(fs->schedules, p->name, &uid, &gid, NULL) < 0)
		return -1;
	for (size_t i = 0; i < ARRAY_LEN(schedule_entries); i++)
		if (fill(arg, schedule_entries[i], NULL))
			break;
	return 0;
}

static int entry_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	return queue_entry_ops.open(fs, p, flags, file);
}

static int entry_create(struct fs_ctx *fs, const struct fs_path *p, int flags, mode_t mode,
			struct fs_file **file)
{
	uid_t uid;
	gid_t gid;

	/* A name that is a schedule is a folder. */
	if (owner_of(fs->schedules, p->name, &uid, &gid, NULL) == 0) {
		errno = EISDIR;
		return -1;
	}
	return queue_entry_ops.create(fs, p, flags, mode, file);
}

static int entry_unlink(struct fs_ctx *fs, const struct fs_path *p)
{
	uid_t uid;
	gid_t gid;

	if (owner_of(fs->schedules, p->name, &uid, &gid, NULL) == 0) {
		errno = EISDIR;
		return -1;
	}
	return queue_entry_ops.unlink(fs, p);
}

/* Removing the folder removes the schedule (as its owner or root). */
static int entry_rmdir(struct fs_ctx *fs, const struct fs_path *p)
{
	struct fs_identity who;
	struct api_reply reply;
	char *url = api_path_name(API_SCHEDULE_DELETE, p->name);
	int ret;

	fs_identity_current(fs, &who);
	ret = sched_link_call(fs->link, &who, "DELETE", url, NULL, 0, SCHED_CALL_TIMEOUT_MS, &reply);
	if (ret < 0 && reply.status) {
		int saved = errno;
		char *text = api_reply_error(&reply);

		log_debug("rmdir schedules/%s by uid %u: %s", p->name, (unsigned)who.uid, text);
		free(text);
		errno = saved;
	}
	api_reply_clear(&reply);
	fs_identity_clear(&who);
	schedules_dir_forget(fs->schedules);
	free(url);
	return ret;
}

static int entry_truncate(struct fs_ctx *fs, const struct fs_path *p, off_t size)
{
	return queue_entry_ops.truncate(fs, p, size);
}

static int entry_utimens(struct fs_ctx *fs, const struct fs_path *p, const struct timespec tv[2])
{
	return queue_entry_ops.utimens(fs, p, tv);
}

const struct node_ops schedule_entry_ops = {
	.getattr = entry_getattr,
	.readdir = entry_readdir,
	.open = entry_open,
	.create = entry_create,
	.unlink = entry_unlink,
	.rmdir = entry_rmdir,
	.truncate = entry_truncate,
	.utimens = entry_utimens,
};

/* ---- schedules/<name>/{spec,status,status.json} ---- */

static int file_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st, mode_t mode)
{
	uid_t uid;
	gid_t gid;

	if (owner_of(fs->schedules, p->arg[0], &uid, &gid, NULL) < 0)
		return -1;
	fs_stat_file(fs, st, mode, uid, gid, 0);
	return 0;
}

static int view_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	struct fs_identity who;
	char *url, *text;
	size_t len = 0;

	if (file_getattr(fs, p, st, 0444) < 0)
		return -1;
	if (strcmp(p->name, "spec") != 0)
		return 0;
	/* The spec changes only when it is replaced: its real size, so that
	 * `cmp -s` (which trusts sizes) and `ls -l` tell the truth. */
	url = api_path_name(API_SCHEDULE_SPEC, p->arg[0]);
	fs_identity_basic(fs, &who);
	text = sched_link_get_text(fs->link, &who, url, false, &len);
	fs_identity_clear(&who);
	free(url);
	if (!text)
		return -1;
	free(text);
	st->st_size = (off_t)len;
	st->st_blocks = (st->st_size + 511) / 512;
	return 0;
}

static int view_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	struct fs_identity who;
	char *url;
	enum api_route view = strcmp(p->name, "status.json") == 0 ? API_SCHEDULE :
			      strcmp(p->name, "spec") == 0 ? API_SCHEDULE_SPEC : API_SCHEDULE_STATUS;
	bool exact = strcmp(p->name, "spec") == 0;
	size_t len = 0;
	char *text;

	if (fs_check_read_only(flags) < 0)
		return -1;
	url = api_path_name(view, p->arg[0]);
	fs_identity_basic(fs, &who);
	text = sched_link_get_text(fs->link, &who, url, !exact, &len);
	fs_identity_clear(&who);
	free(url);
	if (!text)
		return -1;
	*file = text_file_create(text, len);
	return 0;
}

/* `rm -r schedules/<name>` removes the files first: let it, the rmdir that
 * follows removes the schedule. */
static int view_unlink(struct fs_ctx *fs, const struct fs_path *p)
{
	uid_t uid;
	gid_t gid;

	return owner_of(fs->schedules, p->arg[0], &uid, &gid, NULL);
}

const struct node_ops schedule_view_ops = {
	.getattr = view_getattr,
	.open = view_open,
	.unlink = view_unlink,
	.truncate = fs_refuse_truncate,
};

/* ---- schedules/<name>/ctl ---- */

static int ctl_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	return file_getattr(fs, p, st, 0644);
}

static int ctl_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	char *url, *what;
	uid_t uid;
	gid_t gid;

	(void)flags;
	if (owner_of(fs->schedules, p->arg[0], &uid, &gid, NULL) < 0)
		return -1;
	url = api_path_name(API_SCHEDULE_CTL, p->arg[0]);
	what = xasprintf("schedule %s", p->arg[0]);
	*file = ctl_file_create(fs, p, url, what, &ctl_schedule_table);
	free(what);
	free(url);
	return 0;
}

const struct node_ops schedule_ctl_ops = {
	.getattr = ctl_getattr,
	.open = ctl_open,
	.unlink = view_unlink,
	.truncate = ctl_node_truncate,
};
