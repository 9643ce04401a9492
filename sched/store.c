#include "store.h"

#include "log.h"
#include "timewin.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The steps from one schema version to the next: migrations[i] brings a
 * database from version i + 1 to i + 2, in one transaction. A new database is
 * created at version 1 (sql_schema) and brought up the same way. Add a step
 * at the end to change the schema; a database newer than this program is
 * refused. */
static const char *const migrations[] = {
	/* 2: host windows; recurring pipelines (schedules/) and their runs. */
	"ALTER TABLE hosts ADD COLUMN win_text TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE hosts ADD COLUMN win_drain INTEGER NOT NULL DEFAULT 0;"
	"CREATE TABLE schedules("
	"  id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, uid INTEGER NOT NULL,"
	"  gid INTEGER NOT NULL, groups TEXT NOT NULL, user TEXT NOT NULL,"
	"  spec_file TEXT NOT NULL, spec BLOB NOT NULL, paused INTEGER NOT NULL,"
	"  anchor_ms INTEGER NOT NULL, next_ms INTEGER NOT NULL, created_ms INTEGER NOT NULL);"
	"CREATE TABLE schedule_runs("
	"  id INTEGER PRIMARY KEY, schedule_id INTEGER NOT NULL, job_id INTEGER NOT NULL,"
	"  ms INTEGER NOT NULL, note TEXT NOT NULL);"
	"CREATE INDEX schedule_runs_schedule ON schedule_runs(schedule_id, id);",
};
#define SCHEMA_VERSION ((int)(1 + sizeof migrations / sizeof migrations[0]))

/* Schema version 1; migrations[] takes it further. */
static const char sql_schema[] =
	"CREATE TABLE IF NOT EXISTS meta("
	"  key TEXT PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS jobs("
	"  id INTEGER PRIMARY KEY, name TEXT NOT NULL, spec_file TEXT NOT NULL,"
	"  spec_json TEXT NOT NULL, uid INTEGER NOT NULL, gid INTEGER NOT NULL,"
	"  groups TEXT NOT NULL, user TEXT NOT NULL, team TEXT NOT NULL,"
	"  priority INTEGER NOT NULL, state TEXT NOT NULL, held INTEGER NOT NULL,"
	"  ending INTEGER NOT NULL, reason TEXT NOT NULL, submitted_ms INTEGER NOT NULL,"
	"  started_ms INTEGER NOT NULL, ended_ms INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS specs("
	"  job_id INTEGER PRIMARY KEY, text BLOB NOT NULL);"
	"CREATE TABLE IF NOT EXISTS stages("
	"  job_id INTEGER NOT NULL, idx INTEGER NOT NULL, state TEXT NOT NULL,"
	"  expanded INTEGER NOT NULL, started_ms INTEGER NOT NULL, ended_ms INTEGER NOT NULL,"
	"  PRIMARY KEY(job_id, idx)) WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS instances("
	"  id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, stage_idx INTEGER NOT NULL,"
	"  idx INTEGER NOT NULL, item TEXT NOT NULL, state TEXT NOT NULL,"
	"  attempt INTEGER NOT NULL, failures INTEGER NOT NULL, host TEXT NOT NULL,"
	"  pid INTEGER NOT NULL, exit_code INTEGER NOT NULL, signal INTEGER NOT NULL,"
	"  reason TEXT NOT NULL, cancel_requested INTEGER NOT NULL,"
	"  assigned_ms INTEGER NOT NULL, started_ms INTEGER NOT NULL, ended_ms INTEGER NOT NULL);"
	"CREATE INDEX IF NOT EXISTS instances_job ON instances(job_id, stage_idx, idx);"
	"CREATE TABLE IF NOT EXISTS hosts("
	"  name TEXT PRIMARY KEY, cpus INTEGER NOT NULL, mem INTEGER NOT NULL,"
	"  scratch_total INTEGER NOT NULL, scratch_free INTEGER NOT NULL,"
	"  cpu_limit INTEGER NOT NULL, mem_limit INTEGER NOT NULL, features TEXT NOT NULL,"
	"  mount TEXT NOT NULL, draining INTEGER NOT NULL, registered_ms INTEGER NOT NULL);"
	"CREATE TABLE IF NOT EXISTS events("
	"  id INTEGER PRIMARY KEY, job_id INTEGER NOT NULL, ms INTEGER NOT NULL, text TEXT NOT NULL);"
	"CREATE INDEX IF NOT EXISTS events_job ON events(job_id, id);";

