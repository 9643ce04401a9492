/* The web page's writing helpers (sched/web/web_html.c) and the route matcher it
 * shares with the API (lib/route.c): text from users cannot become markup,
 * query values are escaped, times and durations read as documented, and a
 * pattern's '*' hands back exactly one segment. */
#include "route.h"
#include "tap.h"
#include "web_internal.h"

#include <stdlib.h>
#include <string.h>

TAP_STATE;

/* What fn wrote for text, malloc'ed. */
static char *written(void (*fn)(FILE *, const char *), const char *text)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	fn(f, text);
	fclose(f);
	return out;
}

static void time_zero(FILE *f, const char *text)
{
	(void)text;
	html_time(f, 0);
}

static void duration(FILE *f, const char *text)
{
	html_duration(f, strtoll(text, NULL, 10));
}

static void bar(FILE *f, const char *text)
{
	json_t *c = json_pack("{s:i,s:i}", "succeeded", 3, "failed", 1);

	html_counts_bar(f, c, text);
	json_decref(c);
}

/* A Slurm host's facts as its view gives them (text: its partition). */
static void slurm_facts(FILE *f, const char *text)
{
	json_t *x = json_pack("{s:s,s:s,s:i,s:i,s:I,s:i,s:i,s:s}", "kind", "slurm", "partition", text,
			      "pending", 2, "running", 5, "last_poll_ms", (json_int_t)1000000, "cpus_up", 8,
			      "cpus_outside", 1, "poll_error", "squeue (status 1): <timeout>");

	html_executor(f, x, 1004000);
	json_decref(x);
}

static void local_host(FILE *f, const char *text)
{
	(void)text;
	html_executor(f, json_null(), 0);
}

static void check(void (*fn)(FILE *, const char *), const char *text, const char *want,
		  const char *what)
{
	char *got = written(fn, text);

	is_str(got, want, "%s", what);
	free(got);
}

int main(void)
{
	const char *args[4] = { 0 };
	char buf[256], *got;

	check(html_esc, "<script>alert('x')</script> & \"q\"",
	      "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;",
	      "markup in a user's text is escaped");
	check(html_esc, NULL, "", "NULL writes nothing");
	check(url_esc, "a b&c=d/é", "a%20b%26c%3Dd%2F%C3%A9", "a query value is escaped");
	check(url_esc, "ckpt-3_x.y~", "ckpt-3_x.y~", "unreserved characters stay");
	check(time_zero, "", "-", "an unknown time is -");
	check(duration, "0", "-", "no duration is -");
	check(duration, "250", "250 ms", "under a second in ms");
	check(duration, "3725000", "1h2m5s", "longer ones as parsa writes durations");
	got = written(bar, "timing\">");
	ok(strstr(got, "title=\"timing&quot;&gt; succeeded 3 failed 1\"") != NULL, "a bar's label is escaped");
	ok(strstr(got, "s-succeeded\" style=\"width:75.0%") && strstr(got, "s-failed\" style=\"width:25.0%"),
	   "its parts are shares of the whole");
	free(got);
	got = written(slurm_facts, "debug<b>");
	ok(strstr(got, "<h2>slurm</h2><table class=\"executor\" id=\"executor\">") != NULL,
	   "a Slurm host's facts are a table of their own");
	ok(strstr(got, "<td>debug&lt;b&gt;</td>") != NULL, "its partition, escaped");
	ok(strstr(got, "<td class=\"pending\">2</td>") && strstr(got, "<td class=\"running\">5</td>"),
	   "its jobs pending and running in Slurm");
	ok(strstr(got, "(4 s ago)") != NULL, "the last poll's age");
	ok(strstr(got, "<td>squeue (status 1): &lt;timeout&gt;</td>") != NULL, "the poll error, escaped");
	free(got);
	check(local_host, "", "", "a local host has no such table");

	ok(route_match("/jobs/*/stages/*/instances/*/log", "/jobs/42/stages/timing/instances/3/log",
		       buf, sizeof buf, args, 4), "a route with three segments matches");
	ok(args[0] && strcmp(args[0], "42") == 0 && strcmp(args[1], "timing") == 0 &&
	   strcmp(args[2], "3") == 0, "and hands them back");
	ok(!route_match("/jobs/*", "/jobs/42/status", buf, sizeof buf, args, 4), "one '*' is one segment");
	ok(!route_match("/jobs/*/*", "/jobs/1/2", buf, sizeof buf, args, 1), "no more segments than asked");
	ok(route_match("/", "/", buf, sizeof buf, args, 4), "the root");
	ok(route_match("/jobs", "/jobs/", buf, sizeof buf, args, 4), "a trailing slash is the same path");
	return done_testing();
}
