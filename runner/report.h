/* Instance state reports on their way to the scheduler (POST
 * /v1/instances/<id>/state), kept in order and sent again until the scheduler
 * acknowledges each one, so that a scheduler restart loses none. With a state
 * folder, pending reports are also files there and survive a runner restart. */
#ifndef PARSA_RUNNER_REPORT_H
#define PARSA_RUNNER_REPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct report_queue;

/* What a send function says about one report. */
enum report_result {
	REPORT_ACKED = 0,     /* 2xx: done */
	REPORT_REFUSED = 1,   /* the scheduler answered no for good (4xx): drop it */
	REPORT_RETRY = -1,    /* unreachable or busy: keep it and stop for now */
};

/* Sends body to path; err may be set to a reason for the log. */
typedef enum report_result (*report_send_fn)(void *arg, const char *path, const char *body, char **err);

/* state_dir may be NULL (memory only); otherwise reports left there by an
 * earlier run are loaded, oldest first. NULL with errno and *err. */
struct report_queue *report_queue_create(const char *state_dir, char **err);
void report_queue_destroy(struct report_queue *q);

/* Queue a state report for instance id; body is the JSON object (the queue
 * takes the reference). */
void report_queue_push(struct report_queue *q, int64_t id, json_t *body);

/* The same, kept in memory only until report_queue_keep(): for a report
 * whose cause is still on disk elsewhere (an instance's end in its executor
 * folder, which a restarted runner reads again), so that the usual report,
 * acknowledged at once, costs no file. Call report_queue_keep() before that
 * cause goes. */
void report_queue_push_later(struct report_queue *q, int64_t id, json_t *body);

/* Write every pending report not in the state folder yet. */
void report_queue_keep(struct report_queue *q);

size_t report_queue_pending(const struct report_queue *q);

/* Call fn for each pending report with its instance id and attempt. */
void report_queue_each(const struct report_queue *q,
		       void (*fn)(void *arg, int64_t id, int64_t attempt), void *arg);

/* Send reports in order until one must be retried. Returns how many remain. */
size_t report_queue_flush(struct report_queue *q, report_send_fn send, void *arg);

#endif
