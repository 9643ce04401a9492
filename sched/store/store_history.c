/* The store's history: what the scheduler no longer holds in memory. A job
 * read back by id for a view, the lists and counts that cover every row
 * (jobs/, jobs/last, status), the hourly usage fair share starts from, and
 * record retention's deletes in small transactions. */
#include "store_internal.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int store_load_job(struct store *st, struct model *m, int64_t id, struct job **job, char **err)
{
	const enum stmt_id ids[] = { ST_JOB_LOAD, ST_JOB_STAGES, ST_JOB_INSTANCES, ST_JOB_EVENTS };

	*job = NULL;
	for (size_t i = 0; i < ARRAY_LEN(ids); i++)
		sqlite3_bind_int64(st->stmt[ids[i]], 1, id);
	if (store_load_rows(st, m, ST_JOB_LOAD, ST_JOB_STAGES, ST_JOB_INSTANCES, ST_JOB_EVENTS,
			    err) < 0)
		return -1;
	*job = model_job(m, id);
	if (!*job)
		return 0;
	/* Read back, not changed: the loaders marked it dirty through the setters. */
	model_undirty_job(m, *job);
	(*job)->loaded = true;
	return 1;
}

/* Step a one-row statement: SQLITE_ROW or SQLITE_DONE, else the error. The
 * caller resets it. */
static int step_row(struct store *st, sqlite3_stmt *s, const char *what, char **err)
{
	int rc = sqlite3_step(s);

	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		sqlite3_reset(s);
		return store_db_error(st, rc, what, err);
	}
	return rc;
}

int store_job_state(struct store *st, int64_t id, enum job_state *state, uid_t *uid, char **err)
{
	sqlite3_stmt *s = st->stmt[ST_JOB_STATE];
	int rc, ret = 0;

	sqlite3_bind_int64(s, 1, id);
	rc = step_row(st, s, "job state", err);
	if (rc < 0)
		return -1;
	if (rc == SQLITE_ROW) {
		int v = job_state_parse(store_col_text(s, 0));

		*state = v < 0 ? JOB_FAILED : (enum job_state)v;
		if (uid)
			*uid = (uid_t)sqlite3_column_int64(s, 1);
		ret = 1;
	}
	sqlite3_reset(s);
	return ret;
}

int store_job_counts(struct store *st, int64_t counts[5], char **err)
{
	sqlite3_stmt *s = st->stmt[ST_JOB_COUNTS];
	int rc;

	memset(counts, 0, 5 * sizeof *counts);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int v = job_state_parse(store_col_text(s, 0));

		if (v >= 0)
			counts[v] += sqlite3_column_int64(s, 1);
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return store_db_error(st, rc, "job counts", err);
	return 0;
}

int store_last_job(struct store *st, uid_t uid, int64_t *id, char **err)
{
	sqlite3_stmt *s = st->stmt[ST_LAST_JOB];
	int rc, ret = 0;

	sqlite3_bind_int64(s, 1, uid);
	rc = step_row(st, s, "last job", err);
	if (rc < 0)
		return -1;
	if (rc == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL) {
		*id = sqlite3_column_int64(s, 0);
		ret = 1;
	}
	sqlite3_reset(s);
	return ret;
}

int store_list_jobs(struct store *st, int64_t since_ms, int64_t uid, store_job_fn on_job, void *arg,
		    char **err)
{
	sqlite3_stmt *s = st->stmt[ST_LIST_JOBS];
	int rc;

	sqlite3_bind_int64(s, 1, since_ms);
	sqlite3_bind_int64(s, 2, uid);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct store_job_row row = {
			.id = sqlite3_column_int64(s, 0),
			.uid = (uid_t)sqlite3_column_int64(s, 1),
			.gid = (gid_t)sqlite3_column_int64(s, 2),
			.submitted_ms = sqlite3_column_int64(s, 3),
			.name = store_col_text(s, 4),
			.user = store_col_text(s, 5),
			.team = store_col_text(s, 6),
			.state = store_col_text(s, 7),
		};

		if (on_job(arg, &row)) {
			rc = SQLITE_DONE;
			break;
		}
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return store_db_error(st, rc, "list jobs", err);
	return 0;
}

