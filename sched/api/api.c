#include "api.h"
#include "api_call.h"
#include "api_cluster.h"
#include "api_ctl.h"
#include "api_identity.h"
#include "api_jobs.h"
#include "api_reply.h"
#include "api_runners.h"
#include "api_records.h"
#include "api_schedules.h"

#include "api_paths.h"
#include "auth.h"
#include "handshake.h"
#include "log.h"
#include "unix_socket.h"
#include "util.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* A JSON-escaped 1 MiB spec can grow up to six times; anything larger is
 * refused before it is read. */
#define BODY_MAX ((size_t)SPEC_MAX_BYTES * 6 + 4096)

struct api {
	struct engine *engine;
	struct records *records;  /* NULL: no lists (api_create) */
	struct MHD_Daemon *mhd;
	struct MHD_Daemon *tcp;   /* api_listen_tcp(); NULL without */
	struct auth *auth;        /* checks the munge credentials of TCP requests */
	char *path;
	uid_t self_uid;
};

/* Per request: the body as it arrives and who sent it. */
struct request {
	char *target;         /* the request target as sent (path and query): what a
			       * munge credential is bound to */
	bool started;         /* on_request has seen the headers */
	bool unsigned_tcp;    /* TCP without a credential: refused, body not kept */
	char *body;
	size_t len, cap;
	bool too_large;
	json_t *work;         /* a work answer, until it is known to be delivered */
	char *work_host;
};

enum access { ANYONE, TRUSTED };

/* ---- routing ---- */

/* Each route of the contract (lib/api_paths.h) and its handler; '*' segments
 * are passed to the handler in c->args. */
static const struct handler {
	api_handler_fn fn;
	enum access who;
} handlers[API_ROUTE_COUNT] = {
	[API_JOBS_SUBMIT] = { api_jobs_submit, ANYONE },
	[API_JOBS_LIST] = { api_jobs_list, ANYONE },
	[API_JOBS_LAST] = { api_jobs_last, ANYONE },
	[API_JOB] = { api_jobs_json, ANYONE },
	[API_JOB_STATUS] = { api_jobs_status, ANYONE },
	[API_JOB_WHY] = { api_jobs_why, ANYONE },
	[API_JOB_EVENTS] = { api_jobs_events, ANYONE },
	[API_JOB_SPEC] = { api_jobs_spec, ANYONE },
	[API_JOB_WAIT] = { api_jobs_wait, ANYONE },
	[API_JOB_CTL] = { api_ctl_job, ANYONE },
	[API_STAGE_STATUS] = { api_jobs_stage_status, ANYONE },
	[API_INSTANCE_STATUS] = { api_jobs_instance_status, ANYONE },
	[API_INSTANCE] = { api_jobs_instance_json, ANYONE },
	[API_HOSTS_REGISTER] = { api_runners_register, TRUSTED },
	[API_HOSTS_LIST] = { api_cluster_hosts, ANYONE },
	[API_HOST_STATUS] = { api_cluster_host_status, ANYONE },
	[API_HOST_HEARTBEAT] = { api_runners_heartbeat, TRUSTED },
	[API_HOST_LEAVE] = { api_runners_leave, TRUSTED },
	[API_HOST_CTL] = { api_ctl_host, ANYONE },
	[API_HOST_WORK] = { api_runners_work, TRUSTED },
	[API_INSTANCE_STATE] = { api_runners_report, TRUSTED },
	[API_INSTANCE_PROGRESS] = { api_runners_progress, TRUSTED },
	[API_SCHEDULES_PUT] = { api_schedules_put, ANYONE },
	[API_SCHEDULES_LIST] = { api_schedules_list, ANYONE },
	[API_SCHEDULE] = { api_schedules_json, ANYONE },
	[API_SCHEDULE_DELETE] = { api_schedules_delete, ANYONE },
	[API_SCHEDULE_STATUS] = { api_schedules_status, ANYONE },
	[API_SCHEDULE_SPEC] = { api_schedules_spec, ANYONE },
	[API_SCHEDULE_CTL] = { api_ctl_schedule, ANYONE },
	[API_STATUS] = { api_cluster_status, ANYONE },
	[API_STATS] = { api_cluster_stats, ANYONE },
	[API_HISTORY_JOBS] = { api_records_jobs, ANYONE },
	[API_USAGE] = { api_records_usage, ANYONE },
};

bool api_serves(int route)
{
	return route >= 0 && route < API_ROUTE_COUNT && handlers[route].fn;
}

static void dispatch(struct call *c, const char *method, const char *url)
{
	char buf[1024];
	bool path_known = false;
	int route;

	memset(c->args, 0, sizeof c->args);
	route = api_route_find(method, url, buf, sizeof buf, c->args, API_MAX_ARGS, &path_known);
	if (route < 0 || !api_serves(route)) {
		if (path_known)
			reply_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed here");
		else
			reply_error(c, MHD_HTTP_NOT_FOUND, "no such path");
		return;
	}
	if (handlers[route].who == TRUSTED && !c->trusted) {
		reply_error(c, MHD_HTTP_FORBIDDEN, "only root or the scheduler's user may call this");
		return;
	}
	handlers[route].fn(c);
}

