/* libFuzzer harness for what the scheduler's API reads of a request before
 * the engine acts (sched/api/api_args.c, sched/api/api_ctl.c): the body as JSON, the
 * ctl commands of jobs, hosts and schedules with their arguments, and the
 * whole numbers of paths and queries; the contract (lib/api_paths.c): a path
 * found among the routes, a name built into a path and found again; and, on
 * the client's side (lib/api_client.c, lib/api_answers.c), the error an
 * answer carries and every reader of an answer; the scheduler's readers of
 * a submission and a ctl request (lib/api_requests.c). The runner messages are
 * fuzz_proto's, a submission's spec fuzz_spec's. Promises: a command is
 * taken (0) or refused with EINVAL and a message; a number is taken only
 * when it is all digits; an answer always gives an error text; a reader
 * takes an answer with what it promises or refuses it with EPROTO and a
 * message; a name comes back from its path as it went in. */
#include "api_args.h"
#include "api_answers.h"
#include "api_client.h"
#include "api_paths.h"
#include "api_requests.h"
#include "route.h"
#include "engine.h"
#include "fuzz.h"
#include "schedules.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check_command(const char *command)
{
	int (*const checks[])(const char *, char **) = { engine_ctl_check, engine_host_ctl_check,
							 schedules_ctl_check };

	for (size_t i = 0; i < sizeof checks / sizeof *checks; i++) {
		char *err = NULL;

		errno = 0;
		if (checks[i](command, &err) < 0)
			fuzz_refused(err);
		else if (err)
			abort();
	}
}

static void check_number(const char *text)
{
	int64_t v;

	if (api_parse_num(text, &v) == 0 &&
	    (v < 0 || !*text || strspn(text, "0123456789") != strlen(text)))
		abort();
	if (api_parse_id(text, &v) == 0 && v < 1)
		abort();
}

/* A reader called with errno 0 and *err NULL (READ) took the answer (true)
 * or refused it keeping its promise: EPROTO and a message (fuzz_refused's). */
static bool read_ok(int rc, char **err)
{
	if (rc == 0) {
		if (*err)
			abort();
		return true;
	}
	if (errno != EPROTO || !*err || !**err)
		abort();
	free(*err);
	*err = NULL;
	return false;
}

#define READ(call) (errno = 0, read_ok((call), &err))

/* The bytes as each answer of one object a client reads. */
static void check_objects(const char *body, size_t size)
{
	struct api_job_meta job;
	struct api_stats stats;
	char *err = NULL, *state = NULL, *why = NULL;
	int64_t id;
	bool done, has_job = false, good;

	if (READ(api_read_id(body, size, &id, &err)) && id < 1)
		abort();
	if (READ(api_read_wait(body, size, &done, &state, &err)) && !state)
		abort();
	free(state);
	if (READ(api_read_job(body, size, &job, &err))) {
		for (size_t i = 0; i < job.nstages; i++)
			if (!job.stages[i].name || job.stages[i].instances < 0)
				abort();
		api_job_meta_clear(&job);
	}
	if (READ(api_read_submitted(body, size, &id, &job, &has_job, &err)) && id < 1)
		abort();
	if (has_job)
		api_job_meta_clear(&job);
	if (READ(api_read_check(body, size, &good, &why, &err)) && good == !!why)
		abort();
	free(why);
	if (READ(api_read_stats(body, size, &stats, &err)) &&
	    (!stats.pass_ms || stats.npass_ms > (uint64_t)stats.passes))
		abort();
	api_stats_clear(&stats);
}

/* The bytes as each list a client reads. */
static void check_lists(const char *body, size_t size)
{
	struct api_owner *owners;
	struct api_host *hosts;
	struct api_schedule_owner *schedules;
	struct api_history_job *history;
	char *err = NULL;
	size_t n;

	if (READ(api_read_owners(body, size, &owners, &n, &err))) {
		for (size_t i = 0; i < n; i++)
			if (owners[i].id < 1)
				abort();
		free(owners);
	}
	if (READ(api_read_hosts(body, size, &hosts, &n, &err))) {
		for (size_t i = 0; i < n; i++)
			if (!hosts[i].name || !hosts[i].state || hosts[i].running < 0)
				abort();
		api_hosts_free(hosts, n);
	}
	if (READ(api_read_history(body, size, &history, &n, &err))) {
		for (size_t i = 0; i < n; i++)
			if (history[i].id < 1 || !history[i].name || !history[i].reason)
				abort();
		api_history_free(history, n);
	}
	if (READ(api_read_schedules(body, size, &schedules, &n, &err))) {
		for (size_t i = 0; i < n; i++)
			if (!schedules[i].name)
				abort();
		api_schedules_free(schedules, n);
	}
}

/* Percent-decoding in place, as the server's HTTP library hands it a path. */
static void decode(char *s)
{
	char *out = s;
	unsigned int byte;

	for (; *s; s++) {
		if (*s == '%' && sscanf(s + 1, "%2x", &byte) == 1) {
			*out++ = (char)byte;
			s += 2;
		} else {
			*out++ = *s;
		}
	}
	*out = '\0';
}

/* The text as a request's path, and as a name in the paths made for it. */
static void check_paths(const char *text)
{
	const char *args[ROUTE_MAX_ARGS];
	char buf[1024], *path;
	bool known;
	int r = api_route_find("GET", text, buf, sizeof buf, args, ROUTE_MAX_ARGS, &known);

	if (r >= API_ROUTE_COUNT || (r >= 0 && !known))
		abort();
	/* A name is one segment: no '/', not empty (the names a spec and a runner accept). */
	if (!*text || strchr(text, '/'))
		return;
	path = api_path(API_STAGE_STATUS, &(struct api_ref){ .id = 1, .name = text });
	decode(path);
	if (strlen(path) < sizeof buf &&
	    (api_route_find("GET", path, buf, sizeof buf, args, ROUTE_MAX_ARGS, &known) != API_STAGE_STATUS ||
	     strcmp(args[1], text) != 0))
		abort();
	free(path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *body;
	char *text;

	/* The bytes as a path segment or a ctl file's line. */
	if (size <= 256) {
		text = fuzz_text(data, size);
		check_number(text);
		check_command(text);
		check_paths(text);
		free(text);
	}
	/* The bytes as a ctl request's body: {"command": ...} or {"check": ...}. */
	body = json_loadb((const char *)data, size, 0, NULL);
	if (json_is_object(body)) {
		struct api_submission sub;
		const char *command, *check;
		char *err = NULL;

		api_read_ctl_request(body, &command, &check);
		if (command)
			check_command(command);
		if (check)
			check_command(check);
		/* The bytes as a submission: taken with its spec, or refused. */
		errno = 0;
		if (api_read_submission(body, &sub, &err) < 0)
			fuzz_refused(err);
		else if (!sub.spec || err || (sub.token && !api_token_ok(sub.token)))
			abort();
	}
	json_decref(body);
	check_objects((const char *)data, size);
	check_lists((const char *)data, size);
	/* The bytes as an error answer's body, as every client reads it. */
	{
		struct api_reply reply = { .status = 400, .len = size, .cap = size + 1 };
		char *msg;

		reply.body = fuzz_text(data, size);
		msg = api_reply_error(&reply);
		if (!msg)
			abort();
		free(msg);
		free(reply.body);
	}
	return 0;
}
