/* The job records (sched/store/records.h) over a real database written by the store:
 * job lists with each filter, paging and stages; cpu-hours, job counts and
 * waits per team and user, as JSON, text and CSV; the totals of /metrics;
 * and the schema step that adds its indexes. */
#include "records.h"
#include "model.h"
#include "spec.h"
#include "store.h"
#include "tap.h"
#include "util.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TAP_STATE;

static const char spec_text[] =
	"[stage a]\nrun = true\ninstances = 2\n[stage b]\nrun = true\nafter = a\n";

#define T0 1700000000000LL

struct inst_use {
	enum inst_state state;
	int64_t cpu_ms, max_rss;
};

/* A job of user/team with stage a's two instances and stage b's one used as
 * told (times relative to T0, in seconds; 0: not yet). */
static void put_job(struct store *st, int64_t id, const char *user, const char *team,
		    const char *name, enum job_state state, int sub, int start, int end,
		    const struct inst_use use[3])
{
	char *err = NULL;
	struct spec *spec = spec_parse(spec_text, sizeof spec_text - 1, "t.conf", &err);
	struct job *job = model_job_new(id, spec);
	int k = 0;

	job->name = xstrdup(name);
	job->spec_file = xstrdup("t.conf");
	job->spec_text = xstrdup(spec_text);
	job->spec_len = sizeof spec_text - 1;
	job->user = xstrdup(user);
	job->team = xstrdup(team);
	job->state = state;
	job->submitted_ms = T0 + sub * 1000LL;
	job->started_ms = start ? T0 + start * 1000LL : 0;
	job->ended_ms = end ? T0 + end * 1000LL : 0;
	for (size_t s = 0; s < job->nstages; s++) {
		struct stage *stg = &job->stages[s];

		stg->expanded = true;
		stg->state = state == JOB_SUCCEEDED ? STAGE_SUCCEEDED : state == JOB_FAILED && s == 0 ?
			     STAGE_FAILED : STAGE_QUEUED;
		for (int i = 0; i < (s == 0 ? 2 : 1); i++, k++) {
			struct instance *in = model_stage_new_instance(stg, id * 10 + k, NULL);

			in->state = use[k].state;
			stg->counts[INST_QUEUED]--;
			stg->counts[in->state]++;
			in->cpu_ms = use[k].cpu_ms;
			in->max_rss = use[k].max_rss;
			in->started_ms = job->started_ms;
			in->ended_ms = in->state >= INST_SUCCEEDED ? job->ended_ms : 0;
		}
	}
	ok(store_insert_job(st, job, &err) == 0, "job %lld written (%s)", (long long)id,
	   err ? err : "ok");
	free(err);
	model_job_free(job);
}

static json_int_t total_of(struct records *h, struct records_filter f)
{
	char *err = NULL;
	json_t *j = records_jobs(h, &f, &err);
	json_int_t n = j ? json_integer_value(json_object_get(j, "total")) : -1;

	if (!j)
		diag("records_jobs: %s", err);
	free(err);
	json_decref(j);
	return n;
}

static json_t *row_named(const json_t *usage, const char *name)
{
	const json_t *rows = json_object_get(usage, "rows");

	for (size_t i = 0; i < json_array_size(rows); i++)
		if (strcmp(json_string_value(json_object_get(json_array_get(rows, i), "name")), name) == 0)
			return json_array_get(rows, i);
	return NULL;
}

