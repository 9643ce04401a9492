/* The lab's pages: / (hosts, volume, fair share, queue, latest jobs), /jobs
 * (the records, filtered and paged), /hosts/<h> (a host and its last hour),
 * /usage (cpu-hours and jobs per team or user) and /schedules. Lists and sums
 * come from the job records (sqlite); what is live (hosts, progress) from the
 * engine's views under its lock. */
#include "web_internal.h"

#include "schedules.h"
#include "space.h"
#include "units.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAGE_JOBS 50
#define LATEST_JOBS 10

static const char *const job_states[] = { "queued", "running", "succeeded", "failed", "cancelled" };

/* What the engine knows of each running job of the list: its estimated end
 * (the latest of its stages' estimates) as "eta_ms", how far it is as
 * "percent" (each stage weighs its instances; a stage whose instances report
 * progress counts that, the others their ended instances) and how long it
 * has run as "run_ms". */
static void add_estimates(struct page *p, json_t *jobs)
{
	size_t n = json_array_size(jobs), nrunning = 0;
	int64_t *ids = xcalloc(n + 1, sizeof *ids), now;
	json_t *views;

	for (size_t i = 0; i < n; i++) {
		const json_t *j = json_array_get(jobs, i);

		if (strcmp(jstr(j, "state"), "running") == 0)
			ids[nrunning++] = jint(j, "id");
	}
	views = engine_resident_jobs_json(p->deps->engine, ids, nrunning, &now);
	free(ids);
	for (size_t i = 0, k = 0; i < n; i++) {
		json_t *j = json_array_get(jobs, i), *v, *stages;
		double done = 0, total = 0;
		int64_t eta = 0;

		if (strcmp(jstr(j, "state"), "running") != 0 || !json_is_object(v = json_array_get(views, k++)))
			continue;
		stages = json_object_get(v, "stages");
		for (size_t s = 0; s < json_array_size(stages); s++) {
			const json_t *st = json_array_get(stages, s), *pr = json_object_get(st, "progress");
			const json_t *c = json_object_get(st, "counts");
			double ninst = (double)jint(st, "instances");
			double ended = (double)(jint(c, "succeeded") + jint(c, "failed") + jint(c, "cancelled"));

			if (jint(pr, "eta_ms") > eta)
				eta = jint(pr, "eta_ms");
			done += json_is_object(pr) ? ninst * jnum(pr, "percent") / 100.0 : ended;
			total += ninst;
		}
		json_object_set_new(j, "eta_ms", json_integer(eta));
		if (total > 0)
			json_object_set_new(j, "percent", json_real(100.0 * done / total));
		if (jint(j, "started_ms") > 0)
			json_object_set_new(j, "run_ms", json_integer(now - jint(j, "started_ms")));
	}
	json_decref(views);
}

/* The table of jobs, from records_jobs() with stages. */
static void jobs_table(FILE *f, const json_t *jobs)
{
	static const char *const heads[] = { "id", "name", "owner", "team", "state", "stages",
		"progress", "estimated end", "submitted", "started", "ended", "duration", NULL };

	html_table(f, "jobs", heads);
	for (size_t i = 0; i < json_array_size(jobs); i++) {
		const json_t *j = json_array_get(jobs, i), *stages = json_object_get(j, "stages");
		json_int_t id = jint(j, "id"), ok = 0, failed = 0, cancelled = 0, total = 0;

		fprintf(f, "<tr><td><a href=\"/jobs/%lld\">%lld</a></td>", (long long)id, (long long)id);
		html_td(f, jstr(j, "name"));
		html_td(f, jstr(j, "user"));
		html_td(f, jstr(j, "team"));
		html_td_state(f, jstr(j, "state"));
		fputs("<td>", f);
		for (size_t s = 0; s < json_array_size(stages); s++) {
			const json_t *st = json_array_get(stages, s), *c = json_object_get(st, "counts");
			char label[160];

			snprintf(label, sizeof label, "%s: %s", jstr(st, "name"), jstr(st, "state"));
			fputs("<span class=\"stagebar\">", f);
			html_esc(f, jstr(st, "name"));
			html_counts_bar(f, c, label);
			fputs("</span>", f);
			ok += jint(c, "succeeded");
			failed += jint(c, "failed");
			cancelled += jint(c, "cancelled");
			total += jint(c, "succeeded") + jint(c, "failed") + jint(c, "cancelled") +
				 jint(c, "running") + jint(c, "queued");
		}
		fputs("</td><td class=\"n\">", f);
		/* Instances as counts, and a running job's progress file apart: a
		 * failed job never reads as 100%, nor 1/14 as 29%. */
		if (total) {
			fprintf(f, "%lld/%lld ok", (long long)ok, (long long)total);
			if (failed)
				fprintf(f, ", %lld failed", (long long)failed);
			if (cancelled)
				fprintf(f, ", %lld cancelled", (long long)cancelled);
			if (strcmp(jstr(j, "state"), "running") == 0 &&
			    json_is_number(json_object_get(j, "percent")))
				fprintf(f, "; progress %.0f%%", jnum(j, "percent"));
		}
		fputs("</td>", f);
		html_td_time(f, jint(j, "eta_ms"));
		html_td_time(f, jint(j, "submitted_ms"));
		html_td_time(f, jint(j, "started_ms"));
		html_td_time(f, jint(j, "ended_ms"));
		fputs("<td class=\"n\">", f);
		html_duration(f, jint(j, "run_ms"));
		fputs("</td></tr>", f);
	}
	fputs("</table>", f);
}

