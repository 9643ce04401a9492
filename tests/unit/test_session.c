/* The runner's link to the scheduler against a fake scheduler (libmicrohttpd on
 * a unix socket): registration, heartbeats, a 404 that makes it register again,
 * state reports kept while the scheduler is down and delivered in order after,
 * and the work long-poll handing answers to the main loop. */
#include "api_paths.h"
#include "log.h"
#include "report.h"
#include "session.h"
#include "tap.h"
#include "util.h"
#include "work.h"

#include <errno.h>
#include <microhttpd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

TAP_STATE;

#define MAX_LOG 64

/* What the fake scheduler saw and what it will answer; guarded by mu. */
static struct fake {
	pthread_mutex_t mu;
	struct MHD_Daemon *daemon;
	char sock[108];
	int known;              /* the host is registered */
	int registrations, heartbeats;
	char *last_heartbeat;
	char log[MAX_LOG][160]; /* "METHOD path body" of every runner call but polls */
	int nlog;
	long poll_timeouts[MAX_LOG];
	int npolls;
	char *work;             /* the next work answer, or NULL */
} fake = { .mu = PTHREAD_MUTEX_INITIALIZER };

struct body {
	char *data;
	size_t len;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* How the fake's log names a request of route. */
static const char *label(int route)
{
	switch (route) {
	case API_HOSTS_REGISTER: return "register";
	case API_HOST_HEARTBEAT: return "heartbeat";
	case API_HOST_LEAVE: return "leave";
	case API_INSTANCE_STATE: return "state";
	default: return "other";
	}
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			       const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct body *b = *con_cls;
	char *answer = NULL, buf[256];
	const char *args[2] = { NULL, NULL };
	unsigned status = 200;
	bool known;
	int route;

	(void)cls;
	(void)version;
	if (!b) {
		*con_cls = xcalloc(1, sizeof *b);
		return MHD_YES;
	}
	if (*upload_size) {
		b->data = xrealloc(b->data, b->len + *upload_size + 1);
		memcpy(b->data + b->len, upload, *upload_size);
		b->len += *upload_size;
		b->data[b->len] = '\0';
		*upload_size = 0;
		return MHD_YES;
	}
	route = api_route_find(method, url, buf, sizeof buf, args, 2, &known);
	pthread_mutex_lock(&fake.mu);
	if (route == API_HOST_WORK) {
		const char *t = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "timeout_ms");

		if (fake.npolls < MAX_LOG)
			fake.poll_timeouts[fake.npolls++] = t ? atol(t) : -1;
		if (!fake.known) {
			status = 404;
		} else {
			/* A short stand-in for the long poll: up to 100 ms. */
			for (int i = 0; i < 10 && !fake.work && t && atol(t) > 0; i++) {
				pthread_mutex_unlock(&fake.mu);
				usleep(10000);
				pthread_mutex_lock(&fake.mu);
			}
			answer = fake.work;
			fake.work = NULL;
		}
	} else {
		/* "register {...}", "state 2 {...}": the route, its segment, the body. */
		if (fake.nlog < MAX_LOG)
			snprintf(fake.log[fake.nlog++], sizeof fake.log[0], "%s%s%s %s", label(route),
				 args[0] ? " " : "", args[0] ? args[0] : "", b->data ? b->data : "");
		if (route == API_HOSTS_REGISTER) {
			fake.known = 1;
			fake.registrations++;
		} else if (route == API_HOST_HEARTBEAT) {
			if (fake.known) {
				fake.heartbeats++;
				free(fake.last_heartbeat);
				fake.last_heartbeat = xstrdup(b->data ? b->data : "");
			} else {
				status = 404;
			}
		}
	}
	pthread_mutex_unlock(&fake.mu);
	{
		enum MHD_Result ret = reply(c, status, status == 404 ? "{\"error\": \"no such host\"}" :
					    answer ? answer : route == API_HOST_WORK ? "{\"start\": [], \"cancel\": []}" : "{}");

		free(answer);
		return ret;
	}
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct body *b = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (b) {
		free(b->data);
		free(b);
		*con_cls = NULL;
	}
}

static int fake_start(void)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", fake.sock);
	unlink(fake.sock);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof sun) < 0 || listen(fd, 16) < 0)
		return -1;
	fake.daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
				       NULL, NULL, handler, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
				       MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_END);
	return fake.daemon ? 0 : -1;
}

