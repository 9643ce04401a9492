/* Job folders on the storage volume: the stage folders a new job's instances
 * run in, made without the engine's lock (at submission by the submitting
 * thread, for scheduled runs and retries on the storage thread, at start
 * before the first pass), made again on the storage thread while the volume
 * refuses them (the job waits, "folders pending", and nothing of it starts),
 * and the hooks through which the space and clean-up threads reach the
 * engine. */
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

/* A job whose folders the volume refused (an NFS server down, a full
 * volume) tries again this long after, twice as long after each failure up
 * to the most: the volume is asked again soon after it is back, and an
 * outage of hours costs a try per job every half minute. */
#define FOLDERS_RETRY_FIRST_MS 1000
#define FOLDERS_RETRY_MAX_MS 30000

/* Copied from the job so that its folders can be made without the engine's
 * lock (a slow disk or NFS server must not stall scheduling). */
struct folder_plan {
	int64_t id;
	unsigned round;               /* job->folders_round when it was copied */
	struct backend_cred cred;
	size_t nstages;
	char **stages;
	/* What the last folder_plan_make did. */
	char failed[512];             /* the first folder it could not make ("": none) */
	int error;                    /* and why */
	char *made;                   /* "out/a, out/b": stage folders it made; NULL: none */
	int tries;                    /* failed tries so far */
	int64_t delay_ms;             /* before the next try */
};

struct folder_plan *folder_plan_of(const struct job *job)
{
	struct folder_plan *p = xcalloc(1, sizeof *p);

	p->id = job->id;
	p->round = job->folders_round;
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
	free(p->made);
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

static void note_made(struct folder_plan *p, const char *stage)
{
	char *more = xasprintf("%s%sout/%s", p->made ? p->made : "", p->made ? ", " : "", stage);

	free(p->made);
	p->made = more;
}

int folder_plan_make(struct engine *e, struct folder_plan *p)
{
	char path[512];
	int ret = 0, first = 0;
	bool spare;

	p->failed[0] = '\0';
	p->error = 0;
	free(p->made);
	p->made = NULL;
	if (!e->storage)
		return 0;
	/* Spare folders renamed into place when they are ready (made earlier
	 * on their own thread, sched/engine/spare_folders.h), else new ones. */
	snprintf(path, sizeof path, "jobs/%lld", (long long)p->id);
	spare = e->spares && !volume_nearly_full(e) &&
		spare_folders_take(e->spares, SPARE_JOB, path, &p->cred) == 0;
	/* jobs/ is the scheduler's (made at start, or here when the volume
	 * was away then); jobs/<id> and what is in it the submitter's. */
	if (!spare && backend_mkdir(e->storage, &p->cred, path, 0755) < 0 && errno == ENOENT) {
		struct backend_cred self = { getuid(), getgid() };

		if (backend_mkdir(e->storage, &self, "jobs", 0755) == 0)
			backend_spread(e->storage, "jobs");
		backend_mkdir(e->storage, &p->cred, path, 0755);
	}
	/* The stages' output folders, which instances run in. Their logs'
	 * folders (jobs/<id>/log/<stage>) are made by the mount that opens the
	 * first log: one folder less per stage in each submission. One that is
	 * there already (a start, a retry) stays as it is; one that is missing
	 * (never made in an outage, or removed) is made, with its parents. */
	for (size_t s = 0; s < p->nstages; s++) {
		int rc;

		snprintf(path, sizeof path, "jobs/%lld/out/%s", (long long)p->id, p->stages[s]);
		if (spare && spare_folders_take(e->spares, SPARE_STAGE, path, &p->cred) == 0) {
			note_made(p, p->stages[s]);
			continue;
		}
		rc = backend_mkdir(e->storage, &p->cred, path, 0755);
		if (rc < 0 && errno == ENOENT)
			rc = backend_mkdir_p(e->storage, &p->cred, path, 0755);
		if (rc == 0) {
			note_made(p, p->stages[s]);
			continue;
		}
		if (errno == EEXIST)
			continue;
		if (!first) {
			first = errno;
			snprintf(p->failed, sizeof p->failed, "%s", path);
			p->error = errno;
		}
		/* A try every half minute in an outage: told once a job. */
		if (p->tries == 0)
			log_warn("job %lld: cannot create %s", (long long)p->id, path);
		ret = -1;
	}
	/* The first failure is the one to tell (ENOSPC, EIO, ...). */
	if (ret < 0)
		errno = first;
	return ret;
}

/* p failed as a whole with error (the volume away), none of it tried: why
 * names its first stage folder. */
static void plan_not_tried(struct folder_plan *p, int error)
{
	if (p->nstages)
		snprintf(p->failed, sizeof p->failed, "jobs/%lld/out/%s", (long long)p->id, p->stages[0]);
	else
		snprintf(p->failed, sizeof p->failed, "jobs/%lld", (long long)p->id);
	p->error = error ? error : EIO;
	free(p->made);
	p->made = NULL;
}

/* A quick ask before a plan's calls, each of which could wait the volume's
 * time-out while its server hangs. */
#define FOLDERS_PROBE_MS 1000

/* -1 when the volume was away at its last call and a quick probe (this
 * one, or one less than FOLDERS_PROBE_MS ago) says it still is (the plan
 * then failed untried), else 0: go ahead. Storage thread only. */
static int volume_still_away(struct engine *e, struct folder_plan *p)
{
	int64_t now = time_mono_ms();

	if (!e->storage || backend_health(e->storage, NULL, NULL) != 0)
		return 0;
	if (!e->away_probe_mono || now - e->away_probe_mono >= FOLDERS_PROBE_MS) {
		if (backend_probe(e->storage, FOLDERS_PROBE_MS) == 0) {
			e->away_probe_mono = 0;
			return 0;
		}
		e->away_probe_errno = errno ? errno : EIO;
		e->away_probe_mono = time_mono_ms();
	}
	plan_not_tried(p, e->away_probe_errno);
	return -1;
}

/* The job's folders exist (its submission made them): place it. */
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
	bool again;                   /* a retry's: tell which folders were made again */
};

