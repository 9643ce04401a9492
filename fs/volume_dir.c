/* Volume folders and backend files (see volume_dir.h). */
#include "volume_dir.h"
#include "backend.h"
#include "inode_map.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ---- an open file of the backend ---- */

struct backend_fs_file {
	struct fs_file base;
	struct backend *b;
	struct backend_file *bf;
	/* Set for the files of volume folders, whose writes by others than root
	 * clear set-uid and set-gid; NULL for the mount's own (logs). */
	struct fs_ctx *fs;
	char *path;              /* FUSE's at open, to invalidate (stale after a rename) */
	atomic_uint privs_seen;  /* 1 + the privs generation the mode was checked at; 0: never */
};

/* What the kernel's file_remove_privs() does on a write, which a direct_io
 * FUSE file does not get: a writer without CAP_FSETID (here: not root) clears
 * set-uid, and set-gid where group-executable or when the writer is not in
 * the file's group (Linux 6.x, setattr_should_drop_sgid). The mode is read once per open
 * file, and again only after a chmod through this mount set such bits, so
 * the data path costs no GETATTR. Best effort: a failure leaves the mode. */
static void remove_privs(struct backend_fs_file *f)
{
	struct backend_cred cred, owner;
	unsigned int gen;
	mode_t kill;
	struct stat st;

	fs_caller_cred(f->fs, &cred);
	if (cred.uid == 0)
		return;
	gen = f->fs->inodes ? inode_map_privs_gen(f->fs->inodes) : 0;
	/* A load first: the exchange would write the line on every write. */
	if (atomic_load(&f->privs_seen) == gen + 1 || atomic_exchange(&f->privs_seen, gen + 1) == gen + 1)
		return;
	if (backend_fstat(f->b, f->bf, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	kill = st.st_mode & S_ISUID;
	if ((st.st_mode & S_ISGID) && ((st.st_mode & S_IXGRP) || !fs_caller_in_group(f->fs, st.st_gid)))
		kill |= S_ISGID;
	if (!kill || !backend_can_fchmod(f->b))
		return;
	/* The owner may change the mode whoever wrote (NFS: AUTH_SYS as them). */
	owner.uid = st.st_uid;
	owner.gid = st.st_gid;
	if (backend_fchmod(f->b, f->bf, &owner, st.st_mode & 07777 & ~kill) == 0)
		fs_invalidate(f->fs, f->path);   /* the kernel holds the old mode */
}

static ssize_t bfile_read(struct fs_file *file, char *buf, size_t size, off_t off)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return backend_pread(f->b, f->bf, buf, size, off);
}

static ssize_t bfile_write(struct fs_file *file, const char *buf, size_t size, off_t off)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	/* Through the page cache the kernel does it itself (file_remove_privs). */
	if (f->fs && f->base.direct_io)
		remove_privs(f);
	return backend_pwrite(f->b, f->bf, buf, size, off);
}

static int bfile_flush(struct fs_file *file)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return backend_flush(f->b, f->bf);
}

static int bfile_fsync(struct fs_file *file, int datasync)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return backend_fsync(f->b, f->bf, datasync);
}

static int bfile_truncate(struct fs_file *file, off_t size)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return backend_ftruncate(f->b, f->bf, size);
}

static int bfile_fallocate(struct fs_file *file, int mode, off_t off, off_t len)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return backend_fallocate(f->b, f->bf, mode, off, len);
}

static const char *bfile_path(struct fs_file *file)
{
	return ((struct backend_fs_file *)file)->path;
}

static int bfile_getattr(struct fs_file *file, struct stat *st)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return backend_fstat(f->b, f->bf, st);
}

/* Whether a chmod to mode refused to the caller is the kernel's own clearing
 * of st's set-uid/set-gid: a truncate by someone who may write but does not
 * own the file comes as a SETATTR of the mode without those bits (the kernel
 * checked it, default_permissions), which the server refuses to anyone but
 * the owner (NFS, AUTH_SYS). Nothing else is let through this way. */
