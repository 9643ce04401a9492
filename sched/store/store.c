/* The store's connection: open (integrity check, WAL, migrations to the
 * current schema, the statements prepared once) and close, and the helpers
 * every write shares. Writes, loads and schedules: store_write.c,
 * store_load.c, store_schedules.c. */
#include "store_internal.h"
#include "checkpointer.h"

#include "log.h"
#include "util.h"

#include <errno.h>
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
	/* 3: what each attempt used, as its runner measured it; hosts' GPUs. */
	"ALTER TABLE instances ADD COLUMN cpu_ms INTEGER NOT NULL DEFAULT -1;"
	"ALTER TABLE instances ADD COLUMN max_rss INTEGER NOT NULL DEFAULT -1;"
	"ALTER TABLE instances ADD COLUMN cpu_list TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE instances ADD COLUMN gpu_list TEXT NOT NULL DEFAULT '';"
	"ALTER TABLE hosts ADD COLUMN gpus INTEGER NOT NULL DEFAULT 0;",
	/* 4: the submitter's token, so a submission retried after a lost answer
	 * finds the job it committed instead of making a second one. NULL for
	 * jobs from before and for runs of schedules; NULLs are distinct. */
	"ALTER TABLE jobs ADD COLUMN token TEXT;"
	"CREATE UNIQUE INDEX jobs_token ON jobs(token);",
	/* 5: years of history (sched/store/store_history.c). Finished jobs live in
	 * memory only for keep_finished: the index finds the ones to load, the
	 * listing and the ones old enough to delete; usage per hour, team and
	 * user is what fair share and accounting read instead of every
	 * instance (filled here from the instances that ran so far). */
	"CREATE INDEX jobs_state ON jobs(state);"
	"CREATE INDEX jobs_ended ON jobs(ended_ms);"
	"CREATE INDEX jobs_uid ON jobs(uid, id);"
	"CREATE TABLE usage_hours("
	"  hour INTEGER NOT NULL, team TEXT NOT NULL, user TEXT NOT NULL,"
	"  cpu_s REAL NOT NULL, instances INTEGER NOT NULL,"
	"  PRIMARY KEY(hour, team, user)) WITHOUT ROWID;"
	"INSERT INTO usage_hours(hour, team, user, cpu_s, instances)"
	"  SELECT i.ended_ms / 3600000, j.team, j.user,"
	"    SUM(COALESCE(json_extract(j.spec_json, '$.stages[' || i.stage_idx || '].cpus'), 1)"
	"      * (i.ended_ms - i.started_ms) / 1000.0), COUNT(*)"
	"  FROM instances i JOIN jobs j ON j.id = i.job_id"
	"  WHERE i.started_ms > 0 AND i.ended_ms > i.started_ms"
	"  GROUP BY 1, 2, 3;",
	/* 6: the web page's and the CLI's questions (sched/store/records.c): jobs by
	 * user and team (newest first), by when they started; instances by when
	 * they ended. Jobs by state and by end come from step 5. */
	"CREATE INDEX jobs_user ON jobs(user, id);"
	"CREATE INDEX jobs_team ON jobs(team, id);"
	"CREATE INDEX jobs_started ON jobs(started_ms);"
	"CREATE INDEX instances_ended ON instances(ended_ms);",
	/* 7: the two indexes of times that are 0 until something started or
	 * ended hold only the times that are known: a submission writes two
	 * b-trees fewer (four WAL writes of its commit's 32). Their queries
	 * say "> 0", as the planner needs to use them. */
	"DROP INDEX jobs_started;"
	"CREATE INDEX jobs_started ON jobs(started_ms) WHERE started_ms > 0;"
	"DROP INDEX instances_ended;"
	"CREATE INDEX instances_ended ON instances(ended_ms) WHERE ended_ms > 0;",
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
/* One job of a group commit (store_group_add). */
static const char sql_savepoint[] = "SAVEPOINT job";
static const char sql_release[] = "RELEASE job";
static const char sql_rollback_to[] = "ROLLBACK TO job";
static const char sql_upsert_job[] =
	"INSERT INTO jobs(id, name, spec_file, spec_json, uid, gid, groups, user, team, priority,"
	"  state, held, ending, reason, submitted_ms, started_ms, ended_ms, token)"
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)"
	" ON CONFLICT(id) DO UPDATE SET priority = ?10, state = ?11, held = ?12, ending = ?13,"
	"  reason = ?14, started_ms = ?16, ended_ms = ?17";
