/* jobs/<id>/out/... on the storage backend (see out_dir.h). */
#include "out_dir.h"
#include "backend.h"
#include "data_dir.h"
#include "job_cache.h"
#include "sched_link.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

struct backend_fs_file {
	struct fs_file base;
	struct backend *b;
	struct backend_file *bf;
};

static ssize_t bfile_read(struct fs_file *file, char *buf, size_t size, off_t off)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return f->b->ops->pread(f->bf, buf, size, off);
}

static ssize_t bfile_write(struct fs_file *file, const char *buf, size_t size, off_t off)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return f->b->ops->pwrite(f->bf, buf, size, off);
}

static int bfile_flush(struct fs_file *file)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return f->b->ops->flush(f->bf);
}

static int bfile_fsync(struct fs_file *file, int datasync)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return f->b->ops->fsync(f->bf, datasync);
}

static int bfile_truncate(struct fs_file *file, off_t size)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return f->b->ops->ftruncate(f->bf, size);
}

static int bfile_getattr(struct fs_file *file, struct stat *st)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return f->b->ops->fstat(f->bf, st);
}

static ssize_t bfile_read_take(struct fs_file *file, size_t size, off_t off, char **buf)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;
	ssize_t n;

	if (f->b->ops->pread_take)
		return f->b->ops->pread_take(f->bf, size, off, buf);
	*buf = xmalloc(size ? size : 1);
	n = f->b->ops->pread(f->bf, *buf, size, off);
	if (n < 0) {
		int saved = errno;

		free(*buf);
		*buf = NULL;
		errno = saved;
	}
	return n;
}

static int bfile_splice_fd(struct fs_file *file, size_t size, off_t off)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return f->b->ops->fd ? f->b->ops->fd(f->bf, size, off) : -1;
}

static void bfile_release(struct fs_file *file)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	/* Write errors were reported by flush; release has nobody to tell. */
	f->b->ops->close(f->bf);
	free(f);
}

static const struct fs_file_ops backend_fs_file_ops = {
	.read = bfile_read,
	.write = bfile_write,
	.flush = bfile_flush,
	.fsync = bfile_fsync,
	.truncate = bfile_truncate,
	.getattr = bfile_getattr,
	.release = bfile_release,
	.read_take = bfile_read_take,
	.splice_fd = bfile_splice_fd,
};

struct fs_file *backend_fs_file_create(struct backend *b, struct backend_file *bf, bool direct_io)
{
	struct backend_fs_file *f = xcalloc(1, sizeof *f);

	f->base.ops = &backend_fs_file_ops;
	f->base.direct_io = direct_io;
	f->b = b;
	f->bf = bf;
	return &f->base;
}

/* The backend path of a node under jobs/<id>/out; NULL/ENOENT for a bad id. */
static char *volume_path(const struct fs_path *p)
{
	int64_t id;

	if (fs_parse_id(p->arg[0], &id) < 0)
		return NULL;
	if (!*p->rest)
		return xasprintf("jobs/%lld/out", (long long)id);
	return xasprintf("jobs/%lld/out/%s", (long long)id, p->rest);
}

/* A job's outputs are its owner's to delete (or root's), whatever the modes
 * inside say: a group-writable checkpoint folder is for adding to. */
static int check_owner(struct fs_ctx *fs, const struct fs_path *p)
{
	const struct job_meta *meta;
	struct backend_cred cred;
	struct fs_identity who;
	int64_t id;
	bool mine;

	fs_caller_cred(fs, &cred);
	if (cred.uid == 0 || !fs->jobs)
		return 0;
	if (fs_parse_id(p->arg[0], &id) < 0)
		return -1;
	fs_identity_basic(fs, &who);
	meta = job_cache_get(fs->jobs, &who, id, 0);
	fs_identity_clear(&who);
	if (!meta)
		return -1;
	mine = meta->uid == cred.uid;
	job_meta_put(meta);
	if (!mine) {
		errno = EACCES;
		return -1;
	}
	return 0;
}

/* The out folder itself is part of the job's fixed layout. */
static int refuse_top(const struct fs_path *p)
{
	if (!*p->rest) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

static int out_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	char *path = volume_path(p);
	int ret = path ? fs->backend->ops->getattr(fs->backend, path, st) : -1;

	free(path);
	return ret;
}

static int out_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	char *path = volume_path(p);
	int ret = path ? fs->backend->ops->readdir(fs->backend, path, fill, arg) : -1;

	free(path);
	return ret;
}

static int open_common(struct fs_ctx *fs, const struct fs_path *p, int flags, mode_t mode,
		       struct fs_file **file)
{
	struct backend_file *bf = NULL;
	struct backend_cred cred;
	char *path = volume_path(p);
	int ret = -1;

	if (!path)
		goto out;
	fs_caller_cred(fs, &cred);
	if (fs->backend->ops->open(fs->backend, &cred, path, flags, mode, &bf) < 0)
		goto out;
	*file = backend_fs_file_create(fs->backend, bf, !fs->page_cache);
	ret = 0;
out:
	free(path);
	return ret;
}

static int out_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	return open_common(fs, p, flags & ~O_CREAT, 0, file);
}

