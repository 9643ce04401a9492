/* Job folders on the storage volume: the stage folders a new job's instances
 * run in, the listing a foreach stage expands from, and the hooks through
 * which the space and clean-up threads reach the engine. */
#include "engine_internal.h"
#include "backend.h"
#include "log.h"
#include "spec.h"
#include "util.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copied from the job so that its folders can be made without the engine's
 * lock (a slow disk or NFS server must not stall scheduling). */
struct folder_plan {
	int64_t id;
	struct backend_cred cred;
	size_t nstages;
	char **stages;
};

struct folder_plan *folder_plan_of(const struct job *job)
{
	struct folder_plan *p = xcalloc(1, sizeof *p);

	p->id = job->id;
	p->cred = (struct backend_cred){ job->uid, job->gid };
	p->nstages = job->nstages;
	p->stages = xcalloc(job->nstages, sizeof *p->stages);
	for (size_t s = 0; s < job->nstages; s++)
		p->stages[s] = xstrdup(job->stages[s].spec->name);
	return p;
}

void folder_plan_free(struct folder_plan *p)
{
	if (!p)
		return;
	for (size_t s = 0; s < p->nstages; s++)
		free(p->stages[s]);
	free(p->stages);
	free(p);
}

int folder_plan_make(struct engine *e, const struct folder_plan *p)
{
	char path[512];
	int ret = 0;

	if (!e->storage)
		return 0;
	/* The stages' output folders, which instances run in. Their logs'
	 * folders (jobs/<id>/log/<stage>) are made by the mount that opens the
	 * first log: one folder less per stage in each submission. */
	for (size_t s = 0; s < p->nstages; s++) {
		snprintf(path, sizeof path, "jobs/%lld/out/%s", (long long)p->id, p->stages[s]);
		if (backend_mkdir_p(e->storage, &p->cred, path, 0755) < 0 && errno != EEXIST) {
			log_warn("job %lld: cannot create %s", (long long)p->id, path);
			ret = -1;
		}
	}
	return ret;
}

int engine_make_job_folders(struct engine *e, const struct job *job)
{
	struct folder_plan *p = folder_plan_of(job);
	int ret = folder_plan_make(e, p);

	folder_plan_free(p);
	return ret;
}

int64_t folder_plan_job(const struct folder_plan *p)
{
	return p->id;
}

/* ---- foreach ---- */

struct entries {
	char **names;
	size_t n, cap;
	const char *glob;
};

static int collect_entry(void *arg, const char *name, const struct stat *st)
{
	struct entries *list = arg;

	(void)st;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return 0;
	if (fnmatch(list->glob, name, FNM_PERIOD) != 0)
		return 0;
	if (list->n >= SPEC_MAX_INSTANCES)
		return 1;
	if (list->n == list->cap) {
		list->cap = list->cap ? list->cap * 2 : 64;
		list->names = xrealloc(list->names, list->cap * sizeof *list->names);
	}
	list->names[list->n++] = xstrdup(name);
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int engine_list_foreach(struct engine *e, int64_t job, const char *upstream, const char *glob,
			char ***names, size_t *n, char **err)
{
	struct entries list = { .glob = glob };
	char path[512];
	int ret = -1;

	snprintf(path, sizeof path, "jobs/%lld/out/%s", (long long)job, upstream);
	if (!e->storage) {
		errno = ENODEV;
		errprintf(err, "no storage volume to list %s", path);
		goto out;
	}
	if (backend_readdir(e->storage, path, collect_entry, &list) < 0 && errno != ENOENT) {
		errprintf(err, "cannot list %s: %s", path, strerror(errno));
		goto out;
	}
	if (list.n > 1)
		qsort(list.names, list.n, sizeof *list.names, cmp_names);
	ret = 0;
out:
	if (ret < 0) {
		for (size_t i = 0; i < list.n; i++)
			free(list.names[i]);
		free(list.names);
		list.names = NULL;
		list.n = 0;
	}
	*names = list.names;
	*n = list.n;
	return ret;
}

/* ---- the space and clean-up threads ---- */

/* For the clean-up thread (no lock held): jobs that ended before cutoff. */
size_t engine_lifecycle_ended_before(void *arg, int64_t cutoff_ms, int64_t **ids)
{
	struct engine *e = arg;
	size_t n = 0, cap = 0;

	*ids = NULL;
	pthread_mutex_lock(&e->lock);
	for (size_t j = 0; j < model_njobs(e->model); j++) {
		const struct job *job = model_job_at(e->model, j);

		if (!job || !job_ended(job) || job->ended_ms <= 0 || job->ended_ms >= cutoff_ms)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			*ids = xrealloc(*ids, cap * sizeof **ids);
		}
		(*ids)[n++] = job->id;
	}
	pthread_mutex_unlock(&e->lock);
	return n;
}

void engine_lifecycle_note(void *arg, int64_t id, const char *text)
{
	struct engine *e = arg;
	struct job *job;

	pthread_mutex_lock(&e->lock);
	job = model_job(e->model, id);
	if (job) {
		model_job_event(e->model, job, engine_now_ms(e), "%s", text);
		model_dirty_job(e->model, job);
		engine_kick(e);
	}
	pthread_mutex_unlock(&e->lock);
}

/* The space thread learned something new about the volume: pass again. */
void engine_space_changed(void *arg)
{
	struct engine *e = arg;

	pthread_mutex_lock(&e->lock);
	engine_kick(e);
	pthread_mutex_unlock(&e->lock);
}

