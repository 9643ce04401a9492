#include "records.h"

#include "log.h"
#include "units.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The filters of records_jobs, each a condition on its own parameter. A
 * list's statement holds only the conditions its filter uses, so that sqlite
 * can use an index (or count the table from its b-tree) instead of testing
 * every condition on every row: it is made the first time that combination is
 * asked for and kept (at most 2^NFILTERS pairs). */
enum { F_USER, F_TEAM, F_STATE, F_NAME, F_SINCE, F_UNTIL, F_FINISHED, F_RECENT, NFILTERS };

static const char *const filter_sql[NFILTERS] = {
	[F_USER] = " AND user = ?1",
	[F_TEAM] = " AND team = ?2",
	[F_STATE] = " AND state = ?3",
	[F_NAME] = " AND instr(name, ?4) > 0",
	[F_SINCE] = " AND submitted_ms >= ?5",
	[F_UNTIL] = " AND submitted_ms < ?6",
	[F_FINISHED] = " AND state IN ('succeeded', 'failed', 'cancelled')",
	/* Instead of F_SINCE: unfinished, or ended since ?5. The ids come from
	 * the indexes (as for jobs/, store.c): a condition on the rows made the
	 * list in id order read every job ever, 0.56 s against 0.06 s for the
	 * 4,103 recent of 100,000 jobs. */
	[F_RECENT] = " AND id IN (SELECT id FROM jobs WHERE state IN ('queued', 'running')"
		     " OR ended_ms >= ?5)",
};

/* Who a usage row is: ?3 names the column. */
#define USAGE_NAME "CASE ?3 WHEN 'user' THEN j.user ELSE j.team END"
/* Instances and jobs that ended in [?1, ?2) (?2 = 0: until now). */
#define ENDED_IN(col) " " col " >= ?1 AND (?2 = 0 OR " col " < ?2)"

static const char sql_jobs_head[] =
	"SELECT id, name, user, team, state, reason, submitted_ms, started_ms, ended_ms,"
	"  (SELECT coalesce(sum(CASE WHEN i.cpu_ms > 0 THEN i.cpu_ms END), -1)"
	"     FROM instances i WHERE i.job_id = jobs.id),"
	"  (SELECT coalesce(max(i.max_rss), -1) FROM instances i WHERE i.job_id = jobs.id),"
	"  (SELECT count(*) FROM instances i WHERE i.job_id = jobs.id)"
	" FROM jobs WHERE 1";
static const char sql_jobs_tail[] = " ORDER BY id DESC LIMIT ?9 OFFSET ?10";
static const char sql_count_head[] = "SELECT count(*) FROM jobs WHERE 1";
static const char sql_job_spec[] = "SELECT spec_json FROM jobs WHERE id = ?1";
static const char sql_job_stages[] = "SELECT idx, state FROM stages WHERE job_id = ?1 ORDER BY idx";
static const char sql_job_counts[] =
	"SELECT stage_idx, state, count(*) FROM instances WHERE job_id = ?1 GROUP BY stage_idx, state";
static const char sql_usage_cpu[] =
	"SELECT " USAGE_NAME ", sum(i.cpu_ms) FROM instances i JOIN jobs j ON j.id = i.job_id"
	" WHERE i.cpu_ms > 0 AND i.ended_ms > 0 AND" ENDED_IN("i.ended_ms") " GROUP BY 1";
static const char sql_usage_jobs[] =
	"SELECT " USAGE_NAME ", j.state, count(*) FROM jobs j"
	" WHERE j.ended_ms > 0 AND" ENDED_IN("j.ended_ms") " GROUP BY 1, 2";
static const char sql_usage_waits[] =
	"SELECT " USAGE_NAME ", j.started_ms - j.submitted_ms FROM jobs j"
	" WHERE j.started_ms > 0 AND" ENDED_IN("j.started_ms") " ORDER BY 2";
static const char sql_usage_period[] =
	"SELECT strftime(?4, i.ended_ms / 1000, 'unixepoch', 'localtime'), " USAGE_NAME ","
	"  sum(i.cpu_ms) FROM instances i JOIN jobs j ON j.id = i.job_id"
	" WHERE i.cpu_ms > 0 AND i.ended_ms > 0 AND" ENDED_IN("i.ended_ms") " GROUP BY 1, 2 ORDER BY 1, 2";
