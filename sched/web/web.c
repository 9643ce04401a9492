/* The web server: a libmicrohttpd daemon on its own TCP socket, a static
 * route table of GET pages, and the page head every HTML answer shares. */
#include "web_internal.h"

#include "log.h"
#include "route.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct web {
	struct web_deps deps;
	struct web_samples *samples;
	struct MHD_Daemon *mhd;
	char *url;
};

/* '*' matches one path segment. The first match wins. */
static const struct route {
	const char *pattern;
	web_page_fn fn;
} routes[] = {
	{ "/", web_page_home },
	{ "/hosts", web_page_home },
	{ "/jobs", web_page_jobs },
	{ "/jobs/*", web_page_job },
	{ "/jobs/*/status", web_page_job_text },
	{ "/jobs/*/status.json", web_page_job_text },
	{ "/jobs/*/why", web_page_job_text },
	{ "/jobs/*/events", web_page_job_text },
	{ "/jobs/*/spec", web_page_job_text },
	{ "/jobs/*/stages/*/status", web_page_stage_text },
	{ "/jobs/*/stages/*/instances/*", web_page_instance },
	{ "/jobs/*/stages/*/instances/*/log", web_page_instance },
	{ "/jobs/*/stages/*/instances/*/status", web_page_instance },
	{ "/jobs/*/stages/*/instances/*/status.json", web_page_instance },
	{ "/hosts/*/status", web_page_host_text },
	{ "/hosts/*", web_page_host },
	{ "/usage", web_page_usage },
	{ "/schedules", web_page_schedules },
	{ "/metrics", web_page_metrics },
};

/* The navigation and head around an HTML body; everything it links is here. */
static char *wrap(struct page *p, size_t *len)
{
	static const struct { const char *href, *label; } nav[] = {
		{ "/", "Lab" }, { "/jobs", "Jobs" }, { "/usage", "Usage" },
		{ "/schedules", "Schedules" }, { "/metrics", "Metrics" },
	};
	char *out = NULL;
	FILE *f = open_memstream(&out, len);

	if (!f)
		abort();
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">", f);
	if (p->refresh)
		fprintf(f, "<meta http-equiv=\"refresh\" content=\"%d\">", WEB_REFRESH_S);
	fputs("<title>", f);
	html_esc(f, p->title ? p->title : "parsa");
	fprintf(f, " - parsa</title><style>%s</style>", web_css);
	if (p->extra_head)
		fputs(p->extra_head, f);
	fputs("</head><body><header><span class=\"brand\">parsa</span><nav>", f);
	for (size_t i = 0; i < ARRAY_LEN(nav); i++)
		fprintf(f, "<a href=\"%s\">%s</a>", nav[i].href, nav[i].label);
	fputs("</nav>", f);
	if (p->refresh)
		fprintf(f, "<span class=\"live\">live: reloads every %d s</span>", WEB_REFRESH_S);
	fputs("</header><main>", f);
	fwrite(p->body, 1, p->len, f);
	fputs("</main></body></html>\n", f);
	fclose(f);
	return out;
}

static enum MHD_Result send_page(struct MHD_Connection *conn, struct page *p)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	char *out = p->body;
	size_t len = p->len;

	if (!p->type) {
		out = wrap(p, &len);
		free(p->body);
	}
	p->body = NULL;
	resp = MHD_create_response_from_buffer(len, out, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(out);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type",
				p->type ? p->type : "text/html; charset=utf-8");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	/* Nothing of a page comes from anywhere else, and no page runs in a frame. */
	MHD_add_response_header(resp, "Content-Security-Policy",
				"default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline' 'self'; "
				"img-src 'self' data:; frame-ancestors 'none'");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	for (int i = 0; i < p->nhdr; i++)
		MHD_add_response_header(resp, p->hdr_name[i], p->hdr_value[i]);
	ret = MHD_queue_response(conn, p->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_len, void **con_cls)
{
	struct web *w = cls;
	struct page p = { .deps = &w->deps, .samples = w->samples, .conn = conn, .url = url,
			  .status = MHD_HTTP_OK };
	char buf[1024];
	enum MHD_Result ret;

	(void)version;
	(void)upload;
	(void)upload_len;
	(void)con_cls;
	p.f = open_memstream(&p.body, &p.len);
	if (!p.f)
		return MHD_NO;
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
		web_error(&p, MHD_HTTP_METHOD_NOT_ALLOWED, "this page only reads: GET");
	} else {
		size_t i;

		for (i = 0; i < ARRAY_LEN(routes); i++) {
			memset(p.args, 0, sizeof p.args);
			if (route_match(routes[i].pattern, url, buf, sizeof buf, p.args, WEB_MAX_ARGS)) {
				routes[i].fn(&p);
				break;
			}
		}
		if (i == ARRAY_LEN(routes))
			web_error(&p, MHD_HTTP_NOT_FOUND, "no such page");
	}
	if (p.f)
		fclose(p.f);
	ret = send_page(conn, &p);
	free(p.body);
	return ret;
}

/* Bind a listening TCP socket to address; fills the URL it answers on. */
static int listen_on(const char *address, char **url, char **err)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char *host = xstrdup(address), *colon = strrchr(host, ':'), name[128], port[16];
	int fd = -1, one = 1, rc;

	if (!colon) {
		errno = EINVAL;
		errprintf(err, "web address '%s': expected HOST:PORT (e.g. 127.0.0.1:8470, :0 for any free port)",
			  address);
		goto out;
	}
	*colon = '\0';
	rc = getaddrinfo(*host ? host : "127.0.0.1", colon + 1, &hints, &res);
	if (rc != 0) {
		errno = EINVAL;
		errprintf(err, "web address '%s': %s", address, gai_strerror(rc));
		goto out;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
	    bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 64) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
		errprintf(err, "cannot listen on %s for the web page: %s", address, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
		goto out;
	}
	getnameinfo((struct sockaddr *)&ss, sl, name, sizeof name, port, sizeof port,
		    NI_NUMERICHOST | NI_NUMERICSERV);
	*url = xasprintf(ss.ss_family == AF_INET6 ? "http://[%s]:%s/" : "http://%s:%s/", name, port);
out:
	if (res)
		freeaddrinfo(res);
	free(host);
	return fd;
}

struct web *web_create(const char *address, const struct web_deps *deps, char **err)
{
	struct web *w = xcalloc(1, sizeof *w);
	int fd;

	w->deps = *deps;
	fd = listen_on(address, &w->url, err);
	if (fd < 0)
		goto fail;
	w->samples = web_samples_create(deps->engine);
	/* A page is made in one go and never waits on the engine for long, so a
	 * small pool of threads serves every browser. */
	w->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ERROR_LOG,
				  0, NULL, NULL, on_request, w,
				  MHD_OPTION_EXTERNAL_LOGGER, log_warnx_lib, (void *)"web",
				  MHD_OPTION_LISTEN_SOCKET, fd,
				  MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)4,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)60,
				  MHD_OPTION_END);
	if (!w->mhd) {
		close(fd);
		errno = EIO;
		errprintf(err, "cannot start the web server on %s", address);
		goto fail;
	}
	log_info("web page on %s", w->url);
	return w;
fail:
	web_destroy(w);
	return NULL;
}

const char *web_url(const struct web *w)
{
	return w->url;
}

void web_destroy(struct web *w)
{
	if (!w)
		return;
	if (w->mhd)
		MHD_stop_daemon(w->mhd);
	web_samples_destroy(w->samples);
	free(w->url);
	free(w);
}
