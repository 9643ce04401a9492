/* The HTTP contract's requests (docs/api.md): the bodies clients send, each
 * made by one writer here and read by the scheduler through one reader, so
 * both sides agree on a member's name and meaning. The paths are
 * api_paths.h, the answers api_answers.h. */
#ifndef PARSA_API_REQUESTS_H
#define PARSA_API_REQUESTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* POST /v1/jobs and /v1/schedules: {"name": the file's name, "spec": its
 * text, "token": the submission's (optional, docs/api.md), "workdir": the
 * folder it was submitted from (optional)}. NULL with errno EINVAL when
 * JSON cannot carry it: spec holds a NUL byte or is not UTF-8 (*bad_spec
 * set), or name is not UTF-8 (*bad_spec clear). token or workdir NULL:
 * none; a workdir that is not UTF-8 text is left out (its instances then
 * run in their output folder). */
json_t *api_submission_json(const char *name, const char *spec, size_t len, const char *token,
			    const char *workdir, bool *bad_spec);

/* A submission as the scheduler reads it: pointers into the body. name is
 * NULL when absent; spec may hold NUL bytes (len is its length). */
struct api_submission {
	const char *name;
	const char *spec;
	size_t len;
	const char *token;
	const char *workdir;     /* absolute, or NULL */
};
/* 0, or -1 with errno EINVAL and *err saying what the body lacks (a 400). */
int api_read_submission(const json_t *body, struct api_submission *s, char **err);

/* Is t a token the scheduler takes: 1 to 64 letters, digits, '-' or '_'? */
bool api_token_ok(const char *t);

/* POST .../ctl: {"command": line} (do it) or {"check": line} (is it one of
 * the commands?), line of n bytes; NULL when it is not UTF-8. */
json_t *api_command_json(const char *line, size_t n);
json_t *api_check_request_json(const char *line, size_t n);

/* Which of the two a ctl body is: *command or *check set (pointers into
 * body), or both NULL when it is neither. */
void api_read_ctl_request(const json_t *body, const char **command, const char **check);

#endif
