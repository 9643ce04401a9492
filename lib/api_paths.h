/* The HTTP contract's paths (docs/api.md): every route of the scheduler's API
 * as one enum with its method and path pattern, the one matcher the server
 * dispatches with, and the builders every client makes its URLs with (names
 * escaped); and the files of jobs/<id>/, each a row naming the route that
 * serves it. The answers' shapes are api_answers.h. */
#ifndef PARSA_API_PATHS_H
#define PARSA_API_PATHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum api_route {
	API_JOBS_SUBMIT,          /* POST /v1/jobs */
	API_JOBS_LIST,            /* GET /v1/jobs */
	API_JOBS_LAST,            /* GET /v1/jobs/last */
	API_JOB,                  /* GET /v1/jobs/<id>: the job as JSON */
	API_JOB_STATUS,
	API_JOB_WHY,
	API_JOB_EVENTS,
	API_JOB_SPEC,
	API_JOB_WAIT,
	API_JOB_CTL,
	API_STAGE_STATUS,         /* /v1/jobs/<id>/stages/<stage>/status */
	API_INSTANCE_STATUS,      /* .../instances/<index>/status */
	API_INSTANCE,             /* .../instances/<index>: JSON */
	API_HOSTS_REGISTER,       /* POST /v1/hosts */
	API_HOSTS_LIST,
	API_HOST_STATUS,
	API_HOST_HEARTBEAT,
	API_HOST_LEAVE,
	API_HOST_CTL,
	API_HOST_WORK,
	API_INSTANCE_STATE,       /* POST /v1/instances/<instance id>/state */
	API_INSTANCE_PROGRESS,
	API_SCHEDULES_PUT,
	API_SCHEDULES_LIST,
	API_SCHEDULE,
	API_SCHEDULE_DELETE,
	API_SCHEDULE_STATUS,
	API_SCHEDULE_SPEC,
	API_SCHEDULE_CTL,
	API_STATUS,
	API_STATS,
	API_HISTORY_JOBS,
	API_USAGE,
	API_ROUTE_COUNT
};

/* What fills a route's '*' segments, in the pattern's order: id (a job's, or
 * for /v1/instances/ an instance's), name (a stage, a host or a schedule:
 * escaped), index (an instance's within its stage). */
struct api_ref {
	int64_t id;
	const char *name;
	int64_t index;
};

const char *api_route_method(enum api_route route);
const char *api_route_pattern(enum api_route route);

/* The route of method and path (path without its query): the first whose
 * pattern and method match, its '*' segments in args (route_match, at most
 * max, in buf of len bytes). -1 when none does; *path_known then says
 * whether the path matched with another method (405, not 404). */
int api_route_find(const char *method, const char *path, char *buf, size_t len,
		   const char **args, size_t max, bool *path_known);

/* The path of route with its '*' segments filled from ref (a name
 * percent-escaped). Malloc'ed. */
char *api_path(enum api_route route, const struct api_ref *ref);
/* api_path for routes of one id (a job, an instance) or one name (a host, a schedule). */
char *api_path_id(enum api_route route, int64_t id);
char *api_path_name(enum api_route route, const char *name);

/* Append "?key=value" or "&key=value" to *path (reallocated), value escaped. */
void api_path_query(char **path, const char *key, const char *value);
void api_path_query_num(char **path, const char *key, long long value);

/* The requests with a query, as their one builder (malloc'ed):
 * GET /v1/jobs/<id>/wait?timeout_ms=N[&stage=S] (stage NULL for the job), */
char *api_path_wait(int64_t job, const char *stage, long timeout_ms);
/* GET /v1/hosts/<name>/work?timeout_ms=N, */
char *api_path_work(const char *host, long timeout_ms);
/* GET /v1/jobs?view=owners&format=json (api_read_owners), */
char *api_path_owners(void);
/* GET /v1/usage?by=B&since_ms=N&format=F. */
char *api_path_usage(const char *by, int64_t since_ms, const char *format);

/* What a file of jobs/<id>/ is to the mount. */
enum api_job_file_kind {
	API_FILE_VIEW,   /* a text the scheduler renders at open, ending with a newline */
	API_FILE_EXACT,  /* a text given back byte for byte, its size known at stat (spec) */
	API_FILE_WAIT,   /* a long poll that answers when the job ends */
	API_FILE_CTL,    /* commands written to the scheduler */
	API_FILE_DIR,    /* a folder the mount serves itself (stages, out) */
};

/* One entry of jobs/<id>/: adding a file is a row of this table (lib/api_paths.c)
 * plus its route's handler and view in the scheduler. */
struct api_job_file {
	const char *name;
	enum api_route route;         /* what serves it (API_ROUTE_COUNT: none, a folder) */
	enum api_job_file_kind kind;
	mode_t mode;                  /* permission bits in the mount */
};

/* The entries of jobs/<id>/ in the order ls shows them. */
const struct api_job_file *api_job_files(size_t *n);
/* The entry called name; NULL when jobs/<id>/ has none. */
const struct api_job_file *api_job_file(const char *name);

#endif
