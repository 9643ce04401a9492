/* cgroup v2 for the instances, where the runner has a subtree of its own
 * (systemd's Delegate=yes): a child cgroup per instance, which the instance
 * enters before exec (launch.c writes to its cgroup.procs), with memory.max
 * at the stage's mem (the kernel stops it, not the runner's sampling) and
 * cpuset.cpus at its cores; usage.h reads its cpu.stat, memory.current,
 * memory.peak and memory.events. Without such a subtree (cgroup v1, no
 * delegation, no cpu and memory controllers) cgroup_tree_create() says why
 * and the runner measures through /proc instead. */
#ifndef PARSA_RUNNER_CGROUP_H
#define PARSA_RUNNER_CGROUP_H

#include "proto.h"

#include <stdbool.h>
#include <stdint.h>

struct cgroup_tree;

/* Find the runner's delegated subtree from proc_self ("/proc/self" except in
 * tests: its cgroup and mountinfo files) and make it ready: the runner moves
 * itself into a leaf "runner" (a cgroup with controllers for its children
 * may hold no processes; under DelegateSubgroup=runner systemd put it there
 * already) and enables cpu, memory and, when offered, cpuset for the
 * instances' cgroups. NULL with errno ENOTSUP and *err saying why when there
 * is no subtree to use (no cgroup v2, not writable, no cpu and memory
 * controllers), other errnos when one was found but could not be set up. */
struct cgroup_tree *cgroup_tree_create(const char *proc_self, char **err);

/* A tree at dir taken as it is: no detection, nothing moved (tests, and a
 * caller that prepared dir itself). cpuset: write cpuset.cpus. */
struct cgroup_tree *cgroup_tree_open(const char *dir, bool cpuset);
/* Removes nothing (instances may outlive the runner). */
void cgroup_tree_destroy(struct cgroup_tree *t);
const char *cgroup_tree_path(const struct cgroup_tree *t);

/* Make (or take over, when it exists) the cgroup name of one instance with
 * memory.max = mem (0: no limit; swap off so the limit is a limit) and
 * cpuset.cpus = cpus (NULL: the parent's). Its path (malloc'ed), or NULL
 * with errno and *err. */
char *cgroup_make(struct cgroup_tree *t, const char *name, uint64_t mem, const char *cpus, char **err);

/* Kill whatever is left in the cgroup at path and remove it; one whose
 * processes are still on their way out is tried again by cgroup_tree_sweep()
 * (t may be NULL: no second try). */
void cgroup_remove(struct cgroup_tree *t, const char *path);
void cgroup_tree_sweep(struct cgroup_tree *t);

/* What the cgroup at path has used: cpu_ms (cpu.stat usage_usec), rss
 * (memory.current) and max_rss (memory.peak, kernel 5.19 and later; else -1),
 * and *oom_kills (memory.events oom_kill). 0, or -1 with errno. */
int cgroup_read(const char *path, struct instance_usage *u, int64_t *oom_kills);

/* Parsers of the files involved; each 0, or -1 with errno EINVAL.
 * The path of the "0::PATH" line of /proc/self/cgroup (malloc'ed). */
int cgroup_parse_self(const char *text, char **path);
/* Where the cgroup2 filesystem is mounted, from mountinfo text (malloc'ed). */
int cgroup_parse_mount(const char *text, char **mnt);
/* The value of "KEY VALUE" lines (cpu.stat, memory.events). */
int cgroup_parse_keyed(const char *text, const char *key, int64_t *value);
/* Whether the words of a cgroup.controllers line include name. */
bool cgroup_has_controller(const char *controllers, const char *name);

#endif
