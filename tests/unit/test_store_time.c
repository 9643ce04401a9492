/* The store's parts for time: a version-1 database is migrated (hosts get
 * their window), host windows survive a reload, and schedules and their runs
 * are written, read back and deleted; a run commits its job with it. */
#include "model.h"
#include "spec.h"
#include "store.h"
#include "tap.h"
#include "timewin.h"
#include "util.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

TAP_STATE;

struct seen {
	int schedules, runs;
	char name[64];
	int64_t next_ms, job;
	bool paused;
	char spec[64];
};

static void on_schedule(void *arg, const struct store_schedule *sc)
{
	struct seen *s = arg;

	s->schedules++;
	snprintf(s->name, sizeof s->name, "%s", sc->name);
	snprintf(s->spec, sizeof s->spec, "%.*s", (int)sc->spec_len, sc->spec);
	s->next_ms = sc->next_ms;
	s->paused = sc->paused;
}

static void on_run(void *arg, const struct store_schedule_run *r)
{
	struct seen *s = arg;

	s->runs++;
	s->job = r->job_id;
}

static struct store *reopen(struct store *st, const char *path, struct model **m)
{
	char *err = NULL;

	store_close(st);
	model_destroy(*m);
	*m = model_create();
	st = store_open(path, &err);
	ok(st != NULL, "the database opens (%s)", err ? err : "ok");
	if (st && store_load(st, *m, 0, &err) < 0)
		ok(0, "load: %s", err);
	free(err);
	return st;
}