static const char sql_job_states[] = "SELECT state, count(*) FROM jobs GROUP BY state";
static const char sql_inst_states[] = "SELECT state, count(*) FROM instances GROUP BY state";
static const char sql_max_job[] = "SELECT coalesce(max(id), 0) FROM jobs";
static const char sql_team_cpu[] =
	"SELECT j.team, sum(i.cpu_ms) FROM instances i JOIN jobs j ON j.id = i.job_id"
	" WHERE i.cpu_ms > 0 GROUP BY 1 ORDER BY 1";

enum { Q_JOB_SPEC, Q_JOB_STAGES, Q_JOB_COUNTS, Q_USAGE_CPU, Q_USAGE_JOBS,
	Q_USAGE_WAITS, Q_USAGE_PERIOD, Q_JOB_STATES, Q_INST_STATES, Q_MAX_JOB, Q_TEAM_CPU, Q_COUNT };

static const char *const query_sql[Q_COUNT] = {
	[Q_JOB_SPEC] = sql_job_spec,
	[Q_JOB_STAGES] = sql_job_stages, [Q_JOB_COUNTS] = sql_job_counts,
	[Q_USAGE_CPU] = sql_usage_cpu, [Q_USAGE_JOBS] = sql_usage_jobs,
	[Q_USAGE_WAITS] = sql_usage_waits, [Q_USAGE_PERIOD] = sql_usage_period,
	[Q_JOB_STATES] = sql_job_states, [Q_INST_STATES] = sql_inst_states,
	[Q_MAX_JOB] = sql_max_job, [Q_TEAM_CPU] = sql_team_cpu,
};

struct records {
	sqlite3 *db;
	char *path;
	pthread_mutex_t lock;    /* one caller at a time: the statements are shared */
	sqlite3_stmt *q[Q_COUNT];
	/* The job lists and their counts by the filters they use (a bit each),
	 * made on first use; protected by lock. */
	sqlite3_stmt *list_q[1 << NFILTERS], *count_q[1 << NFILTERS];
};

static int db_error(struct records *h, const char *what, char **err)
{
	log_warnx("%s: %s: %s (sqlite code %d)", h->path, what, sqlite3_errmsg(h->db),
		  sqlite3_extended_errcode(h->db));
	errno = EIO;
	return errprintf(err, "%s: %s: %s", h->path, what, sqlite3_errmsg(h->db));
}

struct records *records_open(const char *db_path, char **err)
{
	struct records *h = xcalloc(1, sizeof *h);

