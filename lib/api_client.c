#include "api_client.h"
#include "auth.h"
#include "handshake.h"
#include "util.h"

#include <curl/curl.h>
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

struct api_client {
	CURL *curl;
	char *unix_path;  /* NULL for TCP */
	char *base_url;   /* "http://localhost" for unix sockets */
	int cancel_fd;    /* api_call gives up when readable; -1 for none */
	CURLM *multi;     /* drives transfers while cancel_fd is set */
	struct auth *auth;  /* TCP only: munge credentials */
	int refused;      /* the last failed call found nothing listening */
	char *user_agent; /* the handshake: program, release, protocol */
	int sock;         /* unix sockets: the kept-alive connection, -1 for none */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

struct api_client *api_client_create(const char *endpoint, char **err)
{
	struct api_client *client;

	pthread_once(&curl_once, curl_init_once);
	client = xcalloc(1, sizeof *client);
	client->cancel_fd = -1;
	client->sock = -1;
	client->user_agent = handshake_user_agent(program_invocation_short_name);
	if (strncmp(endpoint, "unix:", 5) == 0) {
		client->unix_path = xstrdup(endpoint + 5);
		client->base_url = xstrdup("http://localhost");
	} else if (strncmp(endpoint, "http://", 7) == 0 ||
		   (endpoint[0] != '/' && !strstr(endpoint, "://") && strchr(endpoint, ':'))) {
		size_t n;

		/* HOST:PORT is short for http://HOST:PORT. */
		client->base_url = strncmp(endpoint, "http://", 7) == 0 ? xstrdup(endpoint)
									: xasprintf("http://%s", endpoint);
		n = strlen(client->base_url);
		if (n > 7 && client->base_url[n - 1] == '/')
			client->base_url[n - 1] = '\0';
		/* Over TCP every request carries a munge credential. */
		client->auth = auth_create(getenv("PARSA_MUNGE_SOCKET"));
	} else {
		errprintf(err, "scheduler address '%s' is neither unix:/path, http://host:port nor"
			  " host:port", endpoint);
		free(client->user_agent);
		free(client);
		errno = EINVAL;
		return NULL;
	}
	client->curl = curl_easy_init();
	if (!client->curl) {
		errprintf(err, "cannot initialise libcurl");
		api_client_destroy(client);
		errno = ENOMEM;
		return NULL;
	}
	return client;
}

void api_client_destroy(struct api_client *client)
{
	if (!client)
		return;
	if (client->sock >= 0)
		close(client->sock);
	if (client->curl)
		curl_easy_cleanup(client->curl);
	if (client->multi)
		curl_multi_cleanup(client->multi);
	auth_destroy(client->auth);
	free(client->unix_path);
	free(client->base_url);
	free(client->user_agent);
	free(client);
}

void api_client_set_munge_socket(struct api_client *client, const char *path)
{
	if (!client->auth)
		return;
	auth_destroy(client->auth);
	client->auth = auth_create(path);
}

int api_client_refused(const struct api_client *client)
{
	return client->refused;
}

void api_client_set_cancel_fd(struct api_client *client, int fd)
{
	client->cancel_fd = fd;
	if (fd >= 0 && !client->multi)
		client->multi = curl_multi_init();
}

static int cancelled(const struct api_client *client)
{
	struct pollfd pfd = { .fd = client->cancel_fd, .events = POLLIN };

	return client->cancel_fd >= 0 && poll(&pfd, 1, 0) > 0;
}

/* curl_easy_perform(), but through the client's multi handle so that the wait
 * also watches cancel_fd: a long poll stops as soon as it becomes readable.
 * The multi handle keeps the connection cache, so connections are reused as
 * with the easy interface. */
static CURLcode perform_cancellable(struct api_client *client)
{
	CURLcode rc = CURLE_OK;
	CURLMsg *msg;
	int running = 1, left;

	if (!client->multi || curl_multi_add_handle(client->multi, client->curl) != CURLM_OK)
		return CURLE_FAILED_INIT;
	for (;;) {
		struct curl_waitfd wfd = { .fd = client->cancel_fd, .events = CURL_WAIT_POLLIN };

		if (curl_multi_perform(client->multi, &running) != CURLM_OK) {
			rc = CURLE_FAILED_INIT;
			break;
		}
		if (!running)
			break;
		if (curl_multi_poll(client->multi, &wfd, 1, 1000, NULL) != CURLM_OK) {
			rc = CURLE_FAILED_INIT;
			break;
		}
		if (wfd.revents) {
			rc = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
	}
	if (rc == CURLE_OK && !running) {
		rc = CURLE_GOT_NOTHING;
		while ((msg = curl_multi_info_read(client->multi, &left)) != NULL)
			if (msg->msg == CURLMSG_DONE && msg->easy_handle == client->curl)
				rc = msg->data.result;
	}
	curl_multi_remove_handle(client->multi, client->curl);
	return rc;
}

static size_t collect(char *data, size_t size, size_t nmemb, void *arg)
{
	struct api_reply *reply = arg;
	size_t n = size * nmemb;

	/* Doubling: a 7 MB answer comes in 16 kB pieces, and a realloc per
	 * piece left a trail of freed blocks behind it. */
	if (reply->len + n + 1 > reply->cap) {
		size_t cap = reply->cap ? reply->cap * 2 : 4096;

		while (cap < reply->len + n + 1)
			cap *= 2;
		reply->body = xrealloc(reply->body, cap);
		reply->cap = cap;
	}
	memcpy(reply->body + reply->len, data, n);
	reply->len += n;
	reply->body[reply->len] = '\0';
	return n;
}

static struct curl_slist *identity_headers(const struct api_identity *as)
{
	struct curl_slist *headers = NULL;
	char line[64];

	headers = curl_slist_append(headers, "Expect:");
	if (!as)
		return headers;
	snprintf(line, sizeof line, "X-Parsa-Uid: %u", (unsigned)as->uid);
	headers = curl_slist_append(headers, line);
	snprintf(line, sizeof line, "X-Parsa-Gid: %u", (unsigned)as->gid);
	headers = curl_slist_append(headers, line);
	if (as->ngroups > 0) {
		size_t cap = 32 + as->ngroups * 12, used;
		char *groups = xmalloc(cap);

		used = (size_t)snprintf(groups, cap, "X-Parsa-Groups: ");
		for (size_t i = 0; i < as->ngroups && used < cap; i++)
			used += (size_t)snprintf(groups + used, cap - used, "%s%u",
						 i ? "," : "", (unsigned)as->groups[i]);
		headers = curl_slist_append(headers, groups);
		free(groups);
	}
	return headers;
}

/* ---- HTTP/1.1 over the unix socket, without libcurl ----
 *
 * Every submission through the mount is one call to the scheduler on its unix
 * socket, and libcurl spent more on it than the exchange itself: a handle
 * reset and twenty options per call, five polls around one send and one
 * receive. On a unix socket there is nothing of libcurl's to need (no TLS,
 * no proxy, no name to resolve, no credential: the scheduler reads the
 * caller from the socket), so the exchange is written here: one sendmsg, a
 * poll, a recv, over a connection kept alive between calls. The call
 * contract (api_call in api_client.h) is the same for both. */

/* Whether a kept-alive connection can take the next request: the scheduler
 * closes idle ones, and an unanswered byte there would be a protocol error. */
static bool conn_idle_alive(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 0;
}

static void conn_drop(struct api_client *client)
{
	if (client->sock >= 0)
		close(client->sock);
	client->sock = -1;
}

/* Connect to the scheduler's socket. 0, or -1 with errno ENOTCONN and
 * client->refused set when nothing listens (the socket is missing or
 * refuses), as libcurl's connect failures read. */
static int conn_open(struct api_client *client, long timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	int fd, saved;

	if (strlen(client->unix_path) >= sizeof sa.sun_path) {
		errno = ENOTCONN;
		return -1;
	}
	memcpy(sa.sun_path, client->unix_path, strlen(client->unix_path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		errno = ENOTCONN;
		return -1;
	}
	/* A full backlog blocks connect(2) on a unix socket: at most this long. */
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		saved = errno;
		close(fd);
		client->refused = saved == ECONNREFUSED || saved == ENOENT;
		errno = ENOTCONN;
		return -1;
	}
	tv.tv_sec = 0;
	tv.tv_usec = 0;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	client->sock = fd;
	return 0;
}

/* Wait until fd is ready for events, the deadline passes (ETIMEDOUT) or the
 * cancel descriptor becomes readable (ECANCELED). 0 or -1 with errno. */
static int conn_wait(struct api_client *client, int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd pfd[2] = {
			{ .fd = fd, .events = events },
			{ .fd = client->cancel_fd, .events = POLLIN },
		};
		int64_t left = deadline - time_mono_ms();
		int n;

		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		n = poll(pfd, client->cancel_fd >= 0 ? 2 : 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (client->cancel_fd >= 0 && pfd[1].revents) {
			errno = ECANCELED;
			return -1;
		}
		if (pfd[0].revents)
			return 0;
	}
}

static int conn_send(struct api_client *client, const char *head, size_t hlen, const char *body,
		     size_t blen, int64_t deadline)
{
	struct iovec iov[2] = {
		{ .iov_base = (void *)head, .iov_len = hlen },
		{ .iov_base = (void *)body, .iov_len = blen },
	};
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = blen ? 2 : 1 };

	while (msg.msg_iovlen > 0) {
		ssize_t n = sendmsg(client->sock, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			if (conn_wait(client, client->sock, POLLOUT, deadline) < 0)
				return -1;
			continue;
		}
		if (n < 0)
			return -1;
		while (msg.msg_iovlen > 0 && (size_t)n >= msg.msg_iov->iov_len) {
			n -= (ssize_t)msg.msg_iov->iov_len;
			msg.msg_iov++;
			msg.msg_iovlen--;
		}
		if (msg.msg_iovlen > 0) {
			msg.msg_iov->iov_base = (char *)msg.msg_iov->iov_base + n;
			msg.msg_iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

/* The value of header name (lower case, with the colon) in the header block
 * [h, end), or NULL. */
static const char *header_value(const char *h, const char *end, const char *name, size_t *vlen)
{
	size_t n = strlen(name);

	for (const char *line = h; line < end;) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));

		if (!eol)
			eol = end;
		if ((size_t)(eol - line) > n && strncasecmp(line, name, n) == 0) {
			const char *v = line + n, *ve = eol;

			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			*vlen = (size_t)(ve - v);
			return v;
		}
		line = eol + 1;
	}
	return NULL;
}

/* Decode a chunked body from [p, p + n) into reply. 1 when complete, 0 when
 * more must come, -1 (EIO) when it is malformed. */
static int unchunk(const char *p, size_t n, struct api_reply *reply)
{
	const char *end = p + n;

	reply->len = 0;
	for (;;) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		char *stop;
		unsigned long size;

		if (!eol)
			return 0;
		size = strtoul(p, &stop, 16);
		if (stop == p) {
			errno = EIO;
			return -1;
		}
		p = eol + 1;
		if (size == 0) {
			/* Trailers, then the empty line. */
			for (;;) {
				eol = memchr(p, '\n', (size_t)(end - p));
				if (!eol)
					return 0;
				if (eol == p || (eol == p + 1 && *p == '\r'))
					return 1;
				p = eol + 1;
			}
		}
		if ((size_t)(end - p) < size + 2)
			return 0;
		if (reply->len + size + 1 > reply->cap) {
			reply->cap = reply->len + size + 1;
			reply->body = xrealloc(reply->body, reply->cap);
		}
		memcpy(reply->body + reply->len, p, size);
		reply->len += size;
		reply->body[reply->len] = '\0';
		p += size;
		if (*p == '\r')
			p++;
		if (p >= end || *p != '\n') {
			errno = EIO;
			return -1;
		}
		p++;
	}
}