int store_ended_between(struct store *st, int64_t after_ms, int64_t before_ms, int64_t **ids,
			size_t *n, char **err)
{
	sqlite3_stmt *s = st->stmt[ST_ENDED_BEFORE];
	size_t cap = 0;
	int rc;

	*ids = NULL;
	*n = 0;
	sqlite3_bind_int64(s, 1, after_ms);
	sqlite3_bind_int64(s, 2, before_ms);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			*ids = xrealloc(*ids, cap * sizeof **ids);
		}
		(*ids)[(*n)++] = sqlite3_column_int64(s, 0);
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE) {
		free(*ids);
		*ids = NULL;
		*n = 0;
		return store_db_error(st, rc, "ended jobs", err);
	}
	return 0;
}

int store_usage_since(struct store *st, int64_t since_hour, store_usage_fn on_usage, void *arg,
		      char **err)
{
	sqlite3_stmt *s = st->stmt[ST_USAGE_SINCE];
	int rc;

	sqlite3_bind_int64(s, 1, since_hour);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		on_usage(arg, store_col_text(s, 1), sqlite3_column_int64(s, 0),
			 sqlite3_column_double(s, 2));
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return store_db_error(st, rc, "usage", err);
	return 0;
}

int store_put_charges(struct store *st, struct model *m, char **err)
{
	sqlite3_stmt *s = st->stmt[ST_USAGE_ADD];
	size_t n;
	const struct model_charge *c = model_charges(m, &n);

	for (size_t i = 0; i < n; i++) {
		sqlite3_bind_int64(s, 1, c[i].hour);
		sqlite3_bind_text(s, 2, c[i].team, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, 3, c[i].user, -1, SQLITE_STATIC);
		sqlite3_bind_double(s, 4, c[i].cpu_s);
		if (store_step_done(st, ST_USAGE_ADD, err) < 0)
			return -1;
	}
	return 0;
}

static int delete_job_rows(struct store *st, int64_t id, char **err)
{
	const enum stmt_id ids[] = { ST_DELETE_EVENTS, ST_DELETE_INSTANCES, ST_DELETE_STAGES,
		ST_DELETE_SPEC, ST_DELETE_JOB };

	for (size_t i = 0; i < ARRAY_LEN(ids); i++) {
		sqlite3_bind_int64(st->stmt[ids[i]], 1, id);
		if (store_step_done(st, ids[i], err) < 0)
			return -1;
	}
	return 0;
}

int store_delete_old_jobs(struct store *st, int64_t cutoff_ms, int limit,
			  bool (*may_delete)(void *arg, int64_t id), void *arg, int *deleted, char **err)
{
	sqlite3_stmt *s = st->stmt[ST_OLD_JOBS];
	int64_t *ids = xcalloc((size_t)limit + 1, sizeof *ids);
	int n = 0, rc, ret = -1;

	*deleted = 0;
	sqlite3_bind_int64(s, 1, cutoff_ms);
	sqlite3_bind_int(s, 2, limit);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW && n < limit)
		ids[n++] = sqlite3_column_int64(s, 0);
	sqlite3_reset(s);
	if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
		store_db_error(st, rc, "old jobs", err);
		goto out;
	}
	if (n == 0) {
		ret = 0;
		goto out;
	}
	if (store_tx_begin(st, err) < 0)
		goto out;
	rc = 0;
	for (int i = 0; i < n && rc == 0; i++) {
		if (may_delete && !may_delete(arg, ids[i]))
			continue;
		rc = delete_job_rows(st, ids[i], err);
		if (rc == 0)
			(*deleted)++;
	}
	if (store_tx_end(st, rc == 0, err) < 0) {
		*deleted = 0;
		goto out;
	}
	ret = 0;
out:
	free(ids);
	return ret;
}
