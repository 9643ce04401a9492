#include "session.h"
#include "api_client.h"
#include "api_paths.h"
#include "log.h"
#include "proto.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define CALL_TIMEOUT_MS 5000
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 1000

enum link_state {
	LINK_UNKNOWN,      /* nothing tried yet */
	LINK_DOWN,         /* the last call did not reach the scheduler */
	LINK_REFUSED,      /* it answered, but not what we need (e.g. 403) */
	LINK_UP,           /* registered */
};

struct session {
	struct api_client *api;
	char *endpoint;
	char *name;
	char *register_path;
	char *heartbeat_path;
	struct session_hooks hooks;
	enum link_state state;
	int registered;
	int64_t next_register_ms;
	int64_t next_heartbeat_ms;
	int64_t next_report_ms;  /* when to retry reports after a failed send */
	int64_t registered_at_ms;
	int backoff_ms;
	char *send_failure;      /* set by send_report when the scheduler was unreachable */
	int64_t lease_ms;        /* from the registration answer */
	int64_t contact_ms;      /* when the last acknowledged heartbeat was sent; 0 never */
};

struct session *session_create(const char *endpoint, const char *name,
			       const struct session_hooks *hooks, char **err)
{
	struct session *s = xcalloc(1, sizeof *s);

	s->api = api_client_create(endpoint, err);
	if (!s->api) {
		int saved = errno;

		free(s);
		errno = saved;
		return NULL;
	}
	s->endpoint = xstrdup(endpoint);
	s->name = xstrdup(name);
	s->register_path = api_path(API_HOSTS_REGISTER, NULL);
	s->heartbeat_path = api_path_name(API_HOST_HEARTBEAT, name);
	s->hooks = *hooks;
	s->backoff_ms = BACKOFF_MIN_MS;
	s->lease_ms = SESSION_LEASE_MS;
	return s;
}

void session_destroy(struct session *s)
{
	if (!s)
		return;
	api_client_destroy(s->api);
	free(s->endpoint);
	free(s->name);
	free(s->register_path);
	free(s->heartbeat_path);
	free(s->send_failure);
	free(s);
}

/* Log the link's state when it changes, not on every retry. */
static void set_state(struct session *s, enum link_state state, const char *why)
{
	if (state == s->state)
		return;
	switch (state) {
	case LINK_DOWN:
		log_warnx("scheduler at %s is unreachable (%s); retrying until it is back",
			  s->endpoint, why ? why : "?");
		break;
	case LINK_REFUSED:
		log_warnx("scheduler at %s refused this runner: %s; retrying", s->endpoint, why ? why : "?");
		break;
	case LINK_UP:
		log_info("registered host %s with the scheduler at %s", s->name, s->endpoint);
		break;
	case LINK_UNKNOWN:
		break;
	}
	s->state = state;
}

static void lost(struct session *s, int64_t now_ms, enum link_state state, const char *why)
{
	set_state(s, state, why);
	s->registered = 0;
	s->next_register_ms = now_ms + s->backoff_ms;
	s->backoff_ms = s->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : s->backoff_ms * 2;
}

/* POST a JSON body. Returns the HTTP status, or -1 with *why when unreachable.
 * With answer, a 2xx body is parsed into *answer (NULL if not JSON). */
static long post_answer(struct session *s, const char *path, const char *body, char **why,
			json_t **answer)
{
	struct api_reply reply;
	long status = api_call(s->api, "POST", path, body, strlen(body), NULL, CALL_TIMEOUT_MS,
			       &reply, why);

	if (status < 0)
		return -1;
	if (status < 200 || status > 299) {
		free(*why);
		*why = api_reply_error(&reply);
	} else if (answer) {
		*answer = json_loadb(reply.body, reply.len, 0, NULL);
	}
	api_reply_clear(&reply);
	return status;
}

static long post(struct session *s, const char *path, const char *body, char **why)
{
	return post_answer(s, path, body, why, NULL);
}

/* The scheduler got a heartbeat sent at sent_ms, or nothing listens where it
 * should be (it is restarting, and one that is not running requeues nothing):
 * the lease runs from here. */
static void renew(struct session *s, long status, int64_t sent_ms)
{
	if (status / 100 == 2 || (status < 0 && api_client_refused(s->api)))
		s->contact_ms = sent_ms;
}

static long post_json(struct session *s, const char *path, json_t *body, char **why, json_t **answer)
{
	char *text = proto_encode(body);
	long status;

	if (!text)
		fatalx("cannot encode a request body");
	status = post_answer(s, path, text, why, answer);
	free(text);
	return status;
}

