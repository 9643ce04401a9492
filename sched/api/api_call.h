/* What an API handler sees: one request as it arrived (its route's '*'
 * segments, its body, who sent it) and the answer the handler fills in. The
 * server (api.c) makes one per request, hands it to one handler of its route
 * table and sends what the handler left in it. */
#ifndef PARSA_API_CALL_H
#define PARSA_API_CALL_H

#include "engine.h"
#include "records.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

#define API_MAX_GROUPS 256
#define API_MAX_ARGS 4

struct call {
	struct engine *engine;
	struct records *records;          /* lists and usage (NULL: not served) */
	struct MHD_Connection *conn;
	const char *args[API_MAX_ARGS];   /* the '*' segments of the route */
	const char *body;
	size_t len;
	/* Who is calling (api_identity.h). */
	struct caller who;
	gid_t groups[API_MAX_GROUPS];
	bool groups_known;
	bool trusted;
	char *auth_error;      /* why a TCP request's credential was refused */
	bool auth_busy;        /* ... because munged could not be asked */
	/* A work answer, with its host, to hand back to the engine if the
	 * connection fails to deliver it (api.c, on_completed). */
	json_t *work;
	char *work_host;
	/* The answer (api_reply.h). */
	unsigned int status;
	char *out;
	size_t out_len;
	const char *type;
};

typedef void (*api_handler_fn)(struct call *c);

#endif
