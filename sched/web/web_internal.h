/* What the web server's files share: one request being answered (struct
 * page), the helpers that write HTML safely, and the handlers of the route
 * table in web.c. A handler writes its body into page->f; web.c wraps it in
 * the page's head (title, navigation, CSS, the refresh while work runs). */
#ifndef PARSA_WEB_INTERNAL_H
#define PARSA_WEB_INTERNAL_H

#include "web.h"

#include <jansson.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define WEB_MAX_ARGS 4
/* How often pages with running work reload themselves (seconds). */
#define WEB_REFRESH_S 5

struct web_samples;

struct page {
	const struct web_deps *deps;
	struct web_samples *samples;
	struct MHD_Connection *conn;
	const char *url;
	const char *args[WEB_MAX_ARGS];  /* the route's '*' segments */
	FILE *f;                         /* the body */
	char *body;
	size_t len;
	unsigned int status;
	const char *type;                /* NULL: an HTML page, wrapped by web.c */
	const char *title;               /* static or owned by the handler until sent */
	char title_buf[128];
	bool refresh;                    /* work runs: reload every WEB_REFRESH_S */
	const char *extra_head;          /* e.g. the log page's script (static) */
	/* Headers of a raw answer (the log's next offset, whether it grows). */
	const char *hdr_name[2];
	char hdr_value[2][32];
	int nhdr;
};

typedef void (*web_page_fn)(struct page *p);

/* Pages (web_pages.c, web_job.c, web_metrics.c). */
void web_page_home(struct page *p);
void web_page_jobs(struct page *p);
void web_page_usage(struct page *p);
void web_page_schedules(struct page *p);
void web_page_host(struct page *p);
void web_page_job(struct page *p);
void web_page_job_text(struct page *p);
void web_page_instance(struct page *p);
void web_page_stage_text(struct page *p);
void web_page_host_text(struct page *p);
void web_page_metrics(struct page *p);

/* ---- web_html.c ---- */

/* A query argument, NULL when absent or empty. */
const char *web_arg(struct page *p, const char *key);
/* Answer status with a short page saying msg. */
void web_error(struct page *p, unsigned int status, const char *msg);
/* Answer plain text or another type (body taken over, malloc'ed). */
void web_reply_raw(struct page *p, const char *type, char *body, size_t len);

void html_esc(FILE *f, const char *s);
/* The same, for a URL's query value. */
void url_esc(FILE *f, const char *s);
/* Local time "2026-12-02 04:35", "-" for 0. */
void html_time(FILE *f, int64_t ms);
/* "1h 02m", "-" for a negative or zero length when none is known. */
void html_duration(FILE *f, int64_t ms);
void html_bytes(FILE *f, uint64_t bytes);
/* A state's name in its colour. */
void html_state(FILE *f, const char *state);
/* A bar of instance counts {queued, running, succeeded, failed, cancelled}. */
void html_counts_bar(FILE *f, const json_t *counts, const char *label);
/* A horizontal gauge: used of total, split in parsa's share and the outside's. */
void html_gauge(FILE *f, double parsa_pct, double outside_pct);
/* Tables: a head row of the NULL-terminated heads (cls: the table's class),
 * and cells of escaped text, a time and a number. */
void html_table(FILE *f, const char *cls, const char *const *heads);
void html_td(FILE *f, const char *text);
void html_td_time(FILE *f, int64_t ms);
void html_td_num(FILE *f, long long n);
void html_td_state(FILE *f, const char *state);
/* A key's head cell and its value's cell, for the tables of facts. */
void html_th_td(FILE *f, const char *key, const char *text);
void html_th_time(FILE *f, const char *key, int64_t ms);
/* A Slurm host's facts (views_host_json's "executor"): a table of class and
 * id "executor" (partition, jobs pending and running there, the last poll
 * and its age at now, the poll error); nothing for a local host (null). */
void html_executor(FILE *f, const json_t *x, int64_t now);
/* The pager of a list: offset, limit and total, links keep the query. */
void html_pager(struct page *p, const char *path, size_t offset, size_t limit, json_int_t total);

/* JSON accessors that tolerate absence. */
const char *jstr(const json_t *o, const char *key);
json_int_t jint(const json_t *o, const char *key);
double jnum(const json_t *o, const char *key);

/* ---- web_samples.c: the last hour of each host's live use ---- */

struct web_samples *web_samples_create(struct engine *e);
void web_samples_destroy(struct web_samples *s);
/* The host's samples, oldest first: [[ms, cpu_pct, outside_cpu_pct,
 * mem_pct, outside_mem_pct], ...] (a new reference, empty if none). */
json_t *web_samples_json(struct web_samples *s, const char *host);

/* ---- web_assets.c ---- */
extern const char web_css[];
extern const char web_log_js[];

#endif
