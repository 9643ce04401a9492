/* The local-folder backend: every op works relative to a directory fd of the
 * volume root. The parent of each path is opened with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS) (or, without openat2, one O_NOFOLLOW component at a time)
 * and the last component is handled with *at() calls that do not follow it, so
 * a symlink planted in a job's output can never lead the daemon, which runs as
 * root, out of the volume. Files: local_at.c (paths), local_track.c (open
 * files written behind, by inode), local_wb.c (the write-behind),
 * prefetch.c (read-ahead); here, the ops, create and destroy. */
#include "local_internal.h"
#include "log.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* A sequential reader of requests this large, past the first MiB, has the
 * file read HINT_AHEAD bytes ahead of it, HINT bytes at a time, by the
 * threads of prefetch.h. The kernel's own read-ahead starts its next window
 * only when the reader reaches it, and the daemon, slower than a plain
 * reader, left the disk idle a third of the time. */
#define HINT_MIN (128u << 10)
#define HINT_AFTER (1u << 20)
#define HINT_AHEAD (16 << 20)
#define HINT (4 << 20)

static void local_destroy(struct backend *b)
{
	struct local_backend *lb = local(b);

	prefetch_destroy(lb->prefetch);
	if (lb->root_fd >= 0)
		close(lb->root_fd);
	pthread_mutex_destroy(&lb->track_lock);
	free(lb);
}

static int local_getattr(struct backend *b, const char *path, struct stat *st)
{
	struct at at;
	int ret = -1;

	if (at_open(local(b), path, &at) < 0)
		goto out;
	settle_at(local(b), &at);
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
	if (give_away_or_undo(lb, &at, cred, AT_REMOVEDIR) < 0)
		goto out;
	ret = 0;
out:
	at_close(&at);
	return ret;
}

/* unlink and rmdir: unlinkat flags 0 or AT_REMOVEDIR. */
static int remove_entry(struct backend *b, const char *path, int unlink_flags)
{
	struct at at;
	int ret = -1;

	if (at_open(local(b), path, &at) < 0)
		goto out;
	ret = unlinkat(at.dirfd, at.name, unlink_flags);
out:
	at_close(&at);
	return ret;
}

static int local_unlink(struct backend *b, const char *path)
{
	return remove_entry(b, path, 0);
}

static int local_rmdir(struct backend *b, const char *path)
{
	return remove_entry(b, path, AT_REMOVEDIR);
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
	if (give_away_or_undo(lb, &at, cred, 0) < 0)
		goto out;
	ret = 0;
out:
	at_close(&at);
	return ret;
}

/* FIFOs, sockets and regular files only (backend.h): as root, mknodat would
 * make any device the caller names. */
static int local_mknod(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode)
{
	struct local_backend *lb = local(b);
	struct at at;
	int ret = -1;

	memset(&at, 0, sizeof at);
	switch (mode & S_IFMT) {
	case S_IFIFO:
	case S_IFSOCK:
	case S_IFREG:
		break;
	case S_IFCHR:
	case S_IFBLK:
		errno = EPERM;
		goto out;
	default:
		errno = EINVAL;
		goto out;
	}
	if (at_open(lb, path, &at) < 0)
		goto out;
	if (mknodat(at.dirfd, at.name, mode & (S_IFMT | 07777), 0) < 0)
		goto out;
	if (give_away_or_undo(lb, &at, cred, 0) < 0)
		goto out;
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
	/* A write landing later would clear the set-id bits chmod gives. */
	settle_at(local(b), &at);
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
	settle_at(local(b), &at);
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
	settle_at(local(b), &at);
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
	/* A write landing later would set the mtime cp -p and rsync just gave. */
	settle_at(local(b), &at);
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
	(*file)->lb = lb;
	(*file)->fd = fd;
	(*file)->flags = flags;
	pthread_mutex_init(&(*file)->lock, NULL);
	ret = 0;
out:
	at_close(&at);
	return ret;
}

