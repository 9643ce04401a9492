#include "api_records.h"
#include "api_args.h"
#include "api_reply.h"

#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The most jobs one answer lists: a history wants them all, a page 50. */
#define HISTORY_MAX_LIMIT 100000

static const char *query(struct call *c, const char *key)
{
	const char *v = MHD_lookup_connection_value(c->conn, MHD_GET_ARGUMENT_KIND, key);

	return v && *v ? v : NULL;
}

/* A number of the query, 0 when absent; -1 after answering 400. */
static int query_num(struct call *c, const char *key, int64_t *out)
{
	const char *v = query(c, key);
	char msg[128];

	*out = 0;
	if (v && api_parse_num(v, out) < 0) {
		snprintf(msg, sizeof msg, "%s must be a whole number", key);
		reply_error(c, MHD_HTTP_BAD_REQUEST, msg);
		return -1;
	}
	return 0;
}

static bool records_served(struct call *c)
{
	if (!c->records)
		reply_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "this scheduler keeps no history reader");
	return c->records != NULL;
}

void api_records_jobs(struct call *c)
{
	struct records_filter f = {
		.user = query(c, "user"), .team = query(c, "team"), .state = query(c, "state"),
		.name = query(c, "name"),
		.finished = query(c, "finished") != NULL, .recent = query(c, "recent") != NULL,
		.stages = query(c, "stages") != NULL,
	};
	int64_t since, until, limit, offset;
	char *err = NULL;
	json_t *json;

	if (!records_served(c) || query_num(c, "since_ms", &since) < 0 ||
	    query_num(c, "until_ms", &until) < 0 || query_num(c, "limit", &limit) < 0 ||
	    query_num(c, "offset", &offset) < 0)
		return;
	f.since_ms = since;
	f.until_ms = until;
	f.limit = (size_t)(limit > HISTORY_MAX_LIMIT ? HISTORY_MAX_LIMIT : limit);
	f.offset = (size_t)offset;
	json = records_jobs(c->records, &f, &err);
	if (!json) {
		reply_errno(c, errno, err);
		return;
	}
	reply_json(c, MHD_HTTP_OK, json);
}

void api_records_usage(struct call *c)
{
	const char *format = query(c, "format"), *by = query(c, "by");
	int64_t since, until;
	char *err = NULL, *text;
	json_t *json;

	if (!records_served(c) || query_num(c, "since_ms", &since) < 0 ||
	    query_num(c, "until_ms", &until) < 0)
		return;
	if (by && strcmp(by, "team") != 0 && strcmp(by, "user") != 0) {
		reply_error(c, MHD_HTTP_BAD_REQUEST, "by is team or user");
		return;
	}
	json = records_usage(c->records, by, since, until, query(c, "period"), &err);
	if (!json) {
		reply_errno(c, errno, err);
		return;
	}
	if (format && (strcmp(format, "text") == 0 || strcmp(format, "csv") == 0)) {
		text = format[0] == 't' ? records_usage_text(json) : records_usage_csv(json);
		json_decref(json);
		reply_text(c, text);
		return;
	}
	reply_json(c, MHD_HTTP_OK, json);
}