static const char sql_get_version[] = "SELECT value FROM meta WHERE key = 'schema_version'";
static const char sql_set_version[] =
	"INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?1)";
static const char sql_begin[] = "BEGIN IMMEDIATE";
static const char sql_commit[] = "COMMIT";
static const char sql_rollback[] = "ROLLBACK";
static const char sql_upsert_job[] =
	"INSERT INTO jobs(id, name, spec_file, spec_json, uid, gid, groups, user, team, priority,"
	"  state, held, ending, reason, submitted_ms, started_ms, ended_ms)"
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"
	" ON CONFLICT(id) DO UPDATE SET priority = ?10, state = ?11, held = ?12, ending = ?13,"
	"  reason = ?14, started_ms = ?16, ended_ms = ?17";
static const char sql_insert_spec[] = "INSERT INTO specs(job_id, text) VALUES(?1, ?2)";
static const char sql_upsert_stage[] =
	"INSERT INTO stages(job_id, idx, state, expanded, started_ms, ended_ms)"
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6)"
	" ON CONFLICT(job_id, idx) DO UPDATE SET state = ?3, expanded = ?4, started_ms = ?5,"
	"  ended_ms = ?6";
static const char sql_upsert_instance[] =
	"INSERT INTO instances(id, job_id, stage_idx, idx, item, state, attempt, failures, host,"
	"  pid, exit_code, signal, reason, cancel_requested, assigned_ms, started_ms, ended_ms)"
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)"
	" ON CONFLICT(id) DO UPDATE SET state = ?6, attempt = ?7, failures = ?8, host = ?9,"
	"  pid = ?10, exit_code = ?11, signal = ?12, reason = ?13, cancel_requested = ?14,"
	"  assigned_ms = ?15, started_ms = ?16, ended_ms = ?17";
static const char sql_upsert_host[] =
	"INSERT INTO hosts(name, cpus, mem, scratch_total, scratch_free, cpu_limit, mem_limit,"
	"  features, mount, draining, registered_ms, win_text, win_drain)"
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
	" ON CONFLICT(name) DO UPDATE SET cpus = ?2, mem = ?3, scratch_total = ?4,"
	"  scratch_free = ?5, cpu_limit = ?6, mem_limit = ?7, features = ?8, mount = ?9,"
	"  draining = ?10, registered_ms = ?11, win_text = ?12, win_drain = ?13";
static const char sql_insert_event[] = "INSERT INTO events(job_id, ms, text) VALUES(?1, ?2, ?3)";
static const char sql_load_hosts[] =
	"SELECT name, cpus, mem, scratch_total, scratch_free, cpu_limit, mem_limit, features,"
	"  mount, draining, registered_ms, win_text, win_drain FROM hosts ORDER BY rowid";
static const char sql_load_jobs[] =
	"SELECT j.id, j.name, j.spec_file, j.spec_json, j.uid, j.gid, j.groups, j.user, j.team,"
	"  j.priority, j.state, j.held, j.ending, j.reason, j.submitted_ms, j.started_ms,"
	"  j.ended_ms, s.text FROM jobs j JOIN specs s ON s.job_id = j.id ORDER BY j.id";
static const char sql_load_stages[] =
	"SELECT job_id, idx, state, expanded, started_ms, ended_ms FROM stages";