static bool any_running(const json_t *jobs)
{
	for (size_t i = 0; i < json_array_size(jobs); i++) {
		const char *s = jstr(json_array_get(jobs, i), "state");

		if (strcmp(s, "running") == 0 || strcmp(s, "queued") == 0)
			return true;
	}
	return false;
}

/* ---- / ---- */

static void hosts_table(FILE *f, const json_t *hosts)
{
	static const char *const heads[] = { "host", "state", "window", "features", "cores reserved",
		"memory reserved", "CPU (parsa + outside)", "memory (parsa + outside)", "running",
		"last heartbeat", NULL };

	html_table(f, "hosts", heads);
	for (size_t i = 0; i < json_array_size(hosts); i++) {
		const json_t *h = json_array_get(hosts, i), *feats = json_object_get(h, "features");
		const json_t *res = json_object_get(h, "reserved"), *live = json_object_get(h, "live");

		fputs("<tr><td><a href=\"/hosts/", f);
		url_esc(f, jstr(h, "name"));
		fputs("\">", f);
		html_esc(f, jstr(h, "name"));
		fputs("</a></td>", f);
		{
			const json_t *storage = json_object_get(h, "storage");

			/* No new work goes to a host whose volume is away: the row says why. */
			fputs("<td>", f);
			html_state(f, jstr(h, "state"));
			if (json_is_string(json_object_get(storage, "reason"))) {
				fputs(" storage unreachable: ", f);
				html_esc(f, jstr(storage, "reason"));
			}
			fputs("</td>", f);
		}
		html_td(f, json_is_string(json_object_get(h, "window")) ? jstr(h, "window") : "always");
		fputs("<td>", f);
		for (size_t k = 0; k < json_array_size(feats); k++) {
			if (k)
				fputs(", ", f);
			html_esc(f, json_string_value(json_array_get(feats, k)));
		}
		fprintf(f, "</td><td class=\"n\">%lld of %lld</td><td class=\"n\">",
			(long long)jint(res, "cpus"), (long long)jint(h, "cpus"));
		html_bytes(f, (uint64_t)jint(res, "mem"));
		fputs(" of ", f);
		html_bytes(f, (uint64_t)jint(h, "mem"));
		fputs("</td><td>", f);
		html_gauge(f, jnum(live, "parsa_cpu_pct"), jnum(live, "outside_cpu_pct"));
		fputs("</td><td>", f);
		html_gauge(f, jnum(live, "parsa_mem_pct"), jnum(live, "outside_mem_pct"));
		fputs("</td>", f);
		html_td_num(f, (long long)jint(h, "running"));
		html_td_time(f, jint(h, "last_heartbeat_ms"));
		fputs("</tr>", f);
	}
	fputs("</table>", f);
}

static void cards(FILE *f, const json_t *counts, const char *what)
{
	fputs("<div class=\"cards\">", f);
	for (size_t i = 0; i < ARRAY_LEN(job_states); i++)
		fprintf(f, "<div class=\"card\"><b>%lld</b>%s %s</div>",
			(long long)jint(counts, job_states[i]), what, job_states[i]);
	fputs("</div>", f);
}

