#include "api_client.h"
#include "auth.h"
#include "handshake.h"
#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

struct api_client {
	CURL *curl;
	char *unix_path;  /* NULL for TCP */
	char *base_url;   /* "http://localhost" for unix sockets */
	int cancel_fd;    /* api_call gives up when readable; -1 for none */
	CURLM *multi;     /* drives transfers while cancel_fd is set */
	struct auth *auth;  /* TCP only: munge credentials */
	int refused;      /* the last failed call found nothing listening */
	int unsent;       /* the last failed call wrote no byte of its request */
	char *user_agent; /* the handshake: program, release, protocol */
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

int api_client_unsent(const struct api_client *client)
{
	return client->unsent;
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

int api_call(struct api_client *client, const char *method, const char *path,
	     const char *body, size_t len, const struct api_identity *as,
	     long timeout_ms, struct api_reply *reply, char **err)
{
	struct curl_slist *headers = NULL;
	char *url = NULL, *why = NULL;
	CURLcode rc;
	CURL *c = client->curl;
	long os_errno, request_size;
	int ret = -1;

	memset(reply, 0, sizeof *reply);
	client->refused = 0;
	client->unsent = 1;
	if (cancelled(client)) {
		errno = ECANCELED;
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
	/* What reached a socket, over every connection this call used: when a
	 * kept-alive connection closes before any answer, libcurl sends the same
	 * request again on a fresh one (lib/transfer.c, Curl_retry_request:
	 * "Connection died, retrying a fresh connect"), so a refused connect at
	 * the end does not mean the scheduler never read the request.
	 * CURLINFO_REQUEST_SIZE is "the total size of the issued requests" of
	 * the transfer, the one that died included. */
	request_size = 0;
	curl_easy_getinfo(c, CURLINFO_REQUEST_SIZE, &request_size);
	client->unsent = request_size == 0;
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
		/* Only a request that no connection carried, because nothing
		 * listened, cannot have reached the scheduler. */
		if (status < 0 && !(saved == ENOTCONN && client->refused && client->unsent))
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