static const char sql_load_instances[] =
	"SELECT id, job_id, stage_idx, idx, item, state, attempt, failures, host, pid, exit_code,"
	"  signal, reason, cancel_requested, assigned_ms, started_ms, ended_ms"
	" FROM instances ORDER BY job_id, stage_idx, idx";
static const char sql_load_events[] = "SELECT job_id, ms, text FROM events ORDER BY id";

/* Statements prepared once at open, by index. */
enum stmt_id {
	ST_BEGIN, ST_COMMIT, ST_ROLLBACK, ST_UPSERT_JOB, ST_INSERT_SPEC, ST_UPSERT_STAGE,
	ST_UPSERT_INSTANCE, ST_UPSERT_HOST, ST_INSERT_EVENT, ST_LOAD_HOSTS, ST_LOAD_JOBS,
	ST_LOAD_STAGES, ST_LOAD_INSTANCES, ST_LOAD_EVENTS, ST_COUNT
};

static const char *const stmt_sql[ST_COUNT] = {
	[ST_BEGIN] = sql_begin,
	[ST_COMMIT] = sql_commit,
	[ST_ROLLBACK] = sql_rollback,
	[ST_UPSERT_JOB] = sql_upsert_job,
	[ST_INSERT_SPEC] = sql_insert_spec,
	[ST_UPSERT_STAGE] = sql_upsert_stage,
	[ST_UPSERT_INSTANCE] = sql_upsert_instance,
	[ST_UPSERT_HOST] = sql_upsert_host,
	[ST_INSERT_EVENT] = sql_insert_event,
	[ST_LOAD_HOSTS] = sql_load_hosts,
	[ST_LOAD_JOBS] = sql_load_jobs,
	[ST_LOAD_STAGES] = sql_load_stages,
	[ST_LOAD_INSTANCES] = sql_load_instances,
	[ST_LOAD_EVENTS] = sql_load_events,
};

struct store {
	sqlite3 *db;
	char *path;
	sqlite3_stmt *stmt[ST_COUNT];
};

/* Map a sqlite result to errno, log it with the extended code, and format *err. */
static int db_error(struct store *st, int rc, const char *what, char **err)
{
	int ext = st->db ? sqlite3_extended_errcode(st->db) : rc;
	const char *msg = st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(rc);

	switch (rc & 0xff) {
	case SQLITE_FULL:
		errno = ENOSPC;
		break;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		errno = EAGAIN;
		break;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		errno = EILSEQ;
		break;
	default:
		errno = EIO;
		break;
	}
	log_warnx("%s: %s: %s (sqlite code %d)", st->path, what, msg, ext);
	return errprintf(err, "%s: %s: %s", st->path, what, msg);
}

static int exec_simple(struct store *st, const char *sql, char **err)
{
	char *msg = NULL;
	int rc = sqlite3_exec(st->db, sql, NULL, NULL, &msg);

	sqlite3_free(msg);
	if (rc != SQLITE_OK)
		return db_error(st, rc, sql, err);
	return 0;
}

/* Run a statement that returns no rows and reset it. */
static int step_done(struct store *st, enum stmt_id id, char **err)
{
	sqlite3_stmt *s = st->stmt[id];
	int rc = sqlite3_step(s);

	if (rc != SQLITE_DONE) {
		db_error(st, rc, stmt_sql[id], err);
		sqlite3_reset(s);
		sqlite3_clear_bindings(s);
		return -1;
	}
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return 0;
}

/* A database that is damaged or not a database at all stops the start: the
 * operator decides what to do with it, parsa never overwrites it. */
static int damaged(struct store *st, int rc, char **err)
{
	int saved;

	if ((rc & 0xff) != SQLITE_NOTADB && (rc & 0xff) != SQLITE_CORRUPT)
		return db_error(st, rc, "quick_check", err);
	db_error(st, rc, "quick_check", NULL);
	saved = errno;
	errprintf(err, "%s is damaged or not an sqlite database (%s): restore it from a backup,"
		  " or move it away to start with an empty state", st->path,
		  sqlite3_errmsg(st->db));
	errno = saved;
	return -1;
}

