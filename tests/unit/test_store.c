/* The store on a real temporary sqlite file: a job inserted and changed, read
 * back after closing and reopening; hosts and events; a file that is not a
 * database refused; one damaged inside opened, and found by quick_check. */
#include "model.h"
#include "store.h"
#include "store_internal.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

static const char spec_text[] =
	"[job]\nname = lab\npriority = 3\n\n"
	"[stage warm]\nrun = echo warm\ncpus = 2\nmem = 1G\ninstances = 2\n\n"
	"[stage timing]\nafter = warm\nforeach = warm/*\nrun = echo $PARSA_ITEM\nretries = 2\n";

static struct job *make_job(struct model *m)
{
	char *err = NULL;
	struct spec *spec = spec_parse(spec_text, strlen(spec_text), "lab.conf", &err);
	struct job *job;
	int64_t next;
	static const gid_t groups[] = { 1001, 27 };

	if (!spec) {
		diag("spec: %s", err ? err : "?");
		free(err);
		return NULL;
	}
	job = model_job_new(model_next_job_id(m), spec);
	job->name = xstrdup("lab");
	job->spec_file = xstrdup("lab.conf");
	job->spec_len = strlen(spec_text);
	job->spec_text = xstrdup(spec_text);
	job->uid = 1001;
	job->gid = 1001;
	job->ngroups = 2;
	job->groups = xcalloc(2, sizeof *job->groups);
	memcpy(job->groups, groups, sizeof groups);
	job->user = xstrdup("alice");
	job->team = xstrdup("arch");
	job->priority = 3;
	job->submitted_ms = 1796000000000;
	next = model_next_instance_id(m);
	for (int i = 0; i < job->stages[0].spec->instances; i++)
		model_stage_new_instance(&job->stages[0], next++, "");
	job->stages[0].expanded = true;
	model_job_event(NULL, job, job->submitted_ms, "submitted by alice (lab.conf)");
	return job;
}

static void unlink_db(const char *path)
{
	char *p;

	unlink(path);
	p = xasprintf("%s-wal", path);
	unlink(p);
	free(p);
	p = xasprintf("%s-shm", path);
	unlink(p);
	free(p);
}

/* The end of a test on its own database: the model, the store and its files,
 * the path and the error text go. */
static void end_db_test(struct model *m, struct store *st, char *path, char *err)
{
	model_destroy(m);
	store_close(st);
	unlink_db(path);
	free(path);
	free(err);
}

/* One statement on its own connection: its first column, 0 for one that
 * returns no row, -1 when it fails. */
static int run_sql(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int n = -1, rc;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, sql, -1, &s, NULL) == SQLITE_OK) {
		rc = sqlite3_step(s);
		n = rc == SQLITE_ROW ? sqlite3_column_int(s, 0) : rc == SQLITE_DONE ? 0 : -1;
	}
	sqlite3_finalize(s);
	sqlite3_close(db);
	return n;
}

static off_t file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* Once the log has been copied into the database, the next commit starts it
 * over and cuts the file to what that commit wrote: frames are then always
 * appended, never written over old blocks that memory pressure may have
 * dropped from the page cache (each such write waits for a disk read). */
static void test_log_shrinks_after_copy(const char *dir)
{
	char *path = xasprintf("%s/shrink.db", dir), *wal = xasprintf("%s-wal", path), *err = NULL;
	struct store *st = store_open(path, &err);
	struct model *m = model_create();
	struct job *job;
	off_t grown, after;

	ok(st && store_load(st, m, 0, &err) == 0, "a database for the log (%s)", err ? err : "");
	if (!st)
		goto out;
	/* Copies only when this test says so. */
	sqlite3_wal_autocheckpoint(st->db, 0);
	for (int i = 0; i < 100; i++) {
		job = make_job(m);
		if (!job || store_insert_job(st, job, &err) < 0)
			break;
		model_add_job(m, job);
	}
	grown = file_size(wal);
	ok(grown > 1 << 20, "100 commits grow the log past 1 MB (%lld bytes)", (long long)grown);
	is_int(run_sql(path, "PRAGMA wal_checkpoint(PASSIVE)"), 0, "a copy of the whole log");
	job = make_job(m);
	ok(job && store_insert_job(st, job, &err) == 0, "the next commit (%s)", err ? err : "");
	if (job)
		model_add_job(m, job);
	after = file_size(wal);
	ok(after > 0 && after < grown / 10, "cuts the log to its own frames (%lld bytes)",
	   (long long)after);
out:
	free(wal);
	end_db_test(m, st, path, err);
}

