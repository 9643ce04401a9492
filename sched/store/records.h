/* The job records: what the whole history of jobs says, read from sqlite
 * rather than from the model (which keeps only recent jobs): the job lists of the page, of `parsa
 * jobs` and `parsa history`, cpu-hours and job counts per team or user, and
 * the totals behind /metrics. A read-only connection of its own to the
 * store's database (WAL lets it read while the store writes), its statements
 * prepared once, one caller at a time (a mutex). Answers are JSON (new
 * references); NULL with errno and *err when the database cannot be read. */
#ifndef PARSA_RECORDS_H
#define PARSA_RECORDS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct records;

struct records *records_open(const char *db_path, char **err);
void records_close(struct records *h);

/* Which jobs: NULL or "" strings and 0 times match every job. */
struct records_filter {
	const char *user;
	const char *team;
	const char *state;        /* a job state's name */
	const char *name;         /* a part of the job's name */
	int64_t since_ms;         /* submitted at or after (with recent: or unfinished) */
	int64_t until_ms;         /* submitted before */
	bool finished;            /* only jobs that ended */
	bool recent;              /* unfinished jobs, and those that ended since since_ms */
	bool stages;              /* each job's stages with their instance counts */
	size_t limit, offset;     /* a page, newest first (limit 0: 50) */
};

/* {"total": N, "jobs": [{id, name, user, team, state, reason, submitted_ms,
 * started_ms, ended_ms, wait_ms, run_ms, cpu_ms, max_rss, instances,
 * [stages: [{name, state, counts: {queued, running, succeeded, failed,
 * cancelled}}]]}]}. Times are 0 when unknown, cpu_ms and max_rss -1. */
json_t *records_jobs(struct records *h, const struct records_filter *f, char **err);

/* Usage of the jobs submitted since since_ms (0: all) before until_ms (0: now),
 * by "team" or "user": {"by", "since_ms", "until_ms", "rows": [{name,
 * cpu_hours, jobs, succeeded, failed, cancelled, wait_median_s, wait_p90_s}],
 * "total": {the same for all}, "periods": {period: [{period, name,
 * cpu_hours}]}} where period ("day", "week" or "month"; NULL: none) is asked. cpu-hours are the instances' measured CPU time
 * (cpu_ms, per attempt, as the runner measured it). */
json_t *records_usage(struct records *h, const char *by, int64_t since_ms, int64_t until_ms,
		      const char *period, char **err);
/* The same as text (a table) and CSV (one line per name), malloc'ed. */
char *records_usage_text(const json_t *usage);
char *records_usage_csv(const json_t *usage);

/* For /metrics: {"jobs": {state: n}, "instances": {state: n}, "submissions": n
 * (the highest job id), "team_cpu_seconds": {team: s}}; without all, only
 * "jobs" (the cheap part, for the page). */
json_t *records_totals(struct records *h, bool all, char **err);

#endif