static int quick_check(struct store *st, char **err)
{
	sqlite3_stmt *s = NULL;
	int rc, ret = -1;
	const char *result;

	rc = sqlite3_prepare_v2(st->db, "PRAGMA quick_check", -1, &s, NULL);
	if (rc != SQLITE_OK) {
		damaged(st, rc, err);
		goto out;
	}
	rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		damaged(st, rc, err);
		goto out;
	}
	result = (const char *)sqlite3_column_text(s, 0);
	if (!result || strcmp(result, "ok") != 0) {
		errno = EILSEQ;
		errprintf(err, "%s is damaged (quick_check: %s); restore it from a backup or move it"
			  " away to start with an empty state", st->path, result ? result : "?");
		goto out;
	}
	ret = 0;
out:
	sqlite3_finalize(s);
	return ret;
}

/* Read the schema version (0 for a new database) and create or migrate. */
static int store_migrate(struct store *st, char **err)
{
	sqlite3_stmt *s = NULL;
	int version = 0, rc, ret = -1;
	char buf[16];

	if (exec_simple(st, sql_schema, err) < 0)
		goto out;
	rc = sqlite3_prepare_v2(st->db, sql_get_version, -1, &s, NULL);
	if (rc != SQLITE_OK) {
		db_error(st, rc, "schema version", err);
		goto out;
	}
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		version = sqlite3_column_int(s, 0);
	else if (rc != SQLITE_DONE) {
		db_error(st, rc, "schema version", err);
		goto out;
	}
	sqlite3_finalize(s);
	s = NULL;
	if (version > SCHEMA_VERSION) {
		errno = EPROTO;
		errprintf(err, "%s has schema version %d; this parsa-sched knows %d: use a newer parsa",
			  st->path, version, SCHEMA_VERSION);
		goto out;
	}
	for (int v = version > 1 ? version : 1; v < SCHEMA_VERSION; v++) {
		char *step = xasprintf("BEGIN IMMEDIATE;%sINSERT OR REPLACE INTO meta(key, value)"
				       " VALUES('schema_version', '%d');COMMIT;", migrations[v - 1], v + 1);

		rc = exec_simple(st, step, err);
		free(step);
		if (rc < 0) {
			int saved = errno;

			if (sqlite3_get_autocommit(st->db) == 0)
				exec_simple(st, "ROLLBACK", NULL);
			errno = saved;
			goto out;
		}
		log_info("%s: schema version %d -> %d", st->path, v, v + 1);
	}
	if (version < SCHEMA_VERSION) {
		rc = sqlite3_prepare_v2(st->db, sql_set_version, -1, &s, NULL);
		if (rc != SQLITE_OK) {
			db_error(st, rc, "schema version", err);
			goto out;
		}
		snprintf(buf, sizeof buf, "%d", SCHEMA_VERSION);
		sqlite3_bind_text(s, 1, buf, -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(s);
		if (rc != SQLITE_DONE) {
			db_error(st, rc, "schema version", err);
			goto out;
		}
	}
	ret = 0;
out:
	sqlite3_finalize(s);
	return ret;
}

struct store *store_open(const char *path, char **err)
{
	struct store *st = xcalloc(1, sizeof *st);
	int rc, saved;

	st->path = xstrdup(path);
	rc = sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			     SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		db_error(st, rc, "open", err);
		goto fail;
	}
	sqlite3_extended_result_codes(st->db, 1);
	sqlite3_busy_timeout(st->db, 5000);
	if (quick_check(st, err) < 0)
		goto fail;
	/* WAL with synchronous=NORMAL: a commit survives a crash of the process
	 * (SIGKILL), which is what "acknowledged only once committed" needs, and
	 * costs no fsync per submission. */
	if (exec_simple(st, "PRAGMA journal_mode=WAL", err) < 0 ||
	    exec_simple(st, "PRAGMA synchronous=NORMAL", err) < 0 ||
	    exec_simple(st, "PRAGMA foreign_keys=OFF", err) < 0)
		goto fail;
	if (store_migrate(st, err) < 0)
		goto fail;
	for (int i = 0; i < ST_COUNT; i++) {
		rc = sqlite3_prepare_v3(st->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
					&st->stmt[i], NULL);
		if (rc != SQLITE_OK) {
			db_error(st, rc, stmt_sql[i], err);
			goto fail;
		}
	}
	return st;
fail:
	saved = errno;
	store_close(st);
	errno = saved;
	return NULL;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	if (st->db && sqlite3_close(st->db) != SQLITE_OK)
		log_warnx("%s: close: %s", st->path, sqlite3_errmsg(st->db));
	free(st->path);
	free(st);
}