/* Read one answer. Its status, with reply filled in; or -1 with errno
 * (ETIMEDOUT, ECANCELED, EIO for a malformed answer, ENOTCONN when the
 * connection broke) and *got_any telling whether a byte of it came. */
static int conn_receive(struct api_client *client, struct api_reply *reply, int64_t deadline,
			bool *got_any)
{
	char *raw = NULL;
	size_t len = 0, cap = 0, head_len = 0;
	long status = 0, clen = -1;
	bool chunked = false, keep = true, eof = false;
	int ret = -1, saved = EIO;

	*got_any = false;
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 16384;
			raw = xrealloc(raw, cap + 1);
		}
		if (conn_wait(client, client->sock, POLLIN, deadline) < 0) {
			saved = errno;
			goto out;
		}
		n = recv(client->sock, raw + len, cap - len, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			saved = ENOTCONN;
			goto out;
		}
		if (n == 0)
			eof = true;
		else
			*got_any = true;
		len += (size_t)n;
		raw[len] = '\0';
		if (!head_len) {
			const char *blank = strstr(raw, "\r\n\r\n"), *v;
			size_t vlen;

			if (!blank) {
				if (eof) {
					saved = len ? EIO : ENOTCONN;
					goto out;
				}
				continue;
			}
			if (strncmp(raw, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)raw[9])) {
				saved = EIO;
				goto out;
			}
			status = strtol(raw + 9, NULL, 10);
			head_len = (size_t)(blank + 4 - raw);
			if (status >= 100 && status < 200) {
				/* An interim answer: the real one follows. */
				memmove(raw, raw + head_len, len - head_len);
				len -= head_len;
				raw[len] = '\0';
				head_len = 0;
				continue;
			}
			v = header_value(raw, blank + 2, "content-length:", &vlen);
			if (v)
				clen = strtol(v, NULL, 10);
			v = header_value(raw, blank + 2, "transfer-encoding:", &vlen);
			chunked = v && vlen >= 7 && strncasecmp(v + vlen - 7, "chunked", 7) == 0;
			v = header_value(raw, blank + 2, "connection:", &vlen);
			keep = !(v && vlen == 5 && strncasecmp(v, "close", 5) == 0) &&
			       strncmp(raw, "HTTP/1.0", 8) != 0;
			if (status == 204 || status == 304)
				clen = 0;
		}
		if (chunked) {
			int done = unchunk(raw + head_len, len - head_len, reply);

			if (done < 0)
				goto out;
			if (done)
				break;
		} else if (clen >= 0) {
			if (len - head_len >= (size_t)clen)
				break;
		} else if (eof) {
			keep = false;
			break;
		}
		if (eof) {
			saved = ENOTCONN;
			goto out;
		}
	}
	if (!chunked) {
		size_t blen = clen >= 0 ? (size_t)clen : len - head_len;

		reply->body = xmalloc(blen + 1);
		memcpy(reply->body, raw + head_len, blen);
		reply->body[blen] = '\0';
		reply->len = blen;
		reply->cap = blen + 1;
	} else if (!reply->body) {
		reply->body = xstrdup("");
		reply->len = 0;
		reply->cap = 1;
	}
	reply->status = status;
	if (!keep)
		conn_drop(client);
	ret = (int)status;