int main(void)
{
	char dir[] = "/tmp/parsa-test-records.XXXXXX", *path, *err = NULL, *text;
	static const struct inst_use done[3] = {
		{ INST_SUCCEEDED, 3600000, 100 << 20 }, { INST_SUCCEEDED, 1800000, 200 << 20 },
		{ INST_SUCCEEDED, 0, 1 << 20 } };
	static const struct inst_use failed[3] = {
		{ INST_SUCCEEDED, 360000, 5 << 20 }, { INST_FAILED, -1, -1 }, { INST_CANCELLED, -1, -1 } };
	static const struct inst_use running[3] = {
		{ INST_RUNNING, -1, -1 }, { INST_QUEUED, -1, -1 }, { INST_QUEUED, -1, -1 } };
	struct store *st;
	struct records *h;
	json_t *j, *job, *stages, *usage, *row;
	sqlite3 *db;
	sqlite3_stmt *s;

	if (!mkdtemp(dir))
		return 1;
	path = xasprintf("%s/parsa.db", dir);
	st = store_open(path, &err);
	ok(st != NULL, "the store opens (%s)", err ? err : "ok");
	if (!st)
		return done_testing();
	put_job(st, 1, "alice", "arch", "lab-pipeline", JOB_SUCCEEDED, 0, 10, 70, done);
	put_job(st, 2, "bob", "vlsi", "boom", JOB_FAILED, 1, 31, 40, failed);
	put_job(st, 3, "alice", "arch", "lab-pipeline", JOB_RUNNING, 50, 100, 0, running);
	put_job(st, 4, "carol", "arch", "sweep", JOB_QUEUED, 60, 0, 0, running);

	h = records_open(path, &err);
	ok(h != NULL, "a reader opens beside the store (%s)", err ? err : "ok");
	if (!h)
		return done_testing();

	is_int(total_of(h, (struct records_filter){ 0 }), 4, "every job");
	is_int(total_of(h, (struct records_filter){ .user = "alice" }), 2, "by user");
	is_int(total_of(h, (struct records_filter){ .team = "arch" }), 3, "by team");
	is_int(total_of(h, (struct records_filter){ .state = "failed" }), 1, "by state");
	is_int(total_of(h, (struct records_filter){ .name = "pipe" }), 2, "by a part of the name");
	is_int(total_of(h, (struct records_filter){ .since_ms = T0 + 50000 }), 2, "submitted since");
	is_int(total_of(h, (struct records_filter){ .until_ms = T0 + 50000 }), 2, "submitted before");
	is_int(total_of(h, (struct records_filter){ .finished = true }), 2, "finished only");
	is_int(total_of(h, (struct records_filter){ .recent = true, .since_ms = T0 + 50000 }), 3,
	       "recent: the unfinished and those ended since (not job 2, ended before)");
	is_int(total_of(h, (struct records_filter){ .user = "alice", .state = "running" }), 1,
	       "filters combine");
	j = records_jobs(h, &(struct records_filter){ .recent = true, .since_ms = T0 + 50000 }, &err);
	{
		json_t *list = json_object_get(j, "jobs");

		ok(json_array_size(list) == 3 &&
		   json_integer_value(json_object_get(json_array_get(list, 0), "id")) == 4 &&
		   json_integer_value(json_object_get(json_array_get(list, 1), "id")) == 3 &&
		   json_integer_value(json_object_get(json_array_get(list, 2), "id")) == 1,
		   "the recent ones listed newest first: 4, 3, 1");
	}
	json_decref(j);

	j = records_jobs(h, &(struct records_filter){ .limit = 1, .offset = 1 }, &err);
	is_int(json_array_size(json_object_get(j, "jobs")), 1, "a page of one");
	is_int(json_integer_value(json_object_get(json_array_get(json_object_get(j, "jobs"), 0), "id")), 3,
	       "newest first: the second page is job 3");
	json_decref(j);

	j = records_jobs(h, &(struct records_filter){ .stages = true, .state = "succeeded" }, &err);
	job = json_array_get(json_object_get(j, "jobs"), 0);
	is_int(json_integer_value(json_object_get(job, "cpu_ms")), 5400000, "a job's cpu time is its instances'");
	is_int(json_integer_value(json_object_get(job, "max_rss")), 200 << 20, "its peak memory their largest");
	is_int(json_integer_value(json_object_get(job, "wait_ms")), 10000, "its wait");
	is_int(json_integer_value(json_object_get(job, "run_ms")), 60000, "its run time");
	is_int(json_integer_value(json_object_get(job, "instances")), 3, "its instances");
	stages = json_object_get(job, "stages");
	is_int(json_array_size(stages), 2, "its stages");
	is_str(json_string_value(json_object_get(json_array_get(stages, 1), "name")), "b", "named from the spec");
	is_str(json_string_value(json_object_get(json_array_get(stages, 0), "state")), "succeeded",
	       "with their states");
	is_int(json_integer_value(json_object_get(json_object_get(json_array_get(stages, 0), "counts"),
						  "succeeded")), 2, "and their instance counts");
	json_decref(j);
	j = records_jobs(h, &(struct records_filter){ .stages = true, .state = "running" }, &err);
	stages = json_object_get(json_array_get(json_object_get(j, "jobs"), 0), "stages");
	is_int(json_integer_value(json_object_get(json_object_get(json_array_get(stages, 0), "counts"),
						  "running")), 1, "a running instance counts as running");
	json_decref(j);

	usage = records_usage(h, "team", 0, 0, "day", &err);
	ok(usage != NULL, "usage by team (%s)", err ? err : "ok");
	row = row_named(usage, "arch");
	ok(row && json_real_value(json_object_get(row, "cpu_hours")) > 1.4999 &&
	   json_real_value(json_object_get(row, "cpu_hours")) < 1.5001, "arch used 1.5 cpu-hours");
	is_int(json_integer_value(json_object_get(row, "jobs")), 1, "one arch job ended");
	is_int(json_integer_value(json_object_get(row, "succeeded")), 1, "it succeeded");
	ok(json_real_value(json_object_get(row, "wait_median_s")) == 10.0, "arch's median wait (10 s of 10, 50)");
	ok(json_real_value(json_object_get(row, "wait_p90_s")) == 50.0, "arch's p90 wait");
	row = row_named(usage, "vlsi");
	is_int(json_integer_value(json_object_get(row, "failed")), 1, "vlsi's job failed");
	row = json_object_get(usage, "total");
	is_int(json_integer_value(json_object_get(row, "jobs")), 2, "two jobs ended in all");
	is_int(json_array_size(json_object_get(json_object_get(usage, "periods"), "day")), 2,
	       "one day's row per team");
	ok(json_object_get(json_object_get(usage, "periods"), "week") == NULL, "only the period asked");
	text = records_usage_csv(usage);
	ok(strstr(text, "team,cpu_hours,jobs,succeeded,failed,cancelled,wait_median_s,wait_p90_s\n") == text,
	   "CSV header");
	ok(strstr(text, "\narch,1.500,1,1,0,0,10.0,50.0\n") != NULL, "CSV line of arch");
	ok(strstr(text, "\nvlsi,0.100,1,0,1,0,30.0,30.0\n") != NULL, "CSV line of vlsi");
	free(text);
	text = records_usage_text(usage);
	ok(strstr(text, "arch                  1.500      1         1      0         0         10s       50s\n") != NULL,
	   "text line of arch");
	ok(strstr(text, "total                 1.600      2") != NULL, "and the total");
	free(text);
	json_decref(usage);
	usage = records_usage(h, "user", T0 + 60000, 0, NULL, &err);
	row = row_named(usage, "alice");
	ok(row && json_integer_value(json_object_get(row, "jobs")) == 1, "by user, since a time");
	ok(row_named(usage, "bob") == NULL, "bob's job ended before it");
	json_decref(usage);

	j = records_totals(h, true, &err);
	is_int(json_integer_value(json_object_get(json_object_get(j, "jobs"), "queued")), 1, "jobs queued");
	is_int(json_integer_value(json_object_get(json_object_get(j, "jobs"), "running")), 1, "jobs running");
	is_int(json_integer_value(json_object_get(json_object_get(j, "instances"), "queued")), 4,
	       "instances queued");
	is_int(json_integer_value(json_object_get(j, "submissions")), 4, "submissions");
	ok(json_real_value(json_object_get(json_object_get(j, "team_cpu_seconds"), "arch")) == 5400.0,
	   "arch's cpu seconds");
	json_decref(j);
	j = records_totals(h, false, &err);
	ok(json_object_size(json_object_get(j, "instances")) == 0, "the cheap totals leave instances out");
	json_decref(j);

	ok(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK, "the database opens");
	ok(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN"
			       " ('jobs_user', 'jobs_team', 'jobs_state', 'jobs_started', 'jobs_ended', 'instances_ended')",
			      -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW,
	   "the indexes can be listed");
	is_int(sqlite3_column_int(s, 0), 6, "the history's indexes exist");
	sqlite3_finalize(s);
	sqlite3_close(db);

	records_close(h);
	store_close(st);
	free(err);
	unlink(path);
	free(path);
	path = xasprintf("rm -rf %s", dir);
	if (system(path) != 0)
		diag("cannot remove %s", dir);
	free(path);
	return done_testing();
}
