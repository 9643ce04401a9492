/* The store's writes: a new job in one transaction (or a group of them), everything the model
 * marked dirty in one transaction, a host's row deleted. */
#include "store_internal.h"
#include "ident.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int put_job(struct store *st, struct job *job, char **err)
{
	sqlite3_stmt *s = st->stmt[ST_UPSERT_JOB];
	json_t *json = NULL;
	char *spec_json = NULL, *groups = NULL;
	int ret = -1;

	/* The spec's JSON form is written once, with the row's creation. */
	if (!job->persisted) {
		json = spec_to_json(job->spec);
		spec_json = json ? json_dumps(json, JSON_COMPACT) : NULL;
	}
	groups = ident_groups_text(job->groups, job->ngroups);
	sqlite3_bind_int64(s, 1, job->id);
	sqlite3_bind_text(s, 2, job->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, job->spec_file, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 4, spec_json ? spec_json : "null", -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 5, job->uid);
	sqlite3_bind_int64(s, 6, job->gid);
	sqlite3_bind_text(s, 7, groups, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 8, job->user, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 9, job->team, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 10, job->priority);
	sqlite3_bind_text(s, 11, job_state_name(job->state), -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 12, job->held);
	sqlite3_bind_int(s, 13, (int)job->ending);
	sqlite3_bind_text(s, 14, job->reason, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 15, job->submitted_ms);
	sqlite3_bind_int64(s, 16, job->started_ms);
	sqlite3_bind_int64(s, 17, job->ended_ms);
	/* Written with the row only: a later upsert of the row must not meet
	 * the token's own UNIQUE index. */
	if (job->token && !job->persisted)
		sqlite3_bind_text(s, 18, job->token, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(s, 18);
	if (store_step_done(st, ST_UPSERT_JOB, err) < 0)
		goto out;
	if (!job->persisted) {
		s = st->stmt[ST_INSERT_SPEC];
		sqlite3_bind_int64(s, 1, job->id);
		sqlite3_bind_blob(s, 2, job->spec_text ? job->spec_text : "", (int)job->spec_len,
				  SQLITE_STATIC);
		if (store_step_done(st, ST_INSERT_SPEC, err) < 0)
			goto out;
	}
	s = st->stmt[ST_INSERT_EVENT];
	for (size_t e = job->nflushed_events; e < job->nevents; e++) {
		sqlite3_bind_int64(s, 1, job->id);
		sqlite3_bind_int64(s, 2, job->events[e].ms);
		sqlite3_bind_text(s, 3, job->events[e].text, -1, SQLITE_STATIC);
		if (store_step_done(st, ST_INSERT_EVENT, err) < 0)
			goto out;
	}
	ret = 0;
out:
	free(groups);
	free(spec_json);
	json_decref(json);
	return ret;
}

static int put_stage(struct store *st, const struct stage *stage, char **err)
{
	sqlite3_stmt *s = st->stmt[ST_UPSERT_STAGE];

	sqlite3_bind_int64(s, 1, stage->job->id);
	sqlite3_bind_int(s, 2, stage->idx);
	sqlite3_bind_text(s, 3, stage_state_name(stage->state), -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 4, stage->expanded);
	sqlite3_bind_int64(s, 5, stage->started_ms);
	sqlite3_bind_int64(s, 6, stage->ended_ms);
	return store_step_done(st, ST_UPSERT_STAGE, err);
}

static int put_instance(struct store *st, const struct instance *inst, char **err)
{
	sqlite3_stmt *s = st->stmt[ST_UPSERT_INSTANCE];

	sqlite3_bind_int64(s, 1, inst->id);
	sqlite3_bind_int64(s, 2, inst->job->id);
	sqlite3_bind_int(s, 3, inst->stage->idx);
	sqlite3_bind_int(s, 4, inst->index);
	sqlite3_bind_text(s, 5, inst->item, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 6, inst_state_name(inst->state), -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 7, inst->attempt);
	sqlite3_bind_int(s, 8, inst->failures);
	sqlite3_bind_text(s, 9, inst->host_name, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 10, inst->pid);
	sqlite3_bind_int(s, 11, inst->exit_code);
	sqlite3_bind_int(s, 12, inst->signal);
	sqlite3_bind_text(s, 13, inst->reason, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 14, inst->cancel_requested);
	sqlite3_bind_int64(s, 15, inst->assigned_ms);
	sqlite3_bind_int64(s, 16, inst->started_ms);
	sqlite3_bind_int64(s, 17, inst->ended_ms);
	sqlite3_bind_int64(s, 18, inst->cpu_ms);
	sqlite3_bind_int64(s, 19, inst->max_rss);
	sqlite3_bind_text(s, 20, inst->cpu_list, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 21, inst->gpu_list, -1, SQLITE_STATIC);
	return store_step_done(st, ST_UPSERT_INSTANCE, err);
}

static int put_host(struct store *st, const struct host *h, char **err)
{
	sqlite3_stmt *s = st->stmt[ST_UPSERT_HOST];
	json_t *features = json_array();
	char *text;
	int ret;

	for (size_t i = 0; i < h->nfeatures; i++)
		json_array_append_new(features, json_string(h->features[i]));
	text = json_dumps(features, JSON_COMPACT);
	sqlite3_bind_text(s, 1, h->name, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 2, h->cpus);
	sqlite3_bind_int64(s, 3, (sqlite3_int64)h->mem);
	sqlite3_bind_int64(s, 4, (sqlite3_int64)h->scratch_total);
	sqlite3_bind_int64(s, 5, (sqlite3_int64)h->scratch_free);
	sqlite3_bind_int(s, 6, h->cpu_limit);
	sqlite3_bind_int(s, 7, h->mem_limit);
	sqlite3_bind_text(s, 8, text ? text : "[]", -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 9, h->mount, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 10, h->draining);
	sqlite3_bind_int64(s, 11, h->registered_ms);
	sqlite3_bind_text(s, 12, h->window ? h->window : "", -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 13, h->window_drain);
	sqlite3_bind_int(s, 14, h->gpus);
	ret = store_step_done(st, ST_UPSERT_HOST, err);
	free(text);
	json_decref(features);
	return ret;
}
int store_put_new_job(struct store *st, struct job *job, char **err)
{
	if (put_job(st, job, err) < 0)
		return -1;
	for (size_t s = 0; s < job->nstages; s++) {
		struct stage *stage = &job->stages[s];

		if (put_stage(st, stage, err) < 0)
			return -1;
		for (size_t i = 0; i < stage->ninst; i++)
			if (put_instance(st, stage->inst[i], err) < 0)
				return -1;
	}
	return 0;
}

static void mark_persisted(struct job *job)
{
	job->persisted = true;
	job->nflushed_events = job->nevents;
}

int store_insert_job(struct store *st, struct job *job, char **err)
{
	int ok = 0;

	if (store_tx_begin(st, err) < 0)
		return -1;
	if (store_put_new_job(st, job, err) < 0)
		goto out;
	ok = 1;
out:
	if (store_tx_end(st, ok, err) < 0)
		return -1;
	mark_persisted(job);
	return 0;
}

int store_group_begin(struct store *st, char **err)
{
	st->group_broken = false;
	st->group_refused_alone = false;
	return store_tx_begin(st, err);
}

int store_group_add(struct store *st, struct job *job, bool alone, char **err)
{
	int saved;

	if (alone) {
		/* No savepoint to undo to: a refusal rolls the whole transaction
		 * back in store_group_end, which holds nothing else. */
		if (store_put_new_job(st, job, err) == 0)
			return 0;
		st->group_refused_alone = true;
		return -1;
	}
	if (store_step_done(st, ST_SAVEPOINT, err) < 0)
		return -1;
	if (store_put_new_job(st, job, err) == 0)
		return store_step_done(st, ST_RELEASE, err);
	/* This job's rows go; the group's transaction stays open for the others. */
	saved = errno;
	if (store_step_done(st, ST_ROLLBACK_TO, NULL) < 0 || store_step_done(st, ST_RELEASE, NULL) < 0) {
		log_warnx("%s: cannot undo one job of a group: the group is rolled back", st->path);
		st->group_broken = true;
	}
	errno = saved;
	return -1;
}

int store_group_end(struct store *st, bool ok, struct job *const *jobs, size_t njobs, char **err)
{
	if (ok && st->group_broken) {
		store_tx_end(st, 0, NULL);
		errno = EIO;
		return errprintf(err, "%s: a refused job of the group could not be undone alone: "
				 "nothing of the group was written", st->path);
	}
	if (st->group_refused_alone) {
		/* The only job was refused, maybe halfway through its rows: none
		 * of them stays, and the refusal is the job's own (its *err). */
		store_tx_end(st, 0, NULL);
		return 0;
	}
	if (store_tx_end(st, ok, err) < 0)
		return -1;
	for (size_t i = 0; i < njobs; i++)
		mark_persisted(jobs[i]);
	return 0;
}

int store_job_by_token(struct store *st, const char *token, int64_t *id, uid_t *uid, char **err)
{
	sqlite3_stmt *s = st->stmt[ST_JOB_BY_TOKEN];
	int rc, ret = -1;

	sqlite3_bind_text(s, 1, token, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*id = sqlite3_column_int64(s, 0);
		*uid = (uid_t)sqlite3_column_int64(s, 1);
		ret = 1;
	} else if (rc == SQLITE_DONE) {
		ret = 0;
	} else {
		store_db_error(st, rc, "job by token", err);
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return ret;
}

int store_flush(struct store *st, struct model *m, char **err)
{
	const struct model_dirty *d = model_dirty(m);
	size_t ncharges;
	int ok = 0;

	model_charges(m, &ncharges);
	if (d->njobs + d->nstages + d->ninsts + d->nhosts + ncharges == 0)
		return 0;
	if (store_tx_begin(st, err) < 0)
		return -1;
	for (size_t i = 0; i < d->nhosts; i++)
		if (put_host(st, d->hosts[i], err) < 0)
			goto out;
	for (size_t i = 0; i < d->njobs; i++)
		if (put_job(st, d->jobs[i], err) < 0)
			goto out;
	for (size_t i = 0; i < d->nstages; i++)
		if (put_stage(st, d->stages[i], err) < 0)
			goto out;
	for (size_t i = 0; i < d->ninsts; i++)
		if (put_instance(st, d->insts[i], err) < 0)
			goto out;
	if (store_put_charges(st, m, err) < 0)
		goto out;
	ok = 1;
out:
	if (store_tx_end(st, ok, err) < 0)
		return -1;
	model_clean(m);
	return 0;
}

int store_delete_host(struct store *st, const char *name, char **err)
{
	/* Rare (an operator's command): prepared when used, not at open. */
	static const char sql[] = "DELETE FROM hosts WHERE name = ?1";
	sqlite3_stmt *s = NULL;
	int rc, ok = 0;

	if (store_tx_begin(st, err) < 0)
		return -1;
	rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
		rc = sqlite3_step(s);
	}
	if (rc == SQLITE_DONE)
		ok = 1;
	else
		store_db_error(st, rc, sql, err);
	sqlite3_finalize(s);
	return store_tx_end(st, ok, err);
}

int store_delete_new_job(struct store *st, int64_t id, char **err)
{
	/* Rare (a volume that failed a submission): prepared when used. */
	static const char *const sql[] = {
		"DELETE FROM events WHERE job_id = ?1",
		"DELETE FROM instances WHERE job_id = ?1",
		"DELETE FROM stages WHERE job_id = ?1",
		"DELETE FROM specs WHERE job_id = ?1",
		"DELETE FROM jobs WHERE id = ?1",
	};
	int ok = 1;

	if (store_tx_begin(st, err) < 0)
		return -1;
	for (size_t i = 0; i < sizeof sql / sizeof sql[0] && ok; i++) {
		sqlite3_stmt *s = NULL;
		int rc = sqlite3_prepare_v2(st->db, sql[i], -1, &s, NULL);

		if (rc == SQLITE_OK) {
			sqlite3_bind_int64(s, 1, id);
			rc = sqlite3_step(s);
		}
		if (rc != SQLITE_DONE) {
			store_db_error(st, rc, sql[i], err);
			ok = 0;
		}
		sqlite3_finalize(s);
	}
	return store_tx_end(st, ok, err);
}