int main(void)
{
	char dir[] = "/tmp/parsa-test-store-time.XXXXXX", path[512], *err = NULL;
	const char *spec_text = "[job]\nevery = 1h\n[stage a]\nrun = true\n";
	struct model *m = model_create();
	struct store *st = NULL;
	struct host *h;
	struct spec *spec;
	struct job *job;
	struct seen seen = { 0 };
	sqlite3 *db;

	if (!mkdtemp(dir))
		return ok(0, "mkdtemp"), done_testing();
	snprintf(path, sizeof path, "%s/parsa.db", dir);

	/* A database as version 1 left it, with one host. */
	ok(sqlite3_open(path, &db) == SQLITE_OK, "a version-1 database");
	ok(sqlite3_exec(db,
			"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
			"INSERT INTO meta VALUES('schema_version', '1');"
			"CREATE TABLE hosts(name TEXT PRIMARY KEY, cpus INTEGER NOT NULL, mem INTEGER NOT NULL,"
			"  scratch_total INTEGER NOT NULL, scratch_free INTEGER NOT NULL,"
			"  cpu_limit INTEGER NOT NULL, mem_limit INTEGER NOT NULL, features TEXT NOT NULL,"
			"  mount TEXT NOT NULL, draining INTEGER NOT NULL, registered_ms INTEGER NOT NULL);"
			"INSERT INTO hosts VALUES('old', 4, 0, 0, 0, 90, 90, '[]', '/parsa', 0, 1);",
			NULL, NULL, NULL) == SQLITE_OK, "with a host row");
	sqlite3_close(db);

	st = reopen(NULL, path, &m);
	if (!st)
		return done_testing();
	h = model_host(m, "old");
	ok(h && !h->window && !h->win, "the old host is there, without a window");
	ok(sqlite3_open(path, &db) == SQLITE_OK, "look at the version");
	{
		sqlite3_stmt *s = NULL;

		sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &s, NULL);
		ok(s && sqlite3_step(s) == SQLITE_ROW && strcmp((const char *)sqlite3_column_text(s, 0), "7") == 0,
		   "the database is at the newest version (7)");
		sqlite3_finalize(s);
		s = NULL;
		/* Version 7: the indexes of start and end times leave out the 0s. */
		sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND"
				   " ((name = 'jobs_started' AND sql LIKE '%WHERE started_ms > 0')"
				   " OR (name = 'instances_ended' AND sql LIKE '%WHERE ended_ms > 0'))", -1, &s, NULL);
		ok(s && sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) == 2,
		   "jobs_started and instances_ended hold only known times");
		sqlite3_finalize(s);
		s = NULL;
		sqlite3_prepare_v2(db, "EXPLAIN QUERY PLAN SELECT count(*) FROM instances i"
				   " WHERE i.cpu_ms > 0 AND i.ended_ms > 0 AND i.ended_ms >= 5", -1, &s, NULL);
		{
			bool used = false;

			while (s && sqlite3_step(s) == SQLITE_ROW)
				used = used || strstr((const char *)sqlite3_column_text(s, 3), "instances_ended");
			ok(used, "and a query of ended instances that says '> 0' uses its index");
		}
		sqlite3_finalize(s);
		s = NULL;
		/* Version 4: jobs carry their submission's token, one job a token. */
		ok(sqlite3_prepare_v2(db, "SELECT token FROM jobs", -1, &s, NULL) == SQLITE_OK,
		   "jobs have a token column");
		sqlite3_finalize(s);
		s = NULL;
		sqlite3_prepare_v2(db, "SELECT \"unique\" FROM pragma_index_list('jobs') WHERE name = 'jobs_token'",
				   -1, &s, NULL);
		ok(s && sqlite3_step(s) == SQLITE_ROW && sqlite3_column_int(s, 0) == 1,
		   "with a UNIQUE index");
		sqlite3_finalize(s);
		sqlite3_close(db);
	}

	/* A host's window survives a reload. */
	h->window = xstrdup("mon-fri 20:00-08:00");
	h->win = timewin_parse(h->window, NULL);
	h->window_drain = true;
	model_dirty_host(m, h);
	ok(store_flush(st, m, &err) == 0, "the window is written");
	st = reopen(st, path, &m);
	h = model_host(m, "old");
	ok(h && h->window && strcmp(h->window, "mon-fri 20:00-08:00") == 0 && h->win && h->window_drain,
	   "the window and drain-at-window-end come back");

	/* A schedule, a run with its job, and the reload. */
	{
		struct store_schedule sc = {
			.id = 1, .name = "hourly", .uid = 1001, .gid = 1001, .groups = "1001,27",
			.user = "alice", .spec_file = "hourly.conf", .spec = spec_text,
			.spec_len = strlen(spec_text), .paused = false, .anchor_ms = 1000,
			.next_ms = 3601000, .created_ms = 1000,
		};
		struct store_schedule_run run = { .schedule_id = 1, .job_id = 1, .ms = 3601000, .note = "" };

		ok(store_put_schedule(st, &sc, &err) == 0, "a schedule is written");
		spec = spec_parse(spec_text, strlen(spec_text), "hourly.conf", &err);
		job = model_job_new(1, spec);
		job->name = xstrdup("hourly");
		job->spec_file = xstrdup("hourly.conf");
		job->spec_text = xstrdup(spec_text);
		job->spec_len = strlen(spec_text);
		job->user = xstrdup("alice");
		job->team = xstrdup("arch");
		job->groups = xcalloc(1, sizeof *job->groups);
		model_stage_new_instance(&job->stages[0], 1, "");
		job->stages[0].expanded = true;
		sc.next_ms = 7201000;
		ok(store_schedule_run(st, &sc, job, &run, &err) == 0, "a run commits its job and the next time");
		ok(job->persisted, "the job is persisted");
		model_add_job(m, job);
	}
	st = reopen(st, path, &m);
	ok(model_job(m, 1) != NULL, "the run's job is there after a reload");
	ok(store_load_schedules(st, on_schedule, on_run, &seen, &err) == 0, "schedules load");
	ok(seen.schedules == 1 && strcmp(seen.name, "hourly") == 0 && seen.next_ms == 7201000 &&
	   strcmp(seen.spec, spec_text) == 0 && !seen.paused, "the schedule comes back with its next run");
	ok(seen.runs == 1 && seen.job == 1, "and its run");
	ok(store_delete_schedule(st, 1, &err) == 0, "a schedule is deleted");
	memset(&seen, 0, sizeof seen);
	ok(store_load_schedules(st, on_schedule, on_run, &seen, &err) == 0 && seen.schedules == 0 &&
	   seen.runs == 0, "with its runs");
	ok(model_job(m, 1) != NULL, "its jobs stay");

	store_close(st);
	model_destroy(m);
	free(err);
	snprintf(path, sizeof path, "rm -rf '%s'", dir);
	if (system(path) != 0)
		diag("cannot remove %s", dir);
	return done_testing();
}
