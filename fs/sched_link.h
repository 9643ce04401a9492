/* The mount's line to the scheduler: one api_client per FUSE worker thread
 * (a client is not thread-safe), every request sent on behalf of the person
 * whose request FUSE is serving (X-Parsa-Uid/Gid/Groups), a short timeout on
 * everything but long-polls, and a client rebuilt after any transport failure
 * so the mount recovers by itself when the scheduler is back. */
#ifndef PARSA_SCHED_LINK_H
#define PARSA_SCHED_LINK_H

#include "api_client.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sched_link;

/* Timeout of an ordinary call: the mount must fail fast, never hang. */
#define SCHED_CALL_TIMEOUT_MS 5000L
/* How long a submission whose answer was lost keeps asking (the same
 * request, the same token) before it gives up: a scheduler that `parsa up`
 * restarts is back in well under a second. */
#define SCHED_SUBMIT_DEADLINE_MS 30000L
/* How long a submission that reached nobody (refused: nothing listens) waits
 * for a restarting scheduler before it fails with nothing submitted. A
 * restart on a loaded machine takes seconds: with 2 s, 8 of 10,000
 * submissions of bench/submit-soak at a load of 30 gave up. */
#define SCHED_RESTART_GRACE_MS 5000L
/* How long one long-poll of .../wait asks the scheduler to hold it. */
#define SCHED_WAIT_POLL_MS 1000L

/* Whom a request acts for: the caller of the current FUSE request. */
struct fs_identity {
	uid_t uid;
	gid_t gid;
	gid_t *groups;           /* malloc'ed, may be NULL */
	size_t ngroups;
};

/* fs_identity_current() and fs_identity_basic() (fs_node.h) fill one in from
 * the FUSE request. */
void fs_identity_copy(struct fs_identity *dst, const struct fs_identity *src);
void fs_identity_clear(struct fs_identity *who);

struct sched_link *sched_link_create(const char *endpoint, char **err);
void sched_link_destroy(struct sched_link *link);
const char *sched_link_endpoint(const struct sched_link *link);

/* One request as who: api_call() for the mount, which needs a 2xx answer.
 * Returns 0 with *reply filled on a 2xx answer. Otherwise -1 with errno: the
 * HTTP status mapped by api_status_errno() (the reply is kept so the caller
 * can show its error text), ENOTCONN when the scheduler could not be reached
 * (for a request other than GET: and no byte of it was sent, see
 * api_client_unsent()), or EIO, e.g. a POST that lost its answer after it was
 * sent and so may have been carried out. The caller clears the reply in
 * every case. */
int sched_link_call(struct sched_link *link, const struct fs_identity *who,
		    const char *method, const char *path, const char *body, size_t len,
		    long timeout_ms, struct api_reply *reply);

/* POST a submission whose body carries its token with api_submit() (asked
 * again until answered, within SCHED_SUBMIT_DEADLINE_MS, or
 * SCHED_RESTART_GRACE_MS while nothing listens). 0 with *reply on a 2xx
 * answer. -1 with errno otherwise: the scheduler's answer mapped as for
 * sched_link_call (the reply kept); ENOTCONN when nothing was sent;
 * ETIMEDOUT with *unconfirmed when it may have committed; EIO. The caller
 * clears the reply in every case. */
int sched_link_submit(struct sched_link *link, const struct fs_identity *who, const char *path,
		      const char *body, size_t len, struct api_reply *reply, bool *unconfirmed);

/* GET path and return its body as a malloc'ed NUL-terminated text; with
 * add_newline, one is added when the body does not end with one (a JSON
 * answer read with cat). NULL with errno as for sched_link_call. */
char *sched_link_get_text(struct sched_link *link, const struct fs_identity *who,
			  const char *path, bool add_newline, size_t *len);

/* An answer that its reader (lib/api_answers.h) refused: err (freed here) is
 * logged, and the caller fails with EIO: -1 with errno EIO. */
int sched_link_unreadable(char *err);

#endif