out:
	free(raw);
	if (ret < 0) {
		api_reply_clear(reply);
		errno = saved;
	}
	return ret;
}

/* One request on the unix socket: api_call()'s contract. A kept-alive
 * connection that the scheduler closed meanwhile (nothing of the answer came)
 * is replaced and the request sent again, once, as libcurl did. */
static int unix_call(struct api_client *client, const char *method, const char *path,
		     const char *body, size_t len, const struct api_identity *as, long timeout_ms,
		     struct api_reply *reply)
{
	int64_t deadline = time_mono_ms() + (timeout_ms > 0 ? timeout_ms : 10000L);
	long connect_ms = timeout_ms > 0 && timeout_ms < 5000 ? timeout_ms : 5000L;
	size_t cap = 512 + strlen(path) + strlen(client->user_agent) + (as ? as->ngroups * 12 : 0);
	char *head = xmalloc(cap);
	size_t hlen;
	int ret = -1, saved = 0;

	hlen = (size_t)snprintf(head, cap, "%s %s HTTP/1.1\r\nHost: localhost\r\nUser-Agent: %s\r\n"
				"Accept: */*\r\n", method, path, client->user_agent);
	if (as) {
		hlen += (size_t)snprintf(head + hlen, cap - hlen, "X-Parsa-Uid: %u\r\nX-Parsa-Gid: %u\r\n",
					 (unsigned)as->uid, (unsigned)as->gid);
		if (as->ngroups > 0) {
			hlen += (size_t)snprintf(head + hlen, cap - hlen, "X-Parsa-Groups: ");
			for (size_t i = 0; i < as->ngroups; i++)
				hlen += (size_t)snprintf(head + hlen, cap - hlen, "%s%u", i ? "," : "",
							 (unsigned)as->groups[i]);
			hlen += (size_t)snprintf(head + hlen, cap - hlen, "\r\n");
		}
	}
	if (strcmp(method, "GET") != 0)
		hlen += (size_t)snprintf(head + hlen, cap - hlen, "Content-Length: %zu\r\n",
					 body ? len : 0);
	hlen += (size_t)snprintf(head + hlen, cap - hlen, "\r\n");
	for (int attempt = 0; attempt < 2; attempt++) {
		bool reused = client->sock >= 0, got_any = false;

		if (reused && !conn_idle_alive(client->sock)) {
			conn_drop(client);
			reused = false;
		}
		if (client->sock < 0 && conn_open(client, connect_ms) < 0) {
			saved = errno;
			goto out;
		}
		if (conn_send(client, head, hlen, body, body ? len : 0, deadline) == 0) {
			ret = conn_receive(client, reply, deadline, &got_any);
			if (ret >= 0)
				goto out;
		}
		saved = errno;
		conn_drop(client);
		if (saved == ETIMEDOUT || saved == ECANCELED || got_any || !reused)
			break;
	}
	if (saved != ETIMEDOUT && saved != ECANCELED && saved != EIO)
		saved = ENOTCONN;
out:
	free(head);
	if (ret < 0)
		errno = saved;
	return ret;
}