static bool is_privs_kill(const struct stat *st, mode_t mode)
{
	const mode_t privs = S_ISUID | S_ISGID;

	return S_ISREG(st->st_mode) && (st->st_mode & privs) && !(mode & ~st->st_mode & 07777) &&
	       (mode & 07777 & ~privs) == (st->st_mode & 07777 & ~privs);
}

static int bfile_chmod(struct fs_file *file, mode_t mode)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;
	struct backend_cred owner;
	struct stat st;

	if (!backend_can_fchmod(f->b)) {
		errno = EOPNOTSUPP;
		return -1;
	}
	if (backend_fchmod(f->b, f->bf, NULL, mode) < 0) {
		if (errno != EPERM || backend_fstat(f->b, f->bf, &st) < 0 || !is_privs_kill(&st, mode)) {
			errno = EPERM;
			return -1;
		}
		owner.uid = st.st_uid;
		owner.gid = st.st_gid;
		if (backend_fchmod(f->b, f->bf, &owner, mode) < 0)
			return -1;
	}
	if (f->fs && f->fs->inodes && (mode & (S_ISUID | S_ISGID)))
		inode_map_privs_changed(f->fs->inodes);
	return 0;
}

static int bfile_chown(struct fs_file *file, uid_t uid, gid_t gid)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return backend_fchown(f->b, f->bf, uid, gid);
}

static int bfile_utimens(struct fs_file *file, const struct timespec tv[2])
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return backend_futimens(f->b, f->bf, tv);
}

static ssize_t bfile_read_take(struct fs_file *file, size_t size, off_t off, char **buf,
			       struct backend_pipe *pipe)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return backend_pread_take(f->b, f->bf, size, off, buf, pipe);
}

static int bfile_splice_fd(struct fs_file *file, size_t size, off_t off)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	return backend_splice_fd(f->b, f->bf, size, off);
}

static void bfile_release(struct fs_file *file)
{
	struct backend_fs_file *f = (struct backend_fs_file *)file;

	/* Write errors were reported by flush; release has nobody to tell. */
	backend_close(f->b, f->bf);
	free(f->path);
	free(f);
}

static const struct fs_file_ops backend_fs_file_ops = {
	.read = bfile_read,
	.write = bfile_write,
	.flush = bfile_flush,
	.fsync = bfile_fsync,
	.truncate = bfile_truncate,
	.fallocate = bfile_fallocate,
	.getattr = bfile_getattr,
	.chmod = bfile_chmod,
	.chown = bfile_chown,
	.utimens = bfile_utimens,
	.release = bfile_release,
	.read_take = bfile_read_take,
	.splice_fd = bfile_splice_fd,
	.path = bfile_path,
};

struct fs_file *backend_fs_file_create(struct backend *b, struct backend_file *bf, bool direct_io)
{
	struct backend_fs_file *f = xcalloc(1, sizeof *f);

	f->base.ops = &backend_fs_file_ops;
	f->base.direct_io = direct_io;
	f->b = b;
	f->bf = bf;
	atomic_init(&f->privs_seen, 0);
	return &f->base;
}

/* ---- the folder ---- */

/* The routes point at &v->node, and node is v's first member. */
static const struct volume_dir *volume_of(const struct fs_path *p)
{
	return (const struct volume_dir *)p->ops;
}

/* The backend path of p. A name libfuse gave an open file it unlinked (or
 * that was renamed over) lives in the mount's unlinked folder, out of its own
 * folder's listing, whatever folder it was in (see unlinked.h). */
static char *path_of(const struct fs_ctx *fs, const struct fs_path *p)
{
	if (fs->unlinked_dir && *p->rest && fs_is_hidden_name(p->name))
		return xasprintf("%s/%s", fs->unlinked_dir, p->name);
	return volume_of(p)->path(p);
}