	h->path = xstrdup(db_path);
	pthread_mutex_init(&h->lock, NULL);
	if (sqlite3_open_v2(db_path, &h->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		db_error(h, "open for reading", err);
		goto fail;
	}
	sqlite3_busy_timeout(h->db, 5000);
	for (int i = 0; i < Q_COUNT; i++)
		if (sqlite3_prepare_v2(h->db, query_sql[i], -1, &h->q[i], NULL) != SQLITE_OK) {
			db_error(h, query_sql[i], err);
			goto fail;
		}
	return h;
fail:
	records_close(h);
	return NULL;
}

void records_close(struct records *h)
{
	if (!h)
		return;
	for (int i = 0; i < Q_COUNT; i++)
		sqlite3_finalize(h->q[i]);
	for (int i = 0; i < 1 << NFILTERS; i++) {
		sqlite3_finalize(h->list_q[i]);
		sqlite3_finalize(h->count_q[i]);
	}
	sqlite3_close(h->db);
	pthread_mutex_destroy(&h->lock);
	free(h->path);
	free(h);
}

static bool given(const char *text)
{
	return text && *text;
}

/* Which filters f uses, a bit each. */
static unsigned filter_mask(const struct records_filter *f)
{
	unsigned m = 0;

	m |= given(f->user) ? 1u << F_USER : 0;
	m |= given(f->team) ? 1u << F_TEAM : 0;
	m |= given(f->state) ? 1u << F_STATE : 0;
	m |= given(f->name) ? 1u << F_NAME : 0;
	m |= f->recent ? 1u << F_RECENT : f->since_ms ? 1u << F_SINCE : 0;
	m |= f->until_ms ? 1u << F_UNTIL : 0;
	m |= f->finished ? 1u << F_FINISHED : 0;
	return m;
}

/* The statement of head, the conditions of mask and tail, from *slot or
 * prepared into it. NULL after db_error. */
static sqlite3_stmt *filtered(struct records *h, sqlite3_stmt **slot, const char *head,
			      unsigned mask, const char *tail, char **err)
{
	char sql[2048];
	size_t n = (size_t)snprintf(sql, sizeof sql, "%s", head);

	if (*slot)
		return *slot;
	for (int i = 0; i < NFILTERS; i++)
		if (mask & (1u << i))
			n += (size_t)snprintf(sql + n, sizeof sql - n, "%s", filter_sql[i]);
	snprintf(sql + n, sizeof sql - n, "%s", tail);
	if (sqlite3_prepare_v2(h->db, sql, -1, slot, NULL) != SQLITE_OK) {
		db_error(h, sql, err);
		*slot = NULL;
	}
	return *slot;
}

/* Bind the parameters of the filters in mask. */
static void bind_filter(sqlite3_stmt *s, const struct records_filter *f, unsigned mask)
{
	if (mask & (1u << F_USER))
		sqlite3_bind_text(s, 1, f->user, -1, SQLITE_TRANSIENT);
	if (mask & (1u << F_TEAM))
		sqlite3_bind_text(s, 2, f->team, -1, SQLITE_TRANSIENT);
	if (mask & (1u << F_STATE))
		sqlite3_bind_text(s, 3, f->state, -1, SQLITE_TRANSIENT);
	if (mask & (1u << F_NAME))
		sqlite3_bind_text(s, 4, f->name, -1, SQLITE_TRANSIENT);
	if (mask & ((1u << F_SINCE) | (1u << F_RECENT)))
		sqlite3_bind_int64(s, 5, f->since_ms);
	if (mask & (1u << F_UNTIL))
		sqlite3_bind_int64(s, 6, f->until_ms);
}

static const char *col_text(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	return t ? (const char *)t : "";
}

/* Step s to its end; -1 (after db_error) when a step fails. */
static int finish(struct records *h, sqlite3_stmt *s, int rc, char **err)
{
	int ret = rc == SQLITE_DONE ? 0 : db_error(h, sqlite3_sql(s), err);

	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return ret;
}

/* The stages of one job: names from its spec, states and instance counts
 * from their rows. NULL after an error. */
static json_t *job_stages(struct records *h, int64_t id, char **err)
{
	static const char *const counted[] = { "queued", "running", "succeeded", "failed", "cancelled" };
	sqlite3_stmt *s = h->q[Q_JOB_SPEC];
	json_t *spec = NULL, *names, *stages = json_array();
	int rc;

	sqlite3_bind_int64(s, 1, id);
	if ((rc = sqlite3_step(s)) == SQLITE_ROW)
		spec = json_loads(col_text(s, 0), 0, NULL);
	if (finish(h, s, rc == SQLITE_ROW ? SQLITE_DONE : rc, err) < 0)
		goto fail;
	names = json_object_get(spec, "stages");
	for (size_t i = 0; i < json_array_size(names); i++) {
		json_t *counts = json_object();

		for (size_t k = 0; k < ARRAY_LEN(counted); k++)
			json_object_set_new(counts, counted[k], json_integer(0));
		json_array_append_new(stages, json_pack("{s:O,s:s,s:o}", "name",
				json_object_get(json_array_get(names, i), "name"), "state", "waiting",
				"counts", counts));
	}
	s = h->q[Q_JOB_STAGES];
	sqlite3_bind_int64(s, 1, id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		json_t *st = json_array_get(stages, (size_t)sqlite3_column_int(s, 0));

		if (st)
			json_object_set_new(st, "state", json_string(col_text(s, 1)));
	}
	if (finish(h, s, rc, err) < 0)
		goto fail;
	s = h->q[Q_JOB_COUNTS];
	sqlite3_bind_int64(s, 1, id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		json_t *counts = json_object_get(json_array_get(stages, (size_t)sqlite3_column_int(s, 0)),
						 "counts");
		const char *state = col_text(s, 1);
		json_int_t n = sqlite3_column_int64(s, 2);

		/* Assigned instances are running for a reader, as in status. */
		if (strcmp(state, "assigned") == 0)
			state = "running";
		if (counts)
			json_object_set_new(counts, state,
					    json_integer(json_integer_value(json_object_get(counts, state)) + n));
	}
	if (finish(h, s, rc, err) < 0)
		goto fail;
	json_decref(spec);
	return stages;
fail:
	json_decref(spec);
	json_decref(stages);
	return NULL;
}

static int64_t since_start(int64_t from, int64_t to)
{
	return from > 0 && to >= from ? to - from : 0;
}

json_t *records_jobs(struct records *h, const struct records_filter *f, char **err)
{
	unsigned mask = filter_mask(f);
	json_t *jobs = json_array(), *out = NULL;
	json_int_t total = 0;
	sqlite3_stmt *s;
	int rc;

	pthread_mutex_lock(&h->lock);
	s = filtered(h, &h->count_q[mask], sql_count_head, mask, "", err);
	if (!s)
		goto out;
	bind_filter(s, f, mask);
	if ((rc = sqlite3_step(s)) == SQLITE_ROW)
		total = sqlite3_column_int64(s, 0);
	if (finish(h, s, rc == SQLITE_ROW ? SQLITE_DONE : rc, err) < 0)
		goto out;
	s = filtered(h, &h->list_q[mask], sql_jobs_head, mask, sql_jobs_tail, err);
	if (!s)
		goto out;
	bind_filter(s, f, mask);
	sqlite3_bind_int64(s, 9, f->limit ? (int64_t)f->limit : 50);
	sqlite3_bind_int64(s, 10, (int64_t)f->offset);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t sub = sqlite3_column_int64(s, 6), start = sqlite3_column_int64(s, 7);
		int64_t end = sqlite3_column_int64(s, 8);
		json_t *job = json_pack("{s:I,s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
			"id", (json_int_t)sqlite3_column_int64(s, 0), "name", col_text(s, 1),
			"user", col_text(s, 2), "team", col_text(s, 3), "state", col_text(s, 4),
			"reason", col_text(s, 5), "submitted_ms", (json_int_t)sub,
			"started_ms", (json_int_t)start, "ended_ms", (json_int_t)end,
			"wait_ms", (json_int_t)since_start(sub, start),
			"run_ms", (json_int_t)since_start(start, end),
			"cpu_ms", (json_int_t)sqlite3_column_int64(s, 9),
			"max_rss", (json_int_t)sqlite3_column_int64(s, 10),
			"instances", (json_int_t)sqlite3_column_int64(s, 11));

		json_array_append_new(jobs, job);
	}
	if (finish(h, s, rc, err) < 0)
		goto out;
	for (size_t i = 0; f->stages && i < json_array_size(jobs); i++) {
		json_t *job = json_array_get(jobs, i);
		json_t *stages = job_stages(h, json_integer_value(json_object_get(job, "id")), err);

		if (!stages)
			goto out;
		json_object_set_new(job, "stages", stages);
	}
	out = json_pack("{s:I,s:O}", "total", total, "jobs", jobs);
out:
	pthread_mutex_unlock(&h->lock);
	json_decref(jobs);
	return out;
}

