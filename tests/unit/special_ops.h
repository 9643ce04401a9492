/* The same checks of mknod, fallocate, long names, long symlink targets and
 * times for every backend (test_backend_local.c, test_backend_nfs.c): what
 * each backend cannot do must fail with the errno docs/filesystem.md names,
 * and change nothing. Include after tap.h and backend.h. */
#ifndef PARSA_TEST_SPECIAL_OPS_H
#define PARSA_TEST_SPECIAL_OPS_H

#include "backend.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a backend can do, where they differ. */
struct special_caps {
	bool fallocate;         /* else EOPNOTSUPP */
	bool long_target;       /* a 4,095-byte symlink target; else ENAMETOOLONG */
	bool wide_times;        /* times outside 0..2^32-1; else EOVERFLOW */
};

static bool special_missing(struct backend *b, const char *path)
{
	struct stat st;

	return b->ops->getattr(b, path, &st) < 0 && errno == ENOENT;
}

/* mknod in dir (an existing, empty folder of the volume), as me and, when
 * root, as another user. */
static void special_mknod(struct backend *b, const char *dir)
{
	struct backend_cred me = { geteuid(), getegid() };
	char *fifo = xasprintf("%s/fifo", dir), *sock = xasprintf("%s/sock", dir);
	char *reg = xasprintf("%s/reg", dir), *dev = xasprintf("%s/dev", dir);
	char *theirs = xasprintf("%s/theirs", dir);
	struct stat st;

	is_int(b->ops->mknod(b, &me, fifo, S_IFIFO | 0640), 0, "%s: mknod a FIFO", b->ops->name);
	ok(b->ops->getattr(b, fifo, &st) == 0 && S_ISFIFO(st.st_mode) && (st.st_mode & 07777) == 0640,
	   "%s: it is a FIFO of mode 0640", b->ops->name);
	is_int(b->ops->mknod(b, &me, sock, S_IFSOCK | 0755), 0, "%s: mknod a socket", b->ops->name);
	ok(b->ops->getattr(b, sock, &st) == 0 && S_ISSOCK(st.st_mode), "%s: it is a socket", b->ops->name);
	is_int(b->ops->mknod(b, &me, reg, S_IFREG | 0600), 0, "%s: mknod a regular file", b->ops->name);
	ok(b->ops->getattr(b, reg, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0 &&
	   (st.st_mode & 07777) == 0600, "%s: an empty file of mode 0600", b->ops->name);
	ok(b->ops->mknod(b, &me, fifo, S_IFIFO | 0640) < 0 && errno == EEXIST,
	   "%s: mknod over an existing name: EEXIST", b->ops->name);
	ok(b->ops->mknod(b, &me, reg, S_IFREG | 0600) < 0 && errno == EEXIST,
	   "%s: a regular file over an existing name: EEXIST", b->ops->name);
	ok(b->ops->mknod(b, &me, dev, S_IFCHR | 0666) < 0 && errno == EPERM && special_missing(b, dev),
	   "%s: a character device is refused (EPERM), nothing made", b->ops->name);
	ok(b->ops->mknod(b, &me, dev, S_IFBLK | 0666) < 0 && errno == EPERM && special_missing(b, dev),
	   "%s: a block device is refused (EPERM), nothing made", b->ops->name);
	ok(b->ops->mknod(b, &me, dev, S_IFDIR | 0755) < 0 && errno == EINVAL && special_missing(b, dev),
	   "%s: mknod of a folder: EINVAL", b->ops->name);
	if (geteuid() == 0) {
		struct backend_cred alice = { 4242, 4343 };

		is_int(b->ops->mknod(b, &alice, theirs, S_IFIFO | 0600), 0, "%s: mknod as another user",
		       b->ops->name);
		ok(b->ops->getattr(b, theirs, &st) == 0 && st.st_uid == 4242 && st.st_gid == 4343,
		   "%s: the FIFO belongs to them", b->ops->name);
	}
	free(fifo);
	free(sock);
	free(reg);
	free(dev);
	free(theirs);
}

/* Every path op on a name of 256 bytes: ENAMETOOLONG, nothing made. */
static void special_long_names(struct backend *b, const char *dir)
{
	struct backend_cred me = { geteuid(), getegid() };
	char name[257], *p, *file = xasprintf("%s/file", dir);
	struct backend_file *f = NULL;
	struct stat st;

	memset(name, 'n', 256);
	name[256] = '\0';
	p = xasprintf("%s/%s", dir, name);
	if (b->ops->open(b, &me, file, O_CREAT | O_WRONLY, 0644, &f) == 0)
		b->ops->close(f);
	f = NULL;
	ok(b->ops->open(b, &me, p, O_CREAT | O_WRONLY, 0644, &f) < 0 && errno == ENAMETOOLONG,
	   "%s: create of a 256-byte name: ENAMETOOLONG", b->ops->name);
	ok(b->ops->mkdir(b, &me, p, 0755) < 0 && errno == ENAMETOOLONG, "%s: mkdir: ENAMETOOLONG",
	   b->ops->name);
	ok(b->ops->symlink(b, &me, "file", p) < 0 && errno == ENAMETOOLONG, "%s: symlink: ENAMETOOLONG",
	   b->ops->name);
	ok(b->ops->link(b, file, p) < 0 && errno == ENAMETOOLONG, "%s: link: ENAMETOOLONG", b->ops->name);
	ok(b->ops->rename(b, file, p, 0) < 0 && errno == ENAMETOOLONG, "%s: rename to it: ENAMETOOLONG",
	   b->ops->name);
	ok(b->ops->rename(b, p, file, 0) < 0 && errno == ENAMETOOLONG, "%s: rename from it: ENAMETOOLONG",
	   b->ops->name);
	ok(b->ops->mknod(b, &me, p, S_IFIFO | 0644) < 0 && errno == ENAMETOOLONG,
	   "%s: mknod: ENAMETOOLONG", b->ops->name);
	ok(b->ops->getattr(b, p, &st) < 0 && errno == ENAMETOOLONG, "%s: lookup: ENAMETOOLONG",
	   b->ops->name);
	ok(b->ops->getattr(b, file, &st) == 0 && S_ISREG(st.st_mode), "%s: the file stayed", b->ops->name);
	name[255] = '\0';
	free(p);
	p = xasprintf("%s/%s", dir, name);
	is_int(b->ops->mknod(b, &me, p, S_IFREG | 0644), 0, "%s: a 255-byte name is fine", b->ops->name);
	free(p);
	free(file);
}

/* fallocate on an open file: allocate, keep size, punch a hole. */
static void special_fallocate(struct backend *b, const char *dir, const struct special_caps *caps)
{
	struct backend_cred me = { geteuid(), getegid() };
	char *path = xasprintf("%s/alloc", dir), buf[4096], zero[4096];
	struct backend_file *f = NULL;
	struct stat st;

	memset(buf, 'x', sizeof buf);
	memset(zero, 0, sizeof zero);
	if (b->ops->open(b, &me, path, O_CREAT | O_RDWR, 0644, &f) < 0) {
		ok(0, "%s: open a file for fallocate", b->ops->name);
		goto out;
	}
	is_int(b->ops->pwrite(f, buf, sizeof buf, 0), (long long)sizeof buf, "%s: 4 KiB written", b->ops->name);
	if (!caps->fallocate) {
		ok(b->ops->fallocate(f, 0, 0, 1 << 20) < 0 && errno == EOPNOTSUPP,
		   "%s: fallocate: EOPNOTSUPP", b->ops->name);
		ok(b->ops->fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096) < 0 &&
		   errno == EOPNOTSUPP, "%s: punch hole: EOPNOTSUPP", b->ops->name);
		ok(b->ops->fstat(f, &st) == 0 && st.st_size == 4096, "%s: the size stayed", b->ops->name);
		ok(b->ops->pread(f, zero, sizeof zero, 0) == (ssize_t)sizeof zero && memcmp(zero, buf, sizeof buf) == 0,
		   "%s: and the data", b->ops->name);
		goto out;
	}
	is_int(b->ops->fallocate(f, 0, 0, 1 << 20), 0, "%s: fallocate 1 MiB", b->ops->name);
	ok(b->ops->fstat(f, &st) == 0 && st.st_size == 1 << 20, "%s: the file is 1 MiB", b->ops->name);
	is_int(b->ops->fallocate(f, FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20), 0, "%s: keep size", b->ops->name);
	ok(b->ops->fstat(f, &st) == 0 && st.st_size == 1 << 20 && st.st_blocks >= 2 * (1 << 20) / 512,
	   "%s: the size stayed and the blocks are there", b->ops->name);
	is_int(b->ops->fallocate(f, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096), 0,
	       "%s: punch a hole", b->ops->name);
	ok(b->ops->pread(f, buf, sizeof buf, 0) == (ssize_t)sizeof buf && memcmp(buf, zero, sizeof buf) == 0,
	   "%s: the hole reads as zeros", b->ops->name);
	ok(b->ops->fallocate(f, FALLOC_FL_PUNCH_HOLE, 0, 4096) < 0 && errno == EOPNOTSUPP,
	   "%s: a hole without keep size: EOPNOTSUPP, as fallocate(2)", b->ops->name);
out:
	if (f)
		is_int(b->ops->close(f), 0, "%s: close", b->ops->name);
	free(path);
}

