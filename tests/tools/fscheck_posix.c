/* fscheck's small POSIX cases on the mount: the overwrite regression, a file
 * unlinked while open, a unix socket, and set-uid/set-gid cleared by a write
 * or a truncation. */
#include "fscheck.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static bool all_are(const unsigned char *p, size_t n, unsigned char b)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != b)
			return false;
	return true;
}

/* The regression of writes reordered on their way: region i written with As
 * then at once with Bs must read Bs, right away and after a reopen. */
int cmd_overwrite(int argc, char **argv)
{
	struct tap t = { 0 };
	unsigned char *a = NULL, *b = NULL, *got = NULL;
	long long size, n, i, bad_now = 0, bad_after = 0, first_now = -1, first_after = -1;
	const char *path;
	int fd = -1, rc;
	ssize_t r;

	if (argc != 4 || (size = parse_size(argv[1])) < 1 || (n = parse_size(argv[2])) < 1)
		return fscheck_usage();
	path = argv[3];
	a = malloc((size_t)size);
	b = malloc((size_t)size);
	got = malloc((size_t)size);
	if (!a || !b || !got) {
		tap_ok(&t, false, "memory for %lld-byte writes", size);
		goto out;
	}
	memset(a, 'A', (size_t)size);
	memset(b, 'B', (size_t)size);
	printf("# fscheck overwrite %lld %lld %s\n", size, n, path);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (!tap_ok(&t, fd >= 0, "open %s%s%s", path, fd < 0 ? ": " : "", fd < 0 ? strerror(errno) : ""))
		goto out;
	for (i = 0; i < n; i++) {
		off_t off = (off_t)(i * size);

		if (pwrite(fd, a, (size_t)size, off) != size || pwrite(fd, b, (size_t)size, off) != size) {
			tap_ok(&t, false, "pwrite of region %lld: %s", i, strerror(errno));
			goto out;
		}
		r = pread(fd, got, (size_t)size, off);
		if (r != size || !all_are(got, (size_t)size, 'B')) {
			if (first_now < 0)
				first_now = i;
			bad_now++;
		}
	}
	tap_ok(&t, bad_now == 0, "each of %lld regions of %lld bytes reads B right after A then B were written (%lld not, the first %lld)",
		n, size, bad_now, first_now);
	rc = fsync(fd);
	tap_ok(&t, rc == 0, "fsync%s%s", rc ? ": " : "", rc ? strerror(errno) : "");
	rc = close(fd);
	tap_ok(&t, rc == 0, "close%s%s", rc ? ": " : "", rc ? strerror(errno) : "");
	fd = open(path, O_RDONLY);
	if (!tap_ok(&t, fd >= 0, "reopen%s%s", fd < 0 ? ": " : "", fd < 0 ? strerror(errno) : ""))
		goto out;
	for (i = 0; i < n; i++) {
		r = pread(fd, got, (size_t)size, (off_t)(i * size));
		if (r != size || !all_are(got, (size_t)size, 'B')) {
			if (first_after < 0)
				first_after = i;
			bad_after++;
		}
	}
	tap_ok(&t, bad_after == 0, "after fsync, close and reopen, %lld of %lld regions are not all B (the first %lld)",
		bad_after, n, first_after);
out:
	if (fd >= 0)
		close(fd);
	free(a);
	free(b);
	free(got);
	return tap_done(&t);
}

/* ---- unlinked ---- */

/* An open file whose name is gone keeps working through its descriptor:
 * fstat, fchmod, pwrite, pread, ftruncate; with --rmdir its folder, empty
 * now, can be removed meanwhile (nothing like .fuse_hidden is left in it). */
