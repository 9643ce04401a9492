/* Foreach expansion: a stage with foreach = UPSTREAM/GLOB gets one instance
 * per matching entry of the upstream stage's output folder, in name order,
 * once that stage has succeeded. The folder is listed on the storage thread
 * (storage_queue.h), never under the engine's lock; the listing comes back
 * and is applied under the lock, and the pass is kicked to go on. */
#include "engine_internal.h"
#include "backend.h"
#include "storage_queue.h"
#include "util.h"

#include <errno.h>
#include <fnmatch.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

struct entries {
	char **names;
	size_t n, cap;
	const char *glob;
};

/* One listing on its way: what to list, and what was found. */
struct listing {
	struct engine *e;
	int64_t job;
	int stage;
	char *upstream;
	char *glob;
	struct entries found;
	int failed;
	char *err;
	int tries;                    /* failed because the volume was away */
	int64_t delay_ms;             /* before the next try */
};

/* A listing the volume did not answer (an NFS server down) is tried again
 * this long after, twice as long each time up to the most, as job folders
 * are (engine_folders.c): an outage pauses the stage, it does not fail it. */
#define LISTING_RETRY_FIRST_MS 1000
#define LISTING_RETRY_MAX_MS 30000

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

/* The upstream stage's entries that match, sorted (no lock held). 0, or -1
 * with *err. */
static int list_upstream(struct engine *e, struct listing *l)
{
	char path[512];
	const char *slash = strchr(l->glob, '/');

	/* FOLDER/GLOB: the names in one folder of the stage's output. */
	if (slash)
		snprintf(path, sizeof path, "jobs/%lld/out/%s/%.*s", (long long)l->job, l->upstream,
			 (int)(slash - l->glob), l->glob);
	else
		snprintf(path, sizeof path, "jobs/%lld/out/%s", (long long)l->job, l->upstream);
	if (!e->storage) {
		errno = ENODEV;
		return errprintf(&l->err, "no storage volume to list %s", path);
	}
	if (backend_readdir(e->storage, path, collect_entry, &l->found) < 0 && errno != ENOENT)
		return errprintf(&l->err, "cannot list %s: %s", path, strerror(errno));
	if (l->found.n > 1)
		qsort(l->found.names, l->found.n, sizeof *l->found.names, cmp_names);
	return 0;
}

/* Create the stage's instances from what was found, or fail the stage (and
 * the job) with why it could not be listed. */
static void expand(struct engine *e, struct stage *stage, const struct listing *l, int64_t now)
{
	const struct spec_stage *ss = stage->spec;
	const struct job *job = stage->job;
	int64_t next_id = model_next_instance_id(e->model);
	/* A sweep's stage goes through every point for each entry. */
	int64_t points = (int64_t)spec_stage_points(ss), adding = (int64_t)l->found.n * points;
	int64_t total = adding;
	const char *slash = strchr(l->glob, '/');
	char item[1024], reason[1200];
	char *over = NULL;

	/* The instances a foreach makes were unknown at submission: [limits]
	 * (sched/policy/policy.h) apply to them now, the job's and its owner's. */
	for (size_t s = 0; s < job->nstages; s++)
		total += (int64_t)job->stages[s].ninst;
	if (!l->failed && engine_check_limits(e, job->uid, job->user, job->team, total,
					      adding, false, job->spec_file, &over) < 0) {
		snprintf(reason, sizeof reason, "stage %s: foreach = %s/%s matched %zu entries: %s",
			 ss->name, ss->foreach_stage, l->glob, l->found.n, over);
		free(over);
		engine_begin_ending(e, stage->job, ENDING_FAIL, reason, now);
		engine_set_stage_state(e, stage, STAGE_FAILED, now);
		return;
	}
	if (l->failed) {
		snprintf(reason, sizeof reason, "stage %s: %s", ss->name,
			 l->err ? l->err : "cannot expand foreach");
		engine_begin_ending(e, stage->job, ENDING_FAIL, reason, now);
		engine_set_stage_state(e, stage, STAGE_FAILED, now);
		return;
	}
	for (size_t i = 0; i < l->found.n; i++) {
		if (slash)
			snprintf(item, sizeof item, "%s/%.*s/%s", ss->foreach_stage, (int)(slash - l->glob),
				 l->glob, l->found.names[i]);
		else
			snprintf(item, sizeof item, "%s/%s", ss->foreach_stage, l->found.names[i]);
		for (int64_t p = 0; p < points; p++) {
			struct instance *inst = model_stage_new_instance(stage, next_id++, item);

			model_add_instance(e->model, inst);
			model_dirty_instance(e->model, inst);
		}
	}
	stage->expanded = true;
	stage->queued_hint = 0;
	model_dirty_stage(e->model, stage);
	model_job_event(e->model, stage->job, now, "stage %s: foreach = %s/%s matched %zu entr%s",
			ss->name, ss->foreach_stage, l->glob, l->found.n, l->found.n == 1 ? "y" : "ies");
}

