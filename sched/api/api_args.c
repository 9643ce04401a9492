#include "api_args.h"
#include "api_reply.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int api_parse_num(const char *text, int64_t *out)
{
	char *end;
	long long v;

	if (!text || *text < '0' || *text > '9')
		return -1;
	errno = 0;
	v = strtoll(text, &end, 10);
	if (*end || errno)
		return -1;
	*out = v;
	return 0;
}

int api_parse_id(const char *text, int64_t *id)
{
	return api_parse_num(text, id) == 0 && *id > 0 ? 0 : -1;
}

int64_t api_query_ms(struct call *c, const char *name, int64_t dflt, int64_t max)
{
	const char *v = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, name);
	int64_t ms;

	if (!v || api_parse_num(v, &ms) < 0)
		return dflt;
	return ms > max ? max : ms;
}

json_t *api_body_json(struct call *c)
{
	return api_body_json_flags(c, 0);
}

json_t *api_body_json_flags(struct call *c, size_t flags)
{
	json_error_t jerr;
	json_t *json = json_loadb(c->body ? c->body : "", c->len, flags, &jerr);

	if (!json || !json_is_object(json)) {
		char msg[256];

		snprintf(msg, sizeof msg, "the body is not a JSON object: %s",
			 json ? "not an object" : jerr.text);
		reply_error(c, MHD_HTTP_BAD_REQUEST, msg);
		json_decref(json);
		return NULL;
	}
	return json;
}