int cmd_unlinked(int argc, char **argv)
{
	struct tap t = { 0 };
	/* 64 KiB written first, a 4000-byte hole, then 1000 bytes written after the unlink */
	unsigned char want[65536 + 5000], tail[1000], got[sizeof(want) + 100];
	const char *path;
	char *dir = NULL;
	bool do_rmdir = false;
	struct stat st;
	int fd = -1, rc;
	ssize_t r;

	if (argc == 3 && !strcmp(argv[1], "--rmdir"))
		do_rmdir = true, path = argv[2];
	else if (argc == 2)
		path = argv[1];
	else
		return fscheck_usage();
	memset(want, 0, sizeof(want));
	pattern_fill(want, 12, 1, 0, 65536);
	pattern_fill(tail, 12, 2, 65536 + 4000, sizeof(tail));
	memcpy(want + 65536 + 4000, tail, sizeof(tail));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (!tap_ok(&t, fd >= 0, "open %s", path))
		goto out;
	tap_ok(&t, pwrite(fd, want, 65536, 0) == 65536, "write 64 KiB");
	rc = unlink(path);
	tap_ok(&t, rc == 0, "unlink while open%s%s", rc ? ": " : "", rc ? strerror(errno) : "");
	rc = stat(path, &st);
	tap_ok(&t, rc < 0 && errno == ENOENT, "the name is gone (stat: %s)", rc < 0 ? strerror(errno) : "it exists");
	if (do_rmdir) {
		dir = strdup(path);
		rc = dir ? rmdir(dirname(dir)) : -1;
		tap_ok(&t, rc == 0, "rmdir of its folder, now empty, while the file is open%s%s",
			rc ? ": " : "", rc ? strerror(errno) : "");
	}
	/* Once its folder is gone the mount can no longer name the file, and
	 * the kernel asks fstat and fchmod by name: ESTALE there, a limit
	 * docs/filesystem.md states. Reads and writes keep working. */
	if (!do_rmdir) {
		rc = fstat(fd, &st);
		tap_ok(&t, rc == 0 && st.st_size == 65536, "fstat works and says size 65536 (%s, size %lld)",
			rc ? strerror(errno) : "ok", rc ? -1LL : (long long)st.st_size);
		tap_ok(&t, rc == 0 && st.st_nlink == 0, "fstat says nlink 0 (%lld)", rc ? -1LL : (long long)st.st_nlink);
		rc = fchmod(fd, 0600);
		tap_ok(&t, rc == 0, "fchmod 0600%s%s", rc ? ": " : "", rc ? strerror(errno) : "");
		rc = fstat(fd, &st);
		tap_ok(&t, rc == 0 && (st.st_mode & 07777) == 0600, "fstat then says mode 0600 (%o)",
			rc ? 0 : (unsigned)(st.st_mode & 07777));
	}
	r = pwrite(fd, tail, sizeof(tail), 65536 + 4000);
	tap_ok(&t, r == 1000, "pwrite past the end, leaving a hole%s%s", r < 0 ? ": " : "", r < 0 ? strerror(errno) : "");
	if (!do_rmdir) {
		rc = fstat(fd, &st);
		tap_ok(&t, rc == 0 && st.st_size == 65536 + 5000, "fstat says size %d (%lld)", 65536 + 5000,
			rc ? -1LL : (long long)st.st_size);
	}
	memset(got, 0xee, sizeof(got));
	r = pread(fd, got, sizeof(got), 0);
	tap_ok(&t, r == (ssize_t)sizeof(want) && !memcmp(got, want, sizeof(want)), "pread reads back all of it, the hole zeros (%zd bytes)", r);
	rc = ftruncate(fd, 1000);
	tap_ok(&t, rc == 0, "ftruncate to 1000%s%s", rc ? ": " : "", rc ? strerror(errno) : "");
	if (!do_rmdir) {
		rc = fstat(fd, &st);
		tap_ok(&t, rc == 0 && st.st_size == 1000, "fstat says size 1000 (%lld)", rc ? -1LL : (long long)st.st_size);
	}
	r = pread(fd, got, sizeof(got), 0);
	tap_ok(&t, r == 1000 && !memcmp(got, want, 1000), "pread reads the first 1000 bytes only (%zd)", r);
	rc = close(fd);
	fd = -1;
	tap_ok(&t, rc == 0, "close%s%s", rc ? ": " : "", rc ? strerror(errno) : "");
out:
	if (fd >= 0)
		close(fd);
	free(dir);
	return tap_done(&t);
}

/* ---- socket ---- */

/* A unix socket bound at PATH: stat says socket, a client connects through
 * the name and a byte goes each way. Binds from the folder (chdir) so that a
 * long test path still fits sun_path. */
int cmd_socket(int argc, char **argv)
{
	struct tap t = { 0 };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char *d = NULL, *b = NULL, c = 0;
	int srv = -1, cli = -1, con = -1, rc;
	struct stat st;

	if (argc != 2)
		return fscheck_usage();
	d = strdup(argv[1]);
	b = strdup(argv[1]);
	if (!d || !b || chdir(dirname(d)) < 0 || strlen(basename(b)) >= sizeof(sa.sun_path)) {
		tap_ok(&t, false, "chdir to the folder of %s: %s", argv[1], strerror(errno));
		goto out;
	}
	strcpy(sa.sun_path, basename(b));
	srv = socket(AF_UNIX, SOCK_STREAM, 0);
	rc = srv < 0 ? -1 : bind(srv, (struct sockaddr *)&sa, sizeof(sa));
	if (!tap_ok(&t, rc == 0, "bind a unix socket at %s%s%s", argv[1], rc ? ": " : "", rc ? strerror(errno) : ""))
		goto out;
	rc = listen(srv, 1);
	tap_ok(&t, rc == 0, "listen");
	rc = stat(sa.sun_path, &st);
	tap_ok(&t, rc == 0 && S_ISSOCK(st.st_mode), "stat says it is a socket (%s, mode %o)",
		rc ? strerror(errno) : "ok", rc ? 0 : (unsigned)st.st_mode);
	cli = socket(AF_UNIX, SOCK_STREAM, 0);
	rc = cli < 0 ? -1 : connect(cli, (struct sockaddr *)&sa, sizeof(sa));
	if (!tap_ok(&t, rc == 0, "connect through the name%s%s", rc ? ": " : "", rc ? strerror(errno) : ""))
		goto out;
	con = accept(srv, NULL, NULL);
	tap_ok(&t, con >= 0 && write(cli, "x", 1) == 1 && read(con, &c, 1) == 1 && c == 'x' &&
		write(con, "y", 1) == 1 && read(cli, &c, 1) == 1 && c == 'y', "a byte passes each way");
	rc = unlink(sa.sun_path);
	tap_ok(&t, rc == 0, "unlink the socket%s%s", rc ? ": " : "", rc ? strerror(errno) : "");
out:
	if (con >= 0)
		close(con);
	if (cli >= 0)
		close(cli);
	if (srv >= 0)
		close(srv);
	free(d);
	free(b);
	return tap_done(&t);
}