static int collect_id(void *arg, const struct store_job_row *row)
{
	int64_t *ids = arg;

	for (int i = 0; i < 4; i++)
		if (!ids[i]) {
			ids[i] = row->id;
			break;
		}
	return 0;
}

/* jobs/ lists the unfinished jobs and those ended since a horizon, found
 * through the indexes of state and end time: not by reading every job ever
 * (bench/history, 100,000 jobs: ls jobs/ took 50-110 ms with the full scan,
 * 17 ms without). */
static void test_list_from_indexes(const char *dir)
{
	char *path = xasprintf("%s/list.db", dir), *err = NULL;
	struct store *st = store_open(path, &err);
	struct model *m = model_create();
	sqlite3_stmt *plan = NULL;
	int64_t ids[4] = { 0 };
	bool scans = false;
	struct job *job[3];
	int made = 0;

	ok(st && store_load(st, m, 0, &err) == 0, "a database for jobs/ (%s)", err ? err : "");
	if (!st)
		goto out;
	for (; made < 3; made++) {
		job[made] = make_job(m);
		if (!job[made])
			break;
		if (store_insert_job(st, job[made], &err) < 0) {
			model_job_free(job[made]);
			break;
		}
		model_add_job(m, job[made]);
	}
	is_int(made, 3, "three jobs in the database (%s)", err ? err : "");
	if (made < 3)
		goto out;
	/* 1 ended long ago, 2 a moment ago, 3 still waits. */
	job[0]->state = JOB_SUCCEEDED;
	job[0]->ended_ms = 1000;
	model_dirty_job(m, job[0]);
	job[1]->state = JOB_FAILED;
	job[1]->ended_ms = 9000;
	model_dirty_job(m, job[1]);
	ok(store_flush(st, m, &err) == 0, "two of three jobs end (%s)", err ? err : "");
	ok(store_list_jobs(st, 5000, -1, collect_id, ids, &err) == 0, "jobs/ is listed (%s)",
	   err ? err : "");
	ok(ids[0] == job[1]->id && ids[1] == job[2]->id && ids[2] == 0,
	   "the one ended since the horizon and the unfinished one, in order (%lld %lld %lld)",
	   (long long)ids[0], (long long)ids[1], (long long)ids[2]);
	{
		char *sql = xasprintf("EXPLAIN QUERY PLAN %s", sqlite3_sql(st->stmt[ST_LIST_JOBS]));

		plan = NULL;
		sqlite3_prepare_v2(st->db, sql, -1, &plan, NULL);
		while (plan && sqlite3_step(plan) == SQLITE_ROW) {
			const char *detail = (const char *)sqlite3_column_text(plan, 3);

			diag("%s", detail);
			scans = scans || strncmp(detail, "SCAN", 4) == 0;
		}
		ok(plan && !scans, "the listing reads no table from end to end");
		sqlite3_finalize(plan);
		free(sql);
	}
out:
	end_db_test(m, st, path, err);
}

/* A new database gets small pages (a submission's frames in the log are a
 * page each); a file made with sqlite's default keeps its 4 KiB pages and
 * takes the schema all the same. */
static void test_page_size(const char *dir)
{
	char *fresh = xasprintf("%s/fresh.db", dir), *older = xasprintf("%s/older.db", dir);
	char *err = NULL;
	struct store *st;
	struct model *m = model_create();
	sqlite3 *db = NULL;

	st = store_open(fresh, &err);
	ok(st != NULL, "a new database opens (%s)", err ? err : "");
	is_int(run_sql(fresh, "PRAGMA page_size"), STORE_PAGE_SIZE, "with pages of %d bytes",
	       STORE_PAGE_SIZE);
	store_close(st);
	ok(sqlite3_open(older, &db) == SQLITE_OK &&
	   sqlite3_exec(db, "PRAGMA page_size=4096; PRAGMA journal_mode=WAL; "
			"CREATE TABLE t(x); DROP TABLE t;", NULL, NULL, NULL) == SQLITE_OK,
	   "a database of 4 KiB pages");
	sqlite3_close(db);
	free(err);
	err = NULL;
	st = store_open(older, &err);
	ok(st && store_load(st, m, 0, &err) == 0, "opens and loads (%s)", err ? err : "");
	is_int(run_sql(older, "PRAGMA page_size"), 4096, "and keeps its pages");
	store_close(st);
	model_destroy(m);
	unlink_db(fresh);
	unlink_db(older);
	free(fresh);
	free(older);
	free(err);
}

/* A group of one job is written without a savepoint: when its rows are
 * refused halfway (here its spec's row is taken: the jobs row went in), none stays,
 * the refusal is the job's own, and the store takes the next group. */
