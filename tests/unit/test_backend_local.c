/* The local-folder backend on a temporary folder: every op of the table, the
 * ownership of what it creates, and that no path or symlink leads out of the
 * volume. */
#include "backend.h"
#include "fds.h"
#include "special_ops.h"
#include "tap.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <linux/fs.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

struct names {
	char seen[8][64];
	int n;
};

static int add_name(void *arg, const char *name, const struct stat *st)
{
	struct names *names = arg;

	(void)st;
	if (names->n < 8)
		snprintf(names->seen[names->n++], sizeof names->seen[0], "%s", name);
	return 0;
}

/* Whether the filesystem of path does direct I/O (statx DIOALIGN). */
static bool does_direct(const char *path)
{
	struct statx stx;

	return statx(AT_FDCWD, path, 0, STATX_DIOALIGN, &stx) == 0 &&
	       (stx.stx_mask & STATX_DIOALIGN) && stx.stx_dio_offset_align;
}

static int has_name(const struct names *names, const char *name)
{
	for (int i = 0; i < names->n; i++)
		if (strcmp(names->seen[i], name) == 0)
			return 1;
	return 0;
}

static void test_create_errors(void)
{
	char *err = NULL;
	struct backend *b;

	/* nfs:// goes to the NFS backend (test_backend_nfs.c): a server that
	 * cannot be reached is no error at start, but the volume says so. */
	b = backend_create("nfs://parsa-no-such-server.invalid/export?timeout=2", &err);
	ok(b != NULL && backend_health(b, NULL, NULL) == 0,
	   "an unreachable NFS server: made, and unreachable (%s)", err ? err : "");
	backend_destroy(b);
	b = backend_create("relative/path", &err);
	ok(b == NULL && errno == EINVAL, "a relative path is refused");
	b = backend_create("/nonexistent/parsa-volume", &err);
	ok(b == NULL && errno == ENOENT, "a missing folder is refused");
	free(err);
}