/* ---- setuid ---- */

enum change { CH_WRITE, CH_FTRUNCATE, CH_TRUNCATE };

/* Each case: a mode set by root on a file of root's (group root, or the
 * writer's group), a change made by another user (or root), and the mode
 * ext4 leaves. The kernel's rule (Linux 6.x, setattr_should_drop_sgid):
 * S_ISUID goes on any change by a process without CAP_FSETID; S_ISGID goes
 * where group-exec is set, and without group-exec only if the writer is not
 * in the file's group. */
static const struct {
	mode_t mode;
	bool writers_group;     /* the file's group is the writer's */
	enum change how;
	bool by_root;
	mode_t want;
	const char *what;
} suid_cases[] = {
	{ 04777, false, CH_WRITE, false, 00777, "a write by another user clears S_ISUID" },
	{ 02777, false, CH_WRITE, false, 00777, "a write by another user clears S_ISGID (group-exec)" },
	{ 06777, false, CH_WRITE, false, 00777, "a write by another user clears both" },
	{ 02767, false, CH_WRITE, false, 00767, "a write by a user outside the group clears S_ISGID without group-exec" },
	{ 02767, true, CH_WRITE, false, 02767, "a write by a user of the group keeps S_ISGID without group-exec" },
	{ 06777, true, CH_WRITE, false, 00777, "a write by a user of the group clears both (group-exec)" },
	{ 04777, false, CH_FTRUNCATE, false, 00777, "ftruncate by another user clears S_ISUID" },
	{ 06777, false, CH_TRUNCATE, false, 00777, "truncate by path by another user clears both" },
	{ 06777, false, CH_WRITE, true, 06777, "a write by root keeps both" },
};

/* In a child as uid/gid (or root): make the change. Exit status 0 if it worked. */
static int suid_change(const char *path, enum change how, bool by_root, uid_t uid, gid_t gid)
{
	pid_t pid = fork();
	int status, fd;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (!by_root && (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0))
			_exit(3);
		if (how == CH_TRUNCATE)
			_exit(truncate(path, 3) == 0 ? 0 : 4);
		fd = open(path, O_WRONLY);
		if (fd < 0)
			_exit(5);
		if (how == CH_WRITE ? pwrite(fd, "data", 4, 1) != 4 : ftruncate(fd, 2) != 0)
			_exit(6);
		_exit(close(fd) == 0 ? 0 : 7);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int cmd_setuid(int argc, char **argv)
{
	struct tap t = { 0 };
	const char *path;
	uid_t uid;
	gid_t gid;
	size_t i;

	if (argc != 3 && argc != 4)
		return fscheck_usage();
	path = argv[1];
	uid = (uid_t)strtoul(argv[2], NULL, 10);
	gid = (gid_t)strtoul(argc == 4 ? argv[3] : argv[2], NULL, 10);
	if (geteuid() != 0) {
		printf("# SKIP: setuid needs root\n");
		return 77;
	}
	for (i = 0; i < sizeof(suid_cases) / sizeof(suid_cases[0]); i++) {
		struct stat st;
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), rc;

		/* chown before chmod: a chown clears the bits itself */
		if (fd < 0 || write(fd, "original", 8) != 8 || close(fd) < 0 ||
		    chown(path, 0, suid_cases[i].writers_group ? gid : 0) < 0 || chmod(path, suid_cases[i].mode) < 0 ||
		    stat(path, &st) < 0 || (st.st_mode & 07777) != suid_cases[i].mode) {
			tap_ok(&t, false, "%s: set up mode %04o: %s", suid_cases[i].what,
				(unsigned)suid_cases[i].mode, strerror(errno));
			continue;
		}
		rc = suid_change(path, suid_cases[i].how, suid_cases[i].by_root, uid, gid);
		if (rc != 0) {
			tap_ok(&t, false, "%s: the change as %s failed (child status %d)", suid_cases[i].what,
				suid_cases[i].by_root ? "root" : argv[2], rc);
			continue;
		}
		rc = stat(path, &st);
		tap_ok(&t, rc == 0 && (st.st_mode & 07777) == suid_cases[i].want, "%s (%04o -> %04o, want %04o)",
			suid_cases[i].what, (unsigned)suid_cases[i].mode, rc ? 0 : (unsigned)(st.st_mode & 07777),
			(unsigned)suid_cases[i].want);
	}
	unlink(path);
	return tap_done(&t);
}

/* ---- main ---- */

