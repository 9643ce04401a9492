/* The mount's folder of unlinked open files (see unlinked.h): made at start,
 * leftovers of dead daemons of this host removed, emptied at unmount. */
#include "unlinked.h"
#include "backend.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sweep {
	struct backend *b;
	const char *host;
	size_t host_len;
};

/* A folder "<host>.<pid>" of this host whose process is gone. */
static int sweep_one(void *arg, const char *name, const struct stat *st)
{
	struct sweep *s = arg;
	char *end, *path;
	long pid;

	(void)st;
	if (strncmp(name, s->host, s->host_len) != 0 || name[s->host_len] != '.')
		return 0;
	errno = 0;
	pid = strtol(name + s->host_len + 1, &end, 10);
	if (errno || *end || pid <= 0 || pid > INT_MAX)
		return 0;
	if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
		return 0;
	path = xasprintf(UNLINKED_ROOT "/%s", name);
	if (backend_remove_tree(s->b, path) < 0)
		log_warn("cannot remove leftover unlinked files %s", path);
	else
		log_info("removed %s, unlinked files of a parsafs that is gone", path);
	free(path);
	return 0;
}

static int host_name(char *host, size_t size)
{
	if (gethostname(host, size) < 0)
		return -1;
	host[size - 1] = '\0';
	for (char *c = host; *c; c++)
		if (*c == '/')
			*c = '_';
	return 0;
}

char *unlinked_path(void)
{
	char host[HOST_NAME_MAX + 1];

	if (host_name(host, sizeof host) < 0)
		snprintf(host, sizeof host, "localhost");
	return xasprintf(UNLINKED_ROOT "/%s.%ld", host, (long)getpid());
}

char *unlinked_prepare(struct backend *b)
{
	struct backend_cred cred = { geteuid(), getegid() };
	char host[HOST_NAME_MAX + 1];
	struct sweep s = { .b = b, .host = host };
	char *dir = NULL;

	if (host_name(host, sizeof host) < 0)
		return NULL;
	s.host_len = strlen(host);
	/* Sticky: daemons run by different users leave each other's folders alone. */
	if (backend_mkdir(b, &cred, UNLINKED_ROOT, 01777) < 0 && errno != EEXIST)
		return NULL;
	if (backend_readdir(b, UNLINKED_ROOT, sweep_one, &s) < 0)
		log_warn("cannot list %s for leftovers", UNLINKED_ROOT);
	dir = xasprintf(UNLINKED_ROOT "/%s.%ld", host, (long)getpid());
	/* Open files of every user are renamed in and removed by their closer. */
	if (backend_mkdir(b, &cred, dir, 0777) < 0 && errno != EEXIST) {
		int saved = errno;

		free(dir);
		errno = saved;
		return NULL;
	}
	/* mkdir's mode went through no umask of ours, but a server may apply one. */
	backend_chmod(b, dir, 0777);
	backend_chmod(b, UNLINKED_ROOT, 01777);
	return dir;
}

void unlinked_finish(struct backend *b, const char *dir)
{
	if (dir && backend_remove_tree(b, dir) < 0)
		log_warn("cannot remove %s", dir);
}
