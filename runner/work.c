#include "work.h"
#include "api_client.h"
#include "api_paths.h"
#include "log.h"
#include "proto.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 1000

struct work_poll {
	struct api_client *api;  /* used by the thread only */
	char *path;              /* api_path_work(name, timeout_ms) */
	char *quick_path;        /* the same with timeout_ms=0 */
	long timeout_ms;
	int msg_pipe[2];         /* thread writes struct work_msg pointers, main reads */
	int stop_pipe[2];        /* main writes one byte to stop the thread */
	int kick_pipe[2];        /* main writes one byte to end a backoff early */
	pthread_t thread;
	int started;
	int stopped;             /* main: work_poll_stop was called */
};

void work_msg_destroy(struct work_msg *msg)
{
	if (!msg)
		return;
	json_decref(msg->json);
	free(msg);
}

/* Hand a message to the main loop. A pointer is smaller than PIPE_BUF, so each
 * write is whole; the pipe is blocking on this side, which holds the thread back
 * when the main loop is busy. 0, or -1 when stopping. */
static int deliver(struct work_poll *wp, enum work_msg_kind kind, json_t *json, int64_t sent_ms)
{
	struct work_msg *msg = xcalloc(1, sizeof *msg);

	msg->kind = kind;
	msg->json = json;
	msg->sent_ms = sent_ms;
	if (write_all(wp->msg_pipe[1], &msg, sizeof msg) < 0) {
		work_msg_destroy(msg);
		return -1;
	}
	return 0;
}

/* Empty the kick pipe; 1 if there was a kick. */
static int take_kicks(struct work_poll *wp)
{
	char buf[64];
	int kicked = 0;

	while (read(wp->kick_pipe[0], buf, sizeof buf) > 0)
		kicked = 1;
	return kicked;
}

/* Sleep ms unless kicked or asked to stop; 1 when asked to stop. */
static int nap(struct work_poll *wp, int ms)
{
	struct pollfd pfd[2] = {
		{ .fd = wp->stop_pipe[0], .events = POLLIN },
		{ .fd = wp->kick_pipe[0], .events = POLLIN },
	};

	if (poll(pfd, 2, ms) <= 0)
		return 0;
	/* A kick ends the nap; the loop takes it and polls at once. */
	return pfd[0].revents != 0;
}

static void *poll_thread(void *arg)
{
	struct work_poll *wp = arg;
	int backoff = BACKOFF_MIN_MS;
	int was_down = 0;
	/* The first poll, and the first after each (re-)registration, does not
	 * wait: it fetches at once every assignment not yet confirmed, including
	 * any the scheduler handed to the long poll of a runner that is gone. */
	int quick = 1;

	for (;;) {
		struct api_reply reply;
		json_t *root;
		int delay = 0;
		int64_t sent_ms = time_mono_ms();
		const char *path = quick ? wp->quick_path : wp->path;

		if (api_call(wp->api, "GET", path, NULL, 0, NULL, wp->timeout_ms + 5000, &reply, NULL) < 0) {
			if (errno == ECANCELED)
				break;
			/* The main loop logs the scheduler's state; this only says
			 * what the poll saw. */
			if (!was_down)
				log_debug("work poll: scheduler unreachable: %s", strerror(errno));
			was_down = 1;
			delay = backoff;
		} else if (reply.status == 200) {
			was_down = 0;
			quick = 0;
			backoff = BACKOFF_MIN_MS;
			root = json_loadb(reply.body, reply.len, 0, NULL);
			if (!root || !json_is_object(root)) {
				log_warnx("work poll: the scheduler's answer is not a JSON object");
				json_decref(root);
				delay = backoff;
			} else if (!work_answer_has_items(root)) {
				json_decref(root);
			} else if (deliver(wp, WORK_ANSWER, root, sent_ms) < 0) {
				api_reply_clear(&reply);
				break;
			}
		} else if (reply.status == 404) {
			/* Unknown host: the main loop registers; poll again shortly. */
			was_down = 0;
			if (deliver(wp, WORK_HOST_UNKNOWN, NULL, sent_ms) < 0) {
				api_reply_clear(&reply);
				break;
			}
			delay = backoff;
		} else {
			char *why = api_reply_error(&reply);

			log_warnx("work poll: scheduler answered %ld: %s", reply.status, why);
			free(why);
			delay = backoff;
		}
		api_reply_clear(&reply);
		if (delay) {
			if (nap(wp, delay))
				break;
			backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
		}
		if (take_kicks(wp))
			quick = 1;
	}
	return NULL;
}