static const char sql_job_by_token[] = "SELECT id, uid FROM jobs WHERE token = ?1";
static const char sql_insert_spec[] = "INSERT INTO specs(job_id, text) VALUES(?1, ?2)";
static const char sql_upsert_stage[] =
	"INSERT INTO stages(job_id, idx, state, expanded, started_ms, ended_ms)"
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6)"
	" ON CONFLICT(job_id, idx) DO UPDATE SET state = ?3, expanded = ?4, started_ms = ?5,"
	"  ended_ms = ?6";
static const char sql_upsert_instance[] =
	"INSERT INTO instances(id, job_id, stage_idx, idx, item, state, attempt, failures, host,"
	"  pid, exit_code, signal, reason, cancel_requested, assigned_ms, started_ms, ended_ms,"
	"  cpu_ms, max_rss, cpu_list, gpu_list)"
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,"
	"  ?18, ?19, ?20, ?21)"
	" ON CONFLICT(id) DO UPDATE SET state = ?6, attempt = ?7, failures = ?8, host = ?9,"
	"  pid = ?10, exit_code = ?11, signal = ?12, reason = ?13, cancel_requested = ?14,"
	"  assigned_ms = ?15, started_ms = ?16, ended_ms = ?17, cpu_ms = ?18, max_rss = ?19,"
	"  cpu_list = ?20, gpu_list = ?21";
static const char sql_upsert_host[] =
	"INSERT INTO hosts(name, cpus, mem, scratch_total, scratch_free, cpu_limit, mem_limit,"
	"  features, mount, draining, registered_ms, win_text, win_drain, gpus)"
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"
	" ON CONFLICT(name) DO UPDATE SET cpus = ?2, mem = ?3, scratch_total = ?4,"
	"  scratch_free = ?5, cpu_limit = ?6, mem_limit = ?7, features = ?8, mount = ?9,"
	"  draining = ?10, registered_ms = ?11, win_text = ?12, win_drain = ?13, gpus = ?14";
static const char sql_insert_event[] = "INSERT INTO events(job_id, ms, text) VALUES(?1, ?2, ?3)";
static const char sql_load_hosts[] =
	"SELECT name, cpus, mem, scratch_total, scratch_free, cpu_limit, mem_limit, features,"
	"  mount, draining, registered_ms, win_text, win_drain, gpus FROM hosts ORDER BY rowid";
/* The columns the loaders read (store_load.c), at start and on demand. */
#define JOB_COLUMNS \
	"SELECT j.id, j.name, j.spec_file, j.spec_json, j.uid, j.gid, j.groups, j.user, j.team," \
	"  j.priority, j.state, j.held, j.ending, j.reason, j.submitted_ms, j.started_ms," \
	"  j.ended_ms, s.text FROM jobs j JOIN specs s ON s.job_id = j.id"
#define STAGE_COLUMNS "SELECT job_id, idx, state, expanded, started_ms, ended_ms FROM stages"
#define INSTANCE_COLUMNS \
	"SELECT id, job_id, stage_idx, idx, item, state, attempt, failures, host, pid, exit_code," \
	"  signal, reason, cancel_requested, assigned_ms, started_ms, ended_ms, cpu_ms, max_rss," \
	"  cpu_list, gpu_list FROM instances"
#define EVENT_COLUMNS "SELECT job_id, ms, text FROM events"
/* The jobs the model holds: unfinished, or ended at or after ?1 (the
 * keep_finished horizon; 0 loads every job). jobs/ lists the same with the
 * list_finished horizon. */
#define UNFINISHED_OR_ENDED_SINCE "state IN ('queued', 'running') OR ended_ms >= ?1 OR ended_ms = 0"
#define RESIDENT_JOBS "SELECT id FROM jobs WHERE " UNFINISHED_OR_ENDED_SINCE
static const char sql_load_jobs[] = JOB_COLUMNS " WHERE j.id IN (" RESIDENT_JOBS ") ORDER BY j.id";
static const char sql_load_stages[] = STAGE_COLUMNS " WHERE job_id IN (" RESIDENT_JOBS ")";
static const char sql_load_instances[] =
	INSTANCE_COLUMNS " WHERE job_id IN (" RESIDENT_JOBS ") ORDER BY job_id, stage_idx, idx";
