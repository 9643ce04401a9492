/* One job's pages: /jobs/<id> (its stages as a graph, counts, progress, why,
 * events, the spec, a grid of instances, a timeline per host and out/), the
 * mount's text files at the same paths (/jobs/<id>/status, why, events,
 * spec, status.json) and an instance with its log, which follows its end
 * while the instance runs. Everything comes from the views the mount uses,
 * by job id, copied out of the engine (engine.h, "views"); the logs from the
 * storage volume. */
#include "web_internal.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Beyond this many instances a job's grid and timeline show the first ones. */
#define INSTANCES_SHOWN 4000
/* The tail of a log a page shows, and the most one poll returns. */
#define LOG_TAIL (256 * 1024)
#define OUT_LISTED 50

static int parse_id(const char *text, int64_t *id)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno || *end || v <= 0)
		return -1;
	*id = v;
	return 0;
}

/* What the pages show of job id, copied out of the engine: 0, or -1 when it
 * answered (no such job, or the store failed). all: the instances, why,
 * events and spec too. */
static int job_get(struct page *p, int64_t id, unsigned what, struct job_views *d)
{
	char *err = NULL;

	if (engine_job_views(p->deps->engine, id, what, INSTANCES_SHOWN, d, &err) == 0)
		return 0;
	if (errno == ENOENT)
		web_error(p, MHD_HTTP_NOT_FOUND, "no such job");
	else
		web_error(p, MHD_HTTP_SERVICE_UNAVAILABLE, err ? err : "cannot read the job");
	free(err);
	return -1;
}

static bool running_state(const char *s)
{
	return strcmp(s, "running") == 0 || strcmp(s, "queued") == 0 || strcmp(s, "assigned") == 0 ||
	       strcmp(s, "waiting") == 0;
}

/* ---- the stage graph ---- */

/* The stages in layers: a stage's layer is one more than its deepest `after`. */
static void stage_graph(FILE *f, const json_t *stages, int64_t id)
{
	enum { BOX_W = 150, BOX_H = 44, GAP_X = 60, GAP_Y = 18 };
	size_t n = json_array_size(stages);
	int *layer = xcalloc(n + 1, sizeof *layer), *row = xcalloc(n + 1, sizeof *row);
	int *per_layer = xcalloc(n + 1, sizeof *per_layer), layers = 1, rows = 1;

	/* The spec's stages are in topological order: every after comes earlier. */
	for (size_t s = 0; s < n; s++) {
		const json_t *after = json_object_get(json_array_get(stages, s), "after");

		for (size_t a = 0; a < json_array_size(after); a++)
			for (size_t k = 0; k < s; k++)
				if (strcmp(jstr(json_array_get(stages, k), "name"),
					   json_string_value(json_array_get(after, a))) == 0 &&
				    layer[k] + 1 > layer[s])
					layer[s] = layer[k] + 1;
		row[s] = per_layer[layer[s]]++;
		if (layer[s] + 1 > layers)
			layers = layer[s] + 1;
		if (row[s] + 1 > rows)
			rows = row[s] + 1;
	}
	fprintf(f, "<figure><svg class=\"dag\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"stages\">",
		layers * (BOX_W + GAP_X), rows * (BOX_H + GAP_Y) + 4);
	fputs("<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" "
	      "markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0L10,5L0,10z\" fill=\"#777\"/></marker></defs>", f);
	for (size_t s = 0; s < n; s++) {
		const json_t *after = json_object_get(json_array_get(stages, s), "after");

		for (size_t a = 0; a < json_array_size(after); a++)
			for (size_t k = 0; k < s; k++)
				if (strcmp(jstr(json_array_get(stages, k), "name"),
					   json_string_value(json_array_get(after, a))) == 0)
					fprintf(f, "<line class=\"edge\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
						   "stroke=\"#777\" marker-end=\"url(#arrow)\"/>",
						layer[k] * (BOX_W + GAP_X) + BOX_W, row[k] * (BOX_H + GAP_Y) + BOX_H / 2 + 2,
						layer[s] * (BOX_W + GAP_X), row[s] * (BOX_H + GAP_Y) + BOX_H / 2 + 2);
	}
	for (size_t s = 0; s < n; s++) {
		const json_t *st = json_array_get(stages, s), *c = json_object_get(st, "counts");
		int x = layer[s] * (BOX_W + GAP_X), y = row[s] * (BOX_H + GAP_Y) + 2;

		fprintf(f, "<a href=\"/jobs/%lld#stage-", (long long)id);
		url_esc(f, jstr(st, "name"));
		fprintf(f, "\"><rect class=\"c-%s\" x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"5\"/>",
			jstr(st, "state"), x, y, BOX_W, BOX_H);
		fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#fff\">", x + 8, y + 17);
		html_esc(f, jstr(st, "name"));
		/* "failed: 3/4 ok" reads as what it is; "failed 3/4" read as 3 failed. */
		fprintf(f, "</text><text x=\"%d\" y=\"%d\" fill=\"#fff\" font-size=\"11\">%s: %lld/%lld ok",
			x + 8, y + 34, jstr(st, "state"), (long long)jint(c, "succeeded"),
			(long long)jint(st, "instances"));
		if (jint(c, "failed"))
			fprintf(f, ", %lld failed", (long long)jint(c, "failed"));
		fputs("</text></a>", f);
	}
	fputs("</svg></figure>", f);
	free(layer);
	free(row);
	free(per_layer);
}

