/* The API client (lib/api_client.c, libcurl) on a unix socket against a
 * scripted server: the answer's framings (Content-Length, chunked, until
 * close), a kept-alive connection and its replacement when the server closed
 * it, the request as sent, and the errno contract (refused, timeout, cancel),
 * and a submission whose kept-alive connection dies after the server read it
 * (libcurl sends it again on a fresh connection, which is refused): never
 * "nothing was sent". */
#include "api_client.h"
#include "paths_pool.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

TAP_STATE;

/* M_DIE: read the request, then stop listening and close the connection
 * without an answer, as a scheduler killed right after it committed. */
enum mode { M_LENGTH, M_CHUNKED, M_CLOSE_DELIMITED, M_LENGTH_THEN_CLOSE, M_SILENT, M_DIE };

struct server {
	int listen_fd;
	pthread_mutex_t lock;
	enum mode mode;          /* how to answer the next request */
	int accepts;             /* connections taken */
	char request[8192];      /* the last request, head and body */
	int stop;
};

static enum mode take_mode(struct server *s)
{
	enum mode m;

	pthread_mutex_lock(&s->lock);
	m = s->mode;
	pthread_mutex_unlock(&s->lock);
	return m;
}

/* Read one request (head, then Content-Length bytes) into s->request. */
static int read_request(struct server *s, int fd)
{
	char buf[8192];
	size_t len = 0;

	for (;;) {
		ssize_t n = recv(fd, buf + len, sizeof buf - 1 - len, 0);
		char *blank, *cl;
		size_t want;

		if (n <= 0)
			return -1;
		len += (size_t)n;
		buf[len] = '\0';
		blank = strstr(buf, "\r\n\r\n");
		if (!blank)
			continue;
		cl = strstr(buf, "Content-Length: ");
		want = (size_t)(blank + 4 - buf) + (cl && cl < blank ? strtoul(cl + 16, NULL, 10) : 0);
		if (len < want)
			continue;
		pthread_mutex_lock(&s->lock);
		memcpy(s->request, buf, len + 1);
		pthread_mutex_unlock(&s->lock);
		return 0;
	}
}

