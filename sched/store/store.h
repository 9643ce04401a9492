/* The scheduler's durable state: one sqlite database on local disk (WAL,
 * BEGIN IMMEDIATE for every write, a busy timeout, quick_check after start). It
 * loads the resident model at start (other jobs on demand, store_history.c)
 * and writes changed objects in one transaction. Errors: ENOSPC (disk full), EAGAIN (busy), EIO (anything else). */
#ifndef PARSA_STORE_H
#define PARSA_STORE_H

#include "model.h"

struct store;

/* The page size of a database store_open() creates (an existing file keeps
 * its own): small pages, because a submission touches a dozen b-trees and
 * the log takes a whole page for each (store.c, store_open). */
#define STORE_PAGE_SIZE 2048
#define STORE_PAGE_SIZE_TEXT "2048"

/* Open (creating if needed) the database at path, check that it is one and
 * its schema version. NULL with errno and *err (e.g. the file is not a
 * database). The whole file's check is store_check_in_background's. */
struct store *store_open(const char *path, char **err);
void store_close(struct store *st);
/* A read-only connection to the database of a store opened at path (which
 * made its schema): for the reads of the history that must not wait for the
 * writer's lock (sched/engine/history_reader.h); WAL lets it read while the
 * store writes. The same reads as a store (store_load_job, store_list_jobs,
 * ...); a write fails. Closed by store_close. */
struct store *store_open_reader(const char *path, char **err);
/* The database's file. */
const char *store_path(const struct store *st);
/* The daemon's: checkpoints of the log on a thread of their own
 * (sched/store/checkpointer.h), not inside the commits; until store_close. */
int store_checkpoint_in_background(struct store *st, char **err);
/* The daemon's: PRAGMA quick_check of the whole file on a thread and a
 * read-only connection of its own (store_check.c), so that a restart does not
 * wait for it; a damaged file is logged with its fix. Stopped by store_close. */
int store_check_in_background(struct store *st, char **err);

/* Load every host and the resident jobs (unfinished, or ended at or after
 * keep_since_ms; 0: every job) with their stages, instances and events into
 * an empty model, and the next ids from every row. */
int store_load(struct store *st, struct model *m, int64_t keep_since_ms, char **err);

/* ---- history: what is no longer in memory (store_history.c) ---- */

/* Load job id (not in m) with its stages, instances and events into m, clean.
 * 1 when loaded (*job), 0 when no such job, -1 with errno and *err. */
int store_load_job(struct store *st, struct model *m, int64_t id, struct job **job, char **err);
/* The state and owner of job id whether loaded or not: 1, 0 when unknown, -1. */
int store_job_state(struct store *st, int64_t id, enum job_state *state, uid_t *uid, char **err);
/* Jobs per state (indexed by enum job_state), every row. */
int store_job_counts(struct store *st, int64_t counts[5], char **err);
/* The newest job of uid: 1 with *id, 0 when none, -1. */
int store_last_job(struct store *st, uid_t uid, int64_t *id, char **err);

/* What jobs/ lists, oldest first: unfinished jobs and those ended at or
 * after since_ms, of uid (-1: everyone). on_job returns nonzero to stop. */
struct store_job_row {
	int64_t id;
	uid_t uid;
	gid_t gid;
	int64_t submitted_ms;
	const char *name, *user, *team, *state;   /* valid during the call */
};
typedef int (*store_job_fn)(void *arg, const struct store_job_row *row);
int store_list_jobs(struct store *st, int64_t since_ms, int64_t uid, store_job_fn on_job, void *arg,
		    char **err);

/* Ids of the jobs that ended after after_ms and before before_ms, oldest
 * end first; *ids malloc'ed. */
int store_ended_between(struct store *st, int64_t after_ms, int64_t before_ms, int64_t **ids,
			size_t *n, char **err);

/* Usage (reserved cpu-seconds) per hour since since_hour, per team: for fair
 * share at start. on_usage(arg, team, hour, cpu_s). */