static void test_ops(const char *root)
{
	struct backend_cred me = { getuid(), getgid() };
	struct backend_file *f = NULL;
	struct backend *b;
	struct names names = { 0 };
	struct statvfs vfs;
	struct stat st;
	char *url = xasprintf("file://%s", root), *err = NULL;
	char buf[64];
	ssize_t n;

	b = backend_create(url, &err);
	ok(b != NULL, "file:// volume opens");
	if (!b) {
		diag("%s", err);
		goto out;
	}
	is_str(b->ops->name, "local", "the backend is local");
	/* A local folder has no server: always reachable, nothing to wait for. */
	is_int(backend_set_patience(b, 300000), 0, "a local folder has no patience to set");
	{
		int64_t since = -1;
		char *reason = (char *)"x";

		ok(backend_health(b, &since, &reason) == 1 && since == 0 && reason == NULL,
		   "a local folder is always reachable");
	}
	is_int(backend_probe(b, 1000), 0, "and its probe answers");
	is_int(backend_mkdir_p(b, &me, "jobs/42/out/warm", 0755), 0, "mkdir -p makes every level");
	is_int(backend_mkdir_p(b, &me, "jobs/42/out/warm", 0755), 0, "mkdir -p again is fine");
	ok(backend_getattr(b, "jobs/42/out/warm", &st) == 0 && S_ISDIR(st.st_mode), "the folder exists");
	is_int(backend_mkdir_p(b, &me, "jobs/42/log/warm", 0755), 0, "mkdir -p beside an existing branch");
	ok(backend_getattr(b, "jobs/42/log/warm", &st) == 0 && S_ISDIR(st.st_mode), "that folder exists too");

	is_int(backend_open(b, &me, "jobs/42/out/warm/ckpt", O_CREAT | O_RDWR, 0640, &f), 0, "create a file");
	is_int(backend_pwrite(b, f, "hello world", 11, 0), 11, "pwrite");
	is_int(backend_pwrite(b, f, "HELLO", 5, 0), 5, "pwrite at 0");
	memset(buf, 0, sizeof buf);
	is_int(backend_pread(b, f, buf, sizeof buf, 0), 11, "pread returns everything up to EOF");
	is_str(buf, "HELLO world", "and the bytes written");
	is_int(backend_pread(b, f, buf, sizeof buf, 100), 0, "pread past EOF is 0");
	is_int(backend_ftruncate(b, f, 5), 0, "ftruncate");
	ok(backend_fstat(b, f, &st) == 0 && st.st_size == 5, "fstat sees the new size");
	is_int(backend_fsync(b, f, 1), 0, "fdatasync");
	is_int(backend_flush(b, f), 0, "flush");
	is_int(backend_close(b, f), 0, "close");
	ok(backend_getattr(b, "jobs/42/out/warm/ckpt", &st) == 0 && (st.st_mode & 07777) == 0640,
	   "the mode is as asked");
	is_int(backend_open(b, &me, "jobs/42/out/warm/ckpt", O_CREAT | O_EXCL | O_WRONLY, 0600, &f), -1,
	       "O_EXCL on an existing file fails");
	is_int(errno, EEXIST, "with EEXIST");
	ok(backend_mkdir_p(b, &me, "jobs/42/out/warm/ckpt", 0755) < 0 && errno == ENOTDIR,
	   "mkdir -p where a file is: ENOTDIR");
	ok(backend_mkdir_p(b, &me, "jobs/42/out/warm/ckpt/x/y", 0755) < 0 && errno == ENOTDIR,
	   "mkdir -p below a file: ENOTDIR");

	is_int(backend_truncate(b, "jobs/42/out/warm/ckpt", 100), 0, "truncate by path");
	ok(backend_getattr(b, "jobs/42/out/warm/ckpt", &st) == 0 && st.st_size == 100, "size 100");
	is_int(backend_chmod(b, "jobs/42/out/warm/ckpt", 0600), 0, "chmod");
	ok(backend_getattr(b, "jobs/42/out/warm/ckpt", &st) == 0 && (st.st_mode & 07777) == 0600, "mode 0600");
	{
		struct timespec tv[2] = { { 1000, 0 }, { 2000, 0 } };

		is_int(backend_utimens(b, "jobs/42/out/warm/ckpt", tv), 0, "utimens");
		ok(backend_getattr(b, "jobs/42/out/warm/ckpt", &st) == 0 && st.st_mtime == 2000, "mtime set");
	}
	is_int(backend_rename(b, "jobs/42/out/warm/ckpt", "jobs/42/out/warm/ckpt.1", 0), 0, "rename");
	is_int(backend_link(b, "jobs/42/out/warm/ckpt.1", "jobs/42/out/warm/hard"), 0, "link");
	ok(backend_getattr(b, "jobs/42/out/warm/hard", &st) == 0 && st.st_nlink == 2, "two links");
	is_int(backend_symlink(b, &me, "ckpt.1", "jobs/42/out/warm/soft"), 0, "symlink");
	n = backend_readlink(b, "jobs/42/out/warm/soft", buf, sizeof buf);
	ok(n == 6 && memcmp(buf, "ckpt.1", 6) == 0, "readlink gives the target");
	ok(backend_getattr(b, "jobs/42/out/warm/soft", &st) == 0 && S_ISLNK(st.st_mode),
	   "getattr does not follow a symlink");
	is_int(backend_chmod(b, "jobs/42/out/warm/soft", 0777), -1, "chmod of a symlink is refused");
	is_int(backend_readdir(b, "jobs/42/out/warm", add_name, &names), 0, "readdir");
	ok(names.n == 3 && has_name(&names, "ckpt.1") && has_name(&names, "hard") && has_name(&names, "soft"),
	   "readdir lists the three entries and not . or ..");
	is_int(backend_rename(b, "jobs/42/out/warm/hard", "jobs/42/out/warm/soft", RENAME_NOREPLACE), -1,
	       "RENAME_NOREPLACE over an existing name fails");
	is_int(backend_statfs(b, "", &vfs), 0, "statfs");
	ok(vfs.f_bsize > 0, "with a block size");

	/* Nothing leads out of the volume. */
	is_int(backend_symlink(b, &me, "/", "jobs/42/out/escape"), 0, "a symlink to / can be made");
	is_int(backend_getattr(b, "jobs/42/out/escape/etc", &st), -1, "but is not followed in the middle of a path");
	is_int(backend_open(b, &me, "jobs/42/out/escape", O_RDONLY, 0, &f), -1, "nor at the end of one");
	is_int(backend_getattr(b, "jobs/42/../42", &st), -1, "'..' is refused");
	is_int(errno, EINVAL, "with EINVAL");
	is_int(backend_getattr(b, "/etc", &st), -1, "an absolute path is refused");
	is_int(backend_getattr(b, "jobs//42", &st), -1, "an empty component is refused");

	is_int(backend_unlink(b, "jobs/42/out/warm/hard"), 0, "unlink");
	is_int(backend_rmdir(b, "jobs/42/out/warm"), -1, "rmdir of a non-empty folder fails");
	is_int(backend_remove_tree(b, "jobs/42"), 0, "remove_tree");
	is_int(backend_getattr(b, "jobs/42", &st), -1, "the tree is gone");
	is_int(backend_remove_tree(b, "jobs/42"), 0, "removing a missing tree is not an error");
	is_int(backend_remove_tree(b, ""), -1, "the volume itself cannot be removed");

	if (geteuid() == 0) {
		struct backend_cred alice = { 4242, 4343 };

		is_int(backend_mkdir_p(b, &alice, "jobs/7/out/s", 0755), 0, "mkdir -p as another user");
		ok(backend_getattr(b, "jobs/7/out/s", &st) == 0 && st.st_uid == 4242 && st.st_gid == 4343,
		   "the folders belong to that user");
		is_int(backend_open(b, &alice, "jobs/7/out/s/f", O_CREAT | O_WRONLY, 0644, &f), 0, "create as that user");
		if (f)
			backend_close(b, f);
		ok(backend_getattr(b, "jobs/7/out/s/f", &st) == 0 && st.st_uid == 4242, "the file belongs to that user");
		is_int(backend_open(b, &me, "jobs/7/out/s/f", O_CREAT | O_WRONLY, 0644, &f), 0,
		       "opening it again with O_CREAT");
		if (f)
			backend_close(b, f);
		ok(backend_getattr(b, "jobs/7/out/s/f", &st) == 0 && st.st_uid == 4242,
		   "does not change its owner");
		is_int(backend_symlink(b, &alice, "f", "jobs/7/out/s/l"), 0, "symlink as that user");
		ok(backend_getattr(b, "jobs/7/out/s/l", &st) == 0 && st.st_uid == 4242, "the link belongs to that user");
		is_int(backend_chown(b, "jobs/7/out/s/f", 1, 1), 0, "chown");
		ok(backend_getattr(b, "jobs/7/out/s/f", &st) == 0 && st.st_uid == 1, "new owner");
		is_int(backend_remove_tree(b, "jobs"), 0, "clean up");
	} else {
		diag("not root: ownership checks skipped");
	}
	backend_destroy(b);
out:
	free(url);
	free(err);
}

