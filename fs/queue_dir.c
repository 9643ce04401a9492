/* queue/ (see queue_dir.h). Every open file of queue/ is a struct spec_file
 * holding the text in memory; the named ones are listed in the folder until
 * they are submitted. The .rejected files live only in memory too. This
 * file is the folder (its names, lookups and reports); an open file and its
 * submission are fs/queue_file.c. */
#include "queue_dir.h"
#include "queue_dir_internal.h"
#include "escape.h"
#include "proc_fd.h"
#include "job_cache.h"
#include "log.h"
#include "sched_link.h"
#include "spec.h"
#include "util.h"
#include "wire.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct queue_dir *queue_dir_create(struct fs_ctx *fs)
{
	struct queue_dir *q = queue_dir_create_at(fs, "queue", API_JOBS_SUBMIT);

	/* A job must be submitted exactly once even when the answer is lost
	 * (docs/design.md, "Exactly-once submission"); a schedule is created
	 * under a unique name, which makes its retry by hand safe already. */
	q->once = true;
	return q;
}

struct queue_dir *queue_dir_create_at(struct fs_ctx *fs, const char *folder, enum api_route post)
{
	struct queue_dir *q = xcalloc(1, sizeof *q);

	q->fs = fs;
	q->folder = folder;
	q->post_path = api_path(post, NULL);
	pthread_mutex_init(&q->lock, NULL);
	return q;
}

static void rejected_free(struct rejected *r)
{
	free(r->name);
	free(r->text);
	free(r);
}

void queue_dir_on_accepted(struct queue_dir *q, void (*fn)(void *arg), void *arg)
{
	q->on_accepted = fn;
	q->on_accepted_arg = arg;
}

void queue_dir_destroy(struct queue_dir *q)
{
	struct rejected *r, *next;

	if (!q)
		return;
	/* Open files are released by FUSE before this runs. */
	for (r = q->rejected; r; r = next) {
		next = r->next;
		rejected_free(r);
	}
	pthread_mutex_destroy(&q->lock);
	free(q->post_path);
	free(q);
}

/* schedules/ takes specs the same way as queue/, into its own queue_dir. */
static struct queue_dir *queue_of(struct fs_ctx *fs, const struct fs_path *p)
{
	if (fs->schedules_queue && strncmp(p->path, "/schedules/", 11) == 0)
		return fs->schedules_queue;
	return fs->queue;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The kernel may keep a name in its cache for a moment after it left the folder. */
void queue_invalidate(struct queue_dir *q, const char *name)
{
	char *path;

	if (!q->fs->fuse)
		return;
	path = xasprintf("/%s/%s", q->folder, name);
	fuse_invalidate_path(q->fs->fuse, path);
	free(path);
}

/* Caller holds q->lock. uid's spec called name being written, if any: each
 * user's names are their own, so two people writing job.conf at once get a
 * job each and one's open file never blocks the other. */
static struct spec_file *find_open_locked(struct queue_dir *q, const char *name, uid_t uid)
{
	for (struct spec_file *f = q->open; f; f = f->next)
		if (f->who.uid == uid && strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

/* Caller holds q->lock. Students share queue/ and often share file names
 * (job.conf): uid's own report comes first, then anybody's. */
static struct rejected *find_rejected_locked(struct queue_dir *q, const char *name, uid_t uid)
{
	struct rejected *any = NULL;

	for (struct rejected *r = q->rejected; r; r = r->next) {
		if (strcmp(r->name, name) != 0)
			continue;
		if (r->uid == uid)
			return r;
		if (!any)
			any = r;
	}
	return any;
}

/* Forget uid's report called name (anybody's with uid (uid_t)-1). */
void queue_remove_rejected(struct queue_dir *q, const char *name, uid_t uid)
{
	struct rejected **pp, *gone = NULL;

	pthread_mutex_lock(&q->lock);
	for (pp = &q->rejected; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->name, name) == 0 && (uid == (uid_t)-1 || (*pp)->uid == uid)) {
			gone = *pp;
			*pp = gone->next;
			q->nrejected--;
			break;
		}
	}
	pthread_mutex_unlock(&q->lock);
	if (gone) {
		rejected_free(gone);
		queue_invalidate(q, name);
	}
}

void queue_add_rejected(struct queue_dir *q, const char *file, const struct fs_identity *who,
			const char *text)
{
	struct rejected *r = xcalloc(1, sizeof *r), **pp, *old = NULL;
	size_t n = strlen(text);

	r->name = xasprintf("%s%s", file, REJECTED_SUFFIX);
	r->uid = who->uid;
	r->gid = who->gid;
	r->text = n && text[n - 1] == '\n' ? xstrdup(text) : xasprintf("%s\n", text);
	r->len = strlen(r->text);
	clock_gettime(CLOCK_REALTIME, &r->when);
	queue_remove_rejected(q, r->name, r->uid);
	pthread_mutex_lock(&q->lock);
	r->next = q->rejected;
	q->rejected = r;
	q->nrejected++;
	/* Bounded memory: the oldest error reports go first. */
	if (q->nrejected > QUEUE_MAX_REJECTED) {
		for (pp = &q->rejected; (*pp)->next; pp = &(*pp)->next)
			;
		old = *pp;
		*pp = NULL;
		q->nrejected--;
	}
	pthread_mutex_unlock(&q->lock);
	if (old)
		rejected_free(old);
	queue_invalidate(q, r->name);
}

/* Caller holds q->lock. True once per submission: the lookup that the VFS
 * retries after ESTALE must see ENOENT, or the retry fails too. */
static bool take_recently_gone_locked(struct queue_dir *q, const char *name)
{
	int64_t now = time_mono_ms();

	for (size_t i = 0; i < GONE_SLOTS; i++) {
		if (q->gone[i].until_ms > now && strcmp(q->gone[i].name, name) == 0) {
			q->gone[i].until_ms = 0;
			return true;
		}
	}
	return false;
}

/* ---- queue/ itself ---- */

static int root_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	(void)p;
	/* Everyone may create here; the sticky bit keeps each .rejected its owner's. */
	fs_stat_dir(fs, st, 01777, fs->uid, fs->gid);
	return 0;
}