/* ---- instances: a grid per stage, a timeline per host ---- */

static void instance_href(FILE *f, int64_t id, const json_t *in)
{
	fprintf(f, "/jobs/%lld/stages/", (long long)id);
	url_esc(f, jstr(in, "stage"));
	fprintf(f, "/instances/%lld", (long long)jint(in, "index"));
}

static void instance_title(FILE *f, const json_t *in)
{
	fprintf(f, "%s[%lld]", jstr(in, "stage"), (long long)jint(in, "index"));
	/* A sweep's instance says its point first: what it is, not its number. */
	if (*jstr(in, "point"))
		fprintf(f, " %s", jstr(in, "point"));
	fprintf(f, " %s", jstr(in, "state"));
	if (*jstr(in, "host"))
		fprintf(f, " on %s", jstr(in, "host"));
	if (jint(in, "attempt") > 1)
		fprintf(f, ", attempt %lld", (long long)jint(in, "attempt"));
	if (json_is_integer(json_object_get(in, "exit_code")))
		fprintf(f, ", exit %lld", (long long)jint(in, "exit_code"));
	if (*jstr(in, "reason"))
		fprintf(f, ": %s", jstr(in, "reason"));
}

static void bar_title(FILE *f, const json_t *in);

static void instance_grid(FILE *f, int64_t id, const json_t *list)
{
	fputs("<div class=\"grid\">", f);
	for (size_t i = 0; i < json_array_size(list); i++) {
		const json_t *in = json_array_get(list, i);

		fprintf(f, "<a class=\"c-%s\" href=\"", jstr(in, "state"));
		instance_href(f, id, in);
		fputs("\" title=\"", f);
		bar_title(f, in);
		fputs("\"></a>", f);
	}
	fputs("</div>", f);
}

struct bar {
	const json_t *in;
	int64_t a, b;
	size_t host;
	int lane;
};

static int by_start(const void *x, const void *y)
{
	const struct bar *p = x, *q = y;

	return p->a < q->a ? -1 : p->a > q->a;
}

static void bar_title(FILE *f, const json_t *in)
{
	char *t = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&t, &len);

	if (!m)
		abort();
	instance_title(m, in);
	fclose(m);
	html_esc(f, t);
	free(t);
}

/* A Gantt chart: a band per host with a lane per instance running at once,
 * a bar per instance from its start to its end (or now). */