/* FUSE treats a short read as end of file: fill the buffer unless at EOF. */
static ssize_t read_full(int fd, char *buf, size_t size, off_t off)
{
	size_t done = 0;

	while (done < size) {
		ssize_t n = pread(fd, buf + done, size - done, off + (off_t)done);

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

static ssize_t local_pread(struct backend_file *f, void *buf, size_t size, off_t off)
{
	/* What was written behind is read back from the file; its error, if
	 * any, is for the writer's next write, flush and fsync. */
	settle(f);
	return read_full(f->fd, buf, size, off);
}

/* Data is spliced to and from the file's page cache; a sequential reader
 * has the file read ahead of it (HINT_AHEAD) on the way. */
static int local_fd(struct backend_file *f, size_t size, off_t off)
{
	off_t end = off + (off_t)size, from = -1;

	pthread_mutex_lock(&f->lock);
	if (size >= HINT_MIN && off == f->next_off && off >= (off_t)HINT_AFTER) {
		if (f->hinted < end)
			f->hinted = end;
		if (f->hinted < end + HINT_AHEAD) {
			from = f->hinted;
			f->hinted += HINT;
		}
	}
	f->next_off = end;
	pthread_mutex_unlock(&f->lock);
	if (from >= 0)
		prefetch_ask(f->lb->prefetch, f->fd, from, HINT);
	/* The caller splices at once: what is written behind must be there. */
	settle(f);
	return f->fd;
}

static ssize_t local_pwrite(struct backend_file *f, const void *buf, size_t size, off_t off)
{
	struct local_wb *wb = size >= DIRECT_MIN ? wb_start(f, size) : wb_of(f);
	size_t done = 0;

	if (wb && size >= DIRECT_MIN && local_wb_fits(wb, size, off)) {
		if (tracked_any(f->lb))
			drain_others(f->lb, f, f->dev, f->ino);
		return local_wb_write(wb, buf, size, off);
	}
	/* A write through the page cache goes after those written behind: the
	 * two may overlap. */
	if (settle(f) < 0)
		return -1;
	while (done < size) {
		ssize_t n = pwrite(f->fd, (const char *)buf + done, size - done, off + (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (!done)
				return -1;
			break;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static int local_ftruncate(struct backend_file *f, off_t size)
{
	if (settle(f) < 0)
		return -1;
	return ftruncate(f->fd, size);
}

static int local_fallocate(struct backend_file *f, int mode, off_t off, off_t len)
{
	/* A hole punched under data still written behind would be filled again. */
	if (settle(f) < 0)
		return -1;
	return fallocate(f->fd, mode, off, len);
}

static int local_fstat(struct backend_file *f, struct stat *st)
{
	/* The size counts what is written behind; its error waits for flush. */
	settle(f);
	return fstat(f->fd, st);
}

/* The daemon acts for everyone here; the kernel checked who may change what. */
static int local_fchmod(struct backend_file *f, const struct backend_cred *cred, mode_t mode)
{
	(void)cred;
	return fchmod(f->fd, mode & 07777);
}

static int local_fchown(struct backend_file *f, uid_t uid, gid_t gid)
{
	return fchown(f->fd, uid, gid);
}

static int local_futimens(struct backend_file *f, const struct timespec tv[2])
{
	/* Data written behind would move mtime after the change. */
	if (settle(f) < 0)
		return -1;
	return futimens(f->fd, tv);
}

static int local_fsync(struct backend_file *f, int datasync)
{
	/* Direct writes passed the page cache, but the disk's cache and the
	 * file's size are still fsync's to flush. */
	if (settle(f) < 0)
		return -1;
	return datasync ? fdatasync(f->fd) : fsync(f->fd);
}

static int local_flush(struct backend_file *f)
{
	/* Small writes went straight to the kernel; large ones may still be on
	 * their way: close(2) learns how they ended. */
	struct local_wb *wb = wb_of(f);

	return wb ? local_wb_drain(wb) : 0;
}

static int local_close(struct backend_file *f)
{
	int ret = 0, saved = 0;

	/* Out of the list only once nothing of f is on its way, so that others
	 * waiting for the file wait for this too. */
	if (f->wb && local_wb_drain(f->wb) < 0) {
		ret = -1;
		saved = errno;
	}
	if (f->tracked)
		untrack(f);
	local_wb_destroy(f->wb);
	if (close(f->fd) < 0 && ret == 0) {
		ret = -1;
		saved = errno;
	}
	pthread_mutex_destroy(&f->lock);
	free(f);
	errno = saved;
	return ret;
}

/* ext4 puts a new folder in its parent's block group, so every job's folders
 * would share jobs/'s group; there, on a filesystem without a journal, each
 * new inode is found by scanning past the inodes freed in the last minutes
 * (deleted jobs), which grows with the deletions. Marked as a top folder,
 * jobs/ has each job's folder placed like a home directory, in a group of its
 * own choosing. Other filesystems ignore or refuse the flag: nothing to do. */
static void local_spread(struct backend *b, const char *path)
{
	struct at at;
	int fd = -1, flags;

	if (at_open(local(b), path, &at) < 0)
		return;
	fd = openat(at.dirfd, at.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && !(flags & FS_TOPDIR_FL)) {
		flags |= FS_TOPDIR_FL;
		if (ioctl(fd, FS_IOC_SETFLAGS, &flags) < 0)
			log_debug("%s: cannot mark it a top folder: %s", path, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	at_close(&at);
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
	.mknod = local_mknod,
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
	.fallocate = local_fallocate,
	.fstat = local_fstat,
	.fsync = local_fsync,
	.fchmod = local_fchmod,
	.fchown = local_fchown,
	.futimens = local_futimens,
	.flush = local_flush,
	.close = local_close,
	.fd = local_fd,
	.spread = local_spread,
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
	pthread_mutex_init(&lb->track_lock, NULL);
	lb->root_fd = fd;
	lb->prefetch = prefetch_create();
	lb->chown_created = geteuid() == 0;
	return &lb->base;
}
