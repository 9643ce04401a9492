/* Which files a process holds open, from /proc (see proc_fd.h). */
#include "proc_fd.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* What readlink gives for a descriptor whose name the kernel dropped from its
 * cache after it was opened (fs/queue_dir.c drops a submitted spec's). */
#define DROPPED_SUFFIX " (deleted)"

static bool names(const char *link, size_t n, const char *path, size_t len)
{
	return (n == len || (n == len + sizeof DROPPED_SUFFIX - 1 &&
			     memcmp(link + len, DROPPED_SUFFIX, sizeof DROPPED_SUFFIX - 1) == 0)) &&
	       memcmp(link, path, len) == 0;
}

bool proc_holds_path(pid_t pid, const char *path)
{
	char dir[64], link[PATH_MAX];
	/* getdents64 into the stack: opendir() would allocate 32 kB per call. */
	union {
		struct dirent64 align;
		char bytes[4096];
	} buf;
	size_t len;
	bool found = false, eof = false;
	int fd;

	if (pid <= 0 || !path)
		return false;
	len = strlen(path);
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while (!found) {
		long got = syscall(SYS_getdents64, fd, buf.bytes, sizeof buf.bytes);

		if (got <= 0)
			break;
		/* procfs fills the buffer while entries remain: one with room to
		 * spare for a long name was the last, and the read that would
		 * say so need not be made. */
		if (got < (long)sizeof buf.bytes - 512)
			eof = true;
		for (long off = 0; off < got && !found;) {
			const struct dirent64 *de = (const struct dirent64 *)(buf.bytes + off);
			ssize_t n;

			off += de->d_reclen;
			if (de->d_name[0] == '.')
				continue;
			n = readlinkat(fd, de->d_name, link, sizeof link);
			found = n > 0 && names(link, (size_t)n, path, len);
		}
		if (eof)
			break;
	}
	close(fd);
	return found;
}
