/* A client of the scheduler's HTTP/1.1 + JSON API (docs/api.md), over a unix
 * socket ("unix:/run/parsa/sched.sock") or TCP ("http://head:7070" or
 * "head:7070", every request signed with munge), built on libcurl. One client per thread: a client is not thread-safe. */
#ifndef PARSA_API_CLIENT_H
#define PARSA_API_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/types.h>

struct api_client;

/* The reason a runner gives for an instance it stopped because the runner
 * itself was told to stop (an operator's `parsa down`, a host shutdown): not
 * the job's fault, so the scheduler requeues it without counting a retry. */
#define API_REASON_RUNNER_STOPPED "runner stopped"
/* The reason for an instance stopped because its host's window closed
 * (parsa-runner --window, --drain-at-window-end no): requeued the same way. */
#define API_REASON_WINDOW_CLOSED "host window closed"
/* The start of the reason for an instance its runner did not start because
 * the volume did not answer: the runner's mount said so (<mount>/storage), or
 * opening its log or entering its folder failed with an error of the volume
 * (EIO, ETIMEDOUT, ENOTCONN...): "storage unreachable: cannot open the log
 * ...". Not the job's fault: requeued without counting a retry. */
#define API_REASON_STORAGE_UNREACHABLE "storage unreachable"

/* Is reason API_REASON_STORAGE_UNREACHABLE, alone or followed by ": ..."? */
static inline bool api_reason_storage_unreachable(const char *reason)
{
	size_t n = sizeof API_REASON_STORAGE_UNREACHABLE - 1;

	return reason && strncmp(reason, API_REASON_STORAGE_UNREACHABLE, n) == 0 &&
	       (reason[n] == '\0' || reason[n] == ':');
}
/* The start of the reason for an instance its runner killed for using more
 * than its mem: "out of memory: used 1.2G of mem = 1G". A failure of the
 * job's own (retries apply), shown as it is. */
#define API_REASON_OUT_OF_MEMORY "out of memory"

/* Whom a trusted caller (root, or the scheduler's own user, e.g. parsafs) acts for.
 * The scheduler ignores it from anyone else. */
struct api_identity {
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	size_t ngroups;
};

struct api_reply {
	long status;   /* HTTP status */
	char *body;    /* NUL-terminated, malloc'ed */
	size_t len;
	size_t cap;    /* bytes allocated at body */
};

struct api_client *api_client_create(const char *endpoint, char **err);
void api_client_destroy(struct api_client *client);

/* Send one request and wait at most timeout_ms for the whole answer: the one
 * call contract of every client of the API (docs/design.md, "Calling the
 * scheduler"). Returns the HTTP status (>= 0, also in reply->status) with
 * reply filled in whenever the scheduler answered, whatever the status; or -1
 * with errno when there is no answer: ENOTCONN (refused, socket missing,
 * unreachable, or munged's socket missing), ETIMEDOUT, ECANCELED (see
 * api_client_set_cancel_fd), EIO (anything else, e.g. no munge credential),
 * and, if err is not NULL, *err saying why (munged's reason when the request
 * could not be signed, else strerror(errno); the caller frees it). as may be
 * NULL. The caller clears the reply with api_reply_clear() in every case.
 * Callers that need a 2xx answer wrap this (fs/sched_link.c, tools/client.c). */
int api_call(struct api_client *client, const char *method, const char *path,
	     const char *body, size_t len, const struct api_identity *as,
	     long timeout_ms, struct api_reply *reply, char **err);
void api_reply_clear(struct api_reply *reply);

/* How api_submit() asks again: each attempt waits at most call_timeout_ms;
 * once an attempt may have reached the scheduler it keeps asking until
 * deadline_ms after the first, and while every attempt found nothing
 * listening (a scheduler restarting), until grace_ms. */
struct api_submit_policy {
	long call_timeout_ms;
	long deadline_ms;
	long grace_ms;
};

/* POST body, a submission that carries its token ("token", docs/api.md), to
 * path, and send the same request again whenever its answer is lost (no
 * answer, a 503, or a 5xx after an attempt that may have committed): the
 * scheduler answers a token it already committed with that job, so the
 * submission commits once. Returns the HTTP status of the answer that
 * settles it, with reply filled in, as api_call(). Or -1 with errno: ENOTCONN
 * when nothing listened for grace_ms, so nothing was sent; ETIMEDOUT with
 * *unconfirmed set when an attempt may have reached the scheduler and no
 * answer settled it by deadline_ms, or when it was cancelled after such an
 * attempt (it may have committed); ECANCELED; EIO. The caller
 * clears the reply in every case. */
int api_submit(struct api_client *client, const char *path, const char *body, size_t len,
	       const struct api_identity *as, const struct api_submit_policy *policy,
	       struct api_reply *reply, bool *unconfirmed);

/* Over TCP, requests carry a munge credential (auth.h) from munged at path;
 * the default is $PARSA_MUNGE_SOCKET, else libmunge's own. No effect on unix
 * sockets, where the scheduler reads the caller from the socket. */
void api_client_set_munge_socket(struct api_client *client, const char *path);

/* After api_call() failed with ENOTCONN: 1 when nothing listened at the
 * address (connection refused, socket missing: the scheduler is not running),
 * 0 when the scheduler could not be reached at all (a network cut). */
int api_client_refused(const struct api_client *client);

/* Make api_call() on this client give up with -1 and errno ECANCELED as soon as
 * fd is readable, so that another thread can stop a long poll (fd is typically
 * the read end of a pipe). -1 turns it off (the default). */
void api_client_set_cancel_fd(struct api_client *client, int fd);

/* The errno that a filesystem or CLI should report for an HTTP status:
 * 400 EINVAL, 403 EACCES, 404 ENOENT, 409 EBUSY, 413 EFBIG, 503 EAGAIN, 5xx EIO. */
int api_status_errno(long status);

/* The "error" member of a JSON error body, or the body itself, or the status
 * line when the body is empty: a malloc'ed string the caller frees. */
char *api_reply_error(const struct api_reply *reply);

/* A submission's token (docs/api.md, "token"): 128 random bits in hex, made
 * anew for each submission and sent again with its retries, so that the
 * scheduler commits it once. 0, or -1 with errno when the kernel gives no
 * random bytes. */
#define API_TOKEN_SIZE 33
int api_new_token(char token[API_TOKEN_SIZE]);

/* Percent-encode s for a path component or a query value of an API URL (a
 * stage or host name): unreserved characters are kept. Malloc'ed. */
char *url_escape(const char *s);

#endif