void queue_dir_names(struct queue_dir *q, uid_t uid, char ***out, size_t *nout)
{
	char **names = NULL;
	size_t n = 0, cap = 0;

	/* Copy the names under the lock; the filler may be slow. */
	pthread_mutex_lock(&q->lock);
	for (struct spec_file *f = q->open; f; f = f->next) {
		bool dup = f->who.uid != uid;

		for (size_t i = 0; i < n && !dup; i++)
			dup = strcmp(names[i], f->name) == 0;
		if (dup)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			names = xrealloc(names, cap * sizeof *names);
		}
		names[n++] = xstrdup(f->name);
	}
	for (struct rejected *r = q->rejected; r; r = r->next) {
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			names = xrealloc(names, cap * sizeof *names);
		}
		names[n++] = xstrdup(r->name);
	}
	pthread_mutex_unlock(&q->lock);
	*out = names;
	*nout = n;
}

static int root_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	struct queue_dir *q = queue_of(fs, p);
	struct fs_identity who;
	char **names;
	size_t n;
	int ret;

	fs_identity_basic(fs, &who);
	queue_dir_names(q, who.uid, &names, &n);
	ret = fill(arg, ".clone", NULL) ? 1 : 0;
	for (size_t i = 0; i < n; i++) {
		if (ret == 0 && fill(arg, names[i], NULL))
			ret = 1;
		free(names[i]);
	}
	free(names);
	return 0;
}

const struct node_ops queue_root_ops = {
	.getattr = root_getattr,
	.readdir = root_readdir,
};

/* ---- queue/.clone ---- */

static int clone_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	(void)p;
	fs_stat_file(fs, st, 0666, fs->uid, fs->gid, 0);
	return 0;
}

static int clone_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	(void)p;
	(void)flags;
	*file = &queue_spec_file_new(queue_of(fs, p), CLONE_JOB_NAME, true)->base;
	return 0;
}

static int clone_create(struct fs_ctx *fs, const struct fs_path *p, int flags, mode_t mode,
			struct fs_file **file)
{
	(void)mode;
	return clone_open(fs, p, flags, file);
}

static int accept_quietly(struct fs_ctx *fs, const struct fs_path *p, off_t size)
{
	(void)fs;
	(void)p;
	(void)size;
	return 0;
}

static int utimens_quietly(struct fs_ctx *fs, const struct fs_path *p, const struct timespec tv[2])
{
	(void)fs;
	(void)p;
	(void)tv;
	return 0;
}

const struct node_ops queue_clone_ops = {
	.getattr = clone_getattr,
	.open = clone_open,
	.create = clone_create,
	/* `> queue/.clone` truncates an empty, per-descriptor file: nothing to do. */
	.truncate = accept_quietly,
	.utimens = utimens_quietly,
};

/* ---- queue/<name> and queue/<name>.rejected ---- */

static int entry_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	struct queue_dir *q = queue_of(fs, p);
	struct fs_identity who;
	struct spec_file *f;
	struct rejected *r;
	int ret = -1;

	fs_identity_basic(fs, &who);
	pthread_mutex_lock(&q->lock);
	r = find_rejected_locked(q, p->name, who.uid);
	if (r) {
		fs_stat_file(fs, st, 0444, r->uid, r->gid, (off_t)r->len);
		st->st_atim = st->st_mtim = st->st_ctim = r->when;
		ret = 0;
		goto out;
	}
	f = find_open_locked(q, p->name, who.uid);
	if (f) {
		f->base.ops->getattr(&f->base, st); /* queue_file.c */
		ret = 0;
		goto out;
	}
	errno = take_recently_gone_locked(q, p->name) ? ESTALE : ENOENT;
