#include "api_ctl.h"
#include "api_args.h"
#include "api_identity.h"
#include "api_reply.h"
#include "schedules.h"

#include <errno.h>

void api_ctl_job(struct call *c)
{
	json_t *json = api_body_json(c), *command;
	char *err = NULL;
	int64_t id;

	if (!json)
		return;
	command = json_object_get(json, "command");
	if (!json_is_string(command)) {
		reply_error(c, MHD_HTTP_BAD_REQUEST, "the body needs \"command\": cancel, hold, release,"
				" retry, priority N, purge, keep or unkeep");
	} else if (api_parse_id(c->args[0], &id) < 0) {
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such job");
	} else if (api_caller_groups(c), engine_ctl(c->engine, &c->who, id,
						    json_string_value(command), &err) < 0) {
		reply_errno(c, errno, err);
	} else {
		reply_json(c, MHD_HTTP_OK, json_pack("{s:b}", "ok", 1));
	}
	json_decref(json);
}

void api_ctl_host(struct call *c)
{
	json_t *json = api_body_json(c), *command;
	char *err = NULL;

	if (!json)
		return;
	command = json_object_get(json, "command");
	api_caller_groups(c);
	if (!json_is_string(command))
		reply_error(c, MHD_HTTP_BAD_REQUEST, "the body needs \"command\": drain, resume or remove");
	else if (engine_host_ctl(c->engine, &c->who, c->args[0], json_string_value(command), &err) < 0)
		reply_errno(c, errno, err);
	else
		reply_json(c, MHD_HTTP_OK, json_pack("{s:b}", "ok", 1));
	json_decref(json);
}

void api_ctl_schedule(struct call *c)
{
	json_t *json = api_body_json(c), *command;
	char *err = NULL;

	if (!json)
		return;
	command = json_object_get(json, "command");
	api_caller_groups(c);
	if (!json_is_string(command))
		reply_error(c, MHD_HTTP_BAD_REQUEST, "the body needs \"command\": pause, resume or run-now");
	else if (schedules_ctl(engine_schedules(c->engine), &c->who, c->args[0],
			       json_string_value(command), &err) < 0)
		reply_errno(c, errno, err);
	else
		reply_json(c, MHD_HTTP_OK, json_pack("{s:b}", "ok", 1));
	json_decref(json);
}
