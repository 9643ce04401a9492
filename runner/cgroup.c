#include "cgroup.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define FILE_MAX 65536

struct cgroup_tree {
	char *dir;            /* the instances' cgroups are made in it */
	bool cpuset;          /* its children have the cpuset controller */
	char **pending;       /* removals that found processes still there */
	size_t npending;
};

/* ---- parsers ---- */

int cgroup_parse_self(const char *text, char **path)
{
	/* "0::/system.slice/x.service": hierarchy 0, no controller list. */
	const char *p = line_value(text, "0:", ':');

	if (!p || *p != '/') {
		errno = EINVAL;
		return -1;
	}
	*path = xasprintf("%.*s", (int)strcspn(p, "\n"), p);
	return 0;
}

/* A mountinfo path with its octal escapes (\040 for a space) undone. */
static char *unescape(const char *s, size_t len)
{
	char *out = xmalloc(len + 1), *o = out;

	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\\' && i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '3' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			*o++ = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

int cgroup_parse_mount(const char *text, char **mnt)
{
	const char *line = text;

	/* "36 35 0:31 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw" */
	while (line && *line) {
		const char *end = strchr(line, '\n'), *sep, *p = line;
		size_t len = end ? (size_t)(end - line) : strlen(line);

		sep = strstr(line, " - ");
		if (sep && (size_t)(sep - line) < len && strncmp(sep + 3, "cgroup2 ", 8) == 0) {
			/* The mount point is the fifth field. */
			for (int field = 0; field < 4 && p; field++) {
				p = strchr(p, ' ');
				if (p)
					p++;
			}
			if (p && p < sep) {
				size_t mlen = strcspn(p, " ");

				*mnt = unescape(p, mlen);
				return 0;
			}
		}
		line = end ? end + 1 : NULL;
	}
	errno = EINVAL;
	return -1;
}

int cgroup_parse_keyed(const char *text, const char *key, int64_t *value)
{
	const char *p = line_value(text, key, ' ');
	char *end;
	long long v;

	if (!p) {
		errno = EINVAL;
		return -1;
	}
	errno = 0;
	v = strtoll(p, &end, 10);
	if (errno || end == p || v < 0) {
		errno = EINVAL;
		return -1;
	}
	*value = v;
	return 0;
}

bool cgroup_has_controller(const char *controllers, const char *name)
{
	size_t len = strlen(name);
	const char *p = controllers;

	while (*p) {
		size_t w;

		p += strspn(p, " \t\n");
		w = strcspn(p, " \t\n");
		if (w == len && strncmp(p, name, len) == 0)
			return true;
		p += w;
	}
	return false;
}

/* ---- files ---- */

static char *read_in(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name), *text = read_file(path, FILE_MAX, NULL);
	int saved = errno;

	free(path);
	errno = saved;
	return text;
}

static int write_in(const char *dir, const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CLOEXEC), rc = -1, saved;

	if (fd >= 0 && write_all(fd, text, strlen(text)) == 0)
		rc = 0;
	saved = errno;
	if (fd >= 0 && close(fd) < 0 && rc == 0) {
		saved = errno;
		rc = -1;
	}
	free(path);
	errno = saved;
	return rc;
}

static int64_t read_number(const char *dir, const char *name)
{
	char *text = read_in(dir, name), *end;
	long long v;

	if (!text)
		return -1;
	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno || end == text || v < 0) {
		/* memory.max and the like say "max"; nothing we read does. */
		v = -1;
	}
	free(text);
	return v;
}

/* ---- the tree ---- */

struct cgroup_tree *cgroup_tree_open(const char *dir, bool cpuset)
{
	struct cgroup_tree *t = xcalloc(1, sizeof *t);

	t->dir = xstrdup(dir);
	t->cpuset = cpuset;
	return t;
}

void cgroup_tree_destroy(struct cgroup_tree *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->npending; i++)
		free(t->pending[i]);
	free(t->pending);
	free(t->dir);
	free(t);
}