out:
	pthread_mutex_unlock(&q->lock);
	return ret;
}

static int entry_create(struct fs_ctx *fs, const struct fs_path *p, int flags, mode_t mode,
			struct fs_file **file)
{
	struct queue_dir *q = queue_of(fs, p);
	struct spec_file *f;
	char *err = NULL;

	(void)flags;
	(void)mode;
	if (has_suffix(p->name, REJECTED_SUFFIX)) {
		errno = EACCES;
		return -1;
	}
	/* Its errors must be able to land in <name>.rejected. */
	if (strlen(p->name) + strlen(REJECTED_SUFFIX) > NAME_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* The name is shown in views (spec:) and logs: a newline in it could
	 * forge their lines. Refused before a byte is written, with the reason
	 * where a refusal's reason always is. */
	if (escape_check_file_name(p->name, &err) < 0) {
		struct fs_identity who;

		fs_identity_current(fs, &who);
		queue_add_rejected(q, p->name, &who, err);
		fs_identity_clear(&who);
		free(err);
		errno = EINVAL;
		return -1;
	}
	f = queue_spec_file_new(q, p->name, false);
	f->parent_node = fs_wire_create_parent();
	pthread_mutex_lock(&q->lock);
	f->listed = true;
	f->next = q->open;
	q->open = f;
	pthread_mutex_unlock(&q->lock);
	*file = &f->base;
	return 0;
}

static int entry_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	struct queue_dir *q = queue_of(fs, p);
	struct rejected *r;
	char *copy = NULL;
	size_t len = 0;
	bool pending = false;
	struct fs_identity who;

	fs_identity_basic(fs, &who);
	pthread_mutex_lock(&q->lock);
	r = find_rejected_locked(q, p->name, who.uid);
	if (r) {
		copy = xstrdup(r->text);
		len = r->len;
	}
	pending = !r && find_open_locked(q, p->name, who.uid);
	pthread_mutex_unlock(&q->lock);
	if (copy) {
		if (fs_check_read_only(flags) < 0) {
			free(copy);
			return -1;
		}
		*file = text_file_create(copy, len);
		return 0;
	}
	/* The kernel may still believe in a name that was just submitted and open
	 * it instead of creating it: writing any name here starts a new spec. */
	if ((flags & O_ACCMODE) != O_RDONLY)
		return entry_create(fs, p, flags, 0644, file);
	errno = pending ? EACCES : ENOENT;
	return -1;
}

static int entry_unlink(struct fs_ctx *fs, const struct fs_path *p)
{
	struct queue_dir *q = queue_of(fs, p);
	struct fs_identity who;
	struct rejected *r;
	bool pending = false;
	uid_t owner = (uid_t)-1;
	int err = 0;

	fs_identity_current(fs, &who);
	pthread_mutex_lock(&q->lock);
	r = find_rejected_locked(q, p->name, who.uid);
	if (r && who.uid != 0 && who.uid != r->uid)
		err = EACCES;
	if (r)
		owner = r->uid;
	pending = !r && find_open_locked(q, p->name, who.uid);
	pthread_mutex_unlock(&q->lock);
	fs_identity_clear(&who);
	if (!err && !r)
		err = pending ? EPERM : ENOENT;
	if (err) {
		errno = err;
		return -1;
	}
	queue_remove_rejected(q, p->name, owner);
	return 0;
}

/* Path-based truncate (O_TRUNC without atomic_o_trunc) of a spec being
 * written: the descriptor starts empty anyway. The kernel may still cache a
 * name that was just submitted and truncate it before opening it again
 * (`printf ... > queue/same.conf` twice in a row): that open creates a new
 * spec, so a missing name is no error here. */
static int entry_truncate(struct fs_ctx *fs, const struct fs_path *p, off_t size)
{
	struct stat st;

	(void)size;
	if (has_suffix(p->name, REJECTED_SUFFIX)) {
		errno = EACCES;
		return -1;
	}
	if (entry_getattr(fs, p, &st) < 0 && errno != ENOENT)
		return -1;
	return 0;
}

static int entry_utimens(struct fs_ctx *fs, const struct fs_path *p, const struct timespec tv[2])
{
	(void)tv;
	return entry_truncate(fs, p, 0);
}

const struct node_ops queue_entry_ops = {
	.getattr = entry_getattr,
	.open = entry_open,
	.create = entry_create,
	.unlink = entry_unlink,
	.truncate = entry_truncate,
	.utimens = entry_utimens,
};