/* The folder itself is part of a fixed layout. */
static int refuse_top(const struct fs_path *p)
{
	if (!*p->rest) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

/* For what must leave the folder itself alone. */
static char *entry_path(const struct fs_ctx *fs, const struct fs_path *p)
{
	return refuse_top(p) < 0 ? NULL : path_of(fs, p);
}

/* For mkdir, chmod and chown, which some folders refuse on themselves. */
static char *change_path(const struct fs_ctx *fs, const struct fs_path *p)
{
	return volume_of(p)->fixed_top ? entry_path(fs, p) : path_of(fs, p);
}

/* For unlink and rmdir: who may remove is asked only below the folder. A
 * hidden file's removal at the last close was allowed at its unlink. */
static char *removal_path(struct fs_ctx *fs, const struct fs_path *p)
{
	const struct volume_dir *v = volume_of(p);

	if (refuse_top(p) < 0)
		return NULL;
	if (v->may_remove && !fs_is_hidden_name(p->name) && v->may_remove(fs, p) < 0)
		return NULL;
	return path_of(fs, p);
}

int volume_dir_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	char *path = path_of(fs, p);
	int ret = path ? backend_getattr(fs->backend, path, st) : -1;

	free(path);
	return ret;
}

int volume_dir_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	char *path = path_of(fs, p);
	int ret = path ? backend_readdir(fs->backend, path, fill, arg) : -1;

	free(path);
	return ret;
}

static int open_common(struct fs_ctx *fs, const struct fs_path *p, int flags, mode_t mode,
		       struct fs_file **file)
{
	struct backend_file *bf = NULL;
	struct backend_cred cred;
	char *path = path_of(fs, p);
	int ret = -1;

	if (!path)
		goto out;
	fs_caller_cred(fs, &cred);
	if (backend_open(fs->backend, &cred, path, flags, mode, &bf) < 0)
		goto out;
	*file = backend_fs_file_create(fs->backend, bf, !fs->page_cache);
	((struct backend_fs_file *)*file)->fs = fs;
	((struct backend_fs_file *)*file)->path = xstrdup(p->path);
	ret = 0;
out:
	free(path);
	return ret;
}

int volume_dir_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	return open_common(fs, p, flags & ~O_CREAT, 0, file);
}

int volume_dir_create(struct fs_ctx *fs, const struct fs_path *p, int flags, mode_t mode,
		      struct fs_file **file)
{
	return open_common(fs, p, flags | O_CREAT, mode, file);
}

ssize_t volume_dir_readlink(struct fs_ctx *fs, const struct fs_path *p, char *buf, size_t size)
{
	char *path = path_of(fs, p);
	ssize_t ret = path ? backend_readlink(fs->backend, path, buf, size) : -1;

	free(path);
	return ret;
}

int volume_dir_mkdir(struct fs_ctx *fs, const struct fs_path *p, mode_t mode)
{
	struct backend_cred cred;
	char *path = change_path(fs, p);
	int ret = -1;

	if (path) {
		fs_caller_cred(fs, &cred);
		ret = backend_mkdir(fs->backend, &cred, path, mode);
	}
	free(path);
	return ret;
}

int volume_dir_unlink(struct fs_ctx *fs, const struct fs_path *p)
{
	char *path = removal_path(fs, p);
	int ret = path ? backend_unlink(fs->backend, path) : -1;

	free(path);
	return ret;
}

int volume_dir_rmdir(struct fs_ctx *fs, const struct fs_path *p)
{
	char *path = removal_path(fs, p);
	int ret = path ? backend_rmdir(fs->backend, path) : -1;

	free(path);
	return ret;
}

int volume_dir_symlink(struct fs_ctx *fs, const char *target, const struct fs_path *p)
{
	struct backend_cred cred;
	char *path = entry_path(fs, p);
	int ret = -1;

	if (path) {
		fs_caller_cred(fs, &cred);
		ret = backend_symlink(fs->backend, &cred, target, path);
	}
	free(path);
	return ret;
}

/* FIFOs and unix sockets (bind(2) comes here too), made by the backend as
 * the caller; it refuses device nodes. rdev only matters for those. */
