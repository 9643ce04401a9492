#include "api_runners.h"
#include "api_args.h"
#include "api_reply.h"

#include "proto.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>

void api_runners_register(struct call *c)
{
	json_t *json = api_body_json(c);
	struct host_info info;
	char *err = NULL;

	if (!json)
		return;
	host_info_from_json(json, &info);
	if (engine_register_host(c->engine, &info, &err) < 0) {
		reply_errno(c, errno, err);
	} else {
		struct registration_answer answer = { .name = info.name,
						      .lease_ms = engine_lease_ms(c->engine) };

		reply_json(c, MHD_HTTP_OK, registration_answer_to_json(&answer));
	}
	host_info_clear(&info);
	json_decref(json);
}

void api_runners_heartbeat(struct call *c)
{
	json_t *json = api_body_json(c);
	struct heartbeat hb;
	char *err = NULL;

	if (!json)
		return;
	heartbeat_from_json(json, &hb);
	if (engine_heartbeat(c->engine, c->args[0], &hb, &err) < 0)
		reply_errno(c, errno, err);
	else
		reply_json(c, MHD_HTTP_OK, json_object());
	heartbeat_clear(&hb);
	json_decref(json);
}

void api_runners_leave(struct call *c)
{
	char *err = NULL;

	if (engine_host_leave(c->engine, c->args[0], &err) < 0)
		reply_errno(c, errno, err);
	else
		reply_json(c, MHD_HTTP_OK, json_object());
}

void api_runners_work(struct call *c)
{
	int64_t timeout = api_query_ms(c, "timeout_ms", 30000, 30000);
	char *err = NULL;
	json_t *answer = engine_work(c->engine, c->args[0], timeout, &err);

	if (!answer) {
		reply_errno(c, errno, err);
		return;
	}
	/* Kept until the connection reports how the answer went (on_completed). */
	if (work_answer_has_items(answer)) {
		c->work = json_incref(answer);
		c->work_host = xstrdup(c->args[0]);
	}
	reply_json(c, MHD_HTTP_OK, answer);
}

void api_runners_report(struct call *c)
{
	json_t *json = api_body_json(c);
	struct report r;
	char *err = NULL;
	int64_t id;

	if (!json)
		return;
	if (report_from_json(json, &r, &err) < 0) {
		reply_error(c, MHD_HTTP_BAD_REQUEST, err);
	} else if (api_parse_id(c->args[0], &id) < 0) {
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such instance");
	} else if (r.kind == REPORT_EXITED && r.exit_code < 0 && r.signal <= 0) {
		reply_error(c, MHD_HTTP_BAD_REQUEST, "an exited report needs exit_code or signal");
	} else if (engine_report(c->engine, id, &r, &err) < 0) {
		reply_errno(c, errno, err);
		err = NULL;
	} else {
		reply_json(c, MHD_HTTP_OK, json_object());
	}
	free(err);
	json_decref(json);
}

void api_runners_progress(struct call *c)
{
	json_t *json = api_body_json(c);
	struct progress_report p;
	char *err = NULL;
	int64_t id;

	if (!json)
		return;
	progress_report_from_json(json, &p);
	if (api_parse_id(c->args[0], &id) < 0)
		reply_error(c, MHD_HTTP_NOT_FOUND, "no such instance");
	else if (engine_progress(c->engine, id, p.attempt, p.done, p.total, &err) < 0)
		reply_errno(c, errno, err);
	else
		reply_json(c, MHD_HTTP_OK, json_object());
	json_decref(json);
}