static const char sql_load_events[] = EVENT_COLUMNS " WHERE job_id IN (" RESIDENT_JOBS ") ORDER BY id";

/* One job by id (?1), loaded on demand when it is no longer resident. */
static const char sql_job_load[] = JOB_COLUMNS " WHERE j.id = ?1";
static const char sql_job_stages[] = STAGE_COLUMNS " WHERE job_id = ?1";
static const char sql_job_instances[] = INSTANCE_COLUMNS " WHERE job_id = ?1 ORDER BY stage_idx, idx";
static const char sql_job_events[] = EVENT_COLUMNS " WHERE job_id = ?1 ORDER BY id";
static const char sql_job_state[] = "SELECT state, uid FROM jobs WHERE id = ?1";
static const char sql_job_counts[] = "SELECT state, COUNT(*) FROM jobs GROUP BY state";
/* What jobs/ lists: unfinished jobs and those ended at or after ?1; ?2 a
 * uid (-1: everyone). The ids come from the indexes of state and end time
 * (the subquery): with the condition on the rows themselves, ORDER BY id made
 * sqlite read the whole table in id order, every job ever, for each ls. */
static const char sql_list_jobs[] =
	"SELECT id, uid, gid, submitted_ms, name, user, team, state FROM jobs"
	" WHERE id IN (" RESIDENT_JOBS ") AND (?2 = -1 OR uid = ?2) ORDER BY id";
static const char sql_last_job[] = "SELECT MAX(id) FROM jobs WHERE uid = ?1";
static const char sql_max_job[] = "SELECT COALESCE(MAX(id), 0) FROM jobs";
static const char sql_max_instance[] = "SELECT COALESCE(MAX(id), 0) FROM instances";
static const char sql_ended_before[] =
	"SELECT id FROM jobs WHERE state IN ('succeeded', 'failed', 'cancelled')"
	"  AND ended_ms > ?1 AND ended_ms < ?2 ORDER BY ended_ms";
static const char sql_usage_add[] =
	"INSERT INTO usage_hours(hour, team, user, cpu_s, instances) VALUES(?1, ?2, ?3, ?4, 1)"
	" ON CONFLICT(hour, team, user) DO UPDATE SET cpu_s = cpu_s + ?4,"
	"  instances = instances + 1";
static const char sql_usage_since[] =
	"SELECT hour, team, SUM(cpu_s) FROM usage_hours WHERE hour >= ?1 GROUP BY hour, team";
static const char sql_old_jobs[] =
	"SELECT id FROM jobs WHERE state IN ('succeeded', 'failed', 'cancelled')"
	"  AND ended_ms > 0 AND ended_ms < ?1 ORDER BY ended_ms LIMIT ?2";
static const char sql_delete_job[] = "DELETE FROM jobs WHERE id = ?1";
static const char sql_delete_spec[] = "DELETE FROM specs WHERE job_id = ?1";
static const char sql_delete_stages[] = "DELETE FROM stages WHERE job_id = ?1";
static const char sql_delete_instances[] = "DELETE FROM instances WHERE job_id = ?1";
static const char sql_delete_events[] = "DELETE FROM events WHERE job_id = ?1";