static char *groups_text(const struct job *job)
{
	size_t cap = job->ngroups * 12 + 1, used = 0;
	char *text = xmalloc(cap);

	text[0] = '\0';
	for (size_t i = 0; i < job->ngroups; i++)
		used += (size_t)snprintf(text + used, cap - used, "%s%u", i ? "," : "",
					 (unsigned)job->groups[i]);
	return text;
}

static void parse_groups(struct job *job, const char *text)
{
	const char *p = text;

	job->ngroups = 0;
	free(job->groups);
	job->groups = NULL;
	if (!*p)
		return;
	job->groups = xcalloc(strlen(text) / 2 + 1, sizeof *job->groups);
	while (*p) {
		char *end;
		unsigned long g = strtoul(p, &end, 10);

		if (end == p)
			break;
		job->groups[job->ngroups++] = (gid_t)g;
		p = *end == ',' ? end + 1 : end;
	}
}

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
	groups = groups_text(job);
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
	if (step_done(st, ST_UPSERT_JOB, err) < 0)
		goto out;
	if (!job->persisted) {
		s = st->stmt[ST_INSERT_SPEC];
		sqlite3_bind_int64(s, 1, job->id);
		sqlite3_bind_blob(s, 2, job->spec_text ? job->spec_text : "", (int)job->spec_len,
				  SQLITE_STATIC);
		if (step_done(st, ST_INSERT_SPEC, err) < 0)
			goto out;
	}
	s = st->stmt[ST_INSERT_EVENT];
	for (size_t e = job->nflushed_events; e < job->nevents; e++) {
		sqlite3_bind_int64(s, 1, job->id);
		sqlite3_bind_int64(s, 2, job->events[e].ms);
		sqlite3_bind_text(s, 3, job->events[e].text, -1, SQLITE_STATIC);
		if (step_done(st, ST_INSERT_EVENT, err) < 0)
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
	return step_done(st, ST_UPSERT_STAGE, err);
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
	return step_done(st, ST_UPSERT_INSTANCE, err);
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
	ret = step_done(st, ST_UPSERT_HOST, err);
	free(text);
	json_decref(features);
	return ret;
}

static int tx_begin(struct store *st, char **err)
{
	return step_done(st, ST_BEGIN, err);
}

/* Commit; on failure roll back so that the connection is usable again. */
static int tx_end(struct store *st, int ok, char **err)
{
	if (ok && step_done(st, ST_COMMIT, err) == 0)
		return 0;
	if (sqlite3_get_autocommit(st->db) == 0) {
		int saved = errno;

		step_done(st, ST_ROLLBACK, NULL);
		errno = saved;
	}
	return -1;
}

/* A new job's rows, inside the caller's transaction. */
static int put_new_job(struct store *st, struct job *job, char **err)
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