void web_page_home(struct page *p)
{
	struct engine *e = p->deps->engine;
	struct records_filter filter = { .limit = LATEST_JOBS, .stages = true };
	json_t *hosts = engine_hosts_json(e), *totals, *latest;
	uint64_t avail = 0, reserved = 0;
	char *fair = engine_fairshare_text(e), *err = NULL;
	int space_known;
	FILE *f = p->f;

	space_known = space_free(engine_space(e), &avail, &reserved) == 0;
	totals = records_totals(p->deps->records, false, &err);
	latest = totals ? records_jobs(p->deps->records, &filter, &err) : NULL;
	if (!latest) {
		web_error(p, MHD_HTTP_SERVICE_UNAVAILABLE, err ? err : "cannot read the history");
		goto out;
	}
	add_estimates(p, json_object_get(latest, "jobs"));
	p->title = "the lab";
	p->refresh = jint(json_object_get(totals, "jobs"), "running") +
		     jint(json_object_get(totals, "jobs"), "queued") > 0;
	fputs("<h1>The lab at a glance</h1><h2>Hosts</h2>", f);
	hosts_table(f, hosts);
	fputs("<h2>Volume</h2><p>", f);
	if (space_known) {
		html_bytes(f, avail);
		fputs(" free, ", f);
		html_bytes(f, reserved);
		fputs(" reserved by running stages' <code>disk</code></p>", f);
	} else {
		fputs("not measured yet</p>", f);
	}
	fputs("<h2>Queue</h2>", f);
	cards(f, json_object_get(totals, "jobs"), "jobs");
	fputs("<h2>Fair share</h2><pre>", f);
	html_esc(f, fair);
	fputs("</pre><h2>Latest jobs</h2>", f);
	jobs_table(f, json_object_get(latest, "jobs"));
	fputs("<p><a href=\"/jobs\">every job</a></p>", f);
out:
	free(err);
	free(fair);
	json_decref(hosts);
	json_decref(totals);
	json_decref(latest);
}

/* ---- /jobs ---- */

static size_t arg_size(struct page *p, const char *key, size_t dflt, size_t max)
{
	const char *v = web_arg(p, key);
	char *end;
	unsigned long long n;

	if (!v)
		return dflt;
	n = strtoull(v, &end, 10);
	if (*end || n > max)
		return dflt;
	return (size_t)n;
}

static void text_input(FILE *f, const char *name, const char *value)
{
	fprintf(f, "<label>%s <input name=\"%s\" size=\"10\" value=\"", name, name);
	html_esc(f, value);
	fputs("\"></label>", f);
}

void web_page_jobs(struct page *p)
{
	struct records_filter filter = {
		.user = web_arg(p, "user"), .team = web_arg(p, "team"), .state = web_arg(p, "state"),
		.name = web_arg(p, "name"), .stages = true,
		.limit = arg_size(p, "limit", PAGE_JOBS, 1000),
		.offset = arg_size(p, "offset", 0, (size_t)1 << 40),
	};
	json_t *list;
	char *err = NULL;
	FILE *f = p->f;

	if (filter.limit == 0)
		filter.limit = PAGE_JOBS;
	list = records_jobs(p->deps->records, &filter, &err);
	if (!list) {
		web_error(p, MHD_HTTP_SERVICE_UNAVAILABLE, err ? err : "cannot read the history");
		free(err);
		return;
	}
	add_estimates(p, json_object_get(list, "jobs"));
	p->title = "jobs";
	p->refresh = any_running(json_object_get(list, "jobs"));
	fputs("<h1>Jobs</h1><form class=\"filters\" method=\"get\" action=\"/jobs\">", f);
	text_input(f, "user", filter.user);
	text_input(f, "team", filter.team);
	fputs("<label>state <select name=\"state\"><option value=\"\">any</option>", f);
	for (size_t i = 0; i < ARRAY_LEN(job_states); i++)
		fprintf(f, "<option%s>%s</option>",
			filter.state && strcmp(filter.state, job_states[i]) == 0 ? " selected" : "",
			job_states[i]);
	fputs("</select></label>", f);
	text_input(f, "name", filter.name);
	fputs("<button>filter</button></form>", f);
	jobs_table(f, json_object_get(list, "jobs"));
	html_pager(p, "/jobs", filter.offset, filter.limit, jint(list, "total"));
	json_decref(list);
}

/* ---- /hosts/<h> ---- */