static const char *const stmt_sql[ST_COUNT] = {
	[ST_BEGIN] = sql_begin,
	[ST_COMMIT] = sql_commit,
	[ST_ROLLBACK] = sql_rollback,
	[ST_UPSERT_JOB] = sql_upsert_job,
	[ST_JOB_BY_TOKEN] = sql_job_by_token,
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
	[ST_SAVEPOINT] = sql_savepoint,
	[ST_RELEASE] = sql_release,
	[ST_ROLLBACK_TO] = sql_rollback_to,
	[ST_JOB_LOAD] = sql_job_load,
	[ST_JOB_STAGES] = sql_job_stages,
	[ST_JOB_INSTANCES] = sql_job_instances,
	[ST_JOB_EVENTS] = sql_job_events,
	[ST_JOB_STATE] = sql_job_state,
	[ST_JOB_COUNTS] = sql_job_counts,
	[ST_LIST_JOBS] = sql_list_jobs,
	[ST_LAST_JOB] = sql_last_job,
	[ST_MAX_JOB] = sql_max_job,
	[ST_MAX_INSTANCE] = sql_max_instance,
	[ST_ENDED_BEFORE] = sql_ended_before,
	[ST_USAGE_ADD] = sql_usage_add,
	[ST_USAGE_SINCE] = sql_usage_since,
	[ST_OLD_JOBS] = sql_old_jobs,
	[ST_DELETE_JOB] = sql_delete_job,
	[ST_DELETE_SPEC] = sql_delete_spec,
	[ST_DELETE_STAGES] = sql_delete_stages,
	[ST_DELETE_INSTANCES] = sql_delete_instances,
	[ST_DELETE_EVENTS] = sql_delete_events,
};

int store_db_error(struct store *st, int rc, const char *what, char **err)
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
		return store_db_error(st, rc, sql, err);
	return 0;
}