int store_insert_job(struct store *st, struct job *job, char **err)
{
	int ok = 0;

	if (tx_begin(st, err) < 0)
		return -1;
	if (put_new_job(st, job, err) < 0)
		goto out;
	ok = 1;
out:
	if (tx_end(st, ok, err) < 0)
		return -1;
	job->persisted = true;
	job->nflushed_events = job->nevents;
	return 0;
}

int store_flush(struct store *st, struct model *m, char **err)
{
	const struct model_dirty *d = model_dirty(m);
	int ok = 0;

	if (d->njobs + d->nstages + d->ninsts + d->nhosts == 0)
		return 0;
	if (tx_begin(st, err) < 0)
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
	ok = 1;
out:
	if (tx_end(st, ok, err) < 0)
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

	if (tx_begin(st, err) < 0)
		return -1;
	rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
		rc = sqlite3_step(s);
	}
	if (rc == SQLITE_DONE)
		ok = 1;
	else
		db_error(st, rc, sql, err);
	sqlite3_finalize(s);
	return tx_end(st, ok, err);
}

static const char *col_text(sqlite3_stmt *s, int i)
{
	const char *t = (const char *)sqlite3_column_text(s, i);

	return t ? t : "";
}

/* A window that no longer parses (it did when it was stored) is dropped with
 * a warning: the runner registers it again. */
static void load_host_window(struct host *h, const char *text, bool drain)
{
	char *why = NULL;

	h->window_drain = drain;
	if (!*text)
		return;
	h->win = timewin_parse(text, &why);
	if (h->win)
		h->window = xstrdup(text);
	else
		log_warnx("host %s: stored window '%s' is not valid: %s", h->name, text, why ? why : "?");
	free(why);
}

static int load_hosts(struct store *st, struct model *m, char **err)
{
	sqlite3_stmt *s = st->stmt[ST_LOAD_HOSTS];
	int rc;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct host *h = model_add_host(m, col_text(s, 0));
		json_t *features = json_loads(col_text(s, 7), 0, NULL);
		size_t i;
		json_t *f;

		h->cpus = sqlite3_column_int(s, 1);
		h->mem = (uint64_t)sqlite3_column_int64(s, 2);
		h->scratch_total = (uint64_t)sqlite3_column_int64(s, 3);
		h->scratch_free = (uint64_t)sqlite3_column_int64(s, 4);
		h->cpu_limit = sqlite3_column_int(s, 5);
		h->mem_limit = sqlite3_column_int(s, 6);
		if (json_is_array(features)) {
			h->features = xcalloc(json_array_size(features), sizeof *h->features);
			json_array_foreach(features, i, f)
				if (json_is_string(f))
					h->features[h->nfeatures++] = xstrdup(json_string_value(f));
		}
		json_decref(features);
		free(h->mount);
		h->mount = xstrdup(col_text(s, 8));
		h->draining = sqlite3_column_int(s, 9) != 0;
		h->registered_ms = sqlite3_column_int64(s, 10);
		load_host_window(h, col_text(s, 11), sqlite3_column_int(s, 12) != 0);
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return db_error(st, rc, "load hosts", err);
	return 0;
}

/* The stored spec: its JSON form, or the text parsed again if that fails. */
static struct spec *load_spec(int64_t id, const char *spec_json, const char *text, size_t len,
			      const char *file)
{
	json_t *json = json_loads(spec_json, 0, NULL);
	struct spec *spec = NULL;
	char *msg = NULL;

	if (json && !json_is_null(json))
		spec = spec_from_json(json, &msg);
	json_decref(json);
	if (!spec) {
		free(msg);
		msg = NULL;
		spec = spec_parse(text, len, file, &msg);
	}
	if (!spec)
		log_warnx("job %lld: stored spec does not load: %s", (long long)id, msg ? msg : "?");
	free(msg);
	return spec;
}

