/* The HTTP contract's answers (docs/api.md): the JSON shapes clients read,
 * each with its one reader, and the writers the scheduler makes the compact
 * ones with. A reader takes an answer's body as it came and returns 0, or -1
 * with errno EPROTO and *err (when err is not NULL) saying what was wrong with
 * it: a scheduler of another version, or a proxy's page. The paths are
 * api_paths.h. */
#ifndef PARSA_API_ANSWERS_H
#define PARSA_API_ANSWERS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* {"id": N, ...} with N > 0: POST /v1/jobs's answer and GET /v1/jobs/last's. */
int api_read_id(const char *body, size_t len, int64_t *id, char **err);
json_t *api_id_json(int64_t id);

/* A job as the mount needs it, from its JSON (GET /v1/jobs/<id>, and the
 * "job" of POST /v1/jobs's answer): its owner, when it came, its stages. */
struct api_stage_meta {
	char *name;
	int instances;
};
struct api_job_meta {
	uid_t uid;
	gid_t gid;
	int64_t submitted_ms;
	struct api_stage_meta *stages;   /* malloc'ed, never NULL on success */
	size_t nstages;
};
int api_read_job(const char *body, size_t len, struct api_job_meta *job, char **err);
int api_read_job_json(const json_t *json, struct api_job_meta *job, char **err);
void api_job_meta_clear(struct api_job_meta *job);

/* POST /v1/jobs: {"id": N, "job": {...}}: *id, and *job filled when has_job
 * is not NULL and the answer carries a job that reads (*has_job says so; a
 * job that does not read is no refusal: the id is the answer). */
int api_read_submitted(const char *body, size_t len, int64_t *id, struct api_job_meta *job,
		       bool *has_job, char **err);

/* POST .../ctl {"check": "..."}: {"ok": true} or {"ok": false, "error": "..."}:
 * *good, and *why (malloc'ed) when not. */
int api_read_check(const char *body, size_t len, bool *good, char **why, char **err);
/* error NULL: {"ok": true}; else {"ok": false, "error": error}. */
json_t *api_check_json(const char *error);

/* GET /v1/jobs?view=owners&format=json (api_path_owners): {"owners": [[id,
 * uid, gid, submitted_ms], ...]}, oldest first: the jobs jobs/ lists, in a
 * tenth of the full list's bytes. Without format=json the answer is the
 * form the mounts of release 0.1.0 read: "id uid gid submitted_ms" lines
 * (API_OWNERS_LINES), written for them until the protocol changes. */
enum api_owners_form { API_OWNERS_NONE, API_OWNERS_JSON, API_OWNERS_LINES };
/* The form that a request's view and format (either NULL) ask for. */
enum api_owners_form api_owners_form(const char *view, const char *format);
struct api_owner {
	int64_t id;
	uid_t uid;
	gid_t gid;
	int64_t submitted_ms;
};
/* *rows (malloc'ed, at least one element so never NULL on success) and *n. */
int api_read_owners(const char *body, size_t len, struct api_owner **rows, size_t *n, char **err);
/* The writer streams, a row at a time, so that no list is built in memory. */
void api_owners_begin(FILE *out, enum api_owners_form form);
void api_owners_row(FILE *out, enum api_owners_form form, const struct api_owner *row, bool first);
void api_owners_end(FILE *out, enum api_owners_form form);

/* GET /v1/jobs/<id>/wait: {"done": bool, "state": "..."}. *state malloc'ed. */
int api_read_wait(const char *body, size_t len, bool *done, char **state, char **err);
json_t *api_wait_json(bool done, const char *state);

/* One entry of GET /v1/hosts: {"hosts": [{...}]} (docs/api.md lists all of
 * its members; these are the ones clients read). */
struct api_host {
	char *name;
	char *state;
	int64_t cpus, mem;                   /* what the host has */
	int64_t reserved_cpus, reserved_mem; /* what placed instances hold */
	int64_t scratch_free;
	int64_t running;                     /* instances (a count, or the list's length) */
	int64_t last_heartbeat_ms;
	double cpu_pct, mem_pct, load1;      /* its live load */
};
int api_read_hosts(const char *body, size_t len, struct api_host **hosts, size_t *n, char **err);
void api_hosts_free(struct api_host *hosts, size_t n);

/* One job of GET /v1/history/jobs: {"total": N, "jobs": [{...}]}, newest
 * first. Text absent is "", a number absent or null 0 (cpu_ms and max_rss
 * are -1 when nothing was measured); done and total count the instances of
 * its stages (with stages=1) that ended, and all of them. */
struct api_history_job {
	int64_t id;
	char *name, *user, *team, *state, *reason;
	int64_t submitted_ms, started_ms, ended_ms, wait_ms, run_ms, cpu_ms, max_rss;
	int64_t done, total;          /* instances ended, and all of them */
	int64_t succeeded, failed;    /* of done */
};
int api_read_history(const char *body, size_t len, struct api_history_job **jobs, size_t *n,
		     char **err);
void api_history_free(struct api_history_job *jobs, size_t n);

/* GET /v1/stats: the scheduler's own counts (docs/api.md); these are the ones
 * the benchmarks read. pass_ms: the last npass_ms passes' durations, of
 * passes in all (malloc'ed, never NULL on success). */
struct api_stats {
	int64_t passes;
	double *pass_ms;
	size_t npass_ms;
	int64_t submitted, submit_groups;
};
int api_read_stats(const char *body, size_t len, struct api_stats *stats, char **err);
void api_stats_clear(struct api_stats *stats);

/* One entry of GET /v1/schedules: {"schedules": [{"name", "uid", "gid",
 * "created_ms", ...}]} (created_ms 0 from a scheduler that does not say). */
struct api_schedule_owner {
	char *name;
	uid_t uid;
	gid_t gid;
	int64_t created_ms;     /* the schedule's own time, for its stat */
};
int api_read_schedules(const char *body, size_t len, struct api_schedule_owner **list, size_t *n,
		       char **err);
void api_schedules_free(struct api_schedule_owner *list, size_t n);

#endif