const char *cgroup_tree_path(const struct cgroup_tree *t)
{
	return t->dir;
}

/* Where the runner's own cgroup is: the cgroup2 mount and /proc/self/cgroup's
 * path. Malloc'ed, or NULL with *err. */
static char *own_cgroup(const char *proc_self, char **err)
{
	char *path = xasprintf("%s/cgroup", proc_self), *text = read_file(path, FILE_MAX, NULL);
	char *rel = NULL, *mnt = NULL, *dir = NULL;

	if (!text || cgroup_parse_self(text, &rel) < 0) {
		errprintf(err, "no cgroup v2 hierarchy (%s has no 0:: line)", path);
		goto out;
	}
	free(text);
	free(path);
	path = xasprintf("%s/mountinfo", proc_self);
	text = read_file(path, 1 << 20, NULL);
	if (!text || cgroup_parse_mount(text, &mnt) < 0) {
		errprintf(err, "cgroup v2 is not mounted (%s)", path);
		goto out;
	}
	if (strcmp(rel, "/") == 0) {
		/* The root cgroup is the machine's (no memory.max, systemd's
		 * slices beside us): nothing was delegated. */
		errprintf(err, "the runner is in the root cgroup of %s: nothing is delegated to it", mnt);
		goto out;
	}
	dir = xasprintf("%s%s", mnt, rel);
out:
	free(text);
	free(path);
	free(rel);
	free(mnt);
	return dir;
}

/* Is dir a cgroup2 folder that we may change, with cpu and memory for its
 * children? 0, or -1 with *err. */
static int usable(const char *dir, char **controllers, char **err)
{
	struct statfs sfs;

	if (statfs(dir, &sfs) < 0 || sfs.f_type != CGROUP2_SUPER_MAGIC)
		return errprintf(err, "%s is not a cgroup v2 folder", dir);
	if (access(dir, W_OK) < 0)
		return errprintf(err, "%s is not writable by the runner: not delegated (Delegate=yes)", dir);
	*controllers = read_in(dir, "cgroup.controllers");
	if (!*controllers)
		return errprintf(err, "cannot read %s/cgroup.controllers: %s", dir, strerror(errno));
	(*controllers)[strcspn(*controllers, "\n")] = '\0';
	if (!cgroup_has_controller(*controllers, "cpu") || !cgroup_has_controller(*controllers, "memory"))
		return errprintf(err, "%s offers no cpu and memory controllers (cgroup.controllers: '%s')",
				 dir, *controllers);
	return 0;
}

struct cgroup_tree *cgroup_tree_create(const char *proc_self, char **err)
{
	char *own = own_cgroup(proc_self ? proc_self : "/proc/self", err);
	char *base = NULL, *leaf = NULL, *controllers = NULL, *slash, pid[32];
	struct cgroup_tree *t = NULL;
	bool cpuset;

	if (!own) {
		errno = ENOTSUP;
		return NULL;
	}
	/* Already in a leaf named runner (DelegateSubgroup=runner, or how we
	 * left it): the subtree is its parent. */
	slash = strrchr(own, '/');
	if (slash && strcmp(slash, "/runner") == 0) {
		base = xasprintf("%.*s", (int)(slash - own), own);
		if (usable(base, &controllers, NULL) < 0) {
			free(controllers);
			controllers = NULL;
			free(base);
			base = NULL;
		}
	}
	if (!base) {
		base = xstrdup(own);
		if (usable(base, &controllers, err) < 0) {
			errno = ENOTSUP;
			goto out;
		}
		leaf = xasprintf("%s/runner", base);
		snprintf(pid, sizeof pid, "%d\n", (int)getpid());
		if ((mkdir(leaf, 0755) < 0 && errno != EEXIST) || write_in(leaf, "cgroup.procs", pid) < 0) {
			errprintf(err, "cannot move the runner into %s: %s", leaf, strerror(errno));
			goto out;
		}
	}
	cpuset = cgroup_has_controller(controllers, "cpuset");
	if (write_in(base, "cgroup.subtree_control", cpuset ? "+cpu +memory +cpuset" : "+cpu +memory") < 0) {
		/* EBUSY: other processes in base (no internal processes). */
		errprintf(err, "cannot enable the cpu and memory controllers in %s/cgroup.subtree_control: %s"
			  " (are processes other than the runner's in it?)", base, strerror(errno));
		goto out;
	}
	t = cgroup_tree_open(base, cpuset);
	log_info("instances get cgroups in %s (controllers: cpu memory%s)", base, cpuset ? " cpuset" : "");
out:
	{
		int saved = errno;

		free(controllers);
		free(base);
		free(leaf);
		free(own);
		errno = saved;
	}
	return t;
}

