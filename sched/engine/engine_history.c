/* Years of history without the memory: a finished job stays in the model for
 * keep_finished after its end, then only the store has it. A view of such a
 * job reads it outside the lock (sched/engine/history_reader.h, which keeps
 * it a little while for the views that follow); a command reads it back into
 * the model (engine_job_get), where it stays a little while for the commands
 * that follow; record retention deletes records older than record_retention,
 * one small transaction per pass. Both change old jobs: they tell the
 * reader, whose copies from before are then read again. */
#include "engine_internal.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>

enum {
	LOADED_KEEP_MS = 30000,     /* a job read back stays this long after its last view */
	LOADED_MAX = 64,            /* and no more of them than this */
	SWEEP_EVERY_MS = 2000,      /* how often the resident jobs are looked over */
	RETENTION_BATCH = 100,      /* jobs deleted per transaction */
	RETENTION_IDLE_MS = 60000,  /* after a batch that found nothing */
	RETENTION_SLICE_MS = 50,    /* batches per pass: as many as fit in this */
};

/* The job waiters hold: never evicted before this, whatever keep_finished. */
#define MIN_KEEP_MS 5000

struct job *engine_job_get(struct engine *e, int64_t id)
{
	struct job *job = model_job(e->model, id);
	char *err = NULL;

	if (!job && id > 0 && id < model_next_job_id(e->model)) {
		if (store_load_job(e->store, e->model, id, &job, &err) < 0) {
			log_warnx("job %lld: cannot read it back: %s", (long long)id, err ? err : "?");
			free(err);
			errno = EIO;
			return NULL;
		}
		if (job)
			e->history.nloaded++;
		/* A command may change it: the reader's copy is out of date. */
		e->history.changes++;
	}
	if (!job) {
		errno = ENOENT;
		return NULL;
	}
	if (job->loaded)
		job->touched_mono = time_mono_ms();
	return job;
}

int engine_job_state_of(struct engine *e, int64_t id, enum job_state *state)
{
	const struct job *job = model_job(e->model, id);
	char *err = NULL;
	int found;

	if (job) {
		*state = job->state;
		return 1;
	}
	found = store_job_state(e->store, id, state, NULL, &err);
	if (found < 0) {
		log_warnx("job %lld: %s", (long long)id, err ? err : "?");
		free(err);
	}
	return found;
}

/* Which loaded job has gone longest without a view (NULL: none). */
static struct job *stalest_loaded(struct engine *e)
{
	struct job *stalest = NULL;

	for (size_t i = 0; i < model_njobs(e->model); i++) {
		struct job *job = model_job_at(e->model, i);

		if (job && job->loaded && job_ended(job) && !job->dirty &&
		    (!stalest || job->touched_mono < stalest->touched_mono))
			stalest = job;
	}
	return stalest;
}

void engine_history_sweep(struct engine *e, int64_t now, int64_t mono)
{
	int64_t keep = e->cfg.keep_finished_ms > MIN_KEEP_MS ? e->cfg.keep_finished_ms : MIN_KEEP_MS;
	size_t evicted = 0;

	if (mono - e->history.swept_mono < SWEEP_EVERY_MS && e->history.nloaded <= LOADED_MAX)
		return;
	e->history.swept_mono = mono;
	e->history.nloaded = 0;
	for (size_t i = 0; i < model_njobs(e->model); i++) {
		struct job *job = model_job_at(e->model, i);
		bool old;

		if (!job)
			continue;
		if (!job_ended(job)) {
			job->loaded = false;    /* read back, then retried: live again */
			continue;
		}
		/* Only what the store holds whole may leave. */
		if (job->dirty || !job->persisted || job->ended_ms <= 0)
			continue;
		if (job->loaded)
			old = mono - job->touched_mono >= LOADED_KEEP_MS &&
			      now - job->ended_ms >= MIN_KEEP_MS;
		else
			old = now - job->ended_ms >= keep;
		if (!old) {
			e->history.nloaded += job->loaded;
			continue;
		}
		model_forget_job(e->model, job);
		evicted++;
	}
	while (e->history.nloaded > LOADED_MAX) {
		struct job *job = stalest_loaded(e);

		if (!job)
			break;
		model_forget_job(e->model, job);
		e->history.nloaded--;
		evicted++;
	}
	if (evicted)
		log_debug("history: %zu finished jobs left memory, %zu resident", evicted,
			  model_nresident(e->model));
}

/* May the records of job id go? A job in memory goes with them when the
 * store holds all of it; one with changes not yet written stays. */
static bool may_delete(void *arg, int64_t id)
{
	struct engine *e = arg;
	struct job *job = model_job(e->model, id);

	if (!job)
		return true;
	if (!job_ended(job) || job->dirty || !job->persisted)
		return false;
	if (job->loaded && e->history.nloaded)
		e->history.nloaded--;
	model_forget_job(e->model, job);
	return true;
}

void engine_history_retention(struct engine *e, int64_t now, int64_t mono)
{
	int deleted = 0, total = 0;
	char *err = NULL;

	/* By the engine's clock, so that a moved clock (tests) counts too. */
	if (e->cfg.record_retention_ms <= 0 || now < e->history.retention_next_ms)
		return;
	/* Small transactions, and no more of them per pass than fit in a few
	 * milliseconds: the pass is never held up for long. */
	do {
		if (store_delete_old_jobs(e->store, now - e->cfg.record_retention_ms, RETENTION_BATCH,
					  may_delete, e, &deleted, &err) < 0) {
			log_warnx("record retention: %s", err ? err : "?");
			free(err);
			e->history.retention_next_ms = now + RETENTION_IDLE_MS;
			return;
		}
		total += deleted;
	} while (deleted >= RETENTION_BATCH && time_mono_ms() - mono < RETENTION_SLICE_MS);
	e->history.records_deleted += (uint64_t)total;
	if (total)
		e->history.changes++;
	if (total)
		log_info("record retention: deleted the records of %d jobs that ended over %lld s ago",
			 total, (long long)(e->cfg.record_retention_ms / 1000));
	/* A full batch: more may wait, go on next pass; else rest a while. */
	e->history.retention_next_ms = deleted >= RETENTION_BATCH ? now : now + RETENTION_IDLE_MS;
}
