/* The runner's side of the host's `work` long-poll (GET /v1/hosts/<h>/work): a
 * thread with its own API client that waits for assignments and cancels and
 * hands each non-empty answer to the main loop through a pipe, so the main loop
 * never blocks on the scheduler's silence. */
#ifndef PARSA_RUNNER_WORK_H
#define PARSA_RUNNER_WORK_H

#include <jansson.h>
#include <stdint.h>

struct work_poll;

enum work_msg_kind {
	WORK_ANSWER,         /* json: {"start": [...], "cancel": [...]} */
	WORK_HOST_UNKNOWN,   /* the scheduler does not know this host: register again */
};

struct work_msg {
	enum work_msg_kind kind;
	json_t *json;        /* WORK_ANSWER only */
	int64_t sent_ms;     /* when the poll that got this answer was sent (monotonic) */
};

/* Start polling as host name. timeout_ms is the long-poll's length (the API
 * allows up to 30000). NULL with errno and *err. */
struct work_poll *work_poll_create(const char *endpoint, const char *name, long timeout_ms, char **err);

/* Ask the thread to stop without waiting for it (it takes up to about a second,
 * libcurl's pace for noticing); no message is delivered afterwards. */
void work_poll_stop(struct work_poll *wp);

/* Stop the thread, wait for it, drop undelivered messages. */
void work_poll_destroy(struct work_poll *wp);

/* Poll again now if the thread is waiting out a backoff (the main loop has
 * just registered, so the scheduler is back). */
void work_poll_kick(struct work_poll *wp);

/* Readable when messages wait. */
int work_poll_fd(const struct work_poll *wp);

/* The next message, or NULL when none waits. The caller frees it. */
struct work_msg *work_poll_next(struct work_poll *wp);
void work_msg_destroy(struct work_msg *msg);

#endif