/* ---- usage ---- */

static void bind_usage(sqlite3_stmt *s, const char *by, int64_t since, int64_t until)
{
	sqlite3_bind_int64(s, 1, since);
	sqlite3_bind_int64(s, 2, until);
	sqlite3_bind_text(s, 3, by, -1, SQLITE_STATIC);
}

/* The row of name in rows (an object of objects), made on first use. */
static json_t *usage_row(json_t *rows, const char *name)
{
	json_t *row = json_object_get(rows, name);

	if (!row) {
		row = json_pack("{s:s,s:f,s:i,s:i,s:i,s:i,s:n,s:n}", "name", name, "cpu_hours", 0.0,
				"jobs", 0, "succeeded", 0, "failed", 0, "cancelled", 0,
				"wait_median_s", "wait_p90_s");
		json_object_set_new(rows, name, row);
	}
	return row;
}

static void add_int(json_t *row, const char *key, json_int_t n)
{
	json_object_set_new(row, key, json_integer(json_integer_value(json_object_get(row, key)) + n));
}

/* Nearest-rank percentile p (0..1) of n sorted values. */
static double percentile(const int64_t *v, size_t n, double p)
{
	size_t k = (size_t)(p * (double)n + 0.999999);

	if (k < 1)
		k = 1;
	return (double)v[(k > n ? n : k) - 1];
}

static void set_waits(json_t *row, const int64_t *v, size_t n)
{
	if (n == 0)
		return;
	json_object_set_new(row, "wait_median_s", json_real(percentile(v, n, 0.5) / 1000.0));
	json_object_set_new(row, "wait_p90_s", json_real(percentile(v, n, 0.9) / 1000.0));
}

/* One name's waits, in the order the query sorted them (by wait). */
struct waits {
	char *name;
	int64_t *v;
	size_t n, cap;
};

static void waits_add(struct waits *w, int64_t ms)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 64;
		w->v = xrealloc(w->v, w->cap * sizeof *w->v);
	}
	w->v[w->n++] = ms < 0 ? 0 : ms;
}

