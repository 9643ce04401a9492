/* What a handler reads of its request: whole numbers in the path and the
 * query, and the JSON body. Where a request is wrong, these answer it (400)
 * themselves and the handler only returns. */
#ifndef PARSA_API_ARGS_H
#define PARSA_API_ARGS_H

#include "api_call.h"

#include <stdint.h>

/* A whole non-negative decimal number, nothing else around it. 0 or -1. */
int api_parse_num(const char *text, int64_t *out);
/* The same, above 0 (a job or instance id). */
int api_parse_id(const char *text, int64_t *id);
/* The query's name=N, at most max; dflt when missing or not a number. */
int64_t api_query_ms(struct call *c, const char *name, int64_t dflt, int64_t max);
/* The body as a JSON object (new reference), or NULL after answering 400. */
json_t *api_body_json(struct call *c);
/* The same with jansson's decoding flags: JSON_ALLOW_NUL for a submission,
 * whose spec text the spec parser then refuses with a file:line: message. */
json_t *api_body_json_flags(struct call *c, size_t flags);

#endif