static void test_lone_job_refused(const char *dir)
{
	char *path = xasprintf("%s/group.db", dir), *err = NULL;
	struct store *st = store_open(path, &err);
	struct model *m = model_create();
	struct job *first, *second, *third;

	ok(st && store_load(st, m, 0, &err) == 0, "a group database (%s)", err ? err : "");
	first = make_job(m);
	if (!st || !first)
		goto out;
	ok(store_group_begin(st, &err) == 0 && store_group_add(st, first, true, &err) == 0 &&
	   store_group_end(st, true, &first, 1, &err) == 0, "a lone job commits");
	ok(first->persisted, "and is persisted");
	model_add_job(m, first);

	second = make_job(m);
	is_int(run_sql(path, "INSERT INTO specs(job_id, text) VALUES(2, 'in the way')"), 0,
	       "a spec row in the second job's way");
	ok(store_group_begin(st, &err) == 0, "a second group opens");
	ok(store_group_add(st, second, true, &err) < 0, "a lone job whose spec row is taken is refused");
	ok(err != NULL, "with a reason: %s", err ? err : "");
	ok(store_group_end(st, true, NULL, 0, &err) == 0, "the group ends without an error of its own");
	is_int(run_sql(path, "SELECT count(*) FROM jobs WHERE id = 2"), 0, "its jobs row did not stay");
	is_int(run_sql(path, "DELETE FROM specs WHERE job_id = 2"), 0, "the row in the way goes");
	model_job_free(second);
	free(err);
	err = NULL;

	third = make_job(m);
	ok(store_group_begin(st, &err) == 0 && store_group_add(st, third, true, &err) == 0 &&
	   store_group_end(st, true, &third, 1, &err) == 0, "the next lone job commits (%s)",
	   err ? err : "");
	is_int(run_sql(path, "SELECT count(*) FROM jobs"), 2, "two jobs in the database");
	model_add_job(m, third);
out:
	end_db_test(m, st, path, err);
}

/* A store whose file is damaged past its first pages opens (the whole file's
 * check runs after the start: store_check_in_background), and quick_check
 * then says so, naming the file; the background check stops at close. */
static void test_damaged_inside(const char *dir)
{
	char *path = xasprintf("%s/inside.db", dir), *err = NULL;
	struct store *st;
	sqlite3 *db;
	int fd;

	st = store_open(path, &err);
	ok(st != NULL, "a new store opens: %s", err ? err : "");
	store_close(st);
	/* Enough rows in a table of its own for many pages, back in the file. */
	sqlite3_open(path, &db);
	sqlite3_exec(db, "PRAGMA journal_mode=DELETE; CREATE TABLE filler(x TEXT);"
			 "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 4000)"
			 " INSERT INTO filler SELECT printf('%0200d', i) FROM n;", NULL, NULL, NULL);
	sqlite3_close(db);
	fd = open(path, O_WRONLY);
	/* The middle of the filler's pages: far from page 1 and the schema. */
	for (off_t off = 100 * 4096; off < 110 * 4096; off += 512)
		if (pwrite(fd, "garbage garbage garbage garbage garbage garbage", 47, off) != 47)
			break;
	close(fd);
	free(err);
	err = NULL;
	st = store_open(path, &err);
	ok(st != NULL, "a file damaged inside opens: %s", err ? err : "");
	if (st) {
		ok(store_quick_check(st, &err) < 0, "quick_check finds the damage");
		ok(err && strstr(err, "inside.db") && strstr(err, "damaged"), "naming the file: %s",
		   err ? err : "");
		free(err);
		err = NULL;
		ok(store_check_in_background(st, &err) == 0, "the background check starts");
	}
	/* At once: the check is interrupted or done, its thread joined and its
	 * connection closed (under ASan a leak or a race shows here). */
	store_close(st);
	free(err);
	unlink_db(path);
	free(path);
}