static int usage_waits(struct records *h, json_t *rows, json_t *total, const char *by,
		       int64_t since, int64_t until, char **err)
{
	sqlite3_stmt *s = h->q[Q_USAGE_WAITS];
	struct waits all = { 0 }, *names = NULL;
	size_t nnames = 0;
	int rc;

	bind_usage(s, by, since, until);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *who = col_text(s, 0);
		int64_t w = sqlite3_column_int64(s, 1);
		size_t k = 0;

		while (k < nnames && strcmp(names[k].name, who) != 0)
			k++;
		if (k == nnames) {
			names = xrealloc(names, (nnames + 1) * sizeof *names);
			names[nnames++] = (struct waits){ .name = xstrdup(who) };
		}
		waits_add(&names[k], w);
		waits_add(&all, w);
	}
	rc = finish(h, s, rc, err);
	if (rc == 0) {
		set_waits(total, all.v, all.n);
		for (size_t k = 0; k < nnames; k++)
			set_waits(usage_row(rows, names[k].name), names[k].v, names[k].n);
	}
	for (size_t k = 0; k < nnames; k++) {
		free(names[k].name);
		free(names[k].v);
	}
	free(names);
	free(all.v);
	return rc;
}

static int usage_periods(struct records *h, json_t *periods, const char *by, int64_t since,
			 int64_t until, const char *period, char **err)
{
	static const struct { const char *name, *format; } kinds[] = {
		{ "day", "%Y-%m-%d" }, { "week", "%Y-W%W" }, { "month", "%Y-%m" },
	};
	sqlite3_stmt *s = h->q[Q_USAGE_PERIOD];
	int rc;

	for (size_t k = 0; period && k < ARRAY_LEN(kinds); k++) {
		json_t *list;

		if (strcmp(period, kinds[k].name) != 0)
			continue;
		list = json_array();
		bind_usage(s, by, since, until);
		sqlite3_bind_text(s, 4, kinds[k].format, -1, SQLITE_STATIC);
		while ((rc = sqlite3_step(s)) == SQLITE_ROW)
			json_array_append_new(list, json_pack("{s:s,s:s,s:f}", "period", col_text(s, 0),
					"name", col_text(s, 1),
					"cpu_hours", (double)sqlite3_column_int64(s, 2) / 3.6e6));
		json_object_set_new(periods, kinds[k].name, list);
		if (finish(h, s, rc, err) < 0)
			return -1;
	}
	return 0;
}

json_t *records_usage(struct records *h, const char *by, int64_t since_ms, int64_t until_ms,
		      const char *period, char **err)
{
	json_t *rows = json_object(), *periods = json_object(), *list = json_array(), *out = NULL;
	json_t *holder = json_object(), *total = json_incref(usage_row(holder, "total"));
	sqlite3_stmt *s;
	const char *name;
	json_t *row;
	int rc;

	json_decref(holder);
	by = by && strcmp(by, "user") == 0 ? "user" : "team";
	pthread_mutex_lock(&h->lock);
	s = h->q[Q_USAGE_CPU];
	bind_usage(s, by, since_ms, until_ms);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		double hours = (double)sqlite3_column_int64(s, 1) / 3.6e6;

		json_object_set_new(usage_row(rows, col_text(s, 0)), "cpu_hours", json_real(hours));
		json_object_set_new(total, "cpu_hours",
				    json_real(json_real_value(json_object_get(total, "cpu_hours")) + hours));
	}
	if (finish(h, s, rc, err) < 0)
		goto out;
	s = h->q[Q_USAGE_JOBS];
	bind_usage(s, by, since_ms, until_ms);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *state = col_text(s, 1);
		json_int_t n = sqlite3_column_int64(s, 2);

		row = usage_row(rows, col_text(s, 0));
		add_int(row, "jobs", n);
		add_int(total, "jobs", n);
		if (json_object_get(row, state)) {
			add_int(row, state, n);
			add_int(total, state, n);
		}
	}
	if (finish(h, s, rc, err) < 0 || usage_waits(h, rows, total, by, since_ms, until_ms, err) < 0 ||
	    usage_periods(h, periods, by, since_ms, until_ms, period, err) < 0)
		goto out;
	json_object_foreach(rows, name, row)
		json_array_append(list, row);
	out = json_pack("{s:s,s:I,s:I,s:O,s:O,s:O}", "by", by, "since_ms", (json_int_t)since_ms,
			"until_ms", (json_int_t)until_ms, "rows", list, "total", total,
			"periods", periods);