int api_call(struct api_client *client, const char *method, const char *path,
	     const char *body, size_t len, const struct api_identity *as,
	     long timeout_ms, struct api_reply *reply, char **err)
{
	struct curl_slist *headers = NULL;
	char *url = NULL, *why = NULL;
	CURLcode rc;
	CURL *c = client->curl;
	long os_errno;
	int ret = -1;

	memset(reply, 0, sizeof *reply);
	client->refused = 0;
	if (cancelled(client)) {
		errno = ECANCELED;
		goto out;
	}
	if (client->unix_path && !client->auth) {
		ret = unix_call(client, method, path, body, len, as, timeout_ms, reply);
		if (ret >= 0)
			client->refused = 0;
		goto out;
	}
	url = xasprintf("%s%s", client->base_url, path);
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	if (client->unix_path)
		curl_easy_setopt(c, CURLOPT_UNIX_SOCKET_PATH, client->unix_path);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, client->user_agent);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 10000L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms > 0 && timeout_ms < 5000 ? timeout_ms : 5000L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, reply);
	curl_easy_setopt(c, CURLOPT_PROXY, "");
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	if (strcmp(method, "GET") != 0) {
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
	}
	headers = identity_headers(as);
	if (client->auth) {
		char *cred, *line;

		/* Bound to this method, target and body: see auth.h. */
		cred = auth_sign(client->auth, method, path, body, body ? len : 0, &why);
		if (!cred) {
			client->refused = 0;
			errno = errno == ENOTCONN ? ENOTCONN : EIO;
			goto out;
		}
		line = xasprintf("Authorization: " AUTH_SCHEME " %s", cred);
		headers = curl_slist_append(headers, line);
		free(line);
		free(cred);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);

	rc = client->cancel_fd >= 0 ? perform_cancellable(client) : curl_easy_perform(c);
	switch (rc) {
	case CURLE_OK:
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply->status);
		if (!reply->body) {
			reply->body = xstrdup("");
			reply->len = 0;
		}
		ret = (int)reply->status;
		break;
	case CURLE_OPERATION_TIMEDOUT:
		errno = ETIMEDOUT;
		break;
	case CURLE_ABORTED_BY_CALLBACK:
		errno = ECANCELED;
		break;
	case CURLE_COULDNT_CONNECT:
		os_errno = 0;
		curl_easy_getinfo(c, CURLINFO_OS_ERRNO, &os_errno);
		/* Nothing listens (a scheduler restarting), as opposed to no way
		 * to reach the head node at all. */
		client->refused = os_errno == ECONNREFUSED || os_errno == ENOENT;
		errno = ENOTCONN;
		break;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
		errno = ENOTCONN;
		break;
	default:
		errno = EIO;
		break;
	}
	if (ret < 0)
		api_reply_clear(reply);
	else
		client->refused = 0;