/* Large aligned writes are written behind with O_DIRECT (where the folder's
 * filesystem has it): what they wrote is there at once for the same and other
 * descriptors and by name, and smaller writes over them land after them. */
static void test_write_behind(const char *root)
{
	struct backend_cred me = { getuid(), getgid() };
	struct backend_file *f = NULL, *g = NULL;
	const size_t mib = 1u << 20, big = 3 * mib;
	char *url = xasprintf("file://%s", root), *err = NULL;
	char *data = xmalloc(big + mib), *back = xmalloc(big + mib);
	struct timespec tv[2] = { { 1000, 0 }, { 2000, 0 } };
	struct backend *b;
	struct stat st;
	int fds;

	for (size_t i = 0; i < big + mib; i++)
		data[i] = (char)(i * 7 + i / 4096);
	b = backend_create(url, &err);
	ok(b != NULL, "file:// volume opens");
	if (!b)
		goto out;
	is_int(backend_open(b, &me, "big", O_CREAT | O_WRONLY | O_TRUNC, 0644, &f), 0, "create for writing");
	is_int(backend_open(b, &me, "big", O_RDONLY, 0, &g), 0, "open it again for reading");
	fds = count_fds();
	for (size_t i = 0; i < 4; i++)
		backend_pwrite(b, f, data + i * mib, mib, (off_t)(i * mib));
	is_int(count_fds(), fds, "the first 4 MiB go through the page cache");
	is_int(backend_pwrite(b, f, data, 2 * mib, 0), (int)(2 * mib), "a 2 MiB write (two buffers)");
	if (does_direct(root))
		is_int(count_fds(), fds + 1, "then the write-behind starts, with a descriptor of its own");
	is_int(backend_pwrite(b, f, data + 2 * mib, mib, (off_t)(2 * mib)), (int)mib, "a 1 MiB write after it");
	ok(backend_getattr(b, "big", &st) == 0 && st.st_size == (off_t)(4 * mib), "getattr by name sees the whole size");
	ok(backend_fstat(b, g, &st) == 0 && st.st_size == (off_t)(4 * mib), "so does fstat of another descriptor");
	memset(back, 0, big);
	is_int(backend_pread(b, g, back, big, 0), (int)big, "another descriptor reads everything");
	ok(memcmp(back, data, big) == 0, "the bytes written");

	/* More than the queue holds, then a small write over the middle of it. */
	for (int i = 0; i < 6; i++)
		backend_pwrite(b, f, data + (size_t)i % 4 * mib, mib, (off_t)((size_t)i * mib));
	is_int(backend_pwrite(b, f, "overwritten", 11, (off_t)(5 * mib + 100)), 11, "a small write over a queued one");
	is_int(backend_pwrite(b, f, data, mib + 1, (off_t)(6 * mib)), (int)(mib + 1), "an unaligned large write");
	is_int(backend_utimens(b, "big", tv), 0, "utimens by name");
	is_int(backend_flush(b, f), 0, "flush reports no error");
	ok(backend_getattr(b, "big", &st) == 0 && st.st_mtime == 2000 && st.st_size == (off_t)(7 * mib + 1),
	   "no write landed after utimens, the size is right");
	memset(back, 0, big);
	is_int(backend_pread(b, g, back, 11, (off_t)(5 * mib + 100)), 11, "read the small write back");
	ok(memcmp(back, "overwritten", 11) == 0, "it is there, not the 1 MiB under it");
	is_int(backend_pread(b, g, back, mib, (off_t)(4 * mib)), (int)mib, "read the fifth MiB");
	ok(memcmp(back, data, mib) == 0, "it is right");
	is_int(backend_pread(b, g, back, mib + 1, (off_t)(6 * mib)), (int)(mib + 1), "read the unaligned write");
	ok(memcmp(back, data, mib + 1) == 0, "it is right");
	is_int(backend_ftruncate(b, f, (off_t)mib), 0, "ftruncate");
	ok(backend_fstat(b, f, &st) == 0 && st.st_size == (off_t)mib, "the size is what ftruncate gave");
	is_int(backend_fsync(b, f, 0), 0, "fsync");
	is_int(backend_close(b, f), 0, "close");
	is_int(backend_close(b, g), 0, "close the reader");

	/* Appending keeps to O_APPEND: every write at the end. */
	is_int(backend_open(b, &me, "big", O_WRONLY | O_APPEND, 0, &f), 0, "open for appending");
	is_int(backend_pwrite(b, f, data, mib, 0), (int)mib, "a 1 MiB append");
	is_int(backend_close(b, f), 0, "close");
	ok(backend_getattr(b, "big", &st) == 0 && st.st_size == (off_t)(2 * mib), "it went to the end");
	is_int(backend_unlink(b, "big"), 0, "unlink");
	backend_destroy(b);
out:
	free(err);
	free(url);
	free(data);
	free(back);
}

