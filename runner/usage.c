#include "usage.h"
#include "cgroup.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Deeper process trees than this are cut there (a loop in a /proc read
 * while pids are reused cannot make us spin). */
#define MAX_DEPTH 256

struct usage {
	char *proc_root;
	DIR *dir;                    /* proc_root, kept open and rewound */
	long page_size, ticks_per_s;
	struct proc_stat *procs;     /* the last scan, by pid */
	int *owner;
	size_t cap;
	/* The processes of the last scan that were in no tree, by pid: an open
	 * hash table (capacity a power of two, 0 = empty slot). */
	struct proc_stat *outside;
	size_t outside_cap;
	struct usage_scan_info last;
};

struct root {
	pid_t pid;
	int index;                   /* into the caller's roots */
};

struct usage *usage_create(const char *proc_root)
{
	struct usage *u = xcalloc(1, sizeof *u);

	u->proc_root = xstrdup(proc_root ? proc_root : "/proc");
	u->page_size = sysconf(_SC_PAGESIZE);
	u->ticks_per_s = sysconf(_SC_CLK_TCK);
	if (u->page_size <= 0)
		u->page_size = 4096;
	if (u->ticks_per_s <= 0)
		u->ticks_per_s = 100;
	return u;
}

void usage_destroy(struct usage *u)
{
	if (!u)
		return;
	if (u->dir)
		closedir(u->dir);
	free(u->procs);
	free(u->owner);
	free(u->outside);
	free(u->proc_root);
	free(u);
}

void usage_last_scan(const struct usage *u, struct usage_scan_info *info)
{
	*info = u->last;
}