/* A chart of one hour: the whole machine's share as a filled area and the
 * outside's as a line on top (outside is never above whole, so neither hides
 * the other), with a percent axis, clock times along the bottom and the
 * latest values in the legend. */
static void usage_chart(FILE *f, const json_t *samples, int whole, int outside, const char *what,
			int64_t now_ms)
{
	const int W = 720, H = 120, L = 40, B = 48, T = 10, R = 20;
	size_t n = json_array_size(samples);
	int64_t end;
	int cols[2] = { whole, outside };
	double last[2] = { 0, 0 };

	end = n ? (int64_t)json_integer_value(json_array_get(json_array_get(samples, n - 1), 0)) : now_ms;
	fprintf(f, "<figure><svg class=\"usage\" width=\"%d\" height=\"%d\" role=\"img\" "
		   "aria-label=\"%s, last hour\"><g transform=\"translate(0,%d)\"><rect x=\"%d\" width=\"%d\" "
		   "height=\"%d\" fill=\"#fff\" stroke=\"#ccc\"/>", L + W + R, T + H + B, what, T, L, W, H);
	for (int pct = 0; pct <= 100; pct += 50)
		fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
			   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%d%%</text>", L, L + W,
			H - pct / 100.0 * H, H - pct / 100.0 * H, L - 4, H - pct / 100.0 * H + 4, pct);
	for (int c = 0; c < 2; c++) {
		double x0 = W, x = W;

		if (c == 0)
			fputs("<polygon class=\"whole\" fill=\"#cfe2f7\" stroke=\"#2f7fd8\" stroke-width=\"1\" "
			      "points=\"", f);
		else
			fputs("<polyline class=\"outside\" fill=\"none\" stroke=\"#e08a2c\" stroke-width=\"2\" "
			      "points=\"", f);
		for (size_t i = 0; i < n; i++) {
			const json_t *s = json_array_get(samples, i);
			int64_t ms = (int64_t)json_integer_value(json_array_get(s, 0));
			double v = json_number_value(json_array_get(s, (size_t)cols[c]));

			x = (double)W - (double)(end - ms) / 3600000.0 * W;
			x = x < 0 ? 0 : x;
			if (i == 0) {
				x0 = x;
				/* The area closes along the bottom, from the first sample. */
				if (c == 0)
					fprintf(f, "%.1f,%d ", L + x0, H);
			}
			v = v < 0 ? 0 : v > 100 ? 100 : v;
			last[c] = v;
			fprintf(f, "%.1f,%.1f ", L + x, H - v / 100.0 * H);
		}
		if (c == 0 && n)
			fprintf(f, "%.1f,%d", L + x, H);
		fputs("\"/>", f);
	}
	/* Clock times every quarter of an hour back from the last sample. */
	for (int q = 0; q <= 4; q++) {
		time_t t = (time_t)((end - (int64_t)q * 900000) / 1000);
		struct tm tm;
		char hm[16] = "";

		if (localtime_r(&t, &tm))
			strftime(hm, sizeof hm, "%H:%M", &tm);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>",
			L + W - q * (W / 4.0), H + 14, q == 0 ? "now" : hm);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\">%s, the last hour (%zu sample%s)</text>"
		   "<text x=\"%d\" y=\"%d\">whole machine (blue area) %.0f%% now; outside parsa (orange "
		   "line) %.0f%% now; parsa: the difference</text></g></svg></figure>", L, H + 30, what, n,
		n == 1 ? "" : "s", L, H + 44, last[0], last[1]);
}