static void folders_piece_drop(void *arg)
{
	struct folders_piece *piece = arg;

	folder_plan_free(piece->plan);
	free(piece);
}

/* Lock held: whether the job is still the one the plan was copied from, and
 * still wants its folders (a job cancelled meanwhile does not; a retry
 * started a new round). */
static struct job *plan_job_locked(struct engine *e, const struct folder_plan *p)
{
	struct job *job = model_job(e->model, p->id);

	if (!job || job->folders_round != p->round || job_ended(job))
		return NULL;
	return job;
}

/* After a try of the storage thread or of the start (no lock held): on
 * success the job may be placed; on failure it waits, why says why, and
 * true says that the plan must be tried again. */
static bool folders_tried(struct engine *e, struct folders_piece *piece, int rc)
{
	struct folder_plan *p = piece->plan;
	struct job *job;
	bool again = false;
	int64_t now;

	pthread_mutex_lock(&e->lock);
	now = engine_now(e);
	job = plan_job_locked(e, p);
	if (!job) {
		job = model_job(e->model, p->id);
		/* Ended, or a newer round took over: this one stops. */
		if (job && job->folders_round == p->round) {
			job->folders_pending = false;
			free(job->folders_wait);
			job->folders_wait = NULL;
		}
	} else if (rc < 0) {
		p->tries++;
		job->folders_pending = true;
		free(job->folders_wait);
		job->folders_wait = xasprintf("%s not made yet (last error: %s)", p->failed,
					      strerror(p->error));
		if (p->tries == 1) {
			model_job_event(e->model, job, now, "waiting for the storage volume: %s",
					job->folders_wait);
			log_info("job %lld: waiting for the storage volume: %s", (long long)p->id,
				 job->folders_wait);
		}
		model_dirty_job(e->model, job);
		job->quiet = false;
		again = true;
	} else {
		if (p->tries > 0) {
			if (p->made)
				model_job_event(e->model, job, now, "the storage volume is back: its "
						"folders are made (%s) after %d tries", p->made,
						p->tries + 1);
			else
				model_job_event(e->model, job, now, "the storage volume is back: its "
						"folders are there (%d tries)", p->tries + 1);
			log_info("job %lld: its folders are made after %d tries", (long long)p->id,
				 p->tries + 1);
			model_dirty_job(e->model, job);
		} else if (piece->again && p->made) {
			model_job_event(e->model, job, now, "missing folders made again: %s", p->made);
			model_dirty_job(e->model, job);
		}
		job->folders_pending = false;
		free(job->folders_wait);
		job->folders_wait = NULL;
		job->quiet = false;
		engine_kick_new_job(e, p->id, false);
	}
	pthread_mutex_unlock(&e->lock);
	return again;
}