int volume_dir_mknod(struct fs_ctx *fs, const struct fs_path *p, mode_t mode, dev_t rdev)
{
	struct backend_cred cred;
	char *path = NULL;
	int ret = -1;

	(void)rdev;
	path = entry_path(fs, p);
	if (!path)
		goto out;
	fs_caller_cred(fs, &cred);
	ret = backend_mknod(fs->backend, &cred, path, mode);
out:
	free(path);
	return ret;
}

/* The backend paths of both ends, once the folder's pair rule lets them be
 * (it lets through only a to of the same kind, a volume folder too). */
static int two_paths(const struct fs_ctx *fs, const struct fs_path *from, const struct fs_path *to,
		     char **a, char **z)
{
	*a = *z = NULL;
	if (volume_of(from)->pair(from, to) < 0)
		return -1;
	*a = path_of(fs, from);
	*z = *a ? path_of(fs, to) : NULL;
	if (!*z) {
		free(*a);
		*a = NULL;
		return -1;
	}
	return 0;
}

int volume_dir_rename(struct fs_ctx *fs, const struct fs_path *from, const struct fs_path *to,
		      unsigned int flags)
{
	const struct volume_dir *v = volume_of(from);
	char *a = NULL, *z = NULL;
	int ret = -1;

	if (v->may_remove && v->may_remove(fs, from) < 0)
		goto out;
	if (two_paths(fs, from, to, &a, &z) < 0)
		goto out;
	ret = backend_rename(fs->backend, a, z, flags);
out:
	free(a);
	free(z);
	return ret;
}

int volume_dir_link(struct fs_ctx *fs, const struct fs_path *from, const struct fs_path *to)
{
	char *a, *z;
	int ret = -1;

	if (two_paths(fs, from, to, &a, &z) == 0)
		ret = backend_link(fs->backend, a, z);
	free(a);
	free(z);
	return ret;
}

/* The kernel's clearing of set-uid by a truncate of a non-owner (see
 * is_privs_kill), by path: done through the file opened as its owner. */
static int chmod_privs_kill(struct fs_ctx *fs, const char *path, mode_t mode)
{
	struct backend *b = fs->backend;
	struct backend_file *bf = NULL;
	struct backend_cred owner;
	struct stat st;
	int ret = -1;

	if (backend_getattr(b, path, &st) < 0 || !is_privs_kill(&st, mode) || !backend_can_fchmod(b)) {
		errno = EPERM;
		goto out;
	}
	owner.uid = st.st_uid;
	owner.gid = st.st_gid;
	if (backend_open(b, &owner, path, O_RDONLY | O_NOFOLLOW, 0, &bf) < 0)
		goto out;
	ret = backend_fchmod(b, bf, &owner, mode);
out:
	if (bf) {
		int saved = errno;

		backend_close(b, bf);
		errno = saved;
	}
	return ret;
}

int volume_dir_chmod(struct fs_ctx *fs, const struct fs_path *p, mode_t mode)
{
	char *path = change_path(fs, p);
	int ret = path ? backend_chmod(fs->backend, path, mode) : -1;

	if (ret < 0 && path && errno == EPERM)
		ret = chmod_privs_kill(fs, path, mode);

	/* After the change, so that a writer checking meanwhile looks again. */
	if (ret == 0 && fs->inodes && (mode & (S_ISUID | S_ISGID)))
		inode_map_privs_changed(fs->inodes);
	free(path);
	return ret;
}

int volume_dir_chown(struct fs_ctx *fs, const struct fs_path *p, uid_t uid, gid_t gid)
{
	char *path = change_path(fs, p);
	int ret = path ? backend_chown(fs->backend, path, uid, gid) : -1;

	free(path);
	return ret;
}

int volume_dir_truncate(struct fs_ctx *fs, const struct fs_path *p, off_t size)
{
	char *path = path_of(fs, p);
	int ret = path ? backend_truncate(fs->backend, path, size) : -1;

	free(path);
	return ret;
}

int volume_dir_utimens(struct fs_ctx *fs, const struct fs_path *p, const struct timespec tv[2])
{
	char *path = path_of(fs, p);
	int ret = path ? backend_utimens(fs->backend, path, tv) : -1;

	free(path);
	return ret;
}
