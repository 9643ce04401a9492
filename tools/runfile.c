#include "runfile.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int runinfo_write(const char *path, const struct runinfo *ri, char **err)
{
	json_t *root;
	char *text = NULL, *tmp;
	int fd = -1, rc = -1, saved;

	root = json_pack("{s:I, s:I, s:I, s:I, s:s, s:s, s:s, s:s, s:I}",
			 "pid", (json_int_t)ri->pid, "sched_pid", (json_int_t)ri->sched,
			 "fs_pid", (json_int_t)ri->fs, "runner_pid", (json_int_t)ri->runner,
			 "mount", ri->mount, "state", ri->state, "storage", ri->storage,
			 "endpoint", ri->endpoint, "started_ms", (json_int_t)ri->started_ms);
	if (root)
		json_object_set_new(root, "web", ri->web ? json_string(ri->web) : json_null());
	tmp = xasprintf("%s.tmp", path);
	if (!root) {
		errno = EINVAL;
		errprintf(err, "cannot describe the run in %s", path);
		goto out;
	}
	text = json_dumps(root, JSON_INDENT(2));
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write_all(fd, text, strlen(text)) < 0 || write_all(fd, "\n", 1) < 0 ||
	    close(fd) < 0) {
		saved = errno;
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		errno = saved;
		errprintf(err, "cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (rename(tmp, path) < 0) {
		saved = errno;
		unlink(tmp);
		errno = saved;
		errprintf(err, "cannot write %s: %s", path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	free(text);
	free(tmp);
	json_decref(root);
	return rc;
}

static char *dup_member(json_t *root, const char *key)
{
	const char *s = json_string_value(json_object_get(root, key));

	return s ? xstrdup(s) : NULL;
}

int runinfo_read(const char *path, struct runinfo *ri, char **err)
{
	json_error_t jerr;
	json_t *root;

	memset(ri, 0, sizeof *ri);
	root = json_load_file(path, 0, &jerr);
	if (!root) {
		if (access(path, F_OK) < 0) {
			errno = ENOENT;
			return errprintf(err, "%s: no such file", path);
		}
		errno = EINVAL;
		return errprintf(err, "%s:%d: %s", path, jerr.line, jerr.text);
	}
	ri->pid = (pid_t)json_integer_value(json_object_get(root, "pid"));
	ri->sched = (pid_t)json_integer_value(json_object_get(root, "sched_pid"));
	ri->fs = (pid_t)json_integer_value(json_object_get(root, "fs_pid"));
	ri->runner = (pid_t)json_integer_value(json_object_get(root, "runner_pid"));
	ri->mount = dup_member(root, "mount");
	ri->state = dup_member(root, "state");
	ri->storage = dup_member(root, "storage");
	ri->endpoint = dup_member(root, "endpoint");
	ri->web = dup_member(root, "web");
	ri->started_ms = json_integer_value(json_object_get(root, "started_ms"));
	json_decref(root);
	if (!ri->mount || !ri->state) {
		runinfo_free(ri);
		errno = EINVAL;
		return errprintf(err, "%s: not a parsa run file (no mount or state)", path);
	}
	return 0;
}

void runinfo_free(struct runinfo *ri)
{
	free(ri->mount);
	free(ri->state);
	free(ri->storage);
	free(ri->endpoint);
	free(ri->web);
	memset(ri, 0, sizeof *ri);
}

char *runinfo_web_url(const char *state)
{
	char *path = xasprintf("%s/web.url", state), *text = read_file(path, 4096, NULL);

	free(path);
	if (text)
		text[strcspn(text, "\n")] = '\0';
	if (text && !*text) {
		free(text);
		text = NULL;
	}
	return text;
}

int lock_try(const char *path, int removable, int *fdp)
{
	for (;;) {
		struct stat held, now;
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);

		if (fd < 0)
			return -1;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			int saved = errno;

			close(fd);
			if (saved == EWOULDBLOCK)
				return 1;
			errno = saved;
			return -1;
		}
		/* The previous holder may have unlinked the file between our open and
		 * our lock: then we hold a lock on a file nobody else will open. */
		if (!removable || (fstat(fd, &held) == 0 && stat(path, &now) == 0 &&
				   held.st_ino == now.st_ino && held.st_dev == now.st_dev)) {
			*fdp = fd;
			return 0;
		}
		close(fd);
	}
}