/* The listing is back (lock held). The job may have changed meanwhile:
 * apply it only to a stage that still waits for it, as the roll-up would
 * have expanded it; otherwise the roll-up asks again if it must. */
static void apply(struct engine *e, const struct listing *l, int64_t now)
{
	struct job *job = model_job(e->model, l->job);
	struct stage *stage;

	if (!job || l->stage < 0 || (size_t)l->stage >= job->nstages)
		return;
	stage = &job->stages[l->stage];
	if (!stage->listing)
		return;
	stage->listing = false;
	/* Not a change the store sees: the roll-up must look again itself. */
	job->quiet = false;
	if (job_ended(job) || job->ending != ENDING_NONE || job->held ||
	    stage->state != STAGE_WAITING || stage->expanded || !stage_deps_ready(job, stage))
		return;
	expand(e, stage, l, now);
}

static void listing_free(void *arg)
{
	struct listing *l = arg;

	for (size_t i = 0; i < l->found.n; i++)
		free(l->found.names[i]);
	free(l->found.names);
	free(l->upstream);
	free(l->glob);
	free(l->err);
	free(l);
}

/* After a failed listing (no lock held): can the volume be asked at all? */
static bool volume_away(struct engine *e)
{
	struct statvfs vfs;
	int saved = errno;
	bool away = backend_statfs(e->storage, "", &vfs) < 0;

	errno = saved;
	return away;
}

static void listing_run(void *arg)
{
	struct listing *l = arg;
	struct engine *e = l->e;

	l->failed = list_upstream(e, l) < 0;
	if (l->failed && e->storage && volume_away(e)) {
		struct job *job;

		pthread_mutex_lock(&e->lock);
		job = model_job(e->model, l->job);
		if (job && !job_ended(job) && job->ending == ENDING_NONE) {
			if (l->tries++ == 0) {
				model_job_event(e->model, job, engine_now(e), "stage %s: waiting for the "
						"storage volume to list its input (%s)",
						job->stages[l->stage].spec->name, l->err);
				model_dirty_job(e->model, job);
			}
			pthread_mutex_unlock(&e->lock);
			free(l->err);
			l->err = NULL;
			l->delay_ms = l->delay_ms ? l->delay_ms * 2 : LISTING_RETRY_FIRST_MS;
			if (l->delay_ms > LISTING_RETRY_MAX_MS)
				l->delay_ms = LISTING_RETRY_MAX_MS;
			storage_queue_post_after(e->storage_work, l->delay_ms, listing_run, listing_free, l);
			return;
		}
		pthread_mutex_unlock(&e->lock);
	}
	pthread_mutex_lock(&e->lock);
	apply(e, l, engine_now(e));
	engine_kick(e);
	pthread_mutex_unlock(&e->lock);
	listing_free(l);
}

void engine_foreach_list(struct engine *e, struct stage *stage)
{
	const struct spec_stage *ss = stage->spec;
	struct listing *l = xcalloc(1, sizeof *l);

	l->e = e;
	l->job = stage->job->id;
	l->stage = stage->idx;
	l->upstream = xstrdup(ss->foreach_stage);
	l->glob = xstrdup(ss->foreach_glob ? ss->foreach_glob : "*");
	/* FOLDER/GLOB matches GLOB in that folder. */
	l->found.glob = strchr(l->glob, '/') ? strchr(l->glob, '/') + 1 : l->glob;
	stage->listing = true;
	storage_queue_post(e->storage_work, listing_run, listing_free, l);
}