void web_page_host(struct page *p)
{
	static const char *const running_heads[] = { "job", "name", "stage", "instance", "state",
		"started", NULL };
	struct engine *e = p->deps->engine;
	json_t *json = NULL, *samples, *running = NULL;
	char *status = NULL;
	FILE *f = p->f;

	if (engine_host_views(e, p->args[0], &json, &status, &running) < 0) {
		web_error(p, MHD_HTTP_NOT_FOUND, "no such host");
		goto out;
	}
	samples = web_samples_json(p->samples, p->args[0]);
	snprintf(p->title_buf, sizeof p->title_buf, "host %s", p->args[0]);
	p->title = p->title_buf;
	p->refresh = true;
	fputs("<h1>Host ", f);
	html_esc(f, jstr(json, "name"));
	fputs(" ", f);
	html_state(f, jstr(json, "state"));
	fputs("</h1>", f);
	/* A Slurm host: its partition and jobs there, above the charts (which
	 * are the partition's CPUs then, as its runner reports them). */
	html_executor(f, json_object_get(json, "executor"), engine_now_ms(e));
	usage_chart(f, samples, 1, 2, "CPU %", engine_now_ms(e));
	usage_chart(f, samples, 3, 4, "memory %", engine_now_ms(e));
	json_decref(samples);
	fputs("<h2>Running here</h2>", f);
	html_table(f, "running", running_heads);
	for (size_t i = 0; i < json_array_size(running); i++) {
		const json_t *r = json_array_get(running, i);

		fprintf(f, "<tr><td><a href=\"/jobs/%lld\">%lld</a></td>", (long long)jint(r, "job"),
			(long long)jint(r, "job"));
		html_td(f, jstr(r, "name"));
		html_td(f, jstr(r, "stage"));
		fprintf(f, "<td><a href=\"/jobs/%lld/stages/", (long long)jint(r, "job"));
		url_esc(f, jstr(r, "stage"));
		fprintf(f, "/instances/%lld\">%lld</a></td>", (long long)jint(r, "index"),
			(long long)jint(r, "index"));
		html_td_state(f, jstr(r, "state"));
		html_td_time(f, jint(r, "started_ms"));
		fputs("</tr>", f);
	}
	fputs("</table><h2>status</h2><pre>", f);
	html_esc(f, status);
	fputs("</pre>", f);
out:
	free(status);
	json_decref(json);
	json_decref(running);
}

/* /hosts/<h>/status: the mount's file. */
void web_page_host_text(struct page *p)
{
	char *text = engine_host_status(p->deps->engine, p->args[0]);

	if (text)
		web_reply_raw(p, "text/plain; charset=utf-8", text, strlen(text));
	else
		web_error(p, MHD_HTTP_NOT_FOUND, "no such host");
}

/* ---- /usage ---- */

/* "30d" and the like into a time before now; 0 for "all". */
static int64_t since_arg(struct page *p, int64_t now, const char **text)
{
	const char *v = web_arg(p, "since");
	uint64_t secs;

	*text = v ? v : "30d";
	if (strcmp(*text, "all") == 0)
		return 0;
	if (parse_duration(*text, &secs) < 0) {
		*text = "30d";
		secs = 30 * 86400;
	}
	return now - (int64_t)secs * 1000;
}

/* Bars of cpu-hours per period, each split by name. */
static void period_chart(FILE *f, const json_t *list, const json_t *rows)
{
	static const char *const colours[] = { "#2f7fd8", "#2e9d55", "#e08a2c", "#a05ec4", "#d0433a",
		"#3aa9b5", "#c98a14", "#6c6f73" };
	const int H = 160, BW = 28;
	double max = 0, sum = 0;
	const char *prev = NULL;
	size_t nperiods = 0;
	int x = 40;

	for (size_t i = 0; i < json_array_size(list); i++) {
		const json_t *r = json_array_get(list, i);

		if (!prev || strcmp(prev, jstr(r, "period")) != 0) {
			sum = 0;
			nperiods++;
		}
		prev = jstr(r, "period");
		sum += jnum(r, "cpu_hours");
		if (sum > max)
			max = sum;
	}
	if (nperiods == 0 || max <= 0) {
		fputs("<p class=\"muted\">no cpu time measured in this range</p>", f);
		return;
	}
	fprintf(f, "<figure><svg width=\"%zu\" height=\"%d\" role=\"img\" aria-label=\"cpu-hours\">",
		40 + nperiods * (BW + 6) + 160, H + 40);
	fprintf(f, "<text x=\"0\" y=\"12\">%.2f h</text><line x1=\"36\" y1=\"%d\" x2=\"%zu\" y2=\"%d\" stroke=\"#999\"/>",
		max, H, 40 + nperiods * (BW + 6), H);
	prev = NULL;
	sum = 0;
	for (size_t i = 0; i < json_array_size(list); i++) {
		const json_t *r = json_array_get(list, i);
		double h = jnum(r, "cpu_hours");
		size_t c = 0;

		if (prev && strcmp(prev, jstr(r, "period")) != 0) {
			x += BW + 6;
			sum = 0;
		}
		if (!prev || strcmp(prev, jstr(r, "period")) != 0) {
			fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"9\">", x, H + 12);
			html_esc(f, jstr(r, "period") + (strlen(jstr(r, "period")) > 5 ? 5 : 0));
			fputs("</text>", f);
		}
		prev = jstr(r, "period");
		for (size_t k = 0; k < json_array_size(rows); k++)
			if (strcmp(jstr(json_array_get(rows, k), "name"), jstr(r, "name")) == 0)
				c = k;
		fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\"><title>",
			x, H - (sum + h) / max * H, BW, h / max * H, colours[c % ARRAY_LEN(colours)]);
		html_esc(f, jstr(r, "name"));
		fprintf(f, " %.3f cpu-hours</title></rect>", h);
		sum += h;
	}
	for (size_t k = 0; k < json_array_size(rows); k++) {
		fprintf(f, "<rect x=\"%d\" y=\"%zu\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"%zu\">",
			x + BW + 20, 10 + k * 16, colours[k % ARRAY_LEN(colours)], x + BW + 34, 19 + k * 16);
		html_esc(f, jstr(json_array_get(rows, k), "name"));
		fputs("</text>", f);
	}
	fputs("</svg></figure>", f);
}

