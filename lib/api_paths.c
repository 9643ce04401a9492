/* The API's routes and the files of jobs/<id>/ (see api_paths.h). */
#include "api_paths.h"
#include "api_client.h"
#include "route.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* slots: what each '*' stands for, in order: 'i' ref->id, 'n' ref->name,
 * 'x' ref->index. The server takes the first row that matches, so a fixed
 * segment ("last") comes before the '*' beside it. */
static const struct {
	const char *method;
	const char *pattern;
	const char *slots;
} routes[API_ROUTE_COUNT] = {
	[API_JOBS_SUBMIT] = { "POST", "/v1/jobs", "" },
	[API_JOBS_LIST] = { "GET", "/v1/jobs", "" },
	[API_JOBS_LAST] = { "GET", "/v1/jobs/last", "" },
	[API_JOB] = { "GET", "/v1/jobs/*", "i" },
	[API_JOB_STATUS] = { "GET", "/v1/jobs/*/status", "i" },
	[API_JOB_WHY] = { "GET", "/v1/jobs/*/why", "i" },
	[API_JOB_EVENTS] = { "GET", "/v1/jobs/*/events", "i" },
	[API_JOB_SPEC] = { "GET", "/v1/jobs/*/spec", "i" },
	[API_JOB_WAIT] = { "GET", "/v1/jobs/*/wait", "i" },
	[API_JOB_CTL] = { "POST", "/v1/jobs/*/ctl", "i" },
	[API_STAGE_STATUS] = { "GET", "/v1/jobs/*/stages/*/status", "in" },
	[API_INSTANCE_STATUS] = { "GET", "/v1/jobs/*/stages/*/instances/*/status", "inx" },
	[API_INSTANCE] = { "GET", "/v1/jobs/*/stages/*/instances/*", "inx" },
	[API_HOSTS_REGISTER] = { "POST", "/v1/hosts", "" },
	[API_HOSTS_LIST] = { "GET", "/v1/hosts", "" },
	[API_HOST_STATUS] = { "GET", "/v1/hosts/*/status", "n" },
	[API_HOST_HEARTBEAT] = { "POST", "/v1/hosts/*/heartbeat", "n" },
	[API_HOST_LEAVE] = { "POST", "/v1/hosts/*/leave", "n" },
	[API_HOST_CTL] = { "POST", "/v1/hosts/*/ctl", "n" },
	[API_HOST_WORK] = { "GET", "/v1/hosts/*/work", "n" },
	[API_INSTANCE_STATE] = { "POST", "/v1/instances/*/state", "i" },
	[API_INSTANCE_PROGRESS] = { "POST", "/v1/instances/*/progress", "i" },
	[API_SCHEDULES_PUT] = { "POST", "/v1/schedules", "" },
	[API_SCHEDULES_LIST] = { "GET", "/v1/schedules", "" },
	[API_SCHEDULE] = { "GET", "/v1/schedules/*", "n" },
	[API_SCHEDULE_DELETE] = { "DELETE", "/v1/schedules/*", "n" },
	[API_SCHEDULE_STATUS] = { "GET", "/v1/schedules/*/status", "n" },
	[API_SCHEDULE_SPEC] = { "GET", "/v1/schedules/*/spec", "n" },
	[API_SCHEDULE_CTL] = { "POST", "/v1/schedules/*/ctl", "n" },
	[API_STATUS] = { "GET", "/v1/status", "" },
	[API_STATS] = { "GET", "/v1/stats", "" },
	[API_HISTORY_JOBS] = { "GET", "/v1/history/jobs", "" },
	[API_USAGE] = { "GET", "/v1/usage", "" },
};

/* jobs/<id>/, in the order ls shows it. */
static const struct api_job_file job_files[] = {
	{ "spec", API_JOB_SPEC, API_FILE_EXACT, 0444 },
	{ "status", API_JOB_STATUS, API_FILE_VIEW, 0444 },
	{ "status.json", API_JOB, API_FILE_VIEW, 0444 },
	{ "why", API_JOB_WHY, API_FILE_VIEW, 0444 },
	{ "wait", API_JOB_WAIT, API_FILE_WAIT, 0444 },
	{ "ctl", API_JOB_CTL, API_FILE_CTL, 0644 },
	{ "events", API_JOB_EVENTS, API_FILE_VIEW, 0444 },
	{ "stages", API_ROUTE_COUNT, API_FILE_DIR, 0555 },
	{ "out", API_ROUTE_COUNT, API_FILE_DIR, 0555 },
};

