/* The backend_*() calls every user goes through, and the helpers written once
 * on top of them (mkdir -p, rm -r) so that every backend gets them for free.
 * Choosing a backend from a URL is backend_url.c. */
#include "backend.h"
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

void backend_set_identity(struct backend *b, backend_who_fn who, void *arg)
{
	b->who = who;
	b->who_arg = arg;
	if (b->ops->set_identity)
		b->ops->set_identity(b, who, arg);
}

int64_t backend_set_patience(struct backend *b, int64_t ms)
{
	return b->ops->set_patience ? b->ops->set_patience(b, ms < 0 ? 0 : ms) : 0;
}

int backend_health(struct backend *b, int64_t *down_since_epoch_s, char **reason)
{
	if (down_since_epoch_s)
		*down_since_epoch_s = 0;
	if (reason)
		*reason = NULL;
	return b->ops->health ? b->ops->health(b, down_since_epoch_s, reason) : 1;
}

int backend_probe(struct backend *b, int timeout_ms)
{
	return b->ops->probe ? b->ops->probe(b, timeout_ms) : 0;
}

void backend_destroy(struct backend *b)
{
	if (b)
		b->ops->destroy(b);
}

/* An existing path must be a folder. */
static int is_folder(struct backend *b, const char *path)
{
	struct stat st;

	if (backend_getattr(b, path, &st) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

int backend_mkdir_p(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode)
{
	char *parent = NULL, *slash;
	int ret = -1;

	/* The deepest folder first: for a new job's folders, or one that is
	 * there already, that is one call instead of a walk from the top (each
	 * step a round trip on NFS). Somebody else may create one at the same
	 * moment: EEXIST is fine when it is a folder. */
	if (backend_mkdir(b, cred, path, mode) == 0)
		return 0;
	if (errno == EEXIST)
		return is_folder(b, path);
	if (errno != ENOENT)
		return -1;
	parent = xstrdup(path);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		goto out;  /* ENOENT: the volume's root is missing */
	*slash = '\0';
	if (backend_mkdir_p(b, cred, parent, mode) < 0)
		goto out;
	if (backend_mkdir(b, cred, path, mode) == 0)
		ret = 0;
	else if (errno == EEXIST)
		ret = is_folder(b, path);
out:
	free(parent);
	return ret;
}

struct name_list {
	char **names;
	size_t n, cap;
};

static int collect_name(void *arg, const char *name, const struct stat *st)
{
	struct name_list *list = arg;

	(void)st;
	if (list->n == list->cap) {
		list->cap = list->cap ? list->cap * 2 : 16;
		list->names = xrealloc(list->names, list->cap * sizeof *list->names);
	}
	list->names[list->n++] = xstrdup(name);
	return 0;
}

int backend_remove_tree(struct backend *b, const char *path)
{
	struct name_list list = { 0 };
	struct stat st;
	int ret = -1, saved;

	/* The volume itself is not a tree anybody may remove. */
	if (!*path) {
		errno = EINVAL;
		goto out;
	}
	if (backend_getattr(b, path, &st) < 0) {
		ret = errno == ENOENT ? 0 : -1;
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		ret = backend_unlink(b, path) < 0 && errno != ENOENT ? -1 : 0;
		goto out;
	}
	/* Collect first, then remove: removing while listing may skip entries. */
	if (backend_readdir(b, path, collect_name, &list) < 0)
		goto out;
	for (size_t i = 0; i < list.n; i++) {
		char *child = xasprintf("%s/%s", path, list.names[i]);
		int rc = backend_remove_tree(b, child);

		free(child);
		if (rc < 0)
			goto out;
	}
	if (backend_rmdir(b, path) < 0 && errno != ENOENT)
		goto out;
	ret = 0;
out:
	saved = errno;
	for (size_t i = 0; i < list.n; i++)
		free(list.names[i]);
	free(list.names);
	errno = saved;
	return ret;
}

/* ---- the calls (see backend.h) ---- */

int backend_getattr(struct backend *b, const char *path, struct stat *st)
{
	return b->ops->getattr(b, path, st);
}

int backend_readdir(struct backend *b, const char *path, backend_dirent_fn fn, void *arg)
{
	return b->ops->readdir(b, path, fn, arg);
}

int backend_mkdir(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode)
{
	return b->ops->mkdir(b, cred, path, mode);
}

int backend_unlink(struct backend *b, const char *path)
{
	return b->ops->unlink(b, path);
}

int backend_rmdir(struct backend *b, const char *path)
{
	return b->ops->rmdir(b, path);
}

int backend_rename(struct backend *b, const char *from, const char *to, unsigned int flags)
{
	return b->ops->rename(b, from, to, flags);
}

int backend_symlink(struct backend *b, const struct backend_cred *cred, const char *target, const char *path)
{
	return b->ops->symlink(b, cred, target, path);
}

int backend_mknod(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode)
{
	if (!b->ops->mknod) {
		errno = EPERM;
		return -1;
	}
	return b->ops->mknod(b, cred, path, mode);
}

ssize_t backend_readlink(struct backend *b, const char *path, char *buf, size_t size)
{
	return b->ops->readlink(b, path, buf, size);
}

int backend_link(struct backend *b, const char *from, const char *to)
{
	return b->ops->link(b, from, to);
}

int backend_chmod(struct backend *b, const char *path, mode_t mode)
{
	return b->ops->chmod(b, path, mode);
}

int backend_chown(struct backend *b, const char *path, uid_t uid, gid_t gid)
{
	return b->ops->chown(b, path, uid, gid);
}

int backend_truncate(struct backend *b, const char *path, off_t size)
{
	return b->ops->truncate(b, path, size);
}

int backend_utimens(struct backend *b, const char *path, const struct timespec tv[2])
{
	return b->ops->utimens(b, path, tv);
}

int backend_statfs(struct backend *b, const char *path, struct statvfs *st)
{
	return b->ops->statfs(b, path, st);
}

int backend_open(struct backend *b, const struct backend_cred *cred, const char *path, int flags, mode_t mode, struct backend_file **file)
{
	return b->ops->open(b, cred, path, flags, mode, file);
}

ssize_t backend_pread(struct backend *b, struct backend_file *f, void *buf, size_t size, off_t off)
{
	return b->ops->pread(f, buf, size, off);
}

ssize_t backend_pwrite(struct backend *b, struct backend_file *f, const void *buf, size_t size, off_t off)
{
	return b->ops->pwrite(f, buf, size, off);
}

int backend_ftruncate(struct backend *b, struct backend_file *f, off_t size)
{
	return b->ops->ftruncate(f, size);
}

int backend_fallocate(struct backend *b, struct backend_file *f, int mode, off_t off, off_t len)
{
	if (!b->ops->fallocate) {
		errno = EOPNOTSUPP;
		return -1;
	}
	return b->ops->fallocate(f, mode, off, len);
}

int backend_fstat(struct backend *b, struct backend_file *f, struct stat *st)
{
	return b->ops->fstat(f, st);
}

int backend_fsync(struct backend *b, struct backend_file *f, int datasync)
{
	return b->ops->fsync(f, datasync);
}

int backend_fchmod(struct backend *b, struct backend_file *f, const struct backend_cred *cred, mode_t mode)
{
	if (!b->ops->fchmod) {
		errno = EOPNOTSUPP;
		return -1;
	}
	return b->ops->fchmod(f, cred, mode);
}

int backend_fchown(struct backend *b, struct backend_file *f, uid_t uid, gid_t gid)
{
	if (!b->ops->fchown) {
		errno = EOPNOTSUPP;
		return -1;
	}
	return b->ops->fchown(f, uid, gid);
}

int backend_futimens(struct backend *b, struct backend_file *f, const struct timespec tv[2])
{
	if (!b->ops->futimens) {
		errno = EOPNOTSUPP;
		return -1;
	}
	return b->ops->futimens(f, tv);
}

int backend_flush(struct backend *b, struct backend_file *f)
{
	return b->ops->flush(f);
}

int backend_close(struct backend *b, struct backend_file *f)
{
	return b->ops->close(f);
}

int backend_splice_fd(struct backend *b, struct backend_file *f, size_t size, off_t off)
{
	return b->ops->fd ? b->ops->fd(f, size, off) : -1;
}

ssize_t backend_pread_take(struct backend *b, struct backend_file *f, size_t size, off_t off, char **buf,
			   struct backend_pipe *pipe)
{
	ssize_t n;

	if (pipe)
		pipe->used = false;
	if (b->ops->pread_take)
		return b->ops->pread_take(f, size, off, buf, pipe);
	*buf = xmalloc(size ? size : 1);
	n = b->ops->pread(f, *buf, size, off);
	if (n < 0) {
		int saved = errno;

		free(*buf);
		*buf = NULL;
		errno = saved;
	}
	return n;
}

void backend_spread(struct backend *b, const char *path)
{
	if (b->ops->spread)
		b->ops->spread(b, path);
}

bool backend_can_fchmod(const struct backend *b)
{
	return b->ops->fchmod != NULL;
}
