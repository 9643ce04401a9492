/* The main loop's conversation with the scheduler: registering this host,
 * the heartbeat every second, and sending queued state reports. It keeps the
 * link's state (registered or not, backing off while the scheduler is away)
 * and logs only when that state changes. */
#ifndef PARSA_RUNNER_SESSION_H
#define PARSA_RUNNER_SESSION_H

#include <jansson.h>
#include <stdint.h>

#include "report.h"

struct session;

struct session_hooks {
	/* The registration body (new reference): capacity, limits, features, mount. */
	json_t *(*registration)(void *arg);
	/* The heartbeat body (new reference): live usage and running instances. */
	json_t *(*heartbeat)(void *arg);
	void *arg;
};

#define SESSION_HEARTBEAT_MS 1000
/* Until the scheduler says otherwise when we register. */
#define SESSION_LEASE_MS 30000

struct session *session_create(const char *endpoint, const char *name,
			       const struct session_hooks *hooks, char **err);
void session_destroy(struct session *s);

/* Do what is due at now_ms: register (with backoff while the scheduler is
 * unreachable), heartbeat, and retry pending reports. Returns the next time
 * (monotonic ms) something will be due. */
int64_t session_tick(struct session *s, struct report_queue *q, int64_t now_ms);

/* Send pending reports now if the scheduler is reachable (an instance started
 * or ended: the scheduler should know within milliseconds). */
void session_flush(struct session *s, struct report_queue *q, int64_t now_ms);

/* The runner stops on purpose: deliver the pending reports, then tell the
 * scheduler the host leaves, so that it stops sending work here. */
void session_leave(struct session *s, struct report_queue *q, int64_t now_ms);

/* Register again as soon as possible (the scheduler said it does not know us,
 * or our capacity changed). */
void session_reregister(struct session *s);

int session_registered(const struct session *s);

/* When the current registration succeeded (monotonic ms), 0 if not registered:
 * a "host unknown" answer to a request sent before then is stale. */
int64_t session_registered_at(const struct session *s);

/* When the lease ends (monotonic ms): the lease, from the last heartbeat the
 * scheduler acknowledged (or the last try that found no scheduler running at
 * all). Past it, the scheduler may have given this host's instances to others,
 * so the runner must stop them. 0 before the first contact. */
int64_t session_lease_end(const struct session *s);

#endif
