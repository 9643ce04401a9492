#include "client.h"
#include "api_answers.h"
#include "api_paths.h"
#include "config.h"
#include "paths.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *client_pick_endpoint(const char *flag, const char *env_value, const char *fallback)
{
	if (flag && *flag)
		return xstrdup(flag);
	if (env_value && *env_value)
		return xstrdup(env_value);
	return xstrdup(fallback);
}

int client_open(struct client *c, const char *flag, char **err)
{
	struct parsa_conf conf;
	struct up_env env;
	char *fallback;
	char cwd[PATH_MAX];

	memset(c, 0, sizeof *c);
	up_env_from_process(&env, cwd, sizeof cwd);
	fallback = paths_default_endpoint(&env);
	/* On a cluster's hosts, /etc/parsa/parsa.conf names the scheduler (TCP) and
	 * munged's socket; --sched and $PARSA_SCHED still win. */
	if (parsa_conf_load(PARSA_CONF_DEFAULT, 1, &conf, err) < 0) {
		free(fallback);
		return -1;
	}
	if (conf.sched) {
		free(fallback);
		fallback = parsa_endpoint(conf.sched);
	}
	c->endpoint = client_pick_endpoint(flag, getenv("PARSA_SCHED"), fallback);
	free(fallback);
	c->api = api_client_create(c->endpoint, err);
	if (c->api && conf.munge_socket && !getenv("PARSA_MUNGE_SOCKET"))
		api_client_set_munge_socket(c->api, conf.munge_socket);
	parsa_conf_free(&conf);
	if (!c->api) {
		int saved = errno;

		free(c->endpoint);
		c->endpoint = NULL;
		errno = saved;
		return -1;
	}
	return 0;
}

void client_close(struct client *c)
{
	api_client_destroy(c->api);
	free(c->endpoint);
	memset(c, 0, sizeof *c);
}

/* The sentence for a failed call, or 0 for a 2xx answer (see client_call). */
static int settle(struct client *c, int status, long timeout_ms, struct api_reply *reply,
		  char **err)
{
	char *text;

	if (status < 0) {
		if (errno == ETIMEDOUT)
			return errprintf(err, "the scheduler at %s did not answer within %ld s: it may be overloaded; try again, or see its log (STATE/logs/sched.log)",
					 c->endpoint, (timeout_ms + 999) / 1000);
		if (errno == ENOTCONN)
			return errprintf(err, "cannot reach the scheduler at %s: is `parsa up` running? (or point --sched / PARSA_SCHED at it)",
					 c->endpoint);
		return errprintf(err, "cannot talk to the scheduler at %s (%s)", c->endpoint,
				 strerror(errno));
	}
	if (status >= 200 && status < 300)
		return 0;
	text = api_reply_error(reply);
	/* Drop a trailing newline so the message stays one line where it is one. */
	for (size_t n = strlen(text); n > 0 && text[n - 1] == '\n'; n--)
		text[n - 1] = '\0';
	errprintf(err, "%s", text);
	free(text);
	errno = api_status_errno(reply->status);
	return -1;
}

int client_call(struct client *c, const char *method, const char *path, const char *body,
		size_t len, long timeout_ms, struct api_reply *reply, char **err)
{
	int status = api_call(c->api, method, path, body, len, NULL, timeout_ms, reply, NULL);

	/* Written, then the connection died unanswered (libcurl's resend on a
	 * fresh connection may end refused): not "cannot reach", for the
	 * scheduler may have read it and done it. */
	if (status < 0 && errno == ENOTCONN && !api_client_unsent(c->api) && strcmp(method, "GET") != 0) {
		errprintf(err, "the scheduler at %s closed the connection before it answered %s %s: it may or may not have been done; look before you do it again",
			  c->endpoint, method, path);
		errno = ECONNRESET;
		return -1;
	}
	return settle(c, status, timeout_ms, reply, err);
}

int client_submit(struct client *c, const char *path, const char *body, size_t len,
		  struct api_reply *reply, char **err)
{
	const struct api_submit_policy policy = {
		.call_timeout_ms = CLIENT_SUBMIT_CALL_MS,
		.deadline_ms = CLIENT_SUBMIT_DEADLINE_MS,
		.grace_ms = CLIENT_SUBMIT_GRACE_MS,
	};
	bool unconfirmed = false;
	int status = api_submit(c->api, path, body, len, NULL, &policy, reply, &unconfirmed);

	if (unconfirmed)
		return errprintf(err, "the scheduler at %s may have taken the submission but gave no answer for %ld s: the job may or may not have been submitted; see `parsa status` before you submit it again",
				 c->endpoint, CLIENT_SUBMIT_DEADLINE_MS / 1000);
	/* api_submit's ENOTCONN: every attempt refused before a byte was sent. */
	if (status < 0 && errno == ENOTCONN)
		return errprintf(err, "cannot reach the scheduler at %s: nothing was submitted; is `parsa up` running? (or point --sched / PARSA_SCHED at it)",
				 c->endpoint);
	return settle(c, status, policy.call_timeout_ms, reply, err);
}

int client_call_json(struct client *c, const char *method, const char *path, json_t *body,
		     long timeout_ms, json_t **json, char **err)
{
	struct api_reply reply = { 0 };
	json_error_t jerr;
	char *text = NULL;
	int rc = -1;

	*json = NULL;
	if (body)
		text = json_dumps(body, JSON_COMPACT);
	if (client_call(c, method, path, text, text ? strlen(text) : 0, timeout_ms, &reply, err) < 0)
		goto out;
	*json = json_loadb(reply.body, reply.len, 0, &jerr);
	if (!json_is_object(*json)) {
		json_decref(*json);
		*json = NULL;
		errno = EPROTO;
		errprintf(err, "the scheduler at %s answered %s %s with something that is not a JSON object: is it a parsa scheduler of this version?",
			  c->endpoint, method, path);
		goto out;
	}
	rc = 0;
out:
	free(text);
	api_reply_clear(&reply);
	return rc;
}

int parse_job_id(const char *text, long long *id)
{
	char *end;
	long long v;

	if (!text || *text < '0' || *text > '9') {
		errno = EINVAL;
		return -1;
	}
	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno || *end || v <= 0) {
		errno = EINVAL;
		return -1;
	}
	*id = v;
	return 0;
}

int client_job_id(struct client *c, const char *text, long long *id, char **err)
{
	struct api_reply reply = { 0 };
	char *path;
	int64_t v;
	int rc = -1;

	if (strcmp(text, "last") != 0) {
		if (parse_job_id(text, id) < 0)
			return errprintf(err, "'%s' is not a job id (a positive number, or 'last' for your newest job)", text);
		return 0;
	}
	path = api_path(API_JOBS_LAST, NULL);
	if (client_call(c, "GET", path, NULL, 0, 10000, &reply, err) < 0) {
		if (errno == ENOENT)
			errprintf(err, "you have no jobs yet: submit one with `parsa submit FILE`");
		goto out;
	}
	if (api_read_id(reply.body, reply.len, &v, err) < 0)
		goto out;
	*id = (long long)v;
	rc = 0;
out:
	api_reply_clear(&reply);
	free(path);
	return rc;
}