int store_step_done(struct store *st, enum stmt_id id, char **err)
{
	sqlite3_stmt *s = st->stmt[id];
	int rc = sqlite3_step(s);

	if (rc != SQLITE_DONE) {
		store_db_error(st, rc, stmt_sql[id], err);
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
		return store_db_error(st, rc, "quick_check", err);
	store_db_error(st, rc, "quick_check", NULL);
	saved = errno;
	errprintf(err, "%s is damaged or not an sqlite database (%s): restore it from a backup,"
		  " or move it away to start with an empty state", st->path,
		  sqlite3_errmsg(st->db));
	errno = saved;
	return -1;
}

int store_quick_check(struct store *st, char **err)
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
	if ((rc & 0xff) == SQLITE_INTERRUPT) {
		/* store_close stopped the background check: nothing to tell. */
		errno = EINTR;
		errprintf(err, "%s: quick_check interrupted", st->path);
		goto out;
	}
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

/* The schema's first page: a file that is not a database (or whose header is
 * damaged) fails here, with damaged()'s message. */
static int first_read(struct store *st, char **err)
{
	sqlite3_stmt *s = NULL;
	int rc, ret = -1;

	rc = sqlite3_prepare_v2(st->db, "SELECT count(*) FROM sqlite_schema", -1, &s, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(s);
	if (rc != SQLITE_ROW) {
		damaged(st, rc, err);
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
		store_db_error(st, rc, "schema version", err);
		goto out;
	}
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		version = sqlite3_column_int(s, 0);
	else if (rc != SQLITE_DONE) {
		store_db_error(st, rc, "schema version", err);
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
		/* A new database passes through every step too: not an upgrade. */
		if (version > 0)
			log_info("%s: schema version %d -> %d", st->path, v, v + 1);
	}
	if (version == 0)
		log_info("%s: a new database, schema version %d", st->path, SCHEMA_VERSION);
	if (version < SCHEMA_VERSION) {
		rc = sqlite3_prepare_v2(st->db, sql_set_version, -1, &s, NULL);
		if (rc != SQLITE_OK) {
			store_db_error(st, rc, "schema version", err);
			goto out;
		}
		snprintf(buf, sizeof buf, "%d", SCHEMA_VERSION);
		sqlite3_bind_text(s, 1, buf, -1, SQLITE_TRANSIENT);
		rc = sqlite3_step(s);
		if (rc != SQLITE_DONE) {
			store_db_error(st, rc, "schema version", err);
			goto out;
		}
	}
	ret = 0;
out:
	sqlite3_finalize(s);
	return ret;
}

/* A failed open: close what was made, keeping errno. NULL. */
static struct store *close_failed(struct store *st)
{
	int saved = errno;

	store_close(st);
	errno = saved;
	return NULL;
}

/* Every statement of stmt_sql, once, for the life of the connection. */
static int prepare_all(struct store *st, char **err)
{
	for (int i = 0; i < ST_COUNT; i++) {
		int rc = sqlite3_prepare_v3(st->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
					    &st->stmt[i], NULL);

		if (rc != SQLITE_OK)
			return store_db_error(st, rc, stmt_sql[i], err);
	}
	return 0;
}

struct store *store_open(const char *path, char **err)
{
	struct store *st = xcalloc(1, sizeof *st);
	int rc;

	st->path = xstrdup(path);
	rc = sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			     SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		store_db_error(st, rc, "open", err);
		goto fail;
	}
	sqlite3_extended_result_codes(st->db, 1);
	sqlite3_busy_timeout(st->db, 5000);
	if (first_read(st, err) < 0)
		goto fail;
	/* WAL with synchronous=NORMAL: a commit survives a crash of the process
	 * (SIGKILL), which is what "acknowledged only once committed" needs, and
	 * costs no fsync per submission. Statement journals in memory: on a
	 * file, two submissions in five made, unlinked and truncated one in
	 * /var/tmp. journal_size_limit=0: the first commit after the log starts
	 * over cuts the file to its own frames, so frames are appended and never
	 * written over old blocks. A frame is 24 bytes longer than a page, so
	 * such a write covers blocks partly, and every block the page cache has
	 * dropped meanwhile (memory pressure, an idle hour) is read from disk
	 * first: after 150 s idle here 500 submissions made 7,995 disk reads and
	 * ran at 499/s, against 852 reads and 1,098/s with the limit.
	 * Pages of 2 KiB (a new file's; an older file keeps its own, as sqlite
	 * changes a WAL database's page size only by a VACUUM): a submission
	 * writes one frame per b-tree it touches, thirteen, so 4 KiB pages put
	 * 53 kB in the log for a job of a few hundred bytes. Measured with 3,000
	 * held submissions: the scheduler's CPU per submission fell from 370-410
	 * to 343-356 us (1 KiB gave the same); reading many old rows costs more
	 * pages (bench/history: the history query 235 -> 304 ms, with 1 KiB
	 * 380). */
	if (exec_simple(st, "PRAGMA page_size=" STORE_PAGE_SIZE_TEXT, err) < 0 ||
	    exec_simple(st, "PRAGMA journal_mode=WAL", err) < 0 ||
	    exec_simple(st, "PRAGMA synchronous=NORMAL", err) < 0 ||
	    exec_simple(st, "PRAGMA foreign_keys=OFF", err) < 0 ||
	    exec_simple(st, "PRAGMA temp_store=MEMORY", err) < 0 ||
	    exec_simple(st, "PRAGMA journal_size_limit=0", err) < 0)
		goto fail;
	if (store_migrate(st, err) < 0 || prepare_all(st, err) < 0)
		goto fail;
	return st;
fail:
	return close_failed(st);
}

struct store *store_open_reader(const char *path, char **err)
{
	struct store *st = xcalloc(1, sizeof *st);
	int rc;

	st->path = xstrdup(path);
	rc = sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		store_db_error(st, rc, "open for reading", err);
		return close_failed(st);
	}
	sqlite3_extended_result_codes(st->db, 1);
	sqlite3_busy_timeout(st->db, 5000);
	/* The writes' statements compile too (a read-only connection refuses
	 * them only when run): one table of statements serves both. */
	return prepare_all(st, err) == 0 ? st : close_failed(st);
}

const char *store_path(const struct store *st)
{
	return st->path;
}

int store_checkpoint_in_background(struct store *st, char **err)
{
	if (st->checkpoints)
		return 0;
	st->checkpoints = checkpointer_create(st->db, st->path, err);
	return st->checkpoints ? 0 : -1;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	store_check_stop(st->check);
	checkpointer_destroy(st->checkpoints);
	for (int i = 0; i < ST_COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	if (st->db && sqlite3_close(st->db) != SQLITE_OK)
		log_warnx("%s: close: %s", st->path, sqlite3_errmsg(st->db));
	free(st->path);
	free(st);
}

int store_tx_begin(struct store *st, char **err)
{
	return store_step_done(st, ST_BEGIN, err);
}

int store_tx_end(struct store *st, int ok, char **err)
{
	if (ok && store_step_done(st, ST_COMMIT, err) == 0)
		return 0;
	if (sqlite3_get_autocommit(st->db) == 0) {
		int saved = errno;

		store_step_done(st, ST_ROLLBACK, NULL);
		errno = saved;
	}
	return -1;
}

