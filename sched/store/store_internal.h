/* What the store's files share (sched/store/store*.c): the connection, the
 * statements prepared at open, and the helpers that map sqlite's results to
 * errno and run writes in one transaction. */
#ifndef PARSA_STORE_INTERNAL_H
#define PARSA_STORE_INTERNAL_H

#include "store.h"

#include <sqlite3.h>
#include <stdbool.h>

/* Statements prepared once at open, by index (their SQL: store.c). */
enum stmt_id {
	ST_BEGIN, ST_COMMIT, ST_ROLLBACK, ST_UPSERT_JOB, ST_JOB_BY_TOKEN, ST_INSERT_SPEC, ST_UPSERT_STAGE,
	ST_UPSERT_INSTANCE, ST_UPSERT_HOST, ST_INSERT_EVENT, ST_LOAD_HOSTS, ST_LOAD_JOBS,
	ST_LOAD_STAGES, ST_LOAD_INSTANCES, ST_LOAD_EVENTS,
	ST_SAVEPOINT, ST_RELEASE, ST_ROLLBACK_TO,
	/* store_history.c */
	ST_JOB_LOAD, ST_JOB_STAGES, ST_JOB_INSTANCES, ST_JOB_EVENTS, ST_JOB_STATE, ST_JOB_COUNTS,
	ST_LIST_JOBS, ST_LAST_JOB, ST_MAX_JOB, ST_MAX_INSTANCE, ST_ENDED_BEFORE, ST_USAGE_ADD,
	ST_USAGE_SINCE, ST_OLD_JOBS, ST_DELETE_JOB, ST_DELETE_SPEC, ST_DELETE_STAGES,
	ST_DELETE_INSTANCES, ST_DELETE_EVENTS, ST_COUNT
};

struct checkpointer;

struct store {
	sqlite3 *db;
	char *path;
	sqlite3_stmt *stmt[ST_COUNT];
	bool group_broken;      /* a job of the open group could not be undone */
	bool group_refused_alone; /* the group's only job was refused: roll back */
	struct checkpointer *checkpoints; /* NULL: sqlite checkpoints in commits */
	struct store_check *check;    /* the whole-file check's thread, or NULL */
};

/* Map a sqlite result to errno, log it with the extended code, and format
 * *err. Returns -1. */
int store_db_error(struct store *st, int rc, const char *what, char **err);
/* PRAGMA quick_check on st's connection: 0 when "ok", else -1 with *err
 * naming the file and the fix (store_check.c runs it on its own connection). */
int store_quick_check(struct store *st, char **err);
/* Stop the check if it still runs and wait for its thread. */
void store_check_stop(struct store_check *c);
/* Run a prepared statement that returns no rows and reset it. */
int store_step_done(struct store *st, enum stmt_id id, char **err);
/* BEGIN IMMEDIATE; and commit if ok, else (or if the commit fails) roll back
 * so that the connection is usable again. */
int store_tx_begin(struct store *st, char **err);
int store_tx_end(struct store *st, int ok, char **err);
/* Load the job rows of stmt (ST_LOAD_* with the keep_finished horizon, or
 * ST_JOB_* with an id, bound by the caller) into m (store_load.c). */
int store_load_rows(struct store *st, struct model *m, enum stmt_id jobs, enum stmt_id stages,
		    enum stmt_id instances, enum stmt_id events, char **err);
/* The model's usage charges, inside the caller's transaction (store_history.c). */
int store_put_charges(struct store *st, struct model *m, char **err);
/* A new job's rows, inside the caller's transaction (store_write.c). */
int store_put_new_job(struct store *st, struct job *job, char **err);

/* A text column, "" for NULL. */
static inline const char *store_col_text(sqlite3_stmt *s, int i)
{
	const char *t = (const char *)sqlite3_column_text(s, i);

	return t ? t : "";
}

#endif