static void timeline(FILE *f, int64_t id, const json_t *stages, int64_t now)
{
	enum { W = 900, LANE = 9, LABEL = 120, MAX_LANES = 64 };
	json_t *hosts = json_array();
	struct bar *bars = NULL;
	size_t nbars = 0, cap = 0, *lanes, *top;
	int64_t t0 = 0, t1 = 0, (*ends)[MAX_LANES];
	size_t y = 0;

	for (size_t s = 0; s < json_array_size(stages); s++) {
		const json_t *list = json_object_get(json_array_get(stages, s), "list");

		for (size_t i = 0; i < json_array_size(list); i++) {
			const json_t *in = json_array_get(list, i);
			struct bar b = { .in = in, .a = jint(in, "started_ms"), .b = jint(in, "ended_ms") };

			if (b.a <= 0)
				continue;
			if (b.b <= 0)
				b.b = now;
			while (b.host < json_array_size(hosts) &&
			       strcmp(json_string_value(json_array_get(hosts, b.host)), jstr(in, "host")) != 0)
				b.host++;
			if (b.host == json_array_size(hosts))
				json_array_append_new(hosts, json_string(jstr(in, "host")));
			if (!t0 || b.a < t0)
				t0 = b.a;
			if (b.b > t1)
				t1 = b.b;
			if (nbars == cap) {
				cap = cap ? 2 * cap : 64;
				bars = xrealloc(bars, cap * sizeof *bars);
			}
			bars[nbars++] = b;
		}
	}
	if (!nbars) {
		fputs("<p class=\"muted\">no instance has started yet</p>", f);
		json_decref(hosts);
		return;
	}
	if (t1 <= t0)
		t1 = t0 + 1;
	qsort(bars, nbars, sizeof *bars, by_start);
	lanes = xcalloc(json_array_size(hosts), sizeof *lanes);
	top = xcalloc(json_array_size(hosts), sizeof *top);
	ends = xcalloc(json_array_size(hosts), sizeof *ends);
	/* The first lane of its host free at its start (the last one when all are busy). */
	for (size_t i = 0; i < nbars; i++) {
		struct bar *b = &bars[i];
		int l = 0;

		while (l < MAX_LANES - 1 && (size_t)l < lanes[b->host] && ends[b->host][l] > b->a)
			l++;
		b->lane = l;
		ends[b->host][l] = b->b;
		if ((size_t)l + 1 > lanes[b->host])
			lanes[b->host] = (size_t)l + 1;
	}
	for (size_t h = 0; h < json_array_size(hosts); h++) {
		top[h] = y;
		y += lanes[h] * LANE + 8;
	}
	fprintf(f, "<figure><svg class=\"gantt\" width=\"%d\" height=\"%zu\" role=\"img\" aria-label=\"instances per host\">",
		LABEL + W + 10, y + 24);
	for (size_t h = 0; h < json_array_size(hosts); h++) {
		fprintf(f, "<text x=\"0\" y=\"%zu\">", top[h] + 12);
		html_esc(f, json_string_value(json_array_get(hosts, h)));
		fprintf(f, "</text><line x1=\"%d\" x2=\"%d\" y1=\"%zu\" y2=\"%zu\" stroke=\"#ddd\"/>",
			LABEL, LABEL + W, top[h] + lanes[h] * LANE + 4, top[h] + lanes[h] * LANE + 4);
	}
	for (size_t i = 0; i < nbars; i++) {
		const struct bar *b = &bars[i];

		fputs("<a href=\"", f);
		instance_href(f, id, b->in);
		fprintf(f, "\"><rect class=\"c-%s\" x=\"%.1f\" y=\"%zu\" width=\"%.1f\" height=\"%d\"><title>",
			jstr(b->in, "state"), LABEL + (double)(b->a - t0) / (double)(t1 - t0) * W,
			top[b->host] + (size_t)b->lane * LANE, (double)(b->b - b->a) / (double)(t1 - t0) * W + 1,
			LANE - 2);
		bar_title(f, b->in);
		fputs("</title></rect></a>", f);
	}
	fprintf(f, "<text x=\"%d\" y=\"%zu\">", LABEL, y + 16);
	html_time(f, t0);
	fprintf(f, "</text><text x=\"%d\" y=\"%zu\" text-anchor=\"end\">", LABEL + W, y + 16);
	html_time(f, t1);
	fputs("</text></svg></figure>", f);
	free(bars);
	free(lanes);
	free(top);
	free(ends);
	json_decref(hosts);
}