int main(void)
{
	char dir[] = "/tmp/parsa-test-store.XXXXXX";
	char *path, *err = NULL;
	struct store *st;
	struct model *m;
	struct job *job;
	struct host *h;
	struct instance *inst;
	int fd;

	if (!mkdtemp(dir))
		return 1;
	path = xasprintf("%s/parsa.db", dir);

	st = store_open(path, &err);
	ok(st != NULL, "a new database opens (%s)", err ? err : "");
	m = model_create();
	ok(store_load(st, m, 0, &err) == 0, "an empty database loads");
	is_int(model_njobs(m), 1, "no jobs (slot 0 is never used)");

	job = make_job(m);
	ok(job != NULL, "a job object");
	if (!job)
		return done_testing();
	ok(store_insert_job(st, job, &err) == 0, "insert job");
	model_add_job(m, job);
	ok(job->persisted, "persisted");

	/* Change things the way the engine does and flush. */
	h = model_add_host(m, "h1");
	h->cpus = 4;
	h->mem = 8ULL << 30;
	h->scratch_total = h->scratch_free = 100ULL << 30;
	h->cpu_limit = 80;
	model_dirty_host(m, h);
	inst = job->stages[0].inst[1];
	inst->attempt = 1;
	model_set_state(m, inst, INST_ASSIGNED);
	model_set_host(m, inst, h);
	model_set_state(m, inst, INST_RUNNING);
	inst->pid = 4242;
	inst->started_ms = 1796000000100;
	job->stages[0].state = STAGE_RUNNING;
	model_dirty_stage(m, &job->stages[0]);
	job->state = JOB_RUNNING;
	job->started_ms = 1796000000100;
	model_job_event(m, job, 1796000000100, "stage warm instance 1 started on h1 (pid 4242)");
	is_int(h->reserved_cpus, 2, "the running instance reserves 2 cpus");
	ok(store_flush(st, m, &err) == 0, "flush (%s)", err ? err : "");
	ok(!inst->dirty && !job->dirty && !h->dirty, "clean after the flush");
	ok(store_flush(st, m, &err) == 0, "an empty flush is fine");
	model_destroy(m);
	store_close(st);

	/* Reopen: the same state comes back. */
	st = store_open(path, &err);
	ok(st != NULL, "reopen");
	m = model_create();
	ok(store_load(st, m, 0, &err) == 0, "load (%s)", err ? err : "");
	job = model_job(m, 1);
	ok(job != NULL, "job 1 is back");
	if (!job)
		return done_testing();
	is_str(job->name, "lab", "name");
	is_str(job->user, "alice", "user");
	is_str(job->team, "arch", "team");
	is_int(job->uid, 1001, "uid");
	is_int(job->ngroups, 2, "two groups");
	is_int(job->groups[1], 27, "second group");
	is_int(job->priority, 3, "priority");
	is_int(job->state, JOB_RUNNING, "state");
	is_int(job->spec_len, strlen(spec_text), "spec length");
	ok(memcmp(job->spec_text, spec_text, job->spec_len) == 0, "spec text byte for byte");
	is_int(job->nstages, 2, "two stages");
	is_str(job->stages[1].spec->foreach_stage, "warm", "the spec came back (foreach)");
	is_int(job->stages[1].spec->retries, 2, "retries");
	is_int(job->stages[0].state, STAGE_RUNNING, "stage state");
	ok(job->stages[0].expanded && !job->stages[1].expanded, "expanded flags");
	is_int(job->stages[0].ninst, 2, "two instances");
	is_int(job->stages[0].counts[INST_RUNNING], 1, "one running");
	is_int(job->stages[0].counts[INST_QUEUED], 1, "one queued");
	inst = model_instance(m, 2);
	ok(inst && inst->state == INST_RUNNING && inst->pid == 4242, "instance 2 runs with its pid");
	h = model_host(m, "h1");
	ok(h && h->cpus == 4 && h->cpu_limit == 80, "host h1 is back");
	ok(h && inst && inst->host == h && h->reserved_cpus == 2, "its reservation is rebuilt");
	is_int(job->nevents, 2, "two events");
	is_str(job->events[1].text, "stage warm instance 1 started on h1 (pid 4242)", "event text");
	is_int(model_nactive(m), 1, "the job is active");
	is_int(model_next_job_id(m), 2, "next job id");
	is_int(model_next_instance_id(m), 3, "next instance id");
	model_destroy(m);
	store_close(st);

	/* A file that is not a database is refused with a clear message. */
	unlink_db(path);
	free(path);
	path = xasprintf("%s/junk.db", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	for (int i = 0; i < 64; i++)
		if (write(fd, "this is not an sqlite database at all.....\n", 44) != 44)
			break;
	close(fd);
	free(err);
	err = NULL;
	st = store_open(path, &err);
	ok(st == NULL, "a file that is not a database is refused");
	ok(err && strstr(err, "junk.db"), "the message names the file: %s", err ? err : "");
	store_close(st);
	unlink_db(path);
	free(path);
	test_damaged_inside(dir);
	test_lone_job_refused(dir);
	test_log_shrinks_after_copy(dir);
	test_page_size(dir);
	test_list_from_indexes(dir);
	free(err);
	rmdir(dir);
	return done_testing();
}