out:
	if (ret < 0)
		errprintf(err, "%s", why ? why : strerror(errno));
	free(why);
	curl_slist_free_all(headers);
	free(url);
	return ret;
}

int api_new_token(char token[API_TOKEN_SIZE])
{
	unsigned char raw[(API_TOKEN_SIZE - 1) / 2];
	size_t got = 0;

	while (got < sizeof raw) {
		ssize_t n = getrandom(raw + got, sizeof raw - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(token + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

/* A lost answer, for api_submit: nothing came back, or "busy", or an error
 * of the scheduler's own after an attempt that may have committed (the next
 * attempt's lookup of the token tells). */
static bool answer_lost(int status, bool sent)
{
	return status < 0 || status == 503 || (sent && status >= 500);
}

int api_submit(struct api_client *client, const char *path, const char *body, size_t len,
	       const struct api_identity *as, const struct api_submit_policy *policy,
	       struct api_reply *reply, bool *unconfirmed)
{
	int64_t start = time_mono_ms(), now, until;
	long pause_ms = 20, timeout_ms;
	bool sent = false;
	int status, saved;

	*unconfirmed = false;
	for (;;) {
		/* An attempt that times out may have been sent: it counts
		 * against the long deadline, never past it. */
		timeout_ms = (long)(start + policy->deadline_ms - time_mono_ms());
		if (timeout_ms > policy->call_timeout_ms)
			timeout_ms = policy->call_timeout_ms;
		if (timeout_ms < 100)
			timeout_ms = 100;
		status = api_call(client, "POST", path, body, len, as, timeout_ms, reply, NULL);
		if (!answer_lost(status, sent))
			return status;
		saved = errno;
		if (status < 0 && !(saved == ENOTCONN && client->refused))
			sent = true;
		/* Another thread stopped it (api_client_set_cancel_fd): no retry. */
		if (status < 0 && saved == ECANCELED)
			break;
		now = time_mono_ms();
		until = start + (sent ? policy->deadline_ms : policy->grace_ms);
		if (now + pause_ms >= until)
			break;
		api_reply_clear(reply);
		usleep((useconds_t)pause_ms * 1000);
		pause_ms = pause_ms * 2 > 500 ? 500 : pause_ms * 2;
	}
	if (sent) {
		*unconfirmed = true;
		saved = ETIMEDOUT;
	} else if (status >= 0) {
		/* "Busy" to the end, and nothing committed: that answer stands. */
		return status;
	}
	api_reply_clear(reply);
	errno = saved;
	return -1;
}

void api_reply_clear(struct api_reply *reply)
{
	free(reply->body);
	reply->body = NULL;
	reply->len = 0;
	reply->cap = 0;
}

int api_status_errno(long status)
{
	switch (status) {
	case 200: case 201: case 202: case 204:
		return 0;
	case 400: case 422:
		return EINVAL;
	case 401: case 403:
		return EACCES;
	case 404:
		return ENOENT;
	case 409:
		return EBUSY;
	case 426: /* the handshake: another protocol (handshake.h) */
		return EPROTO;
	case 413:
		return EFBIG;
	case 429:
		return EDQUOT;
	case 503:
		return EAGAIN;
	case 507:
		return ENOSPC;
	default:
		return EIO;
	}
}

char *api_reply_error(const struct api_reply *reply)
{
	json_t *root;
	char *text = NULL;

	if (reply->body && reply->len > 0) {
		root = json_loadb(reply->body, reply->len, 0, NULL);
		if (root) {
			const char *s = json_string_value(json_object_get(root, "error"));

			if (s)
				text = xstrdup(s);
			json_decref(root);
		}
		if (!text)
			text = xstrdup(reply->body);
	} else {
		text = xasprintf("scheduler answered HTTP %ld", reply->status);
	}
	return text;
}

char *url_escape(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = xmalloc(strlen(s) * 3 + 1), *q = out;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    *p == '-' || *p == '_' || *p == '.' || *p == '~') {
			*q++ = (char)*p;
		} else {
			*q++ = '%';
			*q++ = hex[*p >> 4];
			*q++ = hex[*p & 15];
		}
	}
	*q = '\0';
	return out;
}