char *cgroup_make(struct cgroup_tree *t, const char *name, uint64_t mem, const char *cpus, char **err)
{
	char *path = xasprintf("%s/%s", t->dir, name), num[32];

	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		errprintf(err, "cannot create the cgroup %s: %s", path, strerror(errno));
		goto fail;
	}
	snprintf(num, sizeof num, "%" PRIu64 "\n", mem);
	if (mem > 0 && write_in(path, "memory.max", num) < 0) {
		errprintf(err, "cannot set %s/memory.max: %s", path, strerror(errno));
		goto fail;
	}
	/* Past memory.max the kernel would swap the instance out rather than
	 * stop it; and when it stops it, it stops the whole group. Either file
	 * may be missing (no swap accounting, older kernels). */
	if (mem > 0 && write_in(path, "memory.swap.max", "0\n") < 0 && errno != ENOENT)
		log_warn("cannot set %s/memory.swap.max", path);
	if (write_in(path, "memory.oom.group", "1\n") < 0 && errno != ENOENT)
		log_warn("cannot set %s/memory.oom.group", path);
	if (t->cpuset && cpus && *cpus && write_in(path, "cpuset.cpus", cpus) < 0) {
		errprintf(err, "cannot set %s/cpuset.cpus to %s: %s", path, cpus, strerror(errno));
		goto fail;
	}
	return path;
fail:
	{
		int saved = errno;

		rmdir(path);
		free(path);
		errno = saved;
	}
	return NULL;
}

/* 0 once path is gone; -1 with errno EBUSY while processes remain. */
static int try_remove(const char *path)
{
	/* cgroup.kill (5.14) also reaches what left the instance's session. */
	write_in(path, "cgroup.kill", "1\n");
	if (rmdir(path) == 0 || errno == ENOENT)
		return 0;
	return -1;
}

void cgroup_remove(struct cgroup_tree *t, const char *path)
{
	if (try_remove(path) == 0)
		return;
	if (errno != EBUSY || !t) {
		log_warn("cannot remove the cgroup %s", path);
		return;
	}
	t->pending = xrealloc(t->pending, (t->npending + 1) * sizeof *t->pending);
	t->pending[t->npending++] = xstrdup(path);
}

void cgroup_tree_sweep(struct cgroup_tree *t)
{
	size_t kept = 0;

	for (size_t i = 0; i < t->npending; i++) {
		if (try_remove(t->pending[i]) == 0 || errno != EBUSY)
			free(t->pending[i]);
		else
			t->pending[kept++] = t->pending[i];
	}
	t->npending = kept;
}

int cgroup_read(const char *path, struct instance_usage *u, int64_t *oom_kills)
{
	char *text = read_in(path, "cpu.stat");
	int64_t usec = -1, kills = 0;

	if (!text)
		return -1;
	if (cgroup_parse_keyed(text, "usage_usec", &usec) < 0) {
		free(text);
		errno = EINVAL;
		return -1;
	}
	free(text);
	u->cpu_ms = usec / 1000;
	u->rss = read_number(path, "memory.current");
	u->max_rss = read_number(path, "memory.peak");
	text = read_in(path, "memory.events");
	if (text)
		cgroup_parse_keyed(text, "oom_kill", &kills);
	free(text);
	*oom_kills = kills;
	return 0;
}