int usage_parse_stat(const char *text, struct proc_stat *st)
{
	/* "pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt
	 * majflt cmajflt utime stime cutime cstime priority nice threads
	 * itrealvalue starttime vsize rss ..."; comm may hold anything, so the
	 * fields start after its last ')'. */
	const char *p = strrchr(text, ')');
	unsigned long long f[21];
	char *end;
	long pid;

	errno = 0;
	pid = strtol(text, &end, 10);
	if (!p || errno || end == text || pid <= 0)
		goto bad;
	p++;
	while (*p == ' ')
		p++;
	if (*p == '\0')
		goto bad;
	p++;   /* the state letter */
	/* f[0] ppid ... f[20] rss (stat fields 4 to 24); a negative field
	 * (tty_nr, priority, nice) parses as huge and is not used. */
	for (int i = 0; i < 21; i++) {
		while (*p == ' ')
			p++;
		if (*p == '-')
			p++;
		errno = 0;
		f[i] = strtoull(p, &end, 10);
		if (errno || end == p)
			goto bad;
		p = end;
	}
	st->pid = (pid_t)pid;
	st->ppid = (pid_t)f[0];
	st->pgrp = (pid_t)f[1];
	st->session = (pid_t)f[2];
	st->cpu_ticks = f[10] + f[11] + f[12] + f[13];
	st->rss_pages = f[20];
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

/* struct root and struct proc_stat both begin with their pid: one
 * comparison sorts and searches either (a key is a bare pid_t). */
static int by_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* The index of pid in base[0..n) (elements of size bytes sorted by pid), or -1. */
static long find_pid(const void *base, size_t n, size_t size, pid_t pid)
{
	const char *hit;

	if (pid <= 0)
		return -1;
	hit = bsearch(&pid, base, n, size, by_pid);
	return hit ? (long)((size_t)(hit - (const char *)base) / size) : -1;
}

static int find_root(const struct root *roots, size_t n, pid_t pid)
{
	long i = find_pid(roots, n, sizeof *roots, pid);

	return i < 0 ? -1 : roots[i].index;
}

#define UNKNOWN (-2)

void usage_attribute(const struct proc_stat *procs, size_t n, const pid_t *pids, size_t nroots,
		     int *owner)
{
	struct root *roots = xcalloc(nroots + 1, sizeof *roots);
	long chain[MAX_DEPTH];

	for (size_t i = 0; i < nroots; i++)
		roots[i] = (struct root){ .pid = pids[i], .index = (int)i };
	qsort(roots, nroots, sizeof *roots, by_pid);
	/* Its session or group first: that holds also after a parent left. */
	for (size_t i = 0; i < n; i++) {
		int o = find_root(roots, nroots, procs[i].pid);

		if (o < 0)
			o = find_root(roots, nroots, procs[i].session);
		if (o < 0)
			o = find_root(roots, nroots, procs[i].pgrp);
		owner[i] = o >= 0 ? o : UNKNOWN;
	}
	/* Then ancestors (a process that made a session of its own), each
	 * chain walked once: what it finds is written along it. */
	for (size_t i = 0; i < n; i++) {
		int depth = 0, found = -1;
		long j = (long)i;

		while (j >= 0 && owner[j] == UNKNOWN && depth < MAX_DEPTH) {
			chain[depth++] = j;
			j = find_pid(procs, n, sizeof *procs, procs[j].ppid);
		}
		if (j >= 0 && owner[j] != UNKNOWN)
			found = owner[j];
		for (int k = 0; k < depth; k++)
			owner[chain[k]] = found;
	}
	free(roots);
}

void usage_update(struct usage_state *st, int64_t live_cpu_ms, int64_t rss, int64_t peak)
{
	int64_t cpu;

	/* Less than last time: processes left the tree without a parent in it
	 * waiting for them (their time is in nobody's cutime now). */
	if (live_cpu_ms < st->live_cpu_ms)
		st->lost_cpu_ms += st->live_cpu_ms - live_cpu_ms;
	st->live_cpu_ms = live_cpu_ms;
	cpu = st->lost_cpu_ms + live_cpu_ms;
	if (cpu > st->now.cpu_ms)
		st->now.cpu_ms = cpu;
	st->now.rss = rss;
	if (rss > st->now.max_rss)
		st->now.max_rss = rss;
	if (peak > st->now.max_rss)
		st->now.max_rss = peak;
}

void usage_finish(struct usage_state *st, const char *cgroup, int64_t cpu_ms, int64_t max_rss)
{
	struct instance_usage cg;
	int64_t kills;

	if (cgroup && cgroup_read(cgroup, &cg, &kills) == 0) {
		usage_update(st, cg.cpu_ms, cg.rss, cg.max_rss);
		st->oom_kills = kills;
	}
	if (cpu_ms > st->now.cpu_ms)
		st->now.cpu_ms = cpu_ms;
	if (max_rss > st->now.max_rss)
		st->now.max_rss = max_rss;
	st->now.rss = -1;
}

static size_t slot_of(pid_t pid, size_t cap)
{
	return ((size_t)pid * 2654435761u) & (cap - 1);
}

/* The process of pid and /proc inode ino in the last scan, if it was in no tree. */
static const struct proc_stat *outside_before(const struct usage *u, pid_t pid, uint64_t ino)
{
	if (!u->outside_cap)
		return NULL;
	for (size_t i = slot_of(pid, u->outside_cap); u->outside[i].pid; i = (i + 1) & (u->outside_cap - 1))
		if (u->outside[i].pid == pid)
			return u->outside[i].ino == ino ? &u->outside[i] : NULL;
	return NULL;
}

/* Remember this scan's processes that are in no tree. A process cannot
 * join a tree later: its session and group change only to its own pid or a
 * group of its session, and its parent only to a reaper of an ancestor. A
 * tree that is new to us (a target added since, or reattached) is made of
 * processes remembered with the parent, session and group they had, which
 * tie them to it still, and they are read again then. */
static void remember_outside(struct usage *u, size_t n)
{
	size_t cap = 64;

	while (cap < 2 * n)
		cap *= 2;
	if (cap != u->outside_cap) {
		free(u->outside);
		u->outside = xcalloc(cap, sizeof *u->outside);
		u->outside_cap = cap;
	} else {
		memset(u->outside, 0, cap * sizeof *u->outside);
	}
	for (size_t i = 0; i < n; i++) {
		size_t j;

		if (u->owner[i] >= 0 || u->procs[i].ino == 0)
			continue;
		for (j = slot_of(u->procs[i].pid, cap); u->outside[j].pid; j = (j + 1) & (cap - 1))
			;
		u->outside[j] = u->procs[i];
	}
}

/* Read /proc/<name>/stat into st. 0, or -1 when the process is gone. */
static int read_stat(struct usage *u, const char *name, struct proc_stat *st)
{
	char path[300], buf[1024];
	ssize_t len;
	int fd;

	snprintf(path, sizeof path, "%s/stat", name);
	fd = openat(dirfd(u->dir), path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (len <= 0)
		return -1;
	buf[len] = '\0';
	return usage_parse_stat(buf, st);
}

/* Every process into u->procs, sorted by pid: its stat read, or what an
 * earlier scan found of one that was in no tree. Returns how many. */
static long scan(struct usage *u, char **err)
{
	struct dirent *de;
	size_t n = 0;
	bool sorted = true;

	if (!u->dir) {
		u->dir = opendir(u->proc_root);
		if (!u->dir)
			return errprintf(err, "cannot open %s: %s", u->proc_root, strerror(errno));
	} else {
		rewinddir(u->dir);
	}
	u->last = (struct usage_scan_info){ 0 };
	while ((de = readdir(u->dir)) != NULL) {
		const struct proc_stat *seen;
		struct proc_stat *st;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if (n == u->cap) {
			u->cap = u->cap ? u->cap * 2 : 512;
			u->procs = xrealloc(u->procs, u->cap * sizeof *u->procs);
			u->owner = xrealloc(u->owner, u->cap * sizeof *u->owner);
		}
		st = &u->procs[n];
		/* The inode of /proc/<pid> is made anew for a new process of
		 * that pid (and when the kernel drops it: then we just read). */
		seen = outside_before(u, (pid_t)atoi(de->d_name), (uint64_t)de->d_ino);
		if (seen) {
			*st = *seen;
			st->cpu_ticks = st->rss_pages = 0;
			st->remembered = true;
		} else if (read_stat(u, de->d_name, st) == 0) {
			st->ino = (uint64_t)de->d_ino;
			st->remembered = false;
			u->last.read++;
		} else {
			continue;   /* gone since readdir */
		}
		if (n > 0 && st->pid < u->procs[n - 1].pid)
			sorted = false;
		n++;
	}
	/* /proc lists pids in order, but nothing promises it. */
	if (!sorted)
		qsort(u->procs, n, sizeof *u->procs, by_pid);
	return (long)n;
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* The instances without a cgroup, from one scan of /proc. */
static int sample_proc(struct usage *u, struct usage_target *targets, size_t n, char **err)
{
	pid_t *pids = xcalloc(n + 1, sizeof *pids);
	int64_t *ticks = xcalloc(n + 1, sizeof *ticks), *pages = xcalloc(n + 1, sizeof *pages);
	double t0 = mono_ms();
	long nprocs;
	int rc = -1;

	for (size_t i = 0; i < n; i++)
		pids[i] = targets[i].cgroup ? 0 : targets[i].pid;
	nprocs = scan(u, err);
	if (nprocs < 0)
		goto out;
	usage_attribute(u->procs, (size_t)nprocs, pids, n, u->owner);
	u->last.processes = (size_t)nprocs;
	for (long i = 0; i < nprocs; i++) {
		int o = u->owner[i];
		char name[24];

		if (o < 0)
			continue;
		/* In a tree new to us: its times are needed now. */
		if (u->procs[i].remembered) {
			uint64_t ino = u->procs[i].ino;

			snprintf(name, sizeof name, "%d", (int)u->procs[i].pid);
			if (read_stat(u, name, &u->procs[i]) < 0) {
				u->owner[i] = -1;
				u->procs[i].ino = 0;
				continue;
			}
			u->procs[i].ino = ino;
			u->procs[i].remembered = false;
			u->last.read++;
		}
		ticks[o] += (int64_t)u->procs[i].cpu_ticks;
		pages[o] += (int64_t)u->procs[i].rss_pages;
		u->last.matched++;
	}
	remember_outside(u, (size_t)nprocs);
	for (size_t i = 0; i < n; i++)
		if (pids[i] > 0)
			usage_update(targets[i].state, ticks[i] * 1000 / u->ticks_per_s,
				     pages[i] * u->page_size, -1);
	u->last.ms = mono_ms() - t0;
	rc = 0;
out:
	free(pids);
	free(ticks);
	free(pages);
	return rc;
}

int usage_sample(struct usage *u, struct usage_target *targets, size_t n, char **err)
{
	size_t from_proc = 0;

	for (size_t i = 0; i < n; i++) {
		struct instance_usage cg;
		int64_t kills;

		if (targets[i].pid <= 0)
			continue;
		if (!targets[i].cgroup) {
			from_proc++;
			continue;
		}
		if (cgroup_read(targets[i].cgroup, &cg, &kills) == 0) {
			usage_update(targets[i].state, cg.cpu_ms, cg.rss, cg.max_rss);
			targets[i].state->oom_kills = kills;
		}
	}
	if (from_proc == 0)
		return 0;
	return sample_proc(u, targets, n, err);
}