static void do_register(struct session *s, int64_t now_ms)
{
	char *why = NULL;
	json_t *answer = NULL;
	long status = post_json(s, s->register_path, s->hooks.registration(s->hooks.arg), &why, &answer);
	struct registration_answer registered;
	int64_t lease;

	registration_answer_from_json(answer, &registered);
	lease = registered.lease_ms;
	json_decref(answer);
	renew(s, status, now_ms);
	if (lease > 0 && lease != s->lease_ms) {
		log_info("lease %.0f s: instances are stopped after that long without the scheduler",
			 (double)lease / 1000.0);
		s->lease_ms = lease;
	}
	if (status < 0) {
		lost(s, now_ms, LINK_DOWN, why);
	} else if (status / 100 != 2) {
		char *text = xasprintf("HTTP %ld: %s", status, why ? why : "");

		lost(s, now_ms, LINK_REFUSED, text);
		free(text);
	} else {
		set_state(s, LINK_UP, NULL);
		s->registered = 1;
		/* After the answer: a poll sent before it may still have been refused. */
		s->registered_at_ms = time_mono_ms();
		s->backoff_ms = BACKOFF_MIN_MS;
		/* Tell it at once what runs here (it may have restarted). */
		s->next_heartbeat_ms = now_ms;
		s->next_report_ms = now_ms;
	}
	free(why);
}

static void do_heartbeat(struct session *s, int64_t now_ms)
{
	char *why = NULL;
	long status = post_json(s, s->heartbeat_path, s->hooks.heartbeat(s->hooks.arg), &why, NULL);

	renew(s, status, now_ms);
	s->next_heartbeat_ms = now_ms + SESSION_HEARTBEAT_MS;
	if (status < 0) {
		lost(s, now_ms, LINK_DOWN, why);
	} else if (status == 404) {
		log_info("the scheduler does not know host %s (it restarted?): registering again", s->name);
		s->registered = 0;
		s->state = LINK_UNKNOWN;
		s->next_register_ms = now_ms;
	} else if (status / 100 != 2) {
		log_warnx("heartbeat refused: HTTP %ld: %s", status, why ? why : "");
	}
	free(why);
}

static enum report_result send_report(void *arg, const char *path, const char *body, char **err)
{
	struct session *s = arg;
	long status = post(s, path, body, err);

	if (status < 0) {
		free(s->send_failure);
		s->send_failure = xstrdup(*err ? *err : "unreachable");
		return REPORT_RETRY;
	}
	if (status == 503 || status >= 500 || status == 408 || status == 429)
		return REPORT_RETRY;
	if (status / 100 == 2)
		return REPORT_ACKED;
	return REPORT_REFUSED;
}

void session_flush(struct session *s, struct report_queue *q, int64_t now_ms)
{
	/* Reports wait for registration: while the scheduler is away every try
	 * would cost a connection attempt, and registering flushes them at once. */
	if (!s->registered || report_queue_pending(q) == 0)
		return;
	if (report_queue_flush(q, send_report, s) > 0)
		s->next_report_ms = now_ms + SESSION_HEARTBEAT_MS;
	if (s->send_failure) {
		lost(s, now_ms, LINK_DOWN, s->send_failure);
		free(s->send_failure);
		s->send_failure = NULL;
	}
}

int64_t session_tick(struct session *s, struct report_queue *q, int64_t now_ms)
{
	int64_t next;

	if (!s->registered && now_ms >= s->next_register_ms)
		do_register(s, now_ms);
	if (s->registered && now_ms >= s->next_report_ms)
		session_flush(s, q, now_ms);
	if (s->registered && now_ms >= s->next_heartbeat_ms)
		do_heartbeat(s, now_ms);
	if (!s->registered)
		return s->next_register_ms;
	next = s->next_heartbeat_ms;
	if (report_queue_pending(q) > 0 && s->next_report_ms < next)
		next = s->next_report_ms;
	return next;
}

void session_leave(struct session *s, struct report_queue *q, int64_t now_ms)
{
	char *path, *why = NULL;
	long status;

	if (!s->registered)
		return;
	/* The last reports first: the scheduler must learn how each instance
	 * ended before it hears that the host is gone. */
	session_flush(s, q, now_ms);
	if (!s->registered)
		return;
	path = api_path_name(API_HOST_LEAVE, s->name);
	status = post_json(s, path, json_object(), &why, NULL);
	if (status / 100 != 2)
		log_warnx("could not tell the scheduler that host %s leaves: %s", s->name,
			  why ? why : "no answer");
	s->registered = 0;
	free(why);
	free(path);
}

void session_reregister(struct session *s)
{
	if (s->registered)
		s->state = LINK_UNKNOWN;
	s->registered = 0;
	s->next_register_ms = 0;
}

int session_registered(const struct session *s)
{
	return s->registered;
}

int64_t session_registered_at(const struct session *s)
{
	return s->registered ? s->registered_at_ms : 0;
}

int64_t session_lease_end(const struct session *s)
{
	return s->contact_ms ? s->contact_ms + s->lease_ms : 0;
}
