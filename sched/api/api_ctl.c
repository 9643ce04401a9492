/* The API's three ctl handlers (jobs, hosts, schedules): a JSON body with a
 * "command" handed to the engine or the schedules, whose tables also name
 * the commands there are when a body has none. */
#include "api_ctl.h"
#include "api_args.h"
#include "api_identity.h"
#include "api_reply.h"
#include "schedules.h"

#include "api_answers.h"
#include "api_requests.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>

/* The command of c's body, or NULL once c is answered (no JSON object, or no
 * command: then the commands listed is the list from the ctl's table). A
 * body of {"check": LINE} asks only whether LINE is one of the commands and
 * is answered here, 200 either way ({"ok": true} or {"ok": false, "error":
 * ...}): a ctl write of several lines checks every line before it sends any,
 * and a 400 then means a scheduler from before the check. */
static const char *ctl_command(struct call *c, json_t **json, char *(*commands)(const char *last_sep),
			       int (*check)(const char *command, char **err))
{
	const char *command, *checked;
	char *list, *msg;

	*json = api_body_json(c);
	if (!*json)
		return NULL;
	api_read_ctl_request(*json, &command, &checked);
	if (command)
		return command;
	if (checked) {
		char *err = NULL;

		if (check(checked, &err) < 0)
			reply_json(c, MHD_HTTP_OK, api_check_json(err ? err : "not a command"));
		else
			reply_json(c, MHD_HTTP_OK, api_check_json(NULL));
		free(err);
		return NULL;
	}
	list = commands(" or ");
	msg = xasprintf("the body needs \"command\": %s", list);
	reply_error(c, MHD_HTTP_BAD_REQUEST, msg);
	free(msg);
	free(list);
	return NULL;
}

/* The answer to a ctl command the engine took (rc 0) or refused (err, freed
 * here). */
static void ctl_reply(struct call *c, int rc, char *err)
{
	if (rc < 0)
		reply_errno(c, errno, err);
	else
		reply_json(c, MHD_HTTP_OK, api_check_json(NULL));
}

void api_ctl_job(struct call *c)
{
	json_t *json = NULL;
	const char *command = ctl_command(c, &json, engine_ctl_commands, engine_ctl_check);
	char *err = NULL;
	int64_t id;

	if (command && api_parse_id(c->args[0], &id) < 0) {
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such job");
	} else if (command) {
		int rc;

		api_caller_groups(c);
		rc = engine_ctl(c->engine, &c->who, id, command, &err);
		ctl_reply(c, rc, err);
	}
	json_decref(json);
}

void api_ctl_host(struct call *c)
{
	json_t *json = NULL;
	const char *command = ctl_command(c, &json, engine_host_ctl_commands, engine_host_ctl_check);
	char *err = NULL;

	if (command) {
		int rc;

		api_caller_groups(c);
		rc = engine_host_ctl(c->engine, &c->who, c->args[0], command, &err);
		ctl_reply(c, rc, err);
	}
	json_decref(json);
}

void api_ctl_schedule(struct call *c)
{
	json_t *json = NULL;
	const char *command = ctl_command(c, &json, schedules_ctl_commands, schedules_ctl_check);
	char *err = NULL;

	if (command) {
		int rc;

		api_caller_groups(c);
		rc = schedules_ctl(engine_schedules(c->engine), &c->who, c->args[0], command, &err);
		ctl_reply(c, rc, err);
	}
	json_decref(json);
}
