#include "scratch.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *scratch_path(const char *root, const struct assignment *a)
{
	return xasprintf("%s/%" PRId64 ".%s.%" PRId64, root, a->job, a->stage, a->index);
}

/* Empty the directory open at dirfd (which this function closes), descending
 * through openat(O_NOFOLLOW) so that a symlink planted inside is removed
 * itself, never followed. */
static int empty_dir(int dirfd)
{
	DIR *dir = fdopendir(dirfd);
	struct dirent *de;
	int rc = 0, saved = 0;

	if (!dir) {
		saved = errno;
		close(dirfd);
		errno = saved;
		return -1;
	}
	while ((errno = 0, de = readdir(dir)) != NULL) {
		int sub;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd, de->d_name, 0) == 0)
			continue;
		if (errno != EISDIR && errno != EPERM) {
			saved = errno;
			rc = -1;
			continue;
		}
		sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0 || empty_dir(sub) < 0 || unlinkat(dirfd, de->d_name, AT_REMOVEDIR) < 0) {
			saved = errno;
			rc = -1;
		}
	}
	if (errno && !saved) {
		saved = errno;
		rc = -1;
	}
	closedir(dir);
	if (rc < 0)
		errno = saved;
	return rc;
}

int scratch_remove(const char *path, char **err)
{
	int fd;

	if (unlink(path) == 0 || errno == ENOENT)
		return 0;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errprintf(err, "cannot open %s: %s", path, strerror(errno));
	if (empty_dir(fd) < 0)
		return errprintf(err, "cannot remove %s: %s", path, strerror(errno));
	if (rmdir(path) == 0 || errno == ENOENT)
		return 0;
	/* POSIX leaves open whether readdir still shows what follows a removed
	 * entry; one more pass catches anything a filesystem made it skip (or that
	 * a process of the instance still wrote). */
	if (errno == ENOTEMPTY) {
		fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && empty_dir(fd) == 0 && rmdir(path) == 0)
			return 0;
	}
	return errprintf(err, "cannot remove %s: %s", path, strerror(errno));
}

int scratch_prepare(const char *path, uid_t uid, gid_t gid, char **err)
{
	int fd = -1, rc = -1;

	/* A leftover from an instance the runner lost track of (it crashed). */
	if (scratch_remove(path, err) < 0)
		goto out;
	if (mkdir(path, 0700) < 0) {
		errprintf(err, "cannot create %s: %s", path, strerror(errno));
		goto out;
	}
	if (geteuid() == 0) {
		/* fchown on what we just made, not chown on a name someone could
		 * have replaced with a link in between. */
		fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fchown(fd, uid, gid) < 0) {
			int saved = errno;

			errprintf(err, "cannot give %s to uid %u: %s", path, (unsigned)uid, strerror(errno));
			rmdir(path);
			errno = saved;
			goto out;
		}
	}
	rc = 0;
out:
	if (fd >= 0) {
		int saved = errno;

		close(fd);
		errno = saved;
	}
	return rc;
}

char *progress_path(const char *scratch)
{
	return xasprintf("%s.progress", scratch);
}