/* libmicrohttpd is done with a large answer: free it and give the memory
 * back (util.h, mem_give_back). */
static void free_large(void *buf)
{
	free(buf);
	mem_give_back();
}

static enum MHD_Result send_reply(struct MHD_Connection *conn, struct call *c)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (c->out_len >= MEM_LARGE)
		resp = MHD_create_response_from_buffer_with_free_callback(c->out_len, c->out, free_large);
	else
		resp = MHD_create_response_from_buffer(c->out_len, c->out, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(c->out);
		return MHD_NO;
	}
	c->out = NULL;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, c->type);
	ret = MHD_queue_response(conn, c->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct api *api = cls;
	struct request *req = *con_cls;
	struct call *c;
	enum MHD_Result ret;
	char *why = NULL;
	int who;

	(void)version;
	if (!req) {
		/* on_uri made it, unless libmicrohttpd skipped the URI callback. */
		req = xcalloc(1, sizeof *req);
		*con_cls = req;
	}
	if (!req->started) {
		const char *clen = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							       MHD_HTTP_HEADER_CONTENT_LENGTH);

		req->started = true;
		if (clen && strtoull(clen, NULL, 10) > BODY_MAX)
			req->too_large = true;
		/* Over TCP, a request without a credential is refused anyway: do
		 * not keep its body. */
		if (!MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION) &&
		    !api_on_unix_socket(conn))
			req->unsigned_tcp = true;
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (!req->too_large && req->len + *upload_data_size > BODY_MAX)
			req->too_large = true;
		if (!req->too_large && !req->unsigned_tcp) {
			if (req->len + *upload_data_size + 1 > req->cap) {
				req->cap = (req->len + *upload_data_size + 1) * 2;
				if (req->cap > BODY_MAX + 1)
					req->cap = BODY_MAX + 1;
				req->body = xrealloc(req->body, req->cap);
			}
			memcpy(req->body + req->len, upload_data, *upload_data_size);
			req->len += *upload_data_size;
			req->body[req->len] = '\0';
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	c = xcalloc(1, sizeof *c);
	c->engine = api->engine;
	c->records = api->records;
	c->conn = conn;
	c->body = req->body;
	c->len = req->len;
	if (req->too_large) {
		char msg[128];

		snprintf(msg, sizeof msg, "the request is larger than the limit (a spec may have %d bytes)",
			 SPEC_MAX_BYTES);
		reply_error(c, API_HTTP_TOO_LARGE, msg);
	} else if (handshake_check(MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
							       MHD_HTTP_HEADER_USER_AGENT), &why) < 0) {
		log_info("%s %s refused: %s", method, url, why);
		reply_error(c, MHD_HTTP_UPGRADE_REQUIRED, why);
		free(why);
	} else if ((who = api_identify(c, method, req->target, api->auth, api->self_uid)) == -2) {
		log_info("%s %s refused: %s", method, url, c->auth_error ? c->auth_error : "?");
		reply_error(c, c->auth_busy ? MHD_HTTP_SERVICE_UNAVAILABLE :
			    MHD_HTTP_UNAUTHORIZED, c->auth_error);
	} else if (who < 0) {
		reply_error(c, MHD_HTTP_FORBIDDEN, "cannot tell who is calling (no peer credentials, or"
			    " X-Parsa-Uid/Gid that are not numbers or name no known user)");
	} else {
		dispatch(c, method, url);
	}
	if (!c->out)
		reply_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "no answer");
	log_debug("%s %s uid %u -> %u", method, url, (unsigned)c->who.uid, c->status);
	/* Watched until the connection says how its delivery went. */
	req->work = c->work;
	req->work_host = c->work_host;
	ret = send_reply(conn, c);
	free(c->auth_error);
	free(c);
	return ret;
}

/* Called first for every request with its target as sent: keep it for the
 * munge check, which binds a credential to the exact target. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *conn)
{
	struct request *req = xcalloc(1, sizeof *req);

	(void)cls;
	(void)conn;
	req->target = xstrdup(uri ? uri : "");
	return req;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct request *req = *con_cls;
	struct api *api = cls;

	(void)conn;
	if (req) {
		if (req->work && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
			log_warnx("work for %s was not delivered: it goes out again", req->work_host);
			engine_work_undelivered(api->engine, req->work_host, req->work);
		}
		json_decref(req->work);
		free(req->work_host);
		free(req->target);
		free(req->body);
		free(req);
		*con_cls = NULL;
	}
}

/* Serve the API on the listening socket fd, one thread per connection (long
 * polls block in the engine). NULL when libmicrohttpd cannot start. */
