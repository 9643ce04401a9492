#include "resources.h"
#include "cgroup.h"
#include "cores.h"
#include "cpulist.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Room for any list of CPULIST_MAX_ID ids written out one by one. */
#define LIST_MAX (CPU_SETSIZE * 6)

struct resources {
	struct cores *cpus;
	struct cores *gpus;          /* NULL without GPUs */
	struct cgroup_tree *cgroups; /* the caller's */
};

struct resources *resources_create(const struct resources_config *cfg)
{
	struct resources *r = xcalloc(1, sizeof *r);
	int *ids = xcalloc(CPU_SETSIZE, sizeof *ids);
	cpu_set_t set;
	size_t n = 0;

	/* The cores this runner may run on, in order: under --cpus N the first N. */
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof set, &set) == 0) {
		for (int i = 0; i < CPU_SETSIZE; i++)
			if (CPU_ISSET(i, &set) && (cfg->cpus <= 0 || n < (size_t)cfg->cpus))
				ids[n++] = i;
	}
	if (n == 0) {
		long online = sysconf(_SC_NPROCESSORS_ONLN);

		for (long i = 0; i < (online > 0 ? online : 1) && i < CPU_SETSIZE; i++)
			if (cfg->cpus <= 0 || n < (size_t)cfg->cpus)
				ids[n++] = (int)i;
	}
	r->cpus = cores_create(ids, n, true);
	if (cfg->gpus > 0) {
		n = 0;
		for (int i = 0; i < cfg->gpus && i < CPU_SETSIZE; i++)
			ids[n++] = i;
		r->gpus = cores_create(ids, n, false);
	}
	r->cgroups = cfg->cgroups;
	free(ids);
	return r;
}

void resources_destroy(struct resources *r)
{
	if (!r)
		return;
	cores_destroy(r->cpus);
	cores_destroy(r->gpus);
	free(r);
}

int resources_cpus(const struct resources *r)
{
	return (int)cores_total(r->cpus);
}

int resources_gpus(const struct resources *r)
{
	return r->gpus ? (int)cores_total(r->gpus) : 0;
}

void resources_set_busy(struct resources *r, const int *ids, const double *busy, size_t n)
{
	cores_set_busy(r->cpus, ids, busy, n);
}

static char *list_text(const int *ids, size_t n, bool ranges)
{
	char *buf = xmalloc(LIST_MAX);

	if (cpulist_format(ids, n, ranges, buf, LIST_MAX) < 0)
		buf[0] = '\0';
	return buf;
}

/* The ids of a list we wrote ourselves; how many. */
static int list_ids(const char *text, int *ids)
{
	int n = text ? cpulist_parse(text, ids, CPU_SETSIZE) : 0;

	return n < 0 ? 0 : n;
}

int resources_take(struct resources *r, const struct assignment *a, const char *name, struct holding *h,
		   char **err)
{
	int *ids = xcalloc(CPU_SETSIZE, sizeof *ids), n, rc = -1;
	char *why = NULL;

	memset(h, 0, sizeof *h);
	if (r->gpus) {
		n = a->gpus > 0 ? cores_take(r->gpus, (int)(a->gpus < CPU_SETSIZE ? a->gpus : CPU_SETSIZE), ids) : 0;
		if (n < 0) {
			errno = EBUSY;
			errprintf(err, "cannot start: %" PRId64 " GPU%s asked for, %zu of this host's %zu free",
				  a->gpus, a->gpus == 1 ? "" : "s", cores_free(r->gpus), cores_total(r->gpus));
			goto out;
		}
		/* "" for none: an instance without GPUs must not use its neighbours'. */
		h->gpu_list = list_text(ids, (size_t)n, false);
	} else if (a->gpus > 0) {
		errno = EBUSY;
		errprintf(err, "cannot start: %" PRId64 " GPU%s asked for, and this host has none"
			  " (parsa-runner --gpus)", a->gpus, a->gpus == 1 ? "" : "s");
		goto out;
	}
	n = cores_take(r->cpus, (int)(a->cpus > 0 && a->cpus < CPU_SETSIZE ? a->cpus : 1), ids);
	h->cpu_list = list_text(ids, (size_t)(n > 0 ? n : 0), true);
	if (r->cgroups) {
		h->cgroup = cgroup_make(r->cgroups, name, a->mem, h->cpu_list, &why);
		if (!h->cgroup) {
			/* It still runs, measured through /proc. */
			log_warnx("%s", why);
			free(why);
		}
	}
	rc = 0;
out:
	free(ids);
	return rc;
}

void resources_describe(const struct holding *h, json_t *json)
{
	if (h->cpu_list)
		json_object_set_new(json, "runner_cpu_list", json_string(h->cpu_list));
	if (h->gpu_list)
		json_object_set_new(json, "runner_gpu_list", json_string(h->gpu_list));
	if (h->cgroup)
		json_object_set_new(json, "runner_cgroup", json_string(h->cgroup));
}

static char *member(const json_t *json, const char *name)
{
	const char *v = json_string_value(json_object_get(json, name));

	return v ? xstrdup(v) : NULL;
}

void resources_reclaim(struct resources *r, const json_t *json, struct holding *h)
{
	int *ids = xcalloc(CPU_SETSIZE, sizeof *ids), n;

	h->cpu_list = member(json, "runner_cpu_list");
	h->gpu_list = member(json, "runner_gpu_list");
	h->cgroup = member(json, "runner_cgroup");
	n = list_ids(h->cpu_list, ids);
	cores_hold(r->cpus, ids, (size_t)n);
	n = list_ids(h->gpu_list, ids);
	if (r->gpus)
		cores_hold(r->gpus, ids, (size_t)n);
	free(ids);
}

void resources_release(struct resources *r, struct holding *h)
{
	int *ids = xcalloc(CPU_SETSIZE, sizeof *ids), n;

	n = list_ids(h->cpu_list, ids);
	cores_release(r->cpus, ids, (size_t)n);
	n = list_ids(h->gpu_list, ids);
	if (r->gpus)
		cores_release(r->gpus, ids, (size_t)n);
	if (h->cgroup)
		cgroup_remove(r->cgroups, h->cgroup);
	free(ids);
	holding_clear(h);
}

void holding_clear(struct holding *h)
{
	free(h->cpu_list);
	free(h->gpu_list);
	free(h->cgroup);
	memset(h, 0, sizeof *h);
}