/* Symlink targets up to what Linux allows (4,095 bytes), and the times of a
 * symlink itself and of times NFSv3 cannot hold. */
static void special_links_times(struct backend *b, const char *dir, const struct special_caps *caps)
{
	struct backend_cred me = { geteuid(), getegid() };
	char *l1 = xasprintf("%s/l1", dir), *l2 = xasprintf("%s/l2", dir), *file = xasprintf("%s/file", dir);
	char *target = xmalloc(4096), *back = xmalloc(4097);
	struct timespec tv[2] = { { 1577934245, 0 }, { 1577934245, 500 } };
	struct stat st, before;
	ssize_t n;
	int rc;

	memset(target, 't', 4095);
	target[4095] = '\0';
	rc = b->ops->symlink(b, &me, target, l1);
	if (caps->long_target) {
		is_int(rc, 0, "%s: a 4,095-byte symlink target", b->ops->name);
		n = b->ops->readlink(b, l1, back, 4096);
		ok(n == 4095 && memcmp(back, target, 4095) == 0, "%s: reads back whole", b->ops->name);
	} else {
		ok(rc < 0 && errno == ENAMETOOLONG && special_missing(b, l1),
		   "%s: a 4,095-byte target: ENAMETOOLONG, nothing made", b->ops->name);
	}
	target[3800] = '\0';
	is_int(b->ops->symlink(b, &me, target, l2), 0, "%s: a 3,800-byte target", b->ops->name);
	n = b->ops->readlink(b, l2, back, 4096);
	ok(n == 3800 && memcmp(back, target, 3800) == 0, "%s: reads back whole", b->ops->name);

	/* touch -h: the link's own times are set; nfs-ganesha's VFS backend
	 * keeps them and says it did it, which the NFS backend reports as
	 * Linux's client does (success). The target is never touched. */
	if (b->ops->getattr(b, l2, &before) < 0)
		memset(&before, 0, sizeof before);
	rc = b->ops->utimens(b, l2, tv);
	is_int(rc, 0, "%s: utimens of a symlink succeeds", b->ops->name);
	ok(b->ops->getattr(b, l2, &st) == 0 && S_ISLNK(st.st_mode) &&
	   (st.st_mtim.tv_sec == tv[1].tv_sec ||
	    (strcmp(b->ops->name, "nfs") == 0 && st.st_mtim.tv_sec == before.st_mtim.tv_sec &&
	     st.st_mtim.tv_nsec == before.st_mtim.tv_nsec)),
	   "%s: a symlink's own times are set (NFS: or kept by the server)", b->ops->name);

	is_int(b->ops->mknod(b, &me, file, S_IFREG | 0644), 0, "%s: a file for times", b->ops->name);
	is_int(b->ops->utimens(b, file, tv), 0, "%s: times within 32 bits", b->ops->name);
	tv[1].tv_sec = (time_t)UINT32_MAX;
	is_int(b->ops->utimens(b, file, tv), 0, "%s: an mtime of 2^32-1", b->ops->name);
	ok(b->ops->getattr(b, file, &before) == 0 && before.st_mtime == (time_t)UINT32_MAX,
	   "%s: is kept", b->ops->name);
	if (!caps->wide_times) {
		struct timespec big[2] = { { 1000, 0 }, { (time_t)1 << 32, 0 } };
		struct timespec neg[2] = { { -1, 0 }, { 1000, 0 } };

		ok(b->ops->utimens(b, file, big) < 0 && errno == EOVERFLOW, "%s: an mtime of 2^32: EOVERFLOW",
		   b->ops->name);
		ok(b->ops->utimens(b, file, neg) < 0 && errno == EOVERFLOW, "%s: an atime of -1: EOVERFLOW",
		   b->ops->name);
		ok(b->ops->getattr(b, file, &st) == 0 && st.st_mtime == before.st_mtime &&
		   st.st_atime == before.st_atime, "%s: and nothing changed", b->ops->name);
	}
	free(l1);
	free(l2);
	free(file);
	free(target);
	free(back);
}

static void check_special_ops(struct backend *b, const char *dir, const struct special_caps *caps)
{
	struct backend_cred me = { geteuid(), getegid() };
	char *d;

	backend_remove_tree(b, dir);
	d = xasprintf("%s/mknod", dir);
	is_int(backend_mkdir_p(b, &me, d, 0755), 0, "%s: a folder for the special ops", b->ops->name);
	special_mknod(b, d);
	free(d);
	d = xasprintf("%s/names", dir);
	is_int(backend_mkdir_p(b, &me, d, 0755), 0, "%s: a folder for long names", b->ops->name);
	special_long_names(b, d);
	free(d);
	d = xasprintf("%s/alloc", dir);
	is_int(backend_mkdir_p(b, &me, d, 0755), 0, "%s: a folder for fallocate", b->ops->name);
	special_fallocate(b, d, caps);
	free(d);
	d = xasprintf("%s/links", dir);
	is_int(backend_mkdir_p(b, &me, d, 0755), 0, "%s: a folder for links and times", b->ops->name);
	special_links_times(b, d, caps);
	free(d);
	is_int(backend_remove_tree(b, dir), 0, "%s: all of it removed", b->ops->name);
}

#endif