static struct MHD_Daemon *start_daemon(struct api *api, int fd)
{
	/* poll(), not select(): descriptors past 1024 must work too. */
	return MHD_start_daemon(MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_THREAD_PER_CONNECTION |
				MHD_USE_ITC | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_request, api,
				/* First, or MHD logs its own complaint about it. */
				MHD_OPTION_EXTERNAL_LOGGER, log_warnx_lib, (void *)"http",
				MHD_OPTION_LISTEN_SOCKET, fd,
				MHD_OPTION_URI_LOG_CALLBACK, on_uri, api,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, api,
				MHD_OPTION_NOTIFY_CONNECTION, api_on_connection, NULL,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)600,
				MHD_OPTION_END);
}

struct api *api_create(const char *path, struct engine *engine, char **err)
{
	return api_create_with_records(path, engine, NULL, err);
}

struct api *api_create_with_records(const char *path, struct engine *engine,
				    struct records *records, char **err)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct api *api = xcalloc(1, sizeof *api);
	char *tmp = NULL;
	int fd = -1, saved;

	api->engine = engine;
	api->records = records;
	api->path = xstrdup(path);
	api->self_uid = geteuid();
	if (strlen(path) >= sizeof sun.sun_path) {
		errno = ENAMETOOLONG;
		errprintf(err, "socket path '%s' is longer than %zu characters", path,
			  sizeof sun.sun_path - 1);
		goto fail;
	}
	if (unix_socket_answers(path)) {
		errno = EADDRINUSE;
		errprintf(err, "another scheduler answers on %s", path);
		goto fail;
	}
	if (unlink(path) < 0 && errno != ENOENT) {
		errprintf(err, "cannot remove the stale socket %s: %s", path, strerror(errno));
		goto fail;
	}
	/* Bound under a temporary name and renamed once served, so that clients
	 * waiting for the path never meet a socket that does not answer yet. */
	tmp = xasprintf("%s.%d", path, (int)getpid());
	if (strlen(tmp) >= sizeof sun.sun_path) {
		free(tmp);
		tmp = NULL;
	}
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s", tmp ? tmp : path);
	unlink(sun.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof sun) < 0) {
		errprintf(err, "cannot create the socket %s: %s", sun.sun_path, strerror(errno));
		goto fail;
	}
	/* Every local user may talk to the scheduler when it serves them all (as
	 * root); identity comes from SO_PEERCRED, not from the file mode. */
	if (chmod(sun.sun_path, geteuid() == 0 ? 0666 : 0600) < 0 || listen(fd, 128) < 0) {
		errprintf(err, "cannot listen on %s: %s", sun.sun_path, strerror(errno));
		goto fail;
	}
	api->mhd = start_daemon(api, fd);
	if (!api->mhd) {
		errno = EIO;
		errprintf(err, "cannot start the HTTP server on %s", sun.sun_path);
		goto fail;
	}
	fd = -1; /* the daemon owns it now */
	if (tmp && rename(tmp, path) < 0) {
		errprintf(err, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
		goto fail;
	}
	free(tmp);
	log_info("listening on %s", path);
	return api;
fail:
	saved = errno;
	if (tmp)
		unlink(tmp);
	free(tmp);
	if (fd >= 0)
		close(fd);
	if (api->mhd)
		MHD_stop_daemon(api->mhd);
	free(api->path);
	free(api);
	errno = saved;
	return NULL;
}

void api_destroy(struct api *api)
{
	if (!api)
		return;
	/* Remove the name first so that no new client finds a dying socket. */
	unlink(api->path);
	if (api->tcp)
		MHD_stop_daemon(api->tcp);
	MHD_stop_daemon(api->mhd);
	auth_destroy(api->auth);
	free(api->path);
	free(api);
}

/* A listening TCP socket for "HOST:PORT" ("[::1]:7070", ":7070" for every
 * address). -1 with *err. */
static int tcp_socket(const char *address, char **err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *res = NULL;
	char *host = xstrdup(address), *port;
	int fd = -1, one = 1, rc;

	port = strrchr(host, ':');
	if (!port || !port[1]) {
		errno = EINVAL;
		errprintf(err, "--listen '%s': expected HOST:PORT, e.g. 10.0.0.1:7070 or :7070", address);
		goto out;
	}
	*port++ = '\0';
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	rc = getaddrinfo(*host ? host : NULL, port, &hints, &res);
	if (rc != 0) {
		errno = EINVAL;
		errprintf(err, "--listen '%s': %s", address, gai_strerror(rc));
		goto out;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 128) < 0) {
		errprintf(err, "cannot listen on %s: %s", address, strerror(errno));
		if (fd >= 0) {
			int saved = errno;

			close(fd);
			errno = saved;
		}
		fd = -1;
	}
out:
	if (res)
		freeaddrinfo(res);
	free(host);
	return fd;
}

int api_listen_tcp(struct api *api, const char *address, const char *munge_socket, char **err)
{
	int fd = tcp_socket(address, err);

	if (fd < 0)
		return -1;
	api->auth = auth_create(munge_socket);
	api->tcp = start_daemon(api, fd);
	if (!api->tcp) {
		close(fd);
		errno = EIO;
		return errprintf(err, "cannot start the HTTP server on %s", address);
	}
	log_info("listening on %s (munge credentials from %s)", address, auth_socket(api->auth));
	return 0;
}