/* ---- out/ ---- */

struct listing {
	FILE *f;
	size_t n;
};

static int list_entry(void *arg, const char *name, const struct stat *st)
{
	struct listing *l = arg;

	if (l->n++ >= OUT_LISTED)
		return 1;
	fputs("<li><code>", l->f);
	html_esc(l->f, name);
	fputs(S_ISDIR(st->st_mode) ? "/</code></li>" : "</code></li>", l->f);
	return 0;
}

static void out_paths(struct page *p, int64_t id, const json_t *stages)
{
	FILE *f = p->f;

	fputs("<h2>out/</h2><p class=\"muted\">on the mount: <code>jobs/", f);
	fprintf(f, "%lld/out/&lt;stage&gt;/</code></p><ul>", (long long)id);
	for (size_t s = 0; s < json_array_size(stages); s++) {
		const char *name = jstr(json_array_get(stages, s), "name");
		char *path = xasprintf("jobs/%lld/out/%s", (long long)id, name);
		struct listing l = { .f = f };
		struct stat st;

		fprintf(f, "<li><code>jobs/%lld/out/", (long long)id);
		html_esc(f, name);
		fputs("/</code><ul>", f);
		/* The page lists for anybody: only what anybody may list on the mount. */
		if (backend_getattr(p->deps->storage, path, &st) < 0 || !S_ISDIR(st.st_mode))
			fputs("<li class=\"muted\">(not there)</li>", f);
		else if ((st.st_mode & (S_IROTH | S_IXOTH)) != (S_IROTH | S_IXOTH))
			fputs("<li class=\"muted\">(its owner lets only some read it: see the mount)</li>", f);
		else if (backend_readdir(p->deps->storage, path, list_entry, &l) < 0)
			fputs("<li class=\"muted\">(cannot be read)</li>", f);
		else if (l.n == 0)
			fputs("<li class=\"muted\">(empty)</li>", f);
		else if (l.n > OUT_LISTED)
			fprintf(f, "<li class=\"muted\">... the first %d shown</li>", OUT_LISTED);
		fputs("</ul></li>", f);
		free(path);
	}
	fputs("</ul>", f);
}

/* ---- /jobs/<id> ---- */

static void pre(FILE *f, const char *id, const char *text)
{
	fprintf(f, "<pre id=\"%s\">", id);
	html_esc(f, text);
	fputs("</pre>", f);
}

static void stage_table(FILE *f, const json_t *stages, int64_t now)
{
	static const char *const heads[] = { "stage", "state", "instances", "queued", "running",
		"succeeded", "failed", "cancelled", "progress", "estimated end", "failures", NULL };

	html_table(f, "stages", heads);
	for (size_t s = 0; s < json_array_size(stages); s++) {
		const json_t *st = json_array_get(stages, s), *c = json_object_get(st, "counts");
		const json_t *pr = json_object_get(st, "progress");

		fputs("<tr id=\"stage-", f);
		html_esc(f, jstr(st, "name"));
		fputs("\">", f);
		html_td(f, jstr(st, "name"));
		html_td_state(f, jstr(st, "state"));
		fputs("<td>", f);
		html_counts_bar(f, c, jstr(st, "name"));
		fprintf(f, "%lld</td>", (long long)jint(st, "instances"));
		html_td_num(f, (long long)(jint(c, "queued") + jint(c, "waiting")));
		html_td_num(f, (long long)jint(c, "running"));
		html_td_num(f, (long long)jint(c, "succeeded"));
		html_td_num(f, (long long)jint(c, "failed"));
		html_td_num(f, (long long)jint(c, "cancelled"));
		fputs("<td>", f);
		if (json_is_object(pr))
			fprintf(f, "%.0f of %.0f (%.0f%%)", jnum(pr, "done"), jnum(pr, "total"), jnum(pr, "percent"));
		fputs("</td>", f);
		html_td_time(f, json_is_object(pr) && jint(pr, "eta_ms") > now ? jint(pr, "eta_ms") : 0);
		html_td(f, jstr(st, "failures"));
		fputs("</tr>", f);
	}
	fputs("</table>", f);
}