static int load_jobs(struct store *st, struct model *m, char **err)
{
	sqlite3_stmt *s = st->stmt[ST_LOAD_JOBS];
	int rc;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(s, 0);
		const void *text = sqlite3_column_blob(s, 17);
		size_t len = (size_t)sqlite3_column_bytes(s, 17);
		struct spec *spec;
		struct job *job;
		int state;

		spec = load_spec(id, col_text(s, 3), text ? text : "", len, col_text(s, 2));
		if (!spec) {
			sqlite3_reset(s);
			errno = EILSEQ;
			return errprintf(err, "%s: job %lld: the stored spec cannot be read",
					 st->path, (long long)id);
		}
		job = model_job_new(id, spec);
		job->name = xstrdup(col_text(s, 1));
		job->spec_file = xstrdup(col_text(s, 2));
		job->spec_text = xmalloc(len + 1);
		memcpy(job->spec_text, text ? text : "", len);
		job->spec_text[len] = '\0';
		job->spec_len = len;
		job->uid = (uid_t)sqlite3_column_int64(s, 4);
		job->gid = (gid_t)sqlite3_column_int64(s, 5);
		parse_groups(job, col_text(s, 6));
		job->user = xstrdup(col_text(s, 7));
		job->team = xstrdup(col_text(s, 8));
		job->priority = sqlite3_column_int(s, 9);
		state = job_state_parse(col_text(s, 10));
		job->state = state < 0 ? JOB_FAILED : (enum job_state)state;
		job->held = sqlite3_column_int(s, 11) != 0;
		job->ending = (enum job_ending)sqlite3_column_int(s, 12);
		free(job->reason);
		job->reason = xstrdup(col_text(s, 13));
		job->submitted_ms = sqlite3_column_int64(s, 14);
		job->started_ms = sqlite3_column_int64(s, 15);
		job->ended_ms = sqlite3_column_int64(s, 16);
		job->persisted = true;
		model_add_job(m, job);
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return db_error(st, rc, "load jobs", err);
	return 0;
}

static struct stage *find_stage(struct model *m, int64_t job_id, int idx)
{
	struct job *job = model_job(m, job_id);

	if (!job || idx < 0 || (size_t)idx >= job->nstages)
		return NULL;
	return &job->stages[idx];
}

static int load_stages(struct store *st, struct model *m, char **err)
{
	sqlite3_stmt *s = st->stmt[ST_LOAD_STAGES];
	int rc;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct stage *stage = find_stage(m, sqlite3_column_int64(s, 0), sqlite3_column_int(s, 1));
		int state;

		if (!stage)
			continue;
		state = stage_state_parse(col_text(s, 2));
		stage->state = state < 0 ? STAGE_FAILED : (enum stage_state)state;
		stage->expanded = sqlite3_column_int(s, 3) != 0;
		stage->started_ms = sqlite3_column_int64(s, 4);
		stage->ended_ms = sqlite3_column_int64(s, 5);
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return db_error(st, rc, "load stages", err);
	return 0;
}

static int load_instances(struct store *st, struct model *m, char **err)
{
	sqlite3_stmt *s = st->stmt[ST_LOAD_INSTANCES];
	int rc;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct stage *stage = find_stage(m, sqlite3_column_int64(s, 1), sqlite3_column_int(s, 2));
		struct instance *inst;
		int state;

		if (!stage)
			continue;
		inst = model_stage_new_instance(stage, sqlite3_column_int64(s, 0), col_text(s, 4));
		inst->index = sqlite3_column_int(s, 3);
		state = inst_state_parse(col_text(s, 5));
		inst->attempt = sqlite3_column_int(s, 6);
		inst->failures = sqlite3_column_int(s, 7);
		free(inst->host_name);
		inst->host_name = xstrdup(col_text(s, 8));
		inst->pid = sqlite3_column_int(s, 9);
		inst->exit_code = sqlite3_column_int(s, 10);
		inst->signal = sqlite3_column_int(s, 11);
		free(inst->reason);
		inst->reason = xstrdup(col_text(s, 12));
		inst->cancel_requested = sqlite3_column_int(s, 13) != 0;
		inst->assigned_ms = sqlite3_column_int64(s, 14);
		inst->started_ms = sqlite3_column_int64(s, 15);
		inst->ended_ms = sqlite3_column_int64(s, 16);
		model_add_instance(m, inst);
		model_set_state(m, inst, state < 0 ? INST_FAILED : (enum inst_state)state);
		if (inst->state == INST_ASSIGNED || inst->state == INST_RUNNING) {
			struct host *h = model_host(m, inst->host_name);

			if (!h)
				h = model_add_host(m, inst->host_name);
			model_set_host(m, inst, h);
		}
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return db_error(st, rc, "load instances", err);
	return 0;
}

