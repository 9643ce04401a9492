/* The recurring pipelines' rows (sched/engine/schedules.c): a schedule written or
 * deleted, a run committed with its job, and all of them loaded at start. */
#include "store_internal.h"
#include "util.h"

#include <stdlib.h>

/* Rare writes (a schedule created, changed, run): statements are prepared
 * when used, not at open. */

static const char sql_put_schedule[] =
	"INSERT INTO schedules(id, name, uid, gid, groups, user, spec_file, spec, paused, anchor_ms,"
	"  next_ms, created_ms) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
	" ON CONFLICT(id) DO UPDATE SET name = ?2, uid = ?3, gid = ?4, groups = ?5, user = ?6,"
	"  spec_file = ?7, spec = ?8, paused = ?9, anchor_ms = ?10, next_ms = ?11, created_ms = ?12";
static const char sql_put_run[] =
	"INSERT INTO schedule_runs(schedule_id, job_id, ms, note) VALUES(?1, ?2, ?3, ?4)";
static const char sql_load_schedules[] =
	"SELECT id, name, uid, gid, groups, user, spec_file, spec, paused, anchor_ms, next_ms,"
	"  created_ms FROM schedules ORDER BY id";
static const char sql_load_runs[] =
	"SELECT schedule_id, job_id, ms, note FROM schedule_runs ORDER BY id";

/* Prepare sql, let bind fill it in, run it to the end. */
static int run_stmt(struct store *st, const char *sql,
		    void (*bind)(sqlite3_stmt *s, const void *arg), const void *arg, char **err)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);

	if (rc == SQLITE_OK) {
		if (bind)
			bind(s, arg);
		rc = sqlite3_step(s);
	}
	if (rc != SQLITE_DONE) {
		store_db_error(st, rc, sql, err);
		sqlite3_finalize(s);
		return -1;
	}
	sqlite3_finalize(s);
	return 0;
}

static void bind_schedule(sqlite3_stmt *s, const void *arg)
{
	const struct store_schedule *sc = arg;

	sqlite3_bind_int64(s, 1, sc->id);
	sqlite3_bind_text(s, 2, sc->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 3, sc->uid);
	sqlite3_bind_int64(s, 4, sc->gid);
	sqlite3_bind_text(s, 5, sc->groups, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 6, sc->user, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 7, sc->spec_file, -1, SQLITE_STATIC);
	sqlite3_bind_blob(s, 8, sc->spec, (int)sc->spec_len, SQLITE_STATIC);
	sqlite3_bind_int(s, 9, sc->paused);
	sqlite3_bind_int64(s, 10, sc->anchor_ms);
	sqlite3_bind_int64(s, 11, sc->next_ms);
	sqlite3_bind_int64(s, 12, sc->created_ms);
}

static void bind_run(sqlite3_stmt *s, const void *arg)
{
	const struct store_schedule_run *r = arg;

	sqlite3_bind_int64(s, 1, r->schedule_id);
	sqlite3_bind_int64(s, 2, r->job_id);
	sqlite3_bind_int64(s, 3, r->ms);
	sqlite3_bind_text(s, 4, r->note ? r->note : "", -1, SQLITE_STATIC);
}

static void bind_id(sqlite3_stmt *s, const void *arg)
{
	sqlite3_bind_int64(s, 1, *(const int64_t *)arg);
}

int store_put_schedule(struct store *st, const struct store_schedule *sc, char **err)
{
	int ok = 0;

	if (store_tx_begin(st, err) < 0)
		return -1;
	ok = run_stmt(st, sql_put_schedule, bind_schedule, sc, err) == 0;
	return store_tx_end(st, ok, err);
}

int store_delete_schedule(struct store *st, int64_t id, char **err)
{
	int ok = 0;

	if (store_tx_begin(st, err) < 0)
		return -1;
	ok = run_stmt(st, "DELETE FROM schedules WHERE id = ?1", bind_id, &id, err) == 0 &&
	     run_stmt(st, "DELETE FROM schedule_runs WHERE schedule_id = ?1", bind_id, &id, err) == 0;
	return store_tx_end(st, ok, err);
}

int store_schedule_run(struct store *st, const struct store_schedule *sc, struct job *job,
		       const struct store_schedule_run *run, char **err)
{
	int ok = 0;

	if (store_tx_begin(st, err) < 0)
		return -1;
	ok = store_put_new_job(st, job, err) == 0 &&
	     run_stmt(st, sql_put_schedule, bind_schedule, sc, err) == 0 &&
	     run_stmt(st, sql_put_run, bind_run, run, err) == 0;
	if (store_tx_end(st, ok, err) < 0)
		return -1;
	job->persisted = true;
	job->nflushed_events = job->nevents;
	return 0;
}

int store_load_schedules(struct store *st, store_schedule_fn on_schedule, store_run_fn on_run,
			 void *arg, char **err)
{
	sqlite3_stmt *s = NULL;
	int rc;

	rc = sqlite3_prepare_v2(st->db, sql_load_schedules, -1, &s, NULL);
	while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		const void *spec = sqlite3_column_blob(s, 7);
		struct store_schedule sc = {
			.id = sqlite3_column_int64(s, 0), .name = store_col_text(s, 1),
			.uid = (uid_t)sqlite3_column_int64(s, 2), .gid = (gid_t)sqlite3_column_int64(s, 3),
			.groups = store_col_text(s, 4), .user = store_col_text(s, 5), .spec_file = store_col_text(s, 6),
			.spec = spec ? spec : "", .spec_len = (size_t)sqlite3_column_bytes(s, 7),
			.paused = sqlite3_column_int(s, 8) != 0, .anchor_ms = sqlite3_column_int64(s, 9),
			.next_ms = sqlite3_column_int64(s, 10), .created_ms = sqlite3_column_int64(s, 11),
		};

		rc = SQLITE_OK;
		on_schedule(arg, &sc);
	}
	sqlite3_finalize(s);
	s = NULL;
	if (rc != SQLITE_DONE)
		return store_db_error(st, rc, "load schedules", err);
	rc = sqlite3_prepare_v2(st->db, sql_load_runs, -1, &s, NULL);
	while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct store_schedule_run r = {
			.schedule_id = sqlite3_column_int64(s, 0), .job_id = sqlite3_column_int64(s, 1),
			.ms = sqlite3_column_int64(s, 2), .note = store_col_text(s, 3),
		};

		rc = SQLITE_OK;
		on_run(arg, &r);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return store_db_error(st, rc, "load schedule runs", err);
	return 0;
}