void web_page_job(struct page *p)
{
	struct job_views d;
	const json_t *stages;
	int64_t id;
	FILE *f = p->f;

	if (parse_id(p->args[0], &id) < 0) {
		web_error(p, MHD_HTTP_NOT_FOUND, "no such job");
		return;
	}
	if (job_get(p, id, JOB_VIEW_JSON | JOB_VIEW_INSTANCES | JOB_VIEW_WHY | JOB_VIEW_EVENTS |
			   JOB_VIEW_SPEC, &d) < 0)
		return;
	stages = json_object_get(d.json, "stages");
	snprintf(p->title_buf, sizeof p->title_buf, "job %lld %s", (long long)id, jstr(d.json, "name"));
	p->title = p->title_buf;
	p->refresh = running_state(jstr(d.json, "state"));
	fprintf(f, "<h1>Job %lld: ", (long long)id);
	html_esc(f, jstr(d.json, "name"));
	fputs(" ", f);
	html_state(f, jstr(d.json, "state"));
	fputs("</h1><table class=\"info\"><tr>", f);
	html_th_td(f, "owner", jstr(d.json, "user"));
	html_th_td(f, "team", jstr(d.json, "team"));
	html_th_td(f, "spec file", jstr(d.json, "spec_file"));
	fputs("</tr><tr>", f);
	html_th_time(f, "submitted", jint(d.json, "submitted_ms"));
	html_th_time(f, "started", jint(d.json, "started_ms"));
	html_th_time(f, "ended", jint(d.json, "ended_ms"));
	fputs("</tr>", f);
	if (*jstr(d.json, "reason")) {
		fputs("<tr><th>reason</th><td colspan=\"5\" class=\"reason\">", f);
		html_esc(f, jstr(d.json, "reason"));
		fputs("</td></tr>", f);
	}
	fprintf(f, "</table><p>as files: <a href=\"/jobs/%1$lld/status\">status</a> "
		   "<a href=\"/jobs/%1$lld/status.json\">status.json</a> <a href=\"/jobs/%1$lld/why\">why</a> "
		   "<a href=\"/jobs/%1$lld/events\">events</a> <a href=\"/jobs/%1$lld/spec\">spec</a></p>",
		(long long)id);
	fputs("<h2>Stages</h2>", f);
	stage_graph(f, stages, id);
	stage_table(f, stages, d.now);
	fputs("<h2>Instances</h2>", f);
	for (size_t s = 0; s < json_array_size(stages); s++) {
		const json_t *st = json_array_get(stages, s);

		fputs("<h3>", f);
		html_esc(f, jstr(st, "name"));
		fputs("</h3>", f);
		instance_grid(f, id, json_object_get(st, "list"));
	}
	fputs("<h2>Timeline per host</h2>", f);
	timeline(f, id, stages, d.now);
	fputs("<h2>Why</h2>", f);
	pre(f, "why", d.why);
	fputs("<h2>Events</h2>", f);
	pre(f, "events", d.events);
	fputs("<h2>Spec</h2>", f);
	pre(f, "spec", d.spec);
	out_paths(p, id, stages);
	job_views_free(&d);
}

