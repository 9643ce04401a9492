/* How a handler answers: JSON, text or bytes with 200, or a status and
 * {"error": ...}. errno becomes an HTTP status here only (api_status_for_errno
 * in api.h), the one edge where the engine's errors are converted. */
#ifndef PARSA_API_REPLY_H
#define PARSA_API_REPLY_H

#include "api_call.h"

/* 413: its libmicrohttpd name changed between versions. */
#define API_HTTP_TOO_LARGE 413

/* Takes json (NULL answers {}). */
void reply_json(struct call *c, unsigned int status, json_t *json);
/* 200 with text (malloc'ed, NUL-terminated), which the answer takes. */
void reply_text(struct call *c, char *text);
/* 200 with len bytes of text/plain (malloc'ed), byte for byte, NULs and all. */
void reply_bytes(struct call *c, char *bytes, size_t len);
/* A JSON answer already written as text (len bytes, malloc'ed, taken over). */
void reply_json_text(struct call *c, unsigned int status, char *text, size_t len);
void reply_error(struct call *c, unsigned int status, const char *msg);
/* The status for err and the engine's text msg (freed here; NULL: strerror). */
void reply_errno(struct call *c, int err, char *msg);

#endif
