/* data/ on the storage backend (see data_dir.h). */
#include "data_dir.h"
#include "backend.h"
#include "out_dir.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DATA_MODE 01777

/* The backend path of a node under data/ (rest "" is data/ itself). */
static char *volume_path(const struct fs_path *p)
{
	return *p->rest ? xasprintf("data/%s", p->rest) : xstrdup("data");
}

/* data/ itself is part of the mount's fixed layout. */
static char *entry_path(const struct fs_path *p)
{
	if (!*p->rest) {
		errno = EPERM;
		return NULL;
	}
	return volume_path(p);
}

static int data_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	char *path = volume_path(p);
	int ret = fs->backend->ops->getattr(fs->backend, path, st);

	free(path);
	return ret;
}

static int data_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	char *path = volume_path(p);
	int ret = fs->backend->ops->readdir(fs->backend, path, fill, arg);

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

	fs_caller_cred(fs, &cred);
	if (fs->backend->ops->open(fs->backend, &cred, path, flags, mode, &bf) == 0) {
		*file = backend_fs_file_create(fs->backend, bf, !fs->page_cache);
		ret = 0;
	}
	free(path);
	return ret;
}

static int data_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	return open_common(fs, p, flags & ~O_CREAT, 0, file);
}

static int data_create(struct fs_ctx *fs, const struct fs_path *p, int flags, mode_t mode,
		       struct fs_file **file)
{
	return open_common(fs, p, flags | O_CREAT, mode, file);
}

static ssize_t data_readlink(struct fs_ctx *fs, const struct fs_path *p, char *buf, size_t size)
{
	char *path = volume_path(p);
	ssize_t ret = fs->backend->ops->readlink(fs->backend, path, buf, size);

	free(path);
	return ret;
}

static int data_mkdir(struct fs_ctx *fs, const struct fs_path *p, mode_t mode)
{
	struct backend_cred cred;
	char *path = entry_path(p);
	int ret = -1;

	if (path) {
		fs_caller_cred(fs, &cred);
		ret = fs->backend->ops->mkdir(fs->backend, &cred, path, mode);
	}
	free(path);
	return ret;
}

static int data_unlink(struct fs_ctx *fs, const struct fs_path *p)
{
	char *path = entry_path(p);
	int ret = path ? fs->backend->ops->unlink(fs->backend, path) : -1;

	free(path);
	return ret;
}

static int data_rmdir(struct fs_ctx *fs, const struct fs_path *p)
{
	char *path = entry_path(p);
	int ret = path ? fs->backend->ops->rmdir(fs->backend, path) : -1;

	free(path);
	return ret;
}

static int data_symlink(struct fs_ctx *fs, const char *target, const struct fs_path *p)
{
	struct backend_cred cred;
	char *path = entry_path(p);
	int ret = -1;

	if (path) {
		fs_caller_cred(fs, &cred);
		ret = fs->backend->ops->symlink(fs->backend, &cred, target, path);
	}
	free(path);
	return ret;
}

/* Within data/ only; elsewhere is another volume as far as mv is concerned. */
static int two_paths(const struct fs_path *from, const struct fs_path *to, char **a, char **z)
{
	*a = *z = NULL;
	if (to->ops != &data_ops) {
		errno = EXDEV;
		return -1;
	}
	*a = entry_path(from);
	*z = *a ? entry_path(to) : NULL;
	if (!*z) {
		free(*a);
		*a = NULL;
		return -1;
	}
	return 0;
}

static int data_rename(struct fs_ctx *fs, const struct fs_path *from, const struct fs_path *to,
		       unsigned int flags)
{
	char *a, *z;
	int ret = -1;

	if (two_paths(from, to, &a, &z) == 0)
		ret = fs->backend->ops->rename(fs->backend, a, z, flags);
	free(a);
	free(z);
	return ret;
}

static int data_link(struct fs_ctx *fs, const struct fs_path *from, const struct fs_path *to)
{
	char *a, *z;
	int ret = -1;

	if (two_paths(from, to, &a, &z) == 0)
		ret = fs->backend->ops->link(fs->backend, a, z);
	free(a);
	free(z);
	return ret;
}

static int data_chmod(struct fs_ctx *fs, const struct fs_path *p, mode_t mode)
{
	char *path = entry_path(p);
	int ret = path ? fs->backend->ops->chmod(fs->backend, path, mode) : -1;

	free(path);
	return ret;
}

static int data_chown(struct fs_ctx *fs, const struct fs_path *p, uid_t uid, gid_t gid)
{
	char *path = entry_path(p);
	int ret = path ? fs->backend->ops->chown(fs->backend, path, uid, gid) : -1;

	free(path);
	return ret;
}

static int data_truncate(struct fs_ctx *fs, const struct fs_path *p, off_t size)
{
	char *path = volume_path(p);
	int ret = fs->backend->ops->truncate(fs->backend, path, size);

	free(path);
	return ret;
}

static int data_utimens(struct fs_ctx *fs, const struct fs_path *p, const struct timespec tv[2])
{
	char *path = volume_path(p);
	int ret = fs->backend->ops->utimens(fs->backend, path, tv);

	free(path);
	return ret;
}

const struct node_ops data_ops = {
	.getattr = data_getattr,
	.readdir = data_readdir,
	.open = data_open,
	.create = data_create,
	.readlink = data_readlink,
	.mkdir = data_mkdir,
	.unlink = data_unlink,
	.rmdir = data_rmdir,
	.symlink = data_symlink,
	.rename = data_rename,
	.link = data_link,
	.chmod = data_chmod,
	.chown = data_chown,
	.truncate = data_truncate,
	.utimens = data_utimens,
};

int data_dir_prepare(struct fs_ctx *fs)
{
	struct backend_cred self = { geteuid(), getegid() };
	struct backend *b = fs->backend;
	struct stat st;

	if (b->ops->getattr(b, "data", &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : (errno = ENOTDIR, -1);
	if (errno != ENOENT)
		return -1;
	/* Another mount may make it at the same moment: that is fine. */
	if (b->ops->mkdir(b, &self, "data", DATA_MODE) < 0 && errno != EEXIST)
		return -1;
	/* mkdir's mode went through a umask on some servers: say it again. */
	return b->ops->chmod(b, "data", DATA_MODE);
}