/* /jobs/<id>/{status,status.json,why,events,spec}: the mount's files. */
void web_page_job_text(struct page *p)
{
	const char *file = strrchr(p->url, '/') + 1;
	unsigned what = strcmp(file, "status") == 0 ? JOB_VIEW_STATUS
		      : strcmp(file, "events") == 0 ? JOB_VIEW_EVENTS
		      : strcmp(file, "why") == 0    ? JOB_VIEW_WHY
		      : strcmp(file, "spec") == 0   ? JOB_VIEW_SPEC
						    : JOB_VIEW_JSON;
	struct job_views d;
	char **text = what == JOB_VIEW_STATUS ? &d.status : what == JOB_VIEW_EVENTS ? &d.events
		    : what == JOB_VIEW_WHY ? &d.why : &d.spec;
	int64_t id;

	if (parse_id(p->args[0], &id) < 0) {
		web_error(p, MHD_HTTP_NOT_FOUND, "no such job");
		return;
	}
	if (job_get(p, id, what, &d) < 0)
		return;
	if (what == JOB_VIEW_JSON) {
		char *json_text = json_dumps(d.json, JSON_INDENT(2));

		web_reply_raw(p, "application/json", json_text, strlen(json_text));
	} else {
		web_reply_raw(p, "text/plain; charset=utf-8", *text,
			      what == JOB_VIEW_SPEC ? d.spec_len : strlen(*text));
		*text = NULL;
	}
	job_views_free(&d);
}

/* /jobs/<id>/stages/<s>/status: the mount's file. */
void web_page_stage_text(struct page *p)
{
	char *text, *err = NULL;
	int64_t id;

	if (parse_id(p->args[0], &id) < 0) {
		web_error(p, MHD_HTTP_NOT_FOUND, "no such job");
		return;
	}
	text = engine_stage_status(p->deps->engine, id, p->args[1], &err);
	free(err);
	if (text)
		web_reply_raw(p, "text/plain; charset=utf-8", text, strlen(text));
	else
		web_error(p, MHD_HTTP_NOT_FOUND, "no such stage");
}

/* ---- an instance and its log ---- */

/* Up to LOG_TAIL bytes of path from off (-1: its last LOG_TAIL); *size is the
 * file's size. NULL when there is no log. */
