/* What each running instance's whole process tree uses: CPU time (user +
 * system, children it waited for included) and resident memory, sampled by
 * the runner's main loop every USAGE_INTERVAL_MS and at each heartbeat. Two
 * ways behind one call: an instance with a cgroup of its own (cgroup.h) is
 * read from the cgroup's files; the others from one scan of /proc per sample,
 * which gives every process to the instance whose session or process group it
 * is in, or that is its ancestor. A process that was in no tree is not read
 * again while it lives (a process cannot join a tree it was not born into):
 * the scan costs little beyond the instances' own processes. The figures an instance keeps (struct
 * usage_state, the caller's) never go down: CPU time of processes that left
 * the tree without being waited for stays counted. */
#ifndef PARSA_RUNNER_USAGE_H
#define PARSA_RUNNER_USAGE_H

#include "proto.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* At least twice a second, with room for the loop's other work. */
#define USAGE_INTERVAL_MS 400

/* One instance's figures, kept by the caller between samples. */
struct usage_state {
	struct instance_usage now;  /* cpu_ms and max_rss never decrease; -1 before the first sample */
	int64_t live_cpu_ms;        /* what the live tree summed to at the last sample */
	int64_t lost_cpu_ms;        /* what processes gone from the tree (not waited for) had used */
	int64_t oom_kills;          /* cgroup: the kernel's memory.events oom_kill */
};

#define USAGE_STATE_INIT ((struct usage_state){ INSTANCE_USAGE_UNKNOWN, 0, 0, 0 })

/* An instance to measure. */
struct usage_target {
	pid_t pid;                  /* its first process: leader of its session and group */
	const char *cgroup;         /* its cgroup's folder, or NULL: through /proc */
	struct usage_state *state;  /* updated in place */
};

/* How the last /proc scan went (the bench and the log). */
struct usage_scan_info {
	size_t processes;           /* processes in /proc */
	size_t read;                /* of which /proc/<pid>/stat was read (the others were
				     * in no tree before and cannot be now) */
	size_t matched;             /* of which in some instance's tree */
	double ms;                  /* how long the scan took */
};

struct usage;

/* proc_root is "/proc" except in tests. */
struct usage *usage_create(const char *proc_root);
void usage_destroy(struct usage *u);

/* Measure targets[0..n) now: one /proc scan for those without a cgroup (none
 * when all have one). A target whose pid is 0 is skipped. 0, or -1 with errno
 * and *err when /proc cannot be read (the states are left as they were). */
int usage_sample(struct usage *u, struct usage_target *targets, size_t n, char **err);

void usage_last_scan(const struct usage *u, struct usage_scan_info *info);

/* One process as /proc/<pid>/stat tells it. */
struct proc_stat {
	pid_t pid;                  /* first: usage.c sorts and searches by it */
	pid_t ppid, pgrp, session;
	uint64_t cpu_ticks;         /* utime + stime + cutime + cstime */
	uint64_t rss_pages;
	uint64_t ino;               /* of /proc/<pid>: tells it from a later process of its pid */
	bool remembered;            /* ppid, pgrp, session from an earlier scan; no times */
};

/* Parse the text of /proc/<pid>/stat (the command name may hold spaces and
 * parentheses). 0, or -1 with errno EINVAL. */
int usage_parse_stat(const char *text, struct proc_stat *st);

/* Whose tree each process is in: owner[i] = the index in roots[0..nroots) of
 * the instance procs[i] belongs to (its session, its process group, or its
 * nearest ancestor that is a root), or -1. procs must be sorted by pid. */
void usage_attribute(const struct proc_stat *procs, size_t n, const pid_t *roots, size_t nroots,
		     int *owner);

/* The instance has ended: fold in its last figures, a last reading of its
 * cgroup (when cgroup is not NULL) and the supervisor's wait4() totals
 * (cpu_ms, max_rss; -1 when not known). rss is then -1: totals only. */
void usage_finish(struct usage_state *st, const char *cgroup, int64_t cpu_ms, int64_t max_rss);

/* Fold a new reading of one instance (cpu_ms of its live tree, rss now,
 * peak when the source knows one, else -1) into its state. */
void usage_update(struct usage_state *st, int64_t live_cpu_ms, int64_t rss, int64_t peak);

#endif