const char *api_route_method(enum api_route route)
{
	return (unsigned)route < API_ROUTE_COUNT ? routes[route].method : NULL;
}

const char *api_route_pattern(enum api_route route)
{
	return (unsigned)route < API_ROUTE_COUNT ? routes[route].pattern : NULL;
}

int api_route_find(const char *method, const char *path, char *buf, size_t len,
		   const char **args, size_t max, bool *path_known)
{
	*path_known = false;
	for (int r = 0; r < API_ROUTE_COUNT; r++) {
		/* A route of the path with another method must leave no segment behind. */
		memset(args, 0, max * sizeof *args);
		if (!route_match(routes[r].pattern, path, buf, len, args, max))
			continue;
		*path_known = true;
		if (strcmp(routes[r].method, method) == 0)
			return r;
	}
	return -1;
}

char *api_path(enum api_route route, const struct api_ref *ref)
{
	static const struct api_ref none;
	const char *slot;
	char *name = NULL, *out, *q;

	if ((unsigned)route >= API_ROUTE_COUNT)
		return NULL;
	if (!ref)
		ref = &none;
	/* A pattern has at most one name; escaped, a byte takes three. */
	if (strchr(routes[route].slots, 'n'))
		name = url_escape(ref->name ? ref->name : "");
	out = q = xmalloc(strlen(routes[route].pattern) + (name ? strlen(name) : 0) +
			  strlen(routes[route].slots) * 21 + 1);
	slot = routes[route].slots;
	for (const char *p = routes[route].pattern; *p; p++) {
		if (*p != '*')
			*q++ = *p;
		else if (*slot == 'n' && slot++)
			q = stpcpy(q, name);
		else
			q += sprintf(q, "%lld", (long long)(*slot++ == 'i' ? ref->id : ref->index));
	}
	*q = '\0';
	free(name);
	return out;
}

char *api_path_id(enum api_route route, int64_t id)
{
	return api_path(route, &(struct api_ref){ .id = id });
}

char *api_path_name(enum api_route route, const char *name)
{
	return api_path(route, &(struct api_ref){ .name = name });
}

void api_path_query(char **path, const char *key, const char *value)
{
	char *escaped = url_escape(value), *more;

	more = xasprintf("%s%c%s=%s", *path, strchr(*path, '?') ? '&' : '?', key, escaped);
	free(escaped);
	free(*path);
	*path = more;
}

void api_path_query_num(char **path, const char *key, long long value)
{
	char text[24];

	snprintf(text, sizeof text, "%lld", value);
	api_path_query(path, key, text);
}

char *api_path_wait(int64_t job, const char *stage, long timeout_ms)
{
	char *path = api_path_id(API_JOB_WAIT, job);

	api_path_query_num(&path, "timeout_ms", timeout_ms);
	if (stage)
		api_path_query(&path, "stage", stage);
	return path;
}

char *api_path_work(const char *host, long timeout_ms)
{
	char *path = api_path_name(API_HOST_WORK, host);

	api_path_query_num(&path, "timeout_ms", timeout_ms);
	return path;
}

char *api_path_owners(void)
{
	char *path = api_path(API_JOBS_LIST, NULL);

	api_path_query(&path, "view", "owners");
	api_path_query(&path, "format", "json");
	return path;
}

char *api_path_usage(const char *by, int64_t since_ms, const char *format)
{
	char *path = api_path(API_USAGE, NULL);

	api_path_query(&path, "by", by);
	api_path_query_num(&path, "since_ms", since_ms);
	api_path_query(&path, "format", format);
	return path;
}

const struct api_job_file *api_job_files(size_t *n)
{
	*n = ARRAY_LEN(job_files);
	return job_files;
}

const struct api_job_file *api_job_file(const char *name)
{
	for (size_t i = 0; i < ARRAY_LEN(job_files); i++)
		if (strcmp(job_files[i].name, name) == 0)
			return &job_files[i];
	return NULL;
}