/* The scheduler goes away: its state too (a restart forgets nothing committed,
 * but our fake forgets the host, as a fresh database would). */
static void fake_stop(void)
{
	MHD_stop_daemon(fake.daemon);
	fake.daemon = NULL;
	unlink(fake.sock);
	pthread_mutex_lock(&fake.mu);
	fake.known = 0;
	pthread_mutex_unlock(&fake.mu);
}

static json_t *reg_body(void *arg)
{
	(void)arg;
	return json_pack("{s:s, s:i}", "name", "h1", "cpus", 4);
}

static json_t *hb_body(void *arg)
{
	int *n = arg;

	return json_pack("{s:i, s:[]}", "seq", ++*n, "instances");
}

static int count_log(const char *prefix)
{
	int n = 0;

	pthread_mutex_lock(&fake.mu);
	for (int i = 0; i < fake.nlog; i++)
		n += strncmp(fake.log[i], prefix, strlen(prefix)) == 0;
	pthread_mutex_unlock(&fake.mu);
	return n;
}

/* Run session ticks for ms, as the main loop would. */
static void run_ticks(struct session *s, struct report_queue *q, int ms)
{
	int64_t end = time_mono_ms() + ms;

	while (time_mono_ms() < end) {
		int64_t next = session_tick(s, q, time_mono_ms()), wait = next - time_mono_ms();

		usleep((useconds_t)(wait > 0 ? (wait > 20 ? 20 : wait) : 1) * 1000);
	}
}

static void test_session(const char *endpoint)
{
	struct session_hooks hooks;
	struct report_queue *q = report_queue_create(NULL, NULL);
	struct session *s;
	char *err = NULL;
	int seq = 0, idx;

	hooks = (struct session_hooks){ .registration = reg_body, .heartbeat = hb_body, .arg = &seq };
	s = session_create(endpoint, "h1", &hooks, &err);
	ok(s != NULL, "session: %s", err ? err : "ok");
	if (!s)
		return;
	session_tick(s, q, time_mono_ms());
	ok(session_registered(s), "the first tick registers");
	is_str(fake.log[0], "register {\"name\":\"h1\",\"cpus\":4}", "with the registration body");
	is_int(fake.heartbeats, 1, "and sends a heartbeat at once");
	run_ticks(s, q, 1100);
	ok(fake.heartbeats >= 2 && fake.heartbeats <= 3, "then one a second (%d in 1.1 s)", fake.heartbeats);

	/* Reports go out as soon as the main loop flushes. */
	report_queue_push(q, 1, json_pack("{s:i, s:s}", "attempt", 1, "state", "running"));
	session_flush(s, q, time_mono_ms());
	is_int(report_queue_pending(q), 0, "a report is delivered at once");
	is_int(count_log("state 1 "), 1, "the scheduler has it");

	/* The scheduler goes down: reports wait, in order. */
	fake_stop();
	report_queue_push(q, 2, json_pack("{s:i, s:s, s:i}", "attempt", 1, "state", "exited", "exit_code", 0));
	report_queue_push(q, 3, json_pack("{s:i, s:s, s:s}", "attempt", 2, "state", "failed", "reason", "x"));
	session_flush(s, q, time_mono_ms());
	is_int(report_queue_pending(q), 2, "with the scheduler down both reports are kept");
	ok(!session_registered(s), "and the session knows it is not registered");
	run_ticks(s, q, 500);
	is_int(report_queue_pending(q), 2, "still kept while it is down");

	/* It comes back (having forgotten the host): register, then the reports. */
	pthread_mutex_lock(&fake.mu);
	fake.nlog = 0;
	pthread_mutex_unlock(&fake.mu);
	if (fake_start() < 0) {
		ok(0, "restart the fake scheduler");
		goto out;
	}
	run_ticks(s, q, 1500);
	ok(session_registered(s), "registered again once the scheduler is back");
	is_int(report_queue_pending(q), 0, "the kept reports are delivered");
	idx = -1;
	for (int i = 0; i < fake.nlog; i++)
		if (strncmp(fake.log[i], "register ", 9) == 0 && idx < 0)
			idx = i;
	ok(idx == 0, "registration comes first");
	ok(fake.nlog >= 3 && strncmp(fake.log[1], "state 2 ", 8) == 0 &&
	   strncmp(fake.log[2], "state 3 ", 8) == 0, "then the reports, in order");

	/* A scheduler that forgot us answers the heartbeat 404: register again. */
	pthread_mutex_lock(&fake.mu);
	fake.known = 0;
	fake.registrations = 0;
	pthread_mutex_unlock(&fake.mu);
	run_ticks(s, q, 1200);
	is_int(fake.registrations, 1, "a heartbeat answered 404 makes it register again");
	ok(session_registered(s), "and it is registered");
out:
	session_destroy(s);
	report_queue_destroy(q);
	free(err);
}

