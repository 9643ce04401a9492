/* Writing HTML safely: every text from a user (job names, reasons, specs,
 * logs) goes through html_esc; the rest are small formatters the pages share. */
#include "web_internal.h"

#include "units.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *web_arg(struct page *p, const char *key)
{
	const char *v = MHD_lookup_connection_value(p->conn, MHD_GET_ARGUMENT_KIND, key);

	return v && *v ? v : NULL;
}

void web_error(struct page *p, unsigned int status, const char *msg)
{
	p->status = status;
	p->title = "error";
	p->refresh = false;
	p->type = NULL;
	if (p->f) {
		fclose(p->f);
		free(p->body);
	}
	p->body = NULL;
	p->f = open_memstream(&p->body, &p->len);
	if (!p->f)
		abort();
	fputs("<h1>Not here</h1><p class=\"error\">", p->f);
	html_esc(p->f, msg);
	fputs("</p><p><a href=\"/\">back to the lab</a></p>", p->f);
}

void web_reply_raw(struct page *p, const char *type, char *body, size_t len)
{
	if (p->f)
		fclose(p->f);
	p->f = NULL;
	free(p->body);
	p->body = body;
	p->len = len;
	p->type = type;
}

void html_esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*s, f); break;
		}
	}
}

void url_esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    strchr("-_.~", c))
			fputc(c, f);
		else
			fprintf(f, "%%%02X", c);
	}
}

void html_time(FILE *f, int64_t ms)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char buf[32];

	if (ms <= 0 || !localtime_r(&t, &tm)) {
		fputs("-", f);
		return;
	}
	strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
	fputs(buf, f);
}

void html_duration(FILE *f, int64_t ms)
{
	char buf[32];

	if (ms <= 0) {
		fputs("-", f);
		return;
	}
	if (ms < 1000) {
		fprintf(f, "%lld ms", (long long)ms);
		return;
	}
	format_duration((uint64_t)(ms / 1000), buf, sizeof buf);
	fputs(buf, f);
}

void html_bytes(FILE *f, uint64_t bytes)
{
	char buf[32];

	format_size(bytes, buf, sizeof buf);
	fputs(buf, f);
}

void html_state(FILE *f, const char *state)
{
	fputs("<span class=\"st st-", f);
	html_esc(f, state);
	fputs("\">", f);
	html_esc(f, state);
	fputs("</span>", f);
}

void html_counts_bar(FILE *f, const json_t *counts, const char *label)
{
	static const char *const parts[] = { "succeeded", "running", "queued", "waiting", "failed",
		"cancelled" };
	double total = 0;

	for (size_t i = 0; i < ARRAY_LEN(parts); i++)
		total += (double)jint(counts, parts[i]);
	fputs("<span class=\"bar\" title=\"", f);
	html_esc(f, label);
	for (size_t i = 0; i < ARRAY_LEN(parts); i++)
		if (jint(counts, parts[i]))
			fprintf(f, " %s %lld", parts[i], (long long)jint(counts, parts[i]));
	fputs("\">", f);
	for (size_t i = 0; total > 0 && i < ARRAY_LEN(parts); i++) {
		json_int_t n = jint(counts, parts[i]);

		if (n)
			fprintf(f, "<i class=\"s-%s\" style=\"width:%.1f%%\"></i>", parts[i],
				100.0 * (double)n / total);
	}
	fputs("</span>", f);
}

void html_gauge(FILE *f, double parsa_pct, double outside_pct)
{
	if (parsa_pct < 0)
		parsa_pct = 0;
	if (outside_pct < 0)
		outside_pct = 0;
	if (parsa_pct + outside_pct > 100)
		parsa_pct = 100 - outside_pct;
	fprintf(f, "<span class=\"gauge\" title=\"parsa %.0f%%, outside %.0f%%\">"
		   "<i class=\"g-parsa\" style=\"width:%.1f%%\"></i>"
		   "<i class=\"g-out\" style=\"width:%.1f%%\"></i></span> %.0f%% + %.0f%%",
		parsa_pct, outside_pct, parsa_pct, outside_pct, parsa_pct, outside_pct);
}

void html_table(FILE *f, const char *cls, const char *const *heads)
{
	fprintf(f, "<table class=\"%s\"><tr>", cls);
	for (; *heads; heads++)
		fprintf(f, "<th>%s</th>", *heads);
	fputs("</tr>", f);
}