struct work_poll *work_poll_create(const char *endpoint, const char *name, long timeout_ms, char **err)
{
	struct work_poll *wp = xcalloc(1, sizeof *wp);
	int e;

	wp->msg_pipe[0] = wp->msg_pipe[1] = wp->stop_pipe[0] = wp->stop_pipe[1] = -1;
	wp->kick_pipe[0] = wp->kick_pipe[1] = -1;
	wp->timeout_ms = timeout_ms;
	wp->path = api_path_work(name, timeout_ms);
	wp->quick_path = api_path_work(name, 0);
	wp->api = api_client_create(endpoint, err);
	if (!wp->api)
		goto fail;
	if (pipe2(wp->msg_pipe, O_CLOEXEC) < 0 || pipe2(wp->stop_pipe, O_CLOEXEC) < 0 ||
	    pipe2(wp->kick_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		errprintf(err, "cannot create a pipe: %s", strerror(errno));
		goto fail;
	}
	fcntl(wp->msg_pipe[0], F_SETFL, O_NONBLOCK);
	api_client_set_cancel_fd(wp->api, wp->stop_pipe[0]);
	e = pthread_create(&wp->thread, NULL, poll_thread, wp);
	if (e) {
		errno = e;
		errprintf(err, "cannot start the work poll thread: %s", strerror(e));
		goto fail;
	}
	wp->started = 1;
	return wp;
fail:
	e = errno;
	work_poll_destroy(wp);
	errno = e;
	return NULL;
}

void work_poll_destroy(struct work_poll *wp)
{
	struct work_msg *msg;

	if (!wp)
		return;
	if (wp->started) {
		work_poll_stop(wp);
		/* A thread blocked writing to a full message pipe needs room. */
		while (1) {
			struct pollfd pfd = { .fd = wp->msg_pipe[0], .events = POLLIN };
			int joined;

			joined = pthread_tryjoin_np(wp->thread, NULL) == 0;
			if (joined)
				break;
			while ((msg = work_poll_next(wp)) != NULL)
				work_msg_destroy(msg);
			poll(&pfd, 1, 20);
		}
	}
	if (wp->msg_pipe[0] >= 0)
		while ((msg = work_poll_next(wp)) != NULL)
			work_msg_destroy(msg);
	for (int i = 0; i < 2; i++) {
		if (wp->msg_pipe[i] >= 0)
			close(wp->msg_pipe[i]);
		if (wp->stop_pipe[i] >= 0)
			close(wp->stop_pipe[i]);
		if (wp->kick_pipe[i] >= 0)
			close(wp->kick_pipe[i]);
	}
	api_client_destroy(wp->api);
	free(wp->path);
	free(wp->quick_path);
	free(wp);
}

void work_poll_stop(struct work_poll *wp)
{
	char c = 'x';

	if (wp->stopped)
		return;
	wp->stopped = 1;
	write_all(wp->stop_pipe[1], &c, 1);
}

void work_poll_kick(struct work_poll *wp)
{
	char c = 'k';

	/* Non-blocking: when the pipe is full a kick is already waiting. */
	if (write(wp->kick_pipe[1], &c, 1) < 0 && errno != EAGAIN)
		log_warn("cannot wake the work poll");
}

int work_poll_fd(const struct work_poll *wp)
{
	return wp->msg_pipe[0];
}

struct work_msg *work_poll_next(struct work_poll *wp)
{
	struct work_msg *msg;
	ssize_t n;

	if (wp->stopped && wp->started) {
		/* Drain and drop: nothing is handed out after a stop. */
		while (read(wp->msg_pipe[0], &msg, sizeof msg) == (ssize_t)sizeof msg)
			work_msg_destroy(msg);
		return NULL;
	}
	do
		n = read(wp->msg_pipe[0], &msg, sizeof msg);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof msg)
		return NULL;
	return msg;
}