static int load_events(struct store *st, struct model *m, char **err)
{
	sqlite3_stmt *s = st->stmt[ST_LOAD_EVENTS];
	int rc;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct job *job = model_job(m, sqlite3_column_int64(s, 0));

		if (!job)
			continue;
		model_job_event(NULL, job, sqlite3_column_int64(s, 1), "%s", col_text(s, 2));
		job->nflushed_events = job->nevents;
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return db_error(st, rc, "load events", err);
	return 0;
}

int store_load(struct store *st, struct model *m, char **err)
{
	if (load_hosts(st, m, err) < 0 || load_jobs(st, m, err) < 0 ||
	    load_stages(st, m, err) < 0 || load_instances(st, m, err) < 0 ||
	    load_events(st, m, err) < 0)
		return -1;
	/* Loading went through the same setters as live changes; nothing is new. */
	model_clean(m);
	return 0;
}

/* ---- schedules (sched/schedules.c) ----
 * Rare writes (a schedule created, changed, run): statements are prepared
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
		db_error(st, rc, sql, err);
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

	if (tx_begin(st, err) < 0)
		return -1;
	ok = run_stmt(st, sql_put_schedule, bind_schedule, sc, err) == 0;
	return tx_end(st, ok, err);
}

int store_delete_schedule(struct store *st, int64_t id, char **err)
{
	int ok = 0;

	if (tx_begin(st, err) < 0)
		return -1;
	ok = run_stmt(st, "DELETE FROM schedules WHERE id = ?1", bind_id, &id, err) == 0 &&
	     run_stmt(st, "DELETE FROM schedule_runs WHERE schedule_id = ?1", bind_id, &id, err) == 0;
	return tx_end(st, ok, err);
}

int store_schedule_run(struct store *st, const struct store_schedule *sc, struct job *job,
		       const struct store_schedule_run *run, char **err)
{
	int ok = 0;

	if (tx_begin(st, err) < 0)
		return -1;
	ok = put_new_job(st, job, err) == 0 &&
	     run_stmt(st, sql_put_schedule, bind_schedule, sc, err) == 0 &&
	     run_stmt(st, sql_put_run, bind_run, run, err) == 0;
	if (tx_end(st, ok, err) < 0)
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
			.id = sqlite3_column_int64(s, 0), .name = col_text(s, 1),
			.uid = (uid_t)sqlite3_column_int64(s, 2), .gid = (gid_t)sqlite3_column_int64(s, 3),
			.groups = col_text(s, 4), .user = col_text(s, 5), .spec_file = col_text(s, 6),
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
		return db_error(st, rc, "load schedules", err);
	rc = sqlite3_prepare_v2(st->db, sql_load_runs, -1, &s, NULL);
	while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct store_schedule_run r = {
			.schedule_id = sqlite3_column_int64(s, 0), .job_id = sqlite3_column_int64(s, 1),
			.ms = sqlite3_column_int64(s, 2), .note = col_text(s, 3),
		};

		rc = SQLITE_OK;
		on_run(arg, &r);
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return db_error(st, rc, "load schedule runs", err);
	return 0;
}