static struct work_msg *wait_msg(struct work_poll *wp, int ms)
{
	struct pollfd pfd = { .fd = work_poll_fd(wp), .events = POLLIN };

	if (poll(&pfd, 1, ms) <= 0)
		return NULL;
	return work_poll_next(wp);
}

static void test_work(const char *endpoint)
{
	struct work_poll *wp;
	struct work_msg *msg;
	char *err = NULL;
	int64_t t0;

	pthread_mutex_lock(&fake.mu);
	fake.known = 1;
	fake.npolls = 0;
	fake.work = xstrdup("{\"start\": [{\"id\": 5}], \"cancel\": []}");
	pthread_mutex_unlock(&fake.mu);
	wp = work_poll_create(endpoint, "h1", 25000, &err);
	ok(wp != NULL, "work poll: %s", err ? err : "ok");
	if (!wp)
		return;
	msg = wait_msg(wp, 2000);
	ok(msg && msg->kind == WORK_ANSWER &&
	   json_integer_value(json_object_get(json_array_get(json_object_get(msg->json, "start"), 0), "id")) == 5,
	   "an answer with work reaches the main loop");
	ok(fake.poll_timeouts[0] == 0, "the first poll does not wait (timeout_ms=0)");
	work_msg_destroy(msg);
	usleep(150000);
	ok(fake.npolls >= 2 && fake.poll_timeouts[1] == 25000, "the next ones are long polls (timeout_ms=%ld)",
	   fake.npolls >= 2 ? fake.poll_timeouts[1] : -1);
	ok(work_poll_next(wp) == NULL, "empty answers are not handed on");

	pthread_mutex_lock(&fake.mu);
	fake.work = xstrdup("{\"start\": [], \"cancel\": [{\"id\": 5, \"attempt\": 1}]}");
	pthread_mutex_unlock(&fake.mu);
	msg = wait_msg(wp, 2000);
	ok(msg && msg->kind == WORK_ANSWER && json_array_size(json_object_get(msg->json, "cancel")) == 1,
	   "a cancel arrives too");
	work_msg_destroy(msg);

	pthread_mutex_lock(&fake.mu);
	fake.known = 0;
	pthread_mutex_unlock(&fake.mu);
	msg = wait_msg(wp, 2000);
	ok(msg && msg->kind == WORK_HOST_UNKNOWN, "a 404 says the host is unknown");
	work_msg_destroy(msg);

	/* After the kick (a registration), the next poll does not wait. */
	pthread_mutex_lock(&fake.mu);
	fake.known = 1;
	fake.npolls = 0;
	pthread_mutex_unlock(&fake.mu);
	work_poll_kick(wp);
	usleep(300000);
	ok(fake.npolls >= 1 && fake.poll_timeouts[0] == 0, "a kick makes the next poll a quick one");
	while ((msg = work_poll_next(wp)) != NULL)
		work_msg_destroy(msg);

	t0 = time_mono_ms();
	work_poll_destroy(wp);
	ok(time_mono_ms() - t0 < 2500, "stopping the poll thread takes %lld ms", (long long)(time_mono_ms() - t0));
	free(err);
}

int main(void)
{
	char tmpl[] = "/tmp/parsa-test-session.XXXXXX";
	char *dir = mkdtemp(tmpl), *endpoint;

	log_init("test_session", 1, LOG_LEVEL_WARN);
	if (!dir) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	snprintf(fake.sock, sizeof fake.sock, "%s/sched.sock", dir);
	endpoint = xasprintf("unix:%s", fake.sock);
	if (fake_start() < 0) {
		printf("Bail out! cannot start the fake scheduler\n");
		return 1;
	}
	test_session(endpoint);
	test_work(endpoint);
	if (fake.daemon)
		MHD_stop_daemon(fake.daemon);
	unlink(fake.sock);
	rmdir(dir);
	free(fake.last_heartbeat);
	free(fake.work);
	free(endpoint);
	return done_testing();
}