typedef void (*store_usage_fn)(void *arg, const char *team, int64_t hour, double cpu_s);
int store_usage_since(struct store *st, int64_t since_hour, store_usage_fn on_usage, void *arg,
		      char **err);

/* Record retention: delete up to limit finished jobs that ended before
 * cutoff_ms (every row of each) in one transaction; *deleted is how many.
 * A job may_delete refuses is skipped (the caller may drop it from memory
 * when it says yes: the transaction is not yet committed, but a failed one
 * only leaves rows that a later batch deletes). */
int store_delete_old_jobs(struct store *st, int64_t cutoff_ms, int limit,
			  bool (*may_delete)(void *arg, int64_t id), void *arg, int *deleted, char **err);

/* Write one new job (its spec text, stages, instances and events) in one
 * transaction. On success the job's objects are clean and persisted. */
int store_insert_job(struct store *st, struct job *job, char **err);

/* A group commit: several new jobs in one transaction (engine_submit.c).
 * store_group_begin opens it; store_group_add writes one job's rows under a
 * savepoint, so a job whose rows are refused (-1 with errno and *err) leaves
 * the others of the group as they were; alone (the group's only job) skips
 * the savepoint, and its refusal rolls the transaction back in store_group_end,
 * which then returns 0. store_group_end commits the jobs
 * added (then clean and persisted) if ok, and otherwise, or when the commit
 * fails (-1 with errno and *err), rolls all of them back: none is written. */
int store_group_begin(struct store *st, char **err);
int store_group_add(struct store *st, struct job *job, bool alone, char **err);
int store_group_end(struct store *st, bool ok, struct job *const *jobs, size_t njobs, char **err);

/* The job submitted with token (a submitter's unique text, job->token):
 * 1 with *id and its submitter's *uid, 0 when no job has it, -1 with errno
 * and *err when the database cannot be read. */
int store_job_by_token(struct store *st, const char *token, int64_t *id, uid_t *uid, char **err);

/* Write everything model_dirty() lists in one transaction, then model_clean().
 * On failure nothing is written and the objects stay dirty. */
int store_flush(struct store *st, struct model *m, char **err);

/* Delete every row of a job whose submission failed after its commit (the
 * volume refused its folders): nobody was told its id. One transaction. */
int store_delete_new_job(struct store *st, int64_t id, char **err);
/* Delete a host's row (hosts/<h>/ctl remove), in its own transaction. */
int store_delete_host(struct store *st, const char *name, char **err);

/* ---- schedules (sched/engine/schedules.c) ---- */

struct store_schedule {
	int64_t id;
	const char *name;
	uid_t uid;
	gid_t gid;
	const char *groups;     /* "1001,27" */
	const char *user;
	const char *spec_file;
	const char *spec;       /* the text, byte for byte */
	size_t spec_len;
	bool paused;
	int64_t anchor_ms;      /* periods count from here */
	int64_t next_ms;        /* the next run (0: none) */
	int64_t created_ms;
};

struct store_schedule_run {
	int64_t schedule_id;
	int64_t job_id;
	int64_t ms;             /* when it was submitted */
	const char *note;       /* "run-now", "late: ...", or "" */
};

typedef void (*store_schedule_fn)(void *arg, const struct store_schedule *sc);
typedef void (*store_run_fn)(void *arg, const struct store_schedule_run *run);

/* Insert or update a schedule's row; delete it with its runs. One transaction each. */
int store_put_schedule(struct store *st, const struct store_schedule *sc, char **err);
int store_delete_schedule(struct store *st, int64_t id, char **err);

/* One run in one transaction: the new job (as store_insert_job), the
 * schedule's row (its next run) and the record of the run. A crash loses the
 * run or keeps all of it, never submits it twice. */
int store_schedule_run(struct store *st, const struct store_schedule *sc, struct job *job,
		       const struct store_schedule_run *run, char **err);

/* Every schedule, then every run oldest first. */
int store_load_schedules(struct store *st, store_schedule_fn on_schedule, store_run_fn on_run,
			 void *arg, char **err);

#endif
