/* Job folders on the storage volume: the stage folders a new job's instances
 * run in, made without the engine's lock (at submission by the submitting
 * thread, for scheduled runs on the storage thread, at start before the
 * first pass), and the hooks through which the space and clean-up threads
 * reach the engine. */
#include "engine_internal.h"
#include "backend.h"
#include "log.h"
#include "space.h"
#include "spare_folders.h"
#include "storage_queue.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Below this, new folders are made, not renamed: a rename needs no new inode
 * nor block, so on a full volume it would take a job whose stages then fail,
 * where the mkdir refuses the submission with ENOSPC. */
#define SPARE_MIN_FREE (64ULL << 20)

static bool volume_nearly_full(struct engine *e)
{
	uint64_t avail;

	return space_avail(e->space, &avail) < 0 || avail < SPARE_MIN_FREE;
}

int folder_plan_make(struct engine *e, const struct folder_plan *p)
{
	char path[512];
	int ret = 0, first = 0;
	bool spare;

	if (!e->storage)
		return 0;
	/* Spare folders renamed into place when they are ready (made earlier
	 * on their own thread, sched/spare_folders.h), else new ones. */
	snprintf(path, sizeof path, "jobs/%lld", (long long)p->id);
	spare = e->spares && !volume_nearly_full(e) &&
		spare_folders_take(e->spares, SPARE_JOB, path, &p->cred) == 0;
	/* The stages' output folders, which instances run in. Their logs'
	 * folders (jobs/<id>/log/<stage>) are made by the mount that opens the
	 * first log: one folder less per stage in each submission. */
	for (size_t s = 0; s < p->nstages; s++) {
		snprintf(path, sizeof path, "jobs/%lld/out/%s", (long long)p->id, p->stages[s]);
		if (spare && spare_folders_take(e->spares, SPARE_STAGE, path, &p->cred) == 0)
			continue;
		if ((spare ? backend_mkdir(e->storage, &p->cred, path, 0755)
			   : backend_mkdir_p(e->storage, &p->cred, path, 0755)) < 0 && errno != EEXIST) {
			if (!first)
				first = errno;
			log_warn("job %lld: cannot create %s", (long long)p->id, path);
			ret = -1;
		}
	}
	/* The first failure is the one to tell (ENOSPC, EIO, ...). */
	if (ret < 0)
		errno = first;
	return ret;
}

/* The job's folders exist (or could not be made: logged): place it. */
void engine_folders_made(struct engine *e, int64_t id, bool submitted)
{
	struct job *job;

	pthread_mutex_lock(&e->lock);
	job = model_job(e->model, id);
	if (job) {
		job->folders_pending = false;
		job->quiet = false;
	}
	engine_kick_new_job(e, id, submitted);
	pthread_mutex_unlock(&e->lock);
}

struct folders_piece {
	struct engine *e;
	struct folder_plan *plan;
};

static void folders_piece_drop(void *arg)
{
	struct folders_piece *piece = arg;

	folder_plan_free(piece->plan);
	free(piece);
}

static void folders_piece_run(void *arg)
{
	struct folders_piece *piece = arg;

	folder_plan_make(piece->e, piece->plan);
	engine_folders_made(piece->e, piece->plan->id, false);
	folders_piece_drop(piece);
}

void engine_folders_later(struct engine *e, struct job *job)
{
	struct folders_piece *piece = xcalloc(1, sizeof *piece);

	piece->e = e;
	piece->plan = folder_plan_of(job);
	job->folders_pending = true;
	storage_queue_post(e->storage_work, folders_piece_run, folders_piece_drop, piece);
}

void engine_folders_at_start(struct engine *e)
{
	struct backend_cred self = { getuid(), getgid() };
	struct folder_plan **plans;
	size_t n;

	if (!e->storage)
		return;
	if (backend_mkdir_p(e->storage, &self, "jobs", 0755) < 0 && errno != EEXIST)
		log_warn("cannot create jobs/ on the storage volume");
	else
		backend_spread(e->storage, "jobs");
	pthread_mutex_lock(&e->lock);
	n = model_nactive(e->model);
	plans = xcalloc(n ? n : 1, sizeof *plans);
	for (size_t j = 0; j < n; j++)
		plans[j] = folder_plan_of(model_active_at(e->model, j));
	pthread_mutex_unlock(&e->lock);
	for (size_t j = 0; j < n; j++) {
		folder_plan_make(e, plans[j]);
		folder_plan_free(plans[j]);
	}
	free(plans);
}

/* ---- the space and clean-up threads ---- */

/* For the clean-up thread (no lock held): jobs that ended before cutoff. */
size_t engine_lifecycle_ended_before(void *arg, int64_t cutoff_ms, int64_t **ids)
{
	struct engine *e = arg;
	size_t n = 0;
	char *err = NULL;

	/* Every job in the store, not only those in memory. */
	pthread_mutex_lock(&e->lock);
	if (store_ended_between(e->store, 0, cutoff_ms, ids, &n, &err) < 0) {
		log_warnx("retention: %s", err ? err : "?");
		free(err);
	}
	pthread_mutex_unlock(&e->lock);
	return n;
}

void engine_lifecycle_note(void *arg, int64_t id, const char *text)
{
	struct engine *e = arg;
	struct job *job;

	pthread_mutex_lock(&e->lock);
	job = engine_job_get(e, id);
	if (job) {
		model_job_event(e->model, job, engine_now(e), "%s", text);
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