static char *log_read(struct backend *b, const char *path, int64_t off, int64_t *start,
		      int64_t *size, size_t *len)
{
	struct backend_cred nobody = { 0, 0 };
	struct backend_file *bf;
	struct stat st;
	char *buf;
	ssize_t n;

	if (backend_getattr(b, path, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	*size = st.st_size;
	if (off < 0)
		off = st.st_size > LOG_TAIL ? st.st_size - LOG_TAIL : 0;
	if (off > st.st_size)
		off = st.st_size;
	*start = off;
	if (backend_open(b, &nobody, path, O_RDONLY, 0, &bf) < 0)
		return NULL;
	buf = xmalloc(LOG_TAIL + 1);
	n = backend_pread(b, bf, buf, LOG_TAIL, off);
	backend_close(b, bf);
	if (n < 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

void web_page_instance(struct page *p)
{
	json_t *in = NULL;
	char *status = NULL, *path, *log, *end, *err = NULL;
	int64_t id, start = 0, size = 0;
	long idx;
	size_t len = 0;
	bool live;
	FILE *f = p->f;

	errno = 0;
	idx = strtol(p->args[2], &end, 10);
	if (parse_id(p->args[0], &id) < 0 || errno || *end || idx < 0) {
		web_error(p, MHD_HTTP_NOT_FOUND, "no such instance");
		return;
	}
	if (engine_instance_views(p->deps->engine, id, p->args[1], idx, &status, &in, &err) < 0) {
		free(err);
		web_error(p, MHD_HTTP_NOT_FOUND, "no such instance");
		return;
	}
	/* instances/<i>/status and status.json: the mount's files. */
	end = strrchr(p->url, '/') + 1;
	if (strcmp(end, "status") == 0) {
		web_reply_raw(p, "text/plain; charset=utf-8", status, strlen(status));
		json_decref(in);
		return;
	}
	if (strcmp(end, "status.json") == 0) {
		char *text = json_dumps(in, JSON_INDENT(2));

		web_reply_raw(p, "application/json", text, strlen(text));
		free(status);
		json_decref(in);
		return;
	}
	live = running_state(jstr(in, "state"));
	path = xasprintf("jobs/%lld/log/%s/%ld.log", (long long)id, p->args[1], idx);
	if (web_arg(p, "raw")) {
		const char *o = web_arg(p, "offset");

		log = log_read(p->deps->storage, path, o ? strtoll(o, NULL, 10) : 0, &start, &size, &len);
		p->hdr_name[0] = "X-Parsa-Next";
		snprintf(p->hdr_value[0], sizeof p->hdr_value[0], "%lld", (long long)(start + (int64_t)len));
		p->hdr_name[1] = "X-Parsa-Live";
		snprintf(p->hdr_value[1], sizeof p->hdr_value[1], "%d", live);
		p->nhdr = 2;
		web_reply_raw(p, "text/plain; charset=utf-8", log ? log : xstrdup(""), log ? len : 0);
		goto out;
	}
	log = log_read(p->deps->storage, path, -1, &start, &size, &len);
	snprintf(p->title_buf, sizeof p->title_buf, "job %lld %s[%ld]", (long long)id, p->args[1], idx);
	p->title = p->title_buf;
	p->refresh = live;
	p->extra_head = web_log_js;
	fprintf(f, "<h1><a href=\"/jobs/%lld\">Job %lld</a>: ", (long long)id, (long long)id);
	html_esc(f, p->args[1]);
	fprintf(f, "[%ld] ", idx);
	html_state(f, jstr(in, "state"));
	fputs("</h1><table class=\"info\"><tr><th>host</th><td>", f);
	if (*jstr(in, "host")) {
		fputs("<a href=\"/hosts/", f);
		url_esc(f, jstr(in, "host"));
		fputs("\">", f);
		html_esc(f, jstr(in, "host"));
		fputs("</a>", f);
	}
	fprintf(f, "</td><th>attempt</th><td>%lld</td><th>exit</th><td>", (long long)jint(in, "attempt"));
	if (json_is_integer(json_object_get(in, "exit_code")))
		fprintf(f, "%lld", (long long)jint(in, "exit_code"));
	fputs("</td></tr><tr>", f);
	html_th_time(f, "started", jint(in, "started_ms"));
	html_th_time(f, "ended", jint(in, "ended_ms"));
	fputs("<th>reason</th><td class=\"reason\">", f);
	html_esc(f, jstr(in, "reason"));
	fputs("</td></tr></table><h2>status</h2>", f);
	pre(f, "status", status);
	fprintf(f, "<h2>log</h2><p class=\"muted\"><code>jobs/%lld/stages/", (long long)id);
	html_esc(f, p->args[1]);
	fprintf(f, "/instances/%ld/log</code>", idx);
	if (start > 0)
		fprintf(f, ", its last %lld bytes", (long long)(size - start));
	fputs("</p>", f);
	fprintf(f, "<pre id=\"log\" data-offset=\"%lld\" data-live=\"%d\" data-raw=\"/jobs/%lld/stages/",
		(long long)(start + (int64_t)len), live, (long long)id);
	url_esc(f, p->args[1]);
	fprintf(f, "/instances/%ld/log?raw=1\">", idx);
	html_esc(f, log ? log : "");
	fputs("</pre>", f);
	if (!log)
		fputs("<p class=\"muted\">no log yet</p>", f);
	free(log);
out:
	free(path);
	free(status);
	json_decref(in);
}