/* The per-period table as CSV: period,team|user,cpu_hours. */
static char *periods_csv(const json_t *usage, const char *by, const char *period)
{
	const json_t *list = json_object_get(json_object_get(usage, "periods"), period);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		abort();
	fprintf(f, "%s,%s,cpu_hours\n", period, by);
	for (size_t i = 0; i < json_array_size(list); i++) {
		const json_t *r = json_array_get(list, i);

		fprintf(f, "%s,%s,%.3f\n", jstr(r, "period"), jstr(r, "name"), jnum(r, "cpu_hours"));
	}
	fclose(f);
	return text;
}

void web_page_usage(struct page *p)
{
	static const char *const periods[] = { "day", "week", "month" };
	const char *by = web_arg(p, "by"), *format = web_arg(p, "format"), *since_text;
	int64_t since = since_arg(p, engine_now_ms(p->deps->engine), &since_text);
	const char *period = web_arg(p, "period");
	json_t *usage, *rows;
	char *err = NULL, *text;
	FILE *f = p->f;

	by = by && strcmp(by, "user") == 0 ? "user" : "team";
	if (!period || (strcmp(period, "week") != 0 && strcmp(period, "month") != 0))
		period = "day";
	usage = records_usage(p->deps->records, by, since, 0, period, &err);
	if (!usage) {
		web_error(p, MHD_HTTP_SERVICE_UNAVAILABLE, err ? err : "cannot read the history");
		free(err);
		return;
	}
	if (format && (strcmp(format, "csv") == 0 || strcmp(format, "periods-csv") == 0)) {
		text = format[0] == 'c' ? records_usage_csv(usage) : periods_csv(usage, by, period);
		web_reply_raw(p, "text/csv; charset=utf-8", text, strlen(text));
		json_decref(usage);
		return;
	}
	rows = json_object_get(usage, "rows");
	p->title = "usage";
	fprintf(f, "<h1>Usage by %s since ", by);
	html_esc(f, since_text);
	fputs("</h1><form class=\"filters\" method=\"get\" action=\"/usage\"><label>by <select name=\"by\">", f);
	fprintf(f, "<option%s>team</option><option%s>user</option></select></label>",
		strcmp(by, "team") == 0 ? " selected" : "", strcmp(by, "user") == 0 ? " selected" : "");
	fputs("<label>since <select name=\"since\">", f);
	for (size_t i = 0; i < 5; i++) {
		static const char *const spans[] = { "1d", "7d", "30d", "365d", "all" };

		fprintf(f, "<option%s>%s</option>", strcmp(since_text, spans[i]) == 0 ? " selected" : "",
			spans[i]);
	}
	fputs("</select></label><label>per <select name=\"period\">", f);
	for (size_t i = 0; i < ARRAY_LEN(periods); i++)
		fprintf(f, "<option%s>%s</option>", strcmp(period, periods[i]) == 0 ? " selected" : "",
			periods[i]);
	fputs("</select></label><button>show</button> <a href=\"/usage?format=csv&amp;by=", f);
	url_esc(f, by);
	fputs("&amp;since=", f);
	url_esc(f, since_text);
	fputs("\">CSV</a> <a href=\"/usage?format=periods-csv&amp;by=", f);
	url_esc(f, by);
	fputs("&amp;since=", f);
	url_esc(f, since_text);
	fprintf(f, "&amp;period=%s\">CSV per %s</a></form>", period, period);
	{
		const char *heads[] = { by, "cpu-hours", "jobs", "succeeded", "failed", "cancelled",
			"wait median", "wait p90", NULL };

		html_table(f, "usage", heads);
	}
	for (size_t i = 0; i <= json_array_size(rows); i++) {
		const json_t *r = i < json_array_size(rows) ? json_array_get(rows, i)
							    : json_object_get(usage, "total");

		fputs(i < json_array_size(rows) ? "<tr>" : "<tr class=\"total\">", f);
		html_td(f, jstr(r, "name"));
		fprintf(f, "<td class=\"n\">%.3f</td>", jnum(r, "cpu_hours"));
		html_td_num(f, (long long)jint(r, "jobs"));
		html_td_num(f, (long long)jint(r, "succeeded"));
		html_td_num(f, (long long)jint(r, "failed"));
		html_td_num(f, (long long)jint(r, "cancelled"));
		fputs("<td class=\"n\">", f);
		html_duration(f, (int64_t)(jnum(r, "wait_median_s") * 1000));
		fputs("</td><td class=\"n\">", f);
		html_duration(f, (int64_t)(jnum(r, "wait_p90_s") * 1000));
		fputs("</td></tr>", f);
	}
	fprintf(f, "</table><h2>cpu-hours per %s</h2>", period);
	period_chart(f, json_object_get(json_object_get(usage, "periods"), period), rows);
	{
		const char *heads[] = { period, by, "cpu-hours", NULL };
		const json_t *list = json_object_get(json_object_get(usage, "periods"), period);

		html_table(f, "periods", heads);
		for (size_t i = 0; i < json_array_size(list); i++) {
			const json_t *r = json_array_get(list, i);

			fputs("<tr>", f);
			html_td(f, jstr(r, "period"));
			html_td(f, jstr(r, "name"));
			fprintf(f, "<td class=\"n\">%.3f</td></tr>", jnum(r, "cpu_hours"));
		}
	}
	fputs("</table><p class=\"muted\">cpu-hours: the CPU time the runners measured for each "
	      "instance's process tree, counted on the day its instance ended; jobs: those that "
	      "ended in the range; waits: from submission to start, of the jobs that started in it.</p>", f);
	json_decref(usage);
}

