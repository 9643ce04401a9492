/* The local-folder backend: every op works relative to a directory fd of the
 * volume root. The parent of each path is opened with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS) (or, without openat2, one O_NOFOLLOW component at a time)
 * and the last component is handled with *at() calls that do not follow it, so
 * a symlink planted in a job's output can never lead the daemon, which runs as
 * root, out of the volume. */
#include "backend.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct local_backend {
	struct backend base;    /* first: the generic header */
	int root_fd;            /* O_PATH directory fd of the volume root */
	bool chown_created;     /* running as root: hand new files to the caller */
};

struct backend_file {
	int fd;
};

/* A path split into an open parent directory and the last component. */
struct at {
	int dirfd;
	bool own;               /* dirfd must be closed */
	char *name;             /* malloc'ed last component, "." for the root */
};

static struct local_backend *local(struct backend *b)
{
	return (struct local_backend *)b;
}

/* Relative, no "..", no empty components: what backend.h promises callers give us. */
static int check_path(const char *path)
{
	const char *p = path;

	if (*path == '/')
		goto bad;
	while (*p) {
		const char *end = strchrnul(p, '/');
		size_t n = (size_t)(end - p);

		if (n == 0 || (n == 2 && p[0] == '.' && p[1] == '.') || (n == 1 && p[0] == '.'))
			goto bad;
		p = *end ? end + 1 : end;
		if (*end && !*p)
			goto bad;
	}
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

/* Open folder dir (relative to the root) without following any symlink. */
static int open_dir_beneath(struct local_backend *lb, const char *dir)
{
	struct open_how how = {
		.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	char *copy, *p;
	int fd;

	fd = (int)syscall(SYS_openat2, lb->root_fd, dir, &how, sizeof how);
	if (fd >= 0 || (errno != ENOSYS && errno != EPERM))
		return fd;
	/* No openat2 (old kernel, or a seccomp filter): walk one component at a time. */
	copy = xstrdup(dir);
	fd = dup(lb->root_fd);
	for (p = strtok(copy, "/"); fd >= 0 && p; p = strtok(NULL, "/")) {
		int next = openat(fd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int saved = errno;

		close(fd);
		fd = next;
		errno = saved;
	}
	free(copy);
	return fd;
}

static int at_open(struct local_backend *lb, const char *path, struct at *at)
{
	const char *slash;
	char *dir;

	memset(at, 0, sizeof *at);
	at->dirfd = -1;
	if (check_path(path) < 0)
		return -1;
	if (!*path) {
		at->dirfd = lb->root_fd;
		at->name = xstrdup(".");
		return 0;
	}
	slash = strrchr(path, '/');
	if (!slash) {
		at->dirfd = lb->root_fd;
		at->name = xstrdup(path);
		return 0;
	}
	dir = xasprintf("%.*s", (int)(slash - path), path);
	at->dirfd = open_dir_beneath(lb, dir);
	free(dir);
	if (at->dirfd < 0)
		return -1;
	at->own = true;
	at->name = xstrdup(slash + 1);
	return 0;
}

static void at_close(struct at *at)
{
	int saved = errno;

	if (at->own && at->dirfd >= 0)
		close(at->dirfd);
	free(at->name);
	at->dirfd = -1;
	at->name = NULL;
	errno = saved;
}

/* Hand a just-created entry to the person acting; no-op unless we are root. */
static int give_away(struct local_backend *lb, int dirfd, const char *name,
		     const struct backend_cred *cred)
{
	if (!lb->chown_created || !cred)
		return 0;
	if (cred->uid == geteuid() && cred->gid == getegid())
		return 0;
	return fchownat(dirfd, name, cred->uid, cred->gid, AT_SYMLINK_NOFOLLOW);
}

static void local_destroy(struct backend *b)
{
	struct local_backend *lb = local(b);

	if (lb->root_fd >= 0)
		close(lb->root_fd);
	free(lb);
}

static int local_getattr(struct backend *b, const char *path, struct stat *st)
{
	struct at at;
	int ret = -1;

	if (at_open(local(b), path, &at) < 0)
		goto out;
	ret = fstatat(at.dirfd, at.name, st, AT_SYMLINK_NOFOLLOW);
out:
	at_close(&at);
	return ret;
}

static int local_readdir(struct backend *b, const char *path, backend_dirent_fn fn, void *arg)
{
	struct at at;
	struct dirent *de;
	DIR *dir = NULL;
	int fd, ret = -1, saved;

	if (at_open(local(b), path, &at) < 0)
		goto out;
	fd = openat(at.dirfd, at.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		goto out;
	dir = fdopendir(fd);
	if (!dir) {
		saved = errno;
		close(fd);
		errno = saved;
		goto out;
	}
	for (;;) {
		struct stat st;

		errno = 0;
		de = readdir(dir);
		if (!de) {
			if (errno)
				goto out;
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		memset(&st, 0, sizeof st);
		st.st_ino = de->d_ino;
		st.st_mode = de->d_type == DT_UNKNOWN ? 0 : DTTOIF(de->d_type);
		if (fn(arg, de->d_name, &st))
			break;
	}
	ret = 0;
out:
	saved = errno;
	if (dir)
		closedir(dir);
	at_close(&at);
	errno = saved;
	return ret;
}

static int local_mkdir(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode)
{
	struct local_backend *lb = local(b);
	struct at at;
	int ret = -1;

	if (at_open(lb, path, &at) < 0)
		goto out;
	if (mkdirat(at.dirfd, at.name, mode) < 0)
		goto out;
	/* A failed call has no side effects: undo the folder if it cannot be given away. */
	if (give_away(lb, at.dirfd, at.name, cred) < 0) {
		int saved = errno;

		unlinkat(at.dirfd, at.name, AT_REMOVEDIR);
		errno = saved;
		goto out;
	}
	ret = 0;
out:
	at_close(&at);
	return ret;
}

static int local_unlink(struct backend *b, const char *path)
{
	struct at at;
	int ret = -1;

	if (at_open(local(b), path, &at) < 0)
		goto out;
	ret = unlinkat(at.dirfd, at.name, 0);
out:
	at_close(&at);
	return ret;
}

static int local_rmdir(struct backend *b, const char *path)
{
	struct at at;
	int ret = -1;

	if (at_open(local(b), path, &at) < 0)
		goto out;
	ret = unlinkat(at.dirfd, at.name, AT_REMOVEDIR);
out:
	at_close(&at);
	return ret;
}

static int local_rename(struct backend *b, const char *from, const char *to, unsigned int flags)
{
	struct at a, z;
	int ret = -1;

	memset(&z, 0, sizeof z);
	z.dirfd = -1;
	if (at_open(local(b), from, &a) < 0 || at_open(local(b), to, &z) < 0)
		goto out;
	if (flags)
		ret = renameat2(a.dirfd, a.name, z.dirfd, z.name, flags);
	else
		ret = renameat(a.dirfd, a.name, z.dirfd, z.name);
out:
	at_close(&a);
	at_close(&z);
	return ret;
}

static int local_symlink(struct backend *b, const struct backend_cred *cred, const char *target, const char *path)
{
	struct local_backend *lb = local(b);
	struct at at;
	int ret = -1;

	if (at_open(lb, path, &at) < 0)
		goto out;
	if (symlinkat(target, at.dirfd, at.name) < 0)
		goto out;
	if (give_away(lb, at.dirfd, at.name, cred) < 0) {
		int saved = errno;

		unlinkat(at.dirfd, at.name, 0);
		errno = saved;
		goto out;
	}
	ret = 0;
out:
	at_close(&at);
	return ret;
}

static ssize_t local_readlink(struct backend *b, const char *path, char *buf, size_t size)
{
	struct at at;
	ssize_t ret = -1;

	if (at_open(local(b), path, &at) < 0)
		goto out;
	ret = readlinkat(at.dirfd, at.name, buf, size);
out:
	at_close(&at);
	return ret;
}

static int local_link(struct backend *b, const char *from, const char *to)
{
	struct at a, z;
	int ret = -1;

	memset(&z, 0, sizeof z);
	z.dirfd = -1;
	if (at_open(local(b), from, &a) < 0 || at_open(local(b), to, &z) < 0)
		goto out;
	/* flags 0: a symlink is linked itself, never followed. */
	ret = linkat(a.dirfd, a.name, z.dirfd, z.name, 0);
out:
	at_close(&a);
	at_close(&z);
	return ret;
}

static int local_chmod(struct backend *b, const char *path, mode_t mode)
{
	struct at at;
	struct stat st;
	char proc[64];
	int fd = -1, ret = -1;

	if (at_open(local(b), path, &at) < 0)
		goto out;
	/* fchmodat() cannot refuse to follow a symlink: pin the entry with an
	 * O_PATH fd first and change the mode through /proc, as passthrough_ll does. */
	fd = openat(at.dirfd, at.name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		goto out;
	if (S_ISLNK(st.st_mode)) {
		errno = EOPNOTSUPP;
		goto out;
	}
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	ret = chmod(proc, mode);
out:
	if (fd >= 0) {
		int saved = errno;

		close(fd);
		errno = saved;
	}
	at_close(&at);
	return ret;
}

static int local_chown(struct backend *b, const char *path, uid_t uid, gid_t gid)
{
	struct at at;
	int ret = -1;

	if (at_open(local(b), path, &at) < 0)
		goto out;
	ret = fchownat(at.dirfd, at.name, uid, gid, AT_SYMLINK_NOFOLLOW);
out:
	at_close(&at);
	return ret;
}

static int local_truncate(struct backend *b, const char *path, off_t size)
{
	struct at at;
	int fd = -1, ret = -1;

	if (at_open(local(b), path, &at) < 0)
		goto out;
	/* O_NONBLOCK: a FIFO must fail, not hang the worker thread. */
	fd = openat(at.dirfd, at.name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		goto out;
	ret = ftruncate(fd, size);
out:
	if (fd >= 0) {
		int saved = errno;

		close(fd);
		errno = saved;
	}
	at_close(&at);
	return ret;
}

static int local_utimens(struct backend *b, const char *path, const struct timespec tv[2])
{
	struct at at;
	int ret = -1;

	if (at_open(local(b), path, &at) < 0)
		goto out;
	ret = utimensat(at.dirfd, at.name, tv, AT_SYMLINK_NOFOLLOW);
out:
	at_close(&at);
	return ret;
}

static int local_statfs(struct backend *b, const char *path, struct statvfs *st)
{
	(void)path;
	return fstatvfs(local(b)->root_fd, st);
}

static int local_open(struct backend *b, const struct backend_cred *cred, const char *path,
		      int flags, mode_t mode, struct backend_file **file)
{
	struct local_backend *lb = local(b);
	struct at at;
	bool created = false;
	int fd = -1, ret = -1;

	*file = NULL;
	if (at_open(lb, path, &at) < 0)
		goto out;
	/* O_DIRECT would need aligned buffers from FUSE; the page cache is ours to use. */
	flags = (flags & ~(O_NOCTTY | O_DIRECT)) | O_NOFOLLOW | O_CLOEXEC;
	if ((flags & O_CREAT) && !(flags & O_EXCL)) {
		/* Learn whether we create the file: only a new file is handed over. */
		fd = openat(at.dirfd, at.name, flags | O_EXCL, mode);
		if (fd >= 0)
			created = true;
		else if (errno == EEXIST)
			fd = openat(at.dirfd, at.name, flags & ~O_CREAT, mode);
	} else {
		fd = openat(at.dirfd, at.name, flags, mode);
		created = fd >= 0 && (flags & O_CREAT);
	}
	if (fd < 0)
		goto out;
	if (created && give_away(lb, at.dirfd, at.name, cred) < 0) {
		int saved = errno;

		unlinkat(at.dirfd, at.name, 0);
		close(fd);
		errno = saved;
		goto out;
	}
	*file = xcalloc(1, sizeof **file);
	(*file)->fd = fd;
	ret = 0;
out:
	at_close(&at);
	return ret;
}

static ssize_t local_pread(struct backend_file *f, void *buf, size_t size, off_t off)
{
	size_t done = 0;

	/* FUSE treats a short read as end of file: fill the buffer unless at EOF. */
	while (done < size) {
		ssize_t n = pread(f->fd, (char *)buf + done, size - done, off + (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return done ? (ssize_t)done : -1;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static ssize_t local_pwrite(struct backend_file *f, const void *buf, size_t size, off_t off)
{
	size_t done = 0;

	while (done < size) {
		ssize_t n = pwrite(f->fd, (const char *)buf + done, size - done, off + (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return done ? (ssize_t)done : -1;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static int local_ftruncate(struct backend_file *f, off_t size)
{
	return ftruncate(f->fd, size);
}

static int local_fstat(struct backend_file *f, struct stat *st)
{
	return fstat(f->fd, st);
}

static int local_fsync(struct backend_file *f, int datasync)
{
	return datasync ? fdatasync(f->fd) : fsync(f->fd);
}

static int local_flush(struct backend_file *f)
{
	/* pwrite went straight to the kernel: nothing is held back here. */
	(void)f;
	return 0;
}

static int local_fd(struct backend_file *f)
{
	return f->fd;
}

static int local_close(struct backend_file *f)
{
	int ret = close(f->fd);
	int saved = errno;

	free(f);
	errno = saved;
	return ret;
}

static const struct backend_ops local_ops = {
	.name = "local",
	.destroy = local_destroy,
	.getattr = local_getattr,
	.readdir = local_readdir,
	.mkdir = local_mkdir,
	.unlink = local_unlink,
	.rmdir = local_rmdir,
	.rename = local_rename,
	.symlink = local_symlink,
	.readlink = local_readlink,
	.link = local_link,
	.chmod = local_chmod,
	.chown = local_chown,
	.truncate = local_truncate,
	.utimens = local_utimens,
	.statfs = local_statfs,
	.open = local_open,
	.pread = local_pread,
	.pwrite = local_pwrite,
	.ftruncate = local_ftruncate,
	.fstat = local_fstat,
	.fsync = local_fsync,
	.flush = local_flush,
	.close = local_close,
	.fd = local_fd,
};

struct backend *backend_local_create(const char *root, char **err)
{
	struct local_backend *lb;
	int fd;

	if (!root || root[0] != '/') {
		errno = EINVAL;
		errprintf(err, "storage folder '%s' must be an absolute path", root ? root : "");
		return NULL;
	}
	fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		errprintf(err, "storage folder %s: %s", root, strerror(errno));
		return NULL;
	}
	lb = xcalloc(1, sizeof *lb);
	lb->base.ops = &local_ops;
	lb->root_fd = fd;
	lb->chown_created = geteuid() == 0;
	return &lb->base;
}