void html_td(FILE *f, const char *text)
{
	fputs("<td>", f);
	html_esc(f, text);
	fputs("</td>", f);
}

void html_td_time(FILE *f, int64_t ms)
{
	fputs("<td>", f);
	html_time(f, ms);
	fputs("</td>", f);
}

void html_th_td(FILE *f, const char *key, const char *text)
{
	fprintf(f, "<th>%s</th>", key);
	html_td(f, text);
}

void html_th_time(FILE *f, const char *key, int64_t ms)
{
	fprintf(f, "<th>%s</th>", key);
	html_td_time(f, ms);
}

void html_executor(FILE *f, const json_t *x, int64_t now)
{
	const char *kind = jstr(x, "kind"), *error = jstr(x, "poll_error");
	int64_t at = jint(x, "last_poll_ms");

	if (!json_is_object(x))
		return;
	fputs("<h2>", f);
	html_esc(f, kind);
	fputs("</h2><table class=\"executor\" id=\"executor\"><tr>", f);
	html_th_td(f, "partition", *jstr(x, "partition") ? jstr(x, "partition") : "(the default one)");
	fprintf(f, "</tr><tr><th>jobs pending</th><td class=\"pending\">%lld</td></tr>"
		   "<tr><th>jobs running</th><td class=\"running\">%lld</td></tr>",
		(long long)jint(x, "pending"), (long long)jint(x, "running"));
	if (jint(x, "cpus_up") >= 0)
		fprintf(f, "<tr><th>cpus up</th><td>%lld</td></tr><tr><th>cpus of other users</th><td>%lld</td></tr>",
			(long long)jint(x, "cpus_up"), (long long)jint(x, "cpus_outside"));
	fputs("<tr><th>last poll</th><td class=\"last-poll\">", f);
	if (at > 0) {
		html_time(f, at);
		fprintf(f, " (%.0f s ago)", (double)(now > at ? now - at : 0) / 1000.0);
	} else {
		fputs("none yet", f);
	}
	fputs("</td></tr>", f);
	if (*error) {
		fputs("<tr>", f);
		html_th_td(f, "poll error", error);
		fputs("</tr>", f);
	}
	if (*jstr(x, "accounting")) {
		fputs("<tr>", f);
		html_th_td(f, "accounting", jstr(x, "accounting"));
		fputs("</tr>", f);
	}
	fputs("</table>", f);
}

void html_td_state(FILE *f, const char *state)
{
	fputs("<td>", f);
	html_state(f, state);
	fputs("</td>", f);
}

void html_td_num(FILE *f, long long n)
{
	fprintf(f, "<td class=\"n\">%lld</td>", n);
}

/* The current query without offset, for the pager's links. */
static enum MHD_Result keep_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				const char *value)
{
	FILE *f = cls;

	(void)kind;
	if (strcmp(key, "offset") != 0 && value && *value) {
		url_esc(f, key);
		fputc('=', f);
		url_esc(f, value);
		fputs("&amp;", f);
	}
	return MHD_YES;
}

void html_pager(struct page *p, const char *path, size_t offset, size_t limit, json_int_t total)
{
	FILE *f = p->f;

	fprintf(f, "<p class=\"pager\">%lld job%s", (long long)total, total == 1 ? "" : "s");
	if ((json_int_t)limit < total)
		fprintf(f, ", showing %zu to %lld", offset + 1,
			(long long)((json_int_t)(offset + limit) < total ? (json_int_t)(offset + limit) : total));
	if (offset > 0) {
		fprintf(f, " <a rel=\"prev\" href=\"%s?", path);
		MHD_get_connection_values(p->conn, MHD_GET_ARGUMENT_KIND, keep_arg, f);
		fprintf(f, "offset=%zu\">newer</a>", offset > limit ? offset - limit : 0);
	}
	if ((json_int_t)(offset + limit) < total) {
		fprintf(f, " <a rel=\"next\" href=\"%s?", path);
		MHD_get_connection_values(p->conn, MHD_GET_ARGUMENT_KIND, keep_arg, f);
		fprintf(f, "offset=%zu\">older</a>", offset + limit);
	}
	fputs("</p>", f);
}

const char *jstr(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

json_int_t jint(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

double jnum(const json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}