static void folders_piece_run(void *arg);

/* Try again later, each time after twice the wait (see FOLDERS_RETRY_*). */
static void folders_piece_later(struct folders_piece *piece)
{
	struct folder_plan *p = piece->plan;

	p->delay_ms = p->delay_ms ? p->delay_ms * 2 : FOLDERS_RETRY_FIRST_MS;
	if (p->delay_ms > FOLDERS_RETRY_MAX_MS)
		p->delay_ms = FOLDERS_RETRY_MAX_MS;
	storage_queue_post_after(piece->e->storage_work, p->delay_ms, folders_piece_run,
				 folders_piece_drop, piece);
}

static void folders_piece_run(void *arg)
{
	struct folders_piece *piece = arg;
	bool wanted;

	/* A job cancelled while it waited for the volume needs no folders. */
	pthread_mutex_lock(&piece->e->lock);
	wanted = plan_job_locked(piece->e, piece->plan) != NULL;
	pthread_mutex_unlock(&piece->e->lock);
	if (!wanted)
		folders_tried(piece->e, piece, 0);
	else if (folders_tried(piece->e, piece, volume_still_away(piece->e, piece->plan) < 0 ? -1 :
			       folder_plan_make(piece->e, piece->plan))) {
		folders_piece_later(piece);
		return;
	}
	folders_piece_drop(piece);
}

static struct folders_piece *piece_of(struct engine *e, struct folder_plan *p, bool again)
{
	struct folders_piece *piece = xcalloc(1, sizeof *piece);

	piece->e = e;
	piece->plan = p;
	piece->again = again;
	return piece;
}

void engine_folders_later(struct engine *e, struct job *job, bool again)
{
	/* A new round: an older one still waiting for the volume stops. */
	job->folders_round++;
	job->folders_pending = true;
	storage_queue_post(e->storage_work, folders_piece_run, folders_piece_drop,
			   piece_of(e, folder_plan_of(job), again));
}

void engine_folders_failed(struct engine *e, struct folder_plan *p)
{
	struct folders_piece *piece = piece_of(e, p, false);

	if (folders_tried(e, piece, -1))
		folders_piece_later(piece);
	else
		folders_piece_drop(piece);
}

void engine_folders_at_start(struct engine *e)
{
	struct backend_cred self = { getuid(), getgid() };
	struct folder_plan **plans;
	int away = 0;
	size_t n;

	if (!e->storage)
		return;
	/* Unreachable at start is not fatal: the jobs wait for their folders
	 * (tried again by the storage thread), jobs/ is made with the first.
	 * A volume that is away is not asked for each job: a hung server
	 * would hold the start a time-out per call. */
	if (backend_mkdir_p(e->storage, &self, "jobs", 0755) < 0 && errno != EEXIST) {
		away = errno ? errno : EIO;
		log_warn("cannot create jobs/ on the storage volume (tried again for each job)");
		if (backend_health(e->storage, NULL, NULL) != 0)
			away = 0;
	} else {
		backend_spread(e->storage, "jobs");
	}
	pthread_mutex_lock(&e->lock);
	n = model_nactive(e->model);
	plans = xcalloc(n ? n : 1, sizeof *plans);
	for (size_t j = 0; j < n; j++)
		plans[j] = folder_plan_of(model_active_at(e->model, j));
	pthread_mutex_unlock(&e->lock);
	for (size_t j = 0; j < n; j++) {
		if (away)
			plan_not_tried(plans[j], away);
		if (away || folder_plan_make(e, plans[j]) < 0)
			engine_folders_failed(e, plans[j]);
		else
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

