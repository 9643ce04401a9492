#include "api_reply.h"
#include "api.h"

#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

unsigned int api_status_for_errno(int err)
{
	switch (err) {
	case EINVAL:
		return MHD_HTTP_BAD_REQUEST;
	case EACCES:
	case EPERM:
		return MHD_HTTP_FORBIDDEN;
	case ENOENT:
		return MHD_HTTP_NOT_FOUND;
	case EBUSY:
		return MHD_HTTP_CONFLICT;
	case EFBIG:
		return API_HTTP_TOO_LARGE;
	case EAGAIN:
		return MHD_HTTP_SERVICE_UNAVAILABLE;
	case ENOSPC:
		return MHD_HTTP_INSUFFICIENT_STORAGE;
	case EDQUOT:
		/* Over a [limits] line of parsa.conf (sched/policy/policy.h). */
		return MHD_HTTP_TOO_MANY_REQUESTS;
	default:
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
}

void reply_json(struct call *c, unsigned int status, json_t *json)
{
	c->status = status;
	c->out = json ? json_dumps(json, JSON_COMPACT) : NULL;
	if (!c->out)
		c->out = xstrdup("{}");
	c->out_len = strlen(c->out);
	c->type = "application/json";
	json_decref(json);
}

void reply_bytes(struct call *c, char *bytes, size_t len)
{
	c->status = MHD_HTTP_OK;
	c->out = bytes;
	c->out_len = len;
	c->type = "text/plain; charset=utf-8";
}

void reply_json_text(struct call *c, unsigned int status, char *text, size_t len)
{
	c->status = status;
	c->out = text;
	c->out_len = len;
	c->type = "application/json";
}

void reply_text(struct call *c, char *text)
{
	reply_bytes(c, text, strlen(text));
}

void reply_error(struct call *c, unsigned int status, const char *msg)
{
	reply_json(c, status, json_pack("{s:s}", "error", msg ? msg : "error"));
}

void reply_errno(struct call *c, int err, char *msg)
{
	reply_error(c, api_status_for_errno(err), msg ? msg : strerror(err));
	free(msg);
}