/* A read as the mount does it: spliced from the descriptor the backend gives
 * for (size, off), which also asks the disk ahead of a sequential reader. */
static ssize_t read_like_mount(struct backend *b, struct backend_file *f, size_t size, off_t off,
			       char **buf)
{
	int fd = b->ops->fd ? b->ops->fd(f, size, off) : -1;

	*buf = xmalloc(size);
	return fd < 0 ? backend_pread(b, f, *buf, size, off) : pread(fd, *buf, size, off);
}

/* Sequential large reads (the disk asked ahead of them) see every change
 * made through the mount, by other descriptors too. */
static void test_read_sequential(const char *root)
{
	struct backend_cred me = { getuid(), getgid() };
	struct backend_file *f = NULL, *g = NULL;
	const size_t mib = 1u << 20;
	char *url = xasprintf("file://%s", root), *err = NULL;
	char *data = xmalloc(8 * mib), *other = xmalloc(mib), *got = NULL;
	struct backend *b;
	ssize_t n;

	for (size_t i = 0; i < 8 * mib; i++)
		data[i] = (char)(i * 13 + i / 4096);
	memset(other, 'x', mib);
	b = backend_create(url, &err);
	ok(b != NULL && b->ops->fd, "file:// volume opens, with a descriptor to splice from");
	if (!b)
		goto out;
	is_int(backend_open(b, &me, "ra", O_CREAT | O_RDWR | O_TRUNC, 0644, &f), 0, "create");
	for (size_t i = 0; i < 8; i++)
		backend_pwrite(b, f, data + i * mib, mib, (off_t)(i * mib));
	is_int(backend_open(b, &me, "ra", O_RDONLY, 0, &g), 0, "open it for reading");
	/* The disk is asked ahead from 1 MiB on. */
	for (size_t i = 0; i < 4; i++) {
		n = read_like_mount(b, g, mib, (off_t)(i * mib), &got);
		ok(n == (ssize_t)mib && memcmp(got, data + i * mib, mib) == 0, "sequential read %zu", i);
		free(got);
	}
	/* The next MiBs are being read from the disk: change one through another descriptor. */
	is_int(backend_pwrite(b, f, "changed", 7, (off_t)(4 * mib + 10)), 7, "a small write ahead of the reader");
	n = read_like_mount(b, g, mib, (off_t)(4 * mib), &got);
	ok(n == (ssize_t)mib && memcmp(got + 10, "changed", 7) == 0 && memcmp(got, data + 4 * mib, 10) == 0,
	   "the read sees the write");
	free(got);
	/* Replace the next with a large (written behind) write. */
	is_int(backend_pwrite(b, f, other, mib, (off_t)(5 * mib)), (int)mib, "a large (written behind) write ahead of the reader");
	n = read_like_mount(b, g, mib, (off_t)(5 * mib), &got);
	ok(n == (ssize_t)mib && memcmp(got, other, mib) == 0, "the read sees it");
	free(got);
	for (size_t i = 6; i < 8; i++) {
		n = read_like_mount(b, g, mib, (off_t)(i * mib), &got);
		ok(n == (ssize_t)mib && memcmp(got, data + i * mib, mib) == 0, "sequential read %zu", i);
		free(got);
	}
	n = read_like_mount(b, g, mib, (off_t)(8 * mib), &got);
	ok(n == 0, "end of file");
	free(got);
	/* Read again from the start, then cut the file ahead of the reader. */
	for (size_t i = 0; i < 4; i++) {
		n = read_like_mount(b, g, mib, (off_t)(i * mib), &got);
		free(got);
	}
	is_int(backend_truncate(b, "ra", (off_t)(4 * mib + 100)), 0, "truncate by name");
	n = read_like_mount(b, g, mib, (off_t)(4 * mib), &got);
	is_int((int)n, 100, "the read sees the new end");
	free(got);
	is_int(backend_close(b, g), 0, "close the reader");
	is_int(backend_close(b, f), 0, "close the writer");
	/* One descriptor reading and writing behind, closed at once. */
	{
		int bad = 0;

		for (int round = 0; round < 20; round++) {
			if (backend_open(b, &me, "ra", O_RDWR, 0, &f) < 0) {
				bad++;
				continue;
			}
			for (size_t i = 0; i < 6; i++) {
				if (read_like_mount(b, f, mib, (off_t)(i * mib), &got) < 0)
					bad++;
				free(got);
				if (backend_pwrite(b, f, data, mib, (off_t)(i * mib)) != (ssize_t)mib)
					bad++;
			}
			if (backend_close(b, f) < 0)
				bad++;
		}
		is_int(bad, 0, "reading and writing behind on one descriptor, then closing");
	}
	is_int(backend_unlink(b, "ra"), 0, "unlink");
	backend_destroy(b);
out:
	free(err);
	free(url);
	free(data);
	free(other);
}

