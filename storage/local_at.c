/* Paths of the local-folder backend, resolved beneath the volume root without
 * following any symlink: the parent opened with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS), or one O_NOFOLLOW component at a time, and the last
 * component left to *at() calls (struct at). Also handing a new entry to the
 * person acting, undone when that fails. */
#include "local_internal.h"
#include "util.h"
#include "volume_path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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

int at_open(struct local_backend *lb, const char *path, struct at *at)
{
	const char *slash;
	char *dir;

	memset(at, 0, sizeof *at);
	at->dirfd = -1;
	/* What backend.h promises callers give us; the kernel limits the names. */
	if (volume_path_check(path, SIZE_MAX) < 0)
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

void at_close(struct at *at)
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
int give_away(struct local_backend *lb, int dirfd, const char *name,
		     const struct backend_cred *cred)
{
	if (!lb->chown_created || !cred)
		return 0;
	if (cred->uid == geteuid() && cred->gid == getegid())
		return 0;
	return fchownat(dirfd, name, cred->uid, cred->gid, AT_SYMLINK_NOFOLLOW);
}

/* give_away, and a failed call has no side effects: the entry just made
 * (unlinkat flags: AT_REMOVEDIR for a folder) is removed if it cannot be. */
int give_away_or_undo(struct local_backend *lb, const struct at *at,
			     const struct backend_cred *cred, int unlink_flags)
{
	int saved;

	if (give_away(lb, at->dirfd, at->name, cred) == 0)
		return 0;
	saved = errno;
	unlinkat(at->dirfd, at->name, unlink_flags);
	errno = saved;
	return -1;
}