/* ---- /schedules ---- */

void web_page_schedules(struct page *p)
{
	static const char *const heads[] = { "name", "owner", "every", "state", "next run",
		"last run", "runs", "last error", NULL };
	json_t *all = schedules_list_json(engine_schedules(p->deps->engine));
	const json_t *list = json_object_get(all, "schedules");
	FILE *f = p->f;

	p->title = "schedules";
	fputs("<h1>Recurring pipelines</h1>", f);
	html_table(f, "schedules", heads);
	for (size_t i = 0; i < json_array_size(list); i++) {
		const json_t *s = json_array_get(list, i), *last = json_array_get(json_object_get(s, "runs"), 0);

		fputs("<tr>", f);
		html_td(f, jstr(s, "name"));
		html_td(f, jstr(s, "user"));
		fputs("<td><code>", f);
		html_esc(f, jstr(s, "every"));
		fputs("</code></td>", f);
		html_td_state(f, json_is_true(json_object_get(s, "paused")) ? "paused" : "active");
		html_td_time(f, jint(s, "next_ms"));
		fputs("<td>", f);
		if (last) {
			fprintf(f, "<a href=\"/jobs/%lld\">job %lld</a> ", (long long)jint(last, "job"),
				(long long)jint(last, "job"));
			html_time(f, jint(last, "submitted_ms"));
			fputs(" ", f);
			html_state(f, jstr(last, "state"));
		} else {
			fputs("-", f);
		}
		fputs("</td>", f);
		html_td_num(f, (long long)jint(s, "runs_total"));
		html_td(f, jstr(s, "last_error"));
		fputs("</tr>", f);
	}
	if (json_array_size(list) == 0)
		fputs("<tr><td colspan=\"8\" class=\"muted\">none: copy a spec with <code>every =</code> "
		      "to /parsa/schedules/</td></tr>", f);
	fputs("</table>", f);
	json_decref(all);
}
