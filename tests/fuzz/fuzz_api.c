/* libFuzzer harness for what the scheduler's API reads of a request before
 * the engine acts (sched/api/api_args.c, sched/api/api_ctl.c): the body as JSON, the
 * ctl commands of jobs, hosts and schedules with their arguments, and the
 * whole numbers of paths and queries; and, on the client's side
 * (lib/api_client.c), the error an answer carries. The runner messages are
 * fuzz_proto's, a submission's spec fuzz_spec's. Promises: a command is
 * taken (0) or refused with EINVAL and a message; a number is taken only
 * when it is all digits; an answer always gives an error text. */
#include "api_args.h"
#include "api_client.h"
#include "engine.h"
#include "fuzz.h"
#include "schedules.h"

#include <errno.h>
#include <stdint.h>
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *body;
	char *text;

	/* The bytes as a path segment or a ctl file's line. */
	if (size <= 256) {
		text = fuzz_text(data, size);
		check_number(text);
		check_command(text);
		free(text);
	}
	/* The bytes as a ctl request's body: {"command": ...} or {"check": ...}. */
	body = json_loadb((const char *)data, size, 0, NULL);
	if (json_is_object(body)) {
		const char *command = json_string_value(json_object_get(body, "command"));
		const char *check = json_string_value(json_object_get(body, "check"));

		if (command)
			check_command(command);
		if (check)
			check_command(check);
	}
	json_decref(body);
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
