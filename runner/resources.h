/* What an instance holds of its host beyond its reservation's numbers: the
 * cores it is pinned to (runner/cores.h; $PARSA_CPU_LIST), the GPUs it was
 * given ($CUDA_VISIBLE_DEVICES) and, where the runner has cgroup v2, its
 * cgroup (runner/cgroup.h). Chosen when it starts, written into its
 * assignment.json so that a runner that reattaches holds the same again, and
 * given back when it ends. */
#ifndef PARSA_RUNNER_RESOURCES_H
#define PARSA_RUNNER_RESOURCES_H

#include <jansson.h>
#include <stddef.h>

#include "assign.h"

struct cgroup_tree;
struct resources;

struct resources_config {
	int cpus;                    /* only the first cpus cores the runner may run on; 0: all */
	int gpus;                    /* GPU indices 0..gpus-1 are given out */
	struct cgroup_tree *cgroups; /* NULL: no cgroups (measured through /proc) */
};

/* One instance's holding; all NULL when it holds nothing. */
struct holding {
	char *cpu_list;              /* "0-1" */
	char *gpu_list;              /* "0,1"; "" on a host with GPUs for an instance without */
	char *cgroup;                /* its cgroup's folder */
};

/* The cores are those of the runner's affinity mask, as the kernel lists
 * them. Takes nothing from cfg (the cgroup tree stays the caller's). */
struct resources *resources_create(const struct resources_config *cfg);
void resources_destroy(struct resources *r);

/* How many cores and GPUs are handed out. */
int resources_cpus(const struct resources *r);
int resources_gpus(const struct resources *r);

/* The cores' busy share (probe_core_busy()): free ones least busy first. */
void resources_set_busy(struct resources *r, const int *ids, const double *busy, size_t n);

/* Choose a's cores and GPUs and make its cgroup (named name). 0, or -1 with
 * errno EBUSY and *err = "cannot start: ..." when its GPUs are not free (then
 * nothing is held); a cgroup that cannot be made is logged and left out. */
int resources_take(struct resources *r, const struct assignment *a, const char *name, struct holding *h,
		   char **err);

/* The holding as members of assignment.json: runner_cpu_list,
 * runner_gpu_list, runner_cgroup. */
void resources_describe(const struct holding *h, json_t *json);

/* A reattached instance: hold again what json (its assignment.json) says. */
void resources_reclaim(struct resources *r, const json_t *json, struct holding *h);

/* Give it all back: the cores and GPUs, and the cgroup is removed. */
void resources_release(struct resources *r, struct holding *h);

/* Forget the holding without giving anything back (the instance runs on,
 * for the next runner to reattach). */
void holding_clear(struct holding *h);

#endif