static void *serve(void *arg)
{
	struct server *s = arg;

	for (;;) {
		int fd = accept(s->listen_fd, NULL, NULL);

		if (fd < 0)
			return NULL;
		pthread_mutex_lock(&s->lock);
		s->accepts++;
		if (s->stop) {
			pthread_mutex_unlock(&s->lock);
			close(fd);
			return NULL;
		}
		pthread_mutex_unlock(&s->lock);
		while (read_request(s, fd) == 0) {
			static const char length[] = "HTTP/1.1 201 Created\r\nContent-Length: 9\r\n\r\n{\"id\":42}";
			static const char chunked[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
						      "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
			static const char delimited[] = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close";
			enum mode m = take_mode(s);
			int closing = 0;

			if (m == M_SILENT) {
				sleep(2);
				break;
			}
			if (m == M_DIE) {
				/* The socket file stays: connects are refused. */
				close(s->listen_fd);
				close(fd);
				return NULL;
			}
			if (m == M_LENGTH || m == M_LENGTH_THEN_CLOSE)
				write_all(fd, length, sizeof length - 1);
			if (m == M_CHUNKED)
				write_all(fd, chunked, sizeof chunked - 1);
			if (m == M_CLOSE_DELIMITED) {
				write_all(fd, delimited, sizeof delimited - 1);
				closing = 1;
			}
			/* Closes the kept-alive connection the way an idle timeout does. */
			if (m == M_LENGTH_THEN_CLOSE)
				closing = 1;
			if (closing)
				break;
		}
		close(fd);
	}
}

static void set_mode(struct server *s, enum mode m)
{
	pthread_mutex_lock(&s->lock);
	s->mode = m;
	pthread_mutex_unlock(&s->lock);
}

static int accepts(struct server *s)
{
	int n;

	pthread_mutex_lock(&s->lock);
	n = s->accepts;
	pthread_mutex_unlock(&s->lock);
	return n;
}

int main(void)
{
	char dir[] = "/tmp/parsa-test-api-unix.XXXXXX";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct server s = { .mode = M_LENGTH };
	gid_t groups[] = { 7, 8 };
	struct api_identity as = { .uid = 5, .gid = 6, .groups = groups, .ngroups = 2 };
	struct api_reply r = { 0 };
	struct api_client *cl, *nobody;
	char *sock, *endpoint, *missing;
	const struct api_submit_policy quick = {
		.call_timeout_ms = 500, .deadline_ms = 1200, .grace_ms = 300,
	};
	bool unconfirmed;
	pthread_t thread;
	int pipefd[2], rc, before;
	int64_t t0;

	if (!mkdtemp(dir))
		return 1;
	sock = xasprintf("%s/s.sock", dir);
	endpoint = xasprintf("unix:%s", sock);
	missing = xasprintf("unix:%s/none.sock", dir);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
	pthread_mutex_init(&s.lock, NULL);
	s.listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (bind(s.listen_fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(s.listen_fd, 8) < 0)
		return 1;
	pthread_create(&thread, NULL, serve, &s);
	cl = api_client_create(endpoint, NULL);

	/* Content-Length, and the request as the scheduler reads it. */
	rc = api_call(cl, "POST", TP(API_JOBS_SUBMIT), "{\"spec\":1}", 10, &as, 2000, &r, NULL);
	is_int(rc, 201, "a Content-Length answer: its status");
	is_str(r.body, "{\"id\":42}", "and its body");
	is_int((long)r.len, 9, "and its length");
	ok(strstr(s.request, "POST /v1/jobs HTTP/1.1\r\n") == s.request, "the request line");
	ok(strstr(s.request, "\r\nX-Parsa-Uid: 5\r\nX-Parsa-Gid: 6\r\nX-Parsa-Groups: 7,8\r\n"),
	   "the identity headers");
	ok(strstr(s.request, "\r\nUser-Agent: test_api_unix/") && strstr(s.request, " (protocol "),
	   "the handshake's User-Agent");
	ok(strstr(s.request, "\r\nContent-Length: 10\r\n") &&
	   strstr(s.request, "\r\n\r\n{\"spec\":1}"), "the body and its length");
	api_reply_clear(&r);

	rc = api_call(cl, "GET", TP(API_STATUS), NULL, 0, NULL, 2000, &r, NULL);
	is_int(rc, 201, "a second call");
	is_int(accepts(&s), 1, "reuses the kept-alive connection");
	ok(!strstr(s.request, "Content-Length"), "a GET sends no Content-Length");
	api_reply_clear(&r);

	set_mode(&s, M_CHUNKED);
	rc = api_call(cl, "GET", TP(API_STATUS), NULL, 0, NULL, 2000, &r, NULL);
	is_int(rc, 200, "a chunked answer: its status");
	is_str(r.body, "hello world", "and its body, put together");
	api_reply_clear(&r);

	set_mode(&s, M_CLOSE_DELIMITED);
	rc = api_call(cl, "GET", TP(API_STATUS), NULL, 0, NULL, 2000, &r, NULL);
	is_int(rc, 200, "an answer ended by the close: its status");
	is_str(r.body, "until close", "and its body");
	api_reply_clear(&r);
	set_mode(&s, M_LENGTH);
	rc = api_call(cl, "GET", TP(API_STATUS), NULL, 0, NULL, 2000, &r, NULL);
	is_int(rc, 201, "the call after it");
	is_int(accepts(&s), 2, "opens a new connection");
	api_reply_clear(&r);

	/* The server closes the connection after answering, as an idle timeout
	 * would: the next call gets a fresh one and its answer. */
	set_mode(&s, M_LENGTH_THEN_CLOSE);
	rc = api_call(cl, "GET", TP(API_STATUS), NULL, 0, NULL, 2000, &r, NULL);
	is_int(rc, 201, "an answer before the server closes");
	api_reply_clear(&r);
	usleep(50 * 1000);
	set_mode(&s, M_LENGTH);
	rc = api_call(cl, "POST", TP(API_JOBS_SUBMIT), "x", 1, NULL, 2000, &r, NULL);
	is_int(rc, 201, "the call after the server closed the kept-alive connection");
	is_int(accepts(&s), 3, "went through a new connection");
	api_reply_clear(&r);

	/* No answer in time. */
	set_mode(&s, M_SILENT);
	t0 = time_mono_ms();
	rc = api_call(cl, "GET", TP(API_STATUS), NULL, 0, NULL, 300, &r, NULL);
	is_int(rc, -1, "no answer: fails");
	is_int(errno, ETIMEDOUT, "with ETIMEDOUT");
	ok(time_mono_ms() - t0 < 1500, "after about the timeout");
	api_reply_clear(&r);

	/* Cancelled through the descriptor. */
	if (pipe(pipefd) < 0)
		return 1;
	api_client_set_cancel_fd(cl, pipefd[0]);
	write_all(pipefd[1], "x", 1);
	rc = api_call(cl, "GET", TP(API_STATUS), NULL, 0, NULL, 2000, &r, NULL);
	is_int(rc, -1, "a cancelled call fails");
	is_int(errno, ECANCELED, "with ECANCELED");
	api_client_set_cancel_fd(cl, -1);
	api_reply_clear(&r);

	/* Nothing listening. */
	nobody = api_client_create(missing, NULL);
	rc = api_call(nobody, "GET", TP(API_STATUS), NULL, 0, NULL, 2000, &r, NULL);
	is_int(rc, -1, "a missing socket fails");
	is_int(errno, ENOTCONN, "with ENOTCONN");
	is_int(api_client_refused(nobody), 1, "and counts as nothing listening");
	api_reply_clear(&r);
	api_client_destroy(nobody);

	/* A refused submission: nothing was sent, and it says so. */
	nobody = api_client_create(missing, NULL);
	rc = api_submit(nobody, TP(API_JOBS_SUBMIT), "{}", 2, NULL, &quick, &r, &unconfirmed);
	is_int(rc, -1, "a submission that nothing listens for fails");
	is_int(errno, ENOTCONN, "with ENOTCONN");
	ok(!unconfirmed, "and is known not to have been sent");
	is_int(api_client_unsent(nobody), 1, "no byte of it was written");
	api_reply_clear(&r);
	api_client_destroy(nobody);

	/* The kept-alive connection dies after the server read the request;
	 * libcurl's fresh connect for its resend is refused. */
	set_mode(&s, M_LENGTH);
	/* (The server may still sit out the silent answer above.) */
	rc = api_call(cl, "GET", TP(API_STATUS), NULL, 0, NULL, 5000, &r, NULL);
	is_int(rc, 201, "a call that leaves a kept-alive connection");
	api_reply_clear(&r);
	before = accepts(&s);
	set_mode(&s, M_DIE);
	rc = api_submit(cl, TP(API_JOBS_SUBMIT), "{\"token\":\"t\"}", 13, NULL, &quick, &r, &unconfirmed);
	is_int(accepts(&s), before, "the submission went through the kept-alive connection");
	ok(strstr(s.request, "POST /v1/jobs HTTP/1.1\r\n") == s.request, "and the server read it");
	is_int(rc, -1, "its answer is lost");
	is_int(errno, ETIMEDOUT, "with ETIMEDOUT, not ENOTCONN");
	ok(unconfirmed, "and it may have been submitted");
	api_reply_clear(&r);
	pthread_join(thread, NULL);

	/* The same, one call: refused at the end, yet the request was written. */
	unlink(sock);
	s.listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (bind(s.listen_fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(s.listen_fd, 8) < 0)
		return 1;
	set_mode(&s, M_LENGTH);
	pthread_create(&thread, NULL, serve, &s);
	rc = api_call(cl, "GET", TP(API_STATUS), NULL, 0, NULL, 5000, &r, NULL);
	is_int(rc, 201, "a server back: a call leaves a kept-alive connection");
	api_reply_clear(&r);
	set_mode(&s, M_DIE);
	rc = api_call(cl, "POST", TP(API_JOBS_SUBMIT), "x", 1, NULL, 2000, &r, NULL);
	is_int(rc, -1, "a call whose connection dies unanswered fails");
	is_int(errno, ENOTCONN, "with ENOTCONN");
	is_int(api_client_refused(cl), 1, "the resend's connect was refused");
	is_int(api_client_unsent(cl), 0, "but the request had been written");
	api_reply_clear(&r);
	pthread_join(thread, NULL);

	api_client_destroy(cl);
	close(pipefd[0]);
	close(pipefd[1]);
	unlink(sock);
	rmdir(dir);
	free(sock);
	free(endpoint);
	free(missing);
	tp_free();
	return done_testing();
}