out:
	pthread_mutex_unlock(&h->lock);
	json_decref(rows);
	json_decref(periods);
	json_decref(list);
	json_decref(total);
	return out;
}

static void wait_text(const json_t *v, char *buf, size_t len)
{
	if (json_is_number(v))
		format_duration((uint64_t)(json_number_value(v) + 0.5), buf, len);
	else
		snprintf(buf, len, "-");
}

static void usage_line(FILE *f, const json_t *row, bool csv)
{
	const char *name = json_string_value(json_object_get(row, "name"));
	double hours = json_number_value(json_object_get(row, "cpu_hours"));
	json_int_t jobs = json_integer_value(json_object_get(row, "jobs"));
	json_int_t ok = json_integer_value(json_object_get(row, "succeeded"));
	json_int_t failed = json_integer_value(json_object_get(row, "failed"));
	json_int_t cancelled = json_integer_value(json_object_get(row, "cancelled"));
	const json_t *med = json_object_get(row, "wait_median_s"), *p90 = json_object_get(row, "wait_p90_s");
	char m[32], p[32];

	if (csv) {
		fprintf(f, "%s,%.3f,%lld,%lld,%lld,%lld,", name, hours, (long long)jobs, (long long)ok,
			(long long)failed, (long long)cancelled);
		if (json_is_number(med))
			fprintf(f, "%.1f,%.1f\n", json_number_value(med), json_number_value(p90));
		else
			fputs(",\n", f);
		return;
	}
	wait_text(med, m, sizeof m);
	wait_text(p90, p, sizeof p);
	fprintf(f, "%-16s %10.3f %6lld %9lld %6lld %9lld %11s %9s\n", name, hours, (long long)jobs,
		(long long)ok, (long long)failed, (long long)cancelled, m, p);
}

static char *usage_format(const json_t *usage, bool csv)
{
	const json_t *rows = json_object_get(usage, "rows");
	const char *by = json_string_value(json_object_get(usage, "by"));
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		abort();
	if (csv)
		fprintf(f, "%s,cpu_hours,jobs,succeeded,failed,cancelled,wait_median_s,wait_p90_s\n", by);
	else
		fprintf(f, "%-16s %10s %6s %9s %6s %9s %11s %9s\n", by, "cpu-hours", "jobs", "succeeded",
			"failed", "cancelled", "wait-median", "wait-p90");
	for (size_t i = 0; i < json_array_size(rows); i++)
		usage_line(f, json_array_get(rows, i), csv);
	if (!csv)
		usage_line(f, json_object_get(usage, "total"), false);
	fclose(f);
	return text;
}

char *records_usage_text(const json_t *usage) { return usage_format(usage, false); }
char *records_usage_csv(const json_t *usage) { return usage_format(usage, true); }

/* ---- totals ---- */

/* Rows of (text, number) of query q into an object. */
static int counts_into(struct records *h, int q, json_t *obj, bool hours, char **err)
{
	sqlite3_stmt *s = h->q[q];
	int rc;

	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		json_int_t n = sqlite3_column_int64(s, 1);

		json_object_set_new(obj, col_text(s, 0), hours ? json_real((double)n / 1000.0)
							     : json_integer(n));
	}
	return finish(h, s, rc, err);
}

json_t *records_totals(struct records *h, bool all, char **err)
{
	json_t *jobs = json_object(), *inst = json_object(), *teams = json_object(), *out = NULL;
	sqlite3_stmt *s;
	json_int_t max = 0;
	int rc;

	pthread_mutex_lock(&h->lock);
	if (counts_into(h, Q_JOB_STATES, jobs, false, err) < 0 ||
	    (all && counts_into(h, Q_INST_STATES, inst, false, err) < 0) ||
	    (all && counts_into(h, Q_TEAM_CPU, teams, true, err) < 0))
		goto out;
	s = h->q[Q_MAX_JOB];
	if ((rc = sqlite3_step(s)) == SQLITE_ROW)
		max = sqlite3_column_int64(s, 0);
	if (finish(h, s, rc == SQLITE_ROW ? SQLITE_DONE : rc, err) < 0)
		goto out;
	out = json_pack("{s:O,s:O,s:I,s:O}", "jobs", jobs, "instances", inst, "submissions", max,
			"team_cpu_seconds", teams);
out:
	pthread_mutex_unlock(&h->lock);
	json_decref(jobs);
	json_decref(inst);
	json_decref(teams);
	return out;
}
