#include "api_schedules.h"
#include "api_args.h"
#include "api_identity.h"
#include "api_reply.h"
#include "schedules.h"

#include "api_answers.h"

#include <errno.h>

void api_schedules_put(struct call *c)
{
	json_t *json = api_body_json(c), *name, *spec;
	char *err = NULL;
	int64_t id;

	if (!json)
		return;
	name = json_object_get(json, "name");
	spec = json_object_get(json, "spec");
	api_caller_groups(c);
	if (!json_is_string(spec) || !json_is_string(name))
		reply_error(c, MHD_HTTP_BAD_REQUEST, "the body needs \"name\" (the file name) and \"spec\"");
	else if (schedules_put(engine_schedules(c->engine), &c->who, json_string_value(name),
			       json_string_value(spec), json_string_length(spec), &id, &err) < 0)
		reply_errno(c, errno, err);
	else
		reply_json(c, MHD_HTTP_CREATED, api_id_json(id));
	json_decref(json);
}

void api_schedules_list(struct call *c)
{
	reply_json(c, MHD_HTTP_OK, schedules_list_json(engine_schedules(c->engine)));
}

void api_schedules_json(struct call *c)
{
	json_t *json = schedules_json(engine_schedules(c->engine), c->args[0]);

	if (json)
		reply_json(c, MHD_HTTP_OK, json);
	else
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such schedule");
}

void api_schedules_status(struct call *c)
{
	char *text = schedules_status(engine_schedules(c->engine), c->args[0]);

	if (text)
		reply_text(c, text);
	else
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such schedule");
}

void api_schedules_spec(struct call *c)
{
	size_t len = 0;
	char *text = schedules_spec(engine_schedules(c->engine), c->args[0], &len);

	if (text)
		reply_bytes(c, text, len);
	else
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such schedule");
}

void api_schedules_delete(struct call *c)
{
	char *err = NULL;

	api_caller_groups(c);
	if (schedules_remove(engine_schedules(c->engine), &c->who, c->args[0], &err) < 0)
		reply_errno(c, errno, err);
	else
		reply_json(c, MHD_HTTP_OK, json_object());
}
