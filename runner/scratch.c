#include "scratch.h"
#include "log.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
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
 * itself, never followed. The number of entries it removed, or -1. */
static int empty_dir(int dirfd)
{
	DIR *dir = fdopendir(dirfd);
	struct dirent *de;
	int rc = 0, saved = 0, removed = 0;

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
		if (unlinkat(dirfd, de->d_name, 0) == 0) {
			removed++;
			continue;
		}
		if (errno != EISDIR && errno != EPERM) {
			saved = errno;
			rc = -1;
			continue;
		}
		sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0 || empty_dir(sub) < 0 || unlinkat(dirfd, de->d_name, AT_REMOVEDIR) < 0) {
			saved = errno;
			rc = -1;
		} else {
			removed++;
		}
	}
	if (errno && !saved) {
		saved = errno;
		rc = -1;
	}
	closedir(dir);
	if (rc < 0)
		errno = saved;
	return rc < 0 ? rc : removed;
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
		if (fd >= 0 && empty_dir(fd) >= 0 && rmdir(path) == 0)
			return 0;
	}
	return errprintf(err, "cannot remove %s: %s", path, strerror(errno));
}

/* More than enough for the instances that end between two starts on a host. */
#define POOL_MAX 256

struct scratch_pool {
	char *dir;               /* <root>/.pool */
	uint64_t names[POOL_MAX]; /* pooled folders are <dir>/<name> */
	size_t n;
	uint64_t next_name;
};

struct scratch_pool *scratch_pool_create(const char *root, char **err)
{
	struct scratch_pool *pool = xcalloc(1, sizeof *pool);

	pool->dir = xasprintf("%s/.pool", root);
	if (scratch_remove(pool->dir, err) < 0)
		goto fail;
	if (mkdir(pool->dir, 0700) < 0) {
		errprintf(err, "cannot create %s: %s", pool->dir, strerror(errno));
		goto fail;
	}
	return pool;
fail:
	scratch_pool_destroy(pool);
	return NULL;
}

void scratch_pool_destroy(struct scratch_pool *pool)
{
	if (!pool)
		return;
	/* Only empty folders: nothing to keep for a next runner. */
	if (scratch_remove(pool->dir, NULL) < 0)
		log_warn("cannot remove %s", pool->dir);
	free(pool->dir);
	free(pool);
}

/* Hand the folder at path (just made or taken from the pool) to uid:gid. */
static int give_to(const char *path, uid_t uid, gid_t gid, char **err)
{
	int fd, rc = -1;

	/* fchown on what we hold, not chown on a name someone could have
	 * replaced with a link in between. */
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || (geteuid() == 0 && fchown(fd, uid, gid) < 0) || fchmod(fd, 0700) < 0) {
		errprintf(err, "cannot give %s to uid %u: %s", path, (unsigned)uid, strerror(errno));
		goto out;
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

int scratch_prepare(struct scratch_pool *pool, const char *path, uid_t uid, gid_t gid, char **err)
{
	bool made = false;

	/* A leftover from an instance the runner lost track of (it crashed). */
	if (scratch_remove(path, err) < 0)
		return -1;
	while (pool && pool->n > 0 && !made) {
		char *from = xasprintf("%s/%" PRIu64, pool->dir, pool->names[--pool->n]);

		made = rename(from, path) == 0;
		if (!made)
			log_warn("cannot reuse %s", from);
		free(from);
	}
	if (!made && mkdir(path, 0700) < 0)
		return errprintf(err, "cannot create %s: %s", path, strerror(errno));
	if (give_to(path, uid, gid, err) < 0) {
		int saved = errno;

		scratch_remove(path, NULL);
		errno = saved;
		return -1;
	}
	return 0;
}

int scratch_release(struct scratch_pool *pool, const char *path, char **err)
{
	int fd = -1, rc = -1;
	char *to = NULL;

	if (unlink(path) == 0 || errno == ENOENT)
		return 0;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		errprintf(err, "cannot open %s: %s", path, strerror(errno));
		goto out;
	}
	/* Only a root runner serves several users; take the folder from the
	 * instance's user before emptying it, so nothing it left running can
	 * add to it afterwards. */
	if (!pool || pool->n == POOL_MAX || (geteuid() == 0 && (fchown(fd, 0, 0) < 0 || fchmod(fd, 0700) < 0))) {
		close(fd);
		fd = -1;
		rc = scratch_remove(path, err);
		goto out;
	}
	/* Until a pass finds nothing: POSIX leaves open whether readdir still
	 * shows what follows a removed entry, and a pooled folder must be empty. */
	for (int pass = 0, n = 1; n > 0; pass++) {
		n = empty_dir(dup(fd));
		if (n < 0 || (n > 0 && pass == 3)) {
			errprintf(err, "cannot empty %s: %s", path, n < 0 ? strerror(errno) : "it keeps filling");
			goto out;
		}
	}
	to = xasprintf("%s/%" PRIu64, pool->dir, pool->next_name);
	if (rename(path, to) < 0) {
		log_warn("cannot move %s to %s", path, to);
		rc = scratch_remove(path, err);
		goto out;
	}
	pool->names[pool->n++] = pool->next_name++;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	free(to);
	return rc;
}

char *progress_path(const char *dir, const struct assignment *a)
{
	return xasprintf("%s/%" PRId64 ".%s.%" PRId64 ".progress", dir, a->job, a->stage, a->index);
}