static int out_create(struct fs_ctx *fs, const struct fs_path *p, int flags, mode_t mode,
		      struct fs_file **file)
{
	return open_common(fs, p, flags | O_CREAT, mode, file);
}

static ssize_t out_readlink(struct fs_ctx *fs, const struct fs_path *p, char *buf, size_t size)
{
	char *path = volume_path(p);
	ssize_t ret = path ? fs->backend->ops->readlink(fs->backend, path, buf, size) : -1;

	free(path);
	return ret;
}

static int out_mkdir(struct fs_ctx *fs, const struct fs_path *p, mode_t mode)
{
	struct backend_cred cred;
	char *path = volume_path(p);
	int ret = -1;

	if (path) {
		fs_caller_cred(fs, &cred);
		ret = fs->backend->ops->mkdir(fs->backend, &cred, path, mode);
	}
	free(path);
	return ret;
}

static int out_unlink(struct fs_ctx *fs, const struct fs_path *p)
{
	char *path = refuse_top(p) < 0 || check_owner(fs, p) < 0 ? NULL : volume_path(p);
	int ret = path ? fs->backend->ops->unlink(fs->backend, path) : -1;

	free(path);
	return ret;
}

static int out_rmdir(struct fs_ctx *fs, const struct fs_path *p)
{
	char *path = refuse_top(p) < 0 || check_owner(fs, p) < 0 ? NULL : volume_path(p);
	int ret = path ? fs->backend->ops->rmdir(fs->backend, path) : -1;

	free(path);
	return ret;
}

static int out_symlink(struct fs_ctx *fs, const char *target, const struct fs_path *p)
{
	struct backend_cred cred;
	char *path = refuse_top(p) < 0 ? NULL : volume_path(p);
	int ret = -1;

	if (path) {
		fs_caller_cred(fs, &cred);
		ret = fs->backend->ops->symlink(fs->backend, &cred, target, path);
	}
	free(path);
	return ret;
}

/* Both ends inside the out/ of one job; another job's out/ is another volume
 * as far as mv is concerned (EXDEV makes it copy), anything else is refused. */
static int two_paths(const struct fs_path *from, const struct fs_path *to, char **a, char **z)
{
	*a = *z = NULL;
	/* data/ is on the same volume but not in the job: mv copies. */
	if (to->ops == &data_ops) {
		errno = EXDEV;
		return -1;
	}
	if (to->ops != &out_ops || refuse_top(from) < 0 || refuse_top(to) < 0) {
		errno = EPERM;
		return -1;
	}
	if (strcmp(from->arg[0], to->arg[0]) != 0) {
		errno = EXDEV;
		return -1;
	}
	*a = volume_path(from);
	*z = volume_path(to);
	if (!*a || !*z) {
		free(*a);
		free(*z);
		*a = *z = NULL;
		errno = ENOENT;
		return -1;
	}
	return 0;
}

static int out_rename(struct fs_ctx *fs, const struct fs_path *from, const struct fs_path *to,
		      unsigned int flags)
{
	char *a = NULL, *z = NULL;
	int ret = -1;

	if (check_owner(fs, from) == 0 && two_paths(from, to, &a, &z) == 0)
		ret = fs->backend->ops->rename(fs->backend, a, z, flags);
	free(a);
	free(z);
	return ret;
}

static int out_link(struct fs_ctx *fs, const struct fs_path *from, const struct fs_path *to)
{
	char *a = NULL, *z = NULL;
	int ret = -1;

	if (two_paths(from, to, &a, &z) == 0)
		ret = fs->backend->ops->link(fs->backend, a, z);
	free(a);
	free(z);
	return ret;
}

static int out_chmod(struct fs_ctx *fs, const struct fs_path *p, mode_t mode)
{
	char *path = volume_path(p);
	int ret = path ? fs->backend->ops->chmod(fs->backend, path, mode) : -1;

	free(path);
	return ret;
}

static int out_chown(struct fs_ctx *fs, const struct fs_path *p, uid_t uid, gid_t gid)
{
	char *path = volume_path(p);
	int ret = path ? fs->backend->ops->chown(fs->backend, path, uid, gid) : -1;

	free(path);
	return ret;
}

static int out_truncate(struct fs_ctx *fs, const struct fs_path *p, off_t size)
{
	char *path = volume_path(p);
	int ret = path ? fs->backend->ops->truncate(fs->backend, path, size) : -1;

	free(path);
	return ret;
}

static int out_utimens(struct fs_ctx *fs, const struct fs_path *p, const struct timespec tv[2])
{
	char *path = volume_path(p);
	int ret = path ? fs->backend->ops->utimens(fs->backend, path, tv) : -1;

	free(path);
	return ret;
}

const struct node_ops out_ops = {
	.getattr = out_getattr,
	.readdir = out_readdir,
	.open = out_open,
	.create = out_create,
	.readlink = out_readlink,
	.mkdir = out_mkdir,
	.unlink = out_unlink,
	.rmdir = out_rmdir,
	.symlink = out_symlink,
	.rename = out_rename,
	.link = out_link,
	.chmod = out_chmod,
	.chown = out_chown,
	.truncate = out_truncate,
	.utimens = out_utimens,
};