/* jobs/ marked as a top folder, where the filesystem has the flag (ext4). */
static void test_spread(const char *root)
{
	char *err = NULL, *jobs = xasprintf("%s/jobs", root);
	struct backend *b = backend_local_create(root, &err);
	int fd, flags = 0;

	mkdir(jobs, 0755);
	ok(b && b->ops->spread, "the local backend spreads folders");
	if (b && b->ops->spread)
		b->ops->spread(b, "jobs");
	fd = open(jobs, O_RDONLY | O_DIRECTORY);
	if (fd >= 0 && ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0)
		ok(flags & FS_TOPDIR_FL, "jobs/ is a top folder");
	else
		diag("this filesystem has no inode flags: nothing to check");
	if (fd >= 0)
		close(fd);
	if (b)
		b->ops->destroy(b);
	rmdir(jobs);
	free(jobs);
	free(err);
}

/* A hole punched right after large writes that went behind lands after them:
 * the data written behind must not fill it again. */
static void test_punch_behind(struct backend *b)
{
	struct backend_cred me = { getuid(), getgid() };
	struct backend_file *f = NULL;
	size_t chunk = 1 << 20;
	char *buf = xmalloc(chunk), *back = xmalloc(chunk);
	bool zeros = true;

	memset(buf, 'w', chunk);
	if (backend_open(b, &me, "punch", O_CREAT | O_RDWR | O_TRUNC, 0644, &f) < 0) {
		ok(0, "open a file to punch");
		goto out;
	}
	for (int i = 0; i < 12; i++)
		if (backend_pwrite(b, f, buf, chunk, (off_t)i * (off_t)chunk) != (ssize_t)chunk)
			break;
	is_int(backend_fallocate(b, f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 11 * (off_t)chunk,
				 (off_t)chunk), 0, "punch the last MiB just written");
	is_int(backend_pread(b, f, back, chunk, 11 * (off_t)chunk), (long long)chunk, "read it back");
	for (size_t i = 0; i < chunk; i++)
		zeros = zeros && back[i] == 0;
	ok(zeros, "it is a hole, not the data written behind");
	is_int(backend_close(b, f), 0, "close");
	backend_unlink(b, "punch");
out:
	free(buf);
	free(back);
}

/* FIFOs, sockets, fallocate in every mode the folder's filesystem has, long
 * names and targets (special_ops.h): a local folder can do all of it. */
static void test_special(const char *root)
{
	const struct special_caps caps = { .fallocate = true, .long_target = true, .wide_times = true };
	char *err = NULL;
	struct backend *b = backend_local_create(root, &err);

	ok(b != NULL, "the volume opens for the special ops");
	if (b) {
		check_special_ops(b, "special", &caps);
		test_punch_behind(b);
		backend_destroy(b);
	}
	free(err);
}

int main(void)
{
	char root[] = "/tmp/parsa-test-backend.XXXXXX";

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_create_errors();
	test_ops(root);
	test_write_behind(root);
	test_read_sequential(root);
	test_spread(root);
	test_special(root);
	rmdir(root);
	return done_testing();
}
