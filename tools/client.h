/* The command line's side of the scheduler API: which endpoint to talk to
 * (--sched, else $PARSA_SCHED, else the default state's socket) and one call
 * that turns every way a request can fail into a sentence naming the reason
 * and the fix, ready for the CLI edge to print. */
#ifndef PARSA_CLIENT_H
#define PARSA_CLIENT_H

#include "api_client.h"

#include <jansson.h>
#include <stddef.h>

struct client {
	struct api_client *api;
	char *endpoint; /* as given, for messages */
};

/* The endpoint to use: flag if not NULL, else env_value (PARSA_SCHED) if set
 * and not empty, else fallback. Returns a malloc'ed copy. */
char *client_pick_endpoint(const char *flag, const char *env_value, const char *fallback);

/* Open a client for flag/$PARSA_SCHED/the default. 0, or -1 with *err. */
int client_open(struct client *c, const char *flag, char **err);
void client_close(struct client *c);

/* One request: api_call() for the CLI, which needs a 2xx answer and a sentence
 * for every failure. Returns 0 with *reply filled when the scheduler answered 2xx.
 * Otherwise -1 with errno (ENOTCONN unreachable, ETIMEDOUT, or the status's
 * errno from api_status_errno) and *err saying why; when the scheduler did
 * answer, *reply is still filled so that callers can look at the status.
 * The caller clears the reply with api_reply_clear() in every case. */
int client_call(struct client *c, const char *method, const char *path, const char *body,
		size_t len, long timeout_ms, struct api_reply *reply, char **err);

/* How client_submit() asks again when the answer is lost (api_submit). */
#define CLIENT_SUBMIT_CALL_MS 10000L
#define CLIENT_SUBMIT_DEADLINE_MS 30000L
#define CLIENT_SUBMIT_GRACE_MS 5000L

/* POST a submission that carries its token (api_submit): as client_call,
 * and when no answer settled it, -1 with errno ETIMEDOUT and *err saying it
 * may have been submitted. */
int client_submit(struct client *c, const char *path, const char *body, size_t len,
		  struct api_reply *reply, char **err);

/* client_call for an answer that must be a JSON object: *json is set on
 * success (the caller json_decref()s it). */
int client_call_json(struct client *c, const char *method, const char *path, json_t *body,
		     long timeout_ms, json_t **json, char **err);

/* A job id as typed: a positive decimal integer, or "last" (resolved through
 * GET /v1/jobs/last, which needs c). 0 or -1 with *err. */
int client_job_id(struct client *c, const char *text, long long *id, char **err);

/* Parse a positive decimal job id; 0 or -1/EINVAL. */
int parse_job_id(const char *text, long long *id);

#endif
