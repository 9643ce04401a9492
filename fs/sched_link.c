/* Per-thread scheduler clients and the caller's identity (see sched_link.h). */
#include "sched_link.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct sched_link {
	char *endpoint;
	pthread_key_t client_key;   /* this thread's struct api_client, or NULL */
};

static void client_free(void *client)
{
	api_client_destroy(client);
}

void fs_identity_copy(struct fs_identity *dst, const struct fs_identity *src)
{
	*dst = *src;
	dst->groups = NULL;
	if (src->ngroups) {
		dst->groups = xmalloc(src->ngroups * sizeof *dst->groups);
		memcpy(dst->groups, src->groups, src->ngroups * sizeof *dst->groups);
	}
}

void fs_identity_clear(struct fs_identity *who)
{
	free(who->groups);
	who->groups = NULL;
	who->ngroups = 0;
}

struct sched_link *sched_link_create(const char *endpoint, char **err)
{
	struct sched_link *link;
	struct api_client *probe;

	/* Check the address once up front so a typo is a start-up error. */
	probe = api_client_create(endpoint, err);
	if (!probe)
		return NULL;
	api_client_destroy(probe);
	link = xcalloc(1, sizeof *link);
	link->endpoint = xstrdup(endpoint);
	if (pthread_key_create(&link->client_key, client_free) != 0) {
		errprintf(err, "cannot create a thread key");
		free(link->endpoint);
		free(link);
		errno = EAGAIN;
		return NULL;
	}
	return link;
}

void sched_link_destroy(struct sched_link *link)
{
	if (!link)
		return;
	/* Worker threads freed theirs when they exited; this is the caller's. */
	api_client_destroy(pthread_getspecific(link->client_key));
	pthread_setspecific(link->client_key, NULL);
	pthread_key_delete(link->client_key);
	free(link->endpoint);
	free(link);
}

const char *sched_link_endpoint(const struct sched_link *link)
{
	return link->endpoint;
}

static struct api_client *thread_client(struct sched_link *link)
{
	struct api_client *client = pthread_getspecific(link->client_key);
	char *err = NULL;

	if (client)
		return client;
	client = api_client_create(link->endpoint, &err);
	if (!client) {
		log_warnx("scheduler client: %s", err ? err : "cannot create");
		free(err);
		errno = EIO;
		return NULL;
	}
	pthread_setspecific(link->client_key, client);
	return client;
}

static struct api_identity identity_of(const struct fs_identity *who)
{
	return (struct api_identity){
		.uid = who->uid, .gid = who->gid, .groups = who->groups, .ngroups = who->ngroups,
	};
}

/* The end of one call for the mount: 0 for a 2xx status; a non-2xx status
 * becomes its errno; a transport failure (status < 0, errno set) also drops
 * the client, so the next call opens a fresh connection (the old one may be
 * half-dead). */
static int settle(struct sched_link *link, struct api_client *client, const char *method,
		  const char *path, int status)
{
	int err;

	if (status < 0) {
		err = errno;
		api_client_destroy(client);
		pthread_setspecific(link->client_key, NULL);
		log_debug("%s %s: %s", method, path, strerror(err));
		errno = err;
		return -1;
	}
	err = api_status_errno(status);
	errno = err;
	return err ? -1 : 0;
}

int sched_link_call(struct sched_link *link, const struct fs_identity *who,
		    const char *method, const char *path, const char *body, size_t len,
		    long timeout_ms, struct api_reply *reply)
{
	struct api_identity as = identity_of(who);
	struct api_client *client;
	int status;
	bool sent;

	memset(reply, 0, sizeof *reply);
	client = thread_client(link);
	if (!client)
		return -1;
	status = api_call(client, method, path, body, len, &as, timeout_ms, reply, NULL);
	/* The contract of the mount: unreachable is ENOTCONN, anything else EIO.
	 * A request that changes something and was written before its
	 * connection died may have been carried out: that is not "unreachable"
	 * (the scheduler read it), so EIO. A GET changes nothing: for it
	 * ENOTCONN stays the answer (the scheduler is not there now). */
	sent = status < 0 && !api_client_unsent(client) && strcmp(method, "GET") != 0;
	if (settle(link, client, method, path, status) == 0)
		return 0;
	if (status < 0)
		errno = errno == ENOTCONN && !sent ? ENOTCONN : EIO;
	return -1;
}

int sched_link_submit(struct sched_link *link, const struct fs_identity *who, const char *path,
		      const char *body, size_t len, struct api_reply *reply, bool *unconfirmed)
{
	struct api_identity as = identity_of(who);
	const struct api_submit_policy policy = {
		.call_timeout_ms = SCHED_CALL_TIMEOUT_MS,
		.deadline_ms = SCHED_SUBMIT_DEADLINE_MS,
		.grace_ms = SCHED_RESTART_GRACE_MS,
	};
	struct api_client *client;

	memset(reply, 0, sizeof *reply);
	*unconfirmed = false;
	client = thread_client(link);
	if (!client)
		return -1;
	return settle(link, client, "POST", path,
		      api_submit(client, path, body, len, &as, &policy, reply, unconfirmed));
}

char *sched_link_get_text(struct sched_link *link, const struct fs_identity *who,
			  const char *path, bool add_newline, size_t *len)
{
	struct api_reply reply;
	char *text;

	if (sched_link_call(link, who, "GET", path, NULL, 0, SCHED_CALL_TIMEOUT_MS, &reply) < 0) {
		int saved = errno;

		api_reply_clear(&reply);
		errno = saved;
		return NULL;
	}
	text = reply.body;
	*len = reply.len;
	if (add_newline && *len > 0 && text[*len - 1] != '\n') {
		text = xrealloc(text, *len + 2);
		text[(*len)++] = '\n';
		text[*len] = '\0';
	}
	return text;
}

int sched_link_unreadable(char *err)
{
	log_warnx("%s", err ? err : "the scheduler's answer does not read");
	free(err);
	errno = EIO;
	return -1;
}
