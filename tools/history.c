/* The subcommands that list and sum the history: jobs (like squeue), history
 * (like sacct) and usage (cpu-hours and job counts per team or user). They
 * print what GET /v1/history/jobs and GET /v1/usage answer, the numbers the
 * web page shows. */
#include "api_answers.h"
#include "api_paths.h"
#include "cli.h"
#include "client.h"
#include "units.h"
#include "util.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CALL_TIMEOUT_MS 30000L
/* Everything a history holds, in one answer (the scheduler's cap). */
#define HISTORY_LIMIT 100000

enum out_format { OUT_TEXT, OUT_JSON, OUT_CSV };

struct hopts {
	const char *sched, *user, *team, *state, *since, *until, *by;
	bool all;
	enum out_format format;
};

enum {
	H_ALL = 1 << 0, H_USER = 1 << 1, H_TEAM = 1 << 2, H_STATE = 1 << 3, H_SINCE = 1 << 4,
	H_UNTIL = 1 << 5, H_JSON = 1 << 6, H_CSV = 1 << 7, H_BY = 1 << 8,
};

static int parse_hopts(const struct cli_cmd *self, int argc, char **argv, unsigned accept,
		       struct hopts *o, int *rc)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' }, { "sched", required_argument, NULL, 'S' },
		{ "all", no_argument, NULL, 'a' }, { "user", required_argument, NULL, 'u' },
		{ "team", required_argument, NULL, 't' }, { "state", required_argument, NULL, 's' },
		{ "since", required_argument, NULL, 'f' }, { "until", required_argument, NULL, 'U' },
		{ "json", no_argument, NULL, 'j' }, { "csv", no_argument, NULL, 'c' },
		{ "by", required_argument, NULL, 'b' }, { NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof *o);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		unsigned need = 0;

		switch (c) {
		case 'h':
			cli_help(self, stdout);
			*rc = CLI_OK;
			return -1;
		case 'S': o->sched = optarg; break;
		case 'a': need = H_ALL; o->all = true; break;
		case 'u': need = H_USER; o->user = optarg; break;
		case 't': need = H_TEAM; o->team = optarg; break;
		case 's': need = H_STATE; o->state = optarg; break;
		case 'f': need = H_SINCE; o->since = optarg; break;
		case 'U': need = H_UNTIL; o->until = optarg; break;
		case 'j': need = H_JSON; o->format = OUT_JSON; break;
		case 'c': need = H_CSV; o->format = OUT_CSV; break;
		case 'b': need = H_BY; o->by = optarg; break;
		default:
			*rc = cli_usage_error(self, "unknown option or missing value: '%s'", argv[optind - 1]);
			return -1;
		}
		if (need && !(accept & need)) {
			*rc = cli_usage_error(self, "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	if (optind < argc) {
		*rc = cli_usage_error(self, "unexpected argument '%s'", argv[optind]);
		return -1;
	}
	if (o->by && strcmp(o->by, "team") != 0 && strcmp(o->by, "user") != 0) {
		*rc = cli_usage_error(self, "--by is team or user, not '%s'", o->by);
		return -1;
	}
	return 0;
}

/* A point in time as typed: a duration back from now ("1d", "36h") or a
 * local date "2026-12-01" (or "2026-12-01T08:00"). 0 or -1. */
static int parse_when(const char *text, int64_t *ms)
{
	struct tm tm = { 0 };
	uint64_t secs;
	const char *end;

	if (parse_duration(text, &secs) == 0) {
		*ms = time_now_ms() - (int64_t)secs * 1000;
		return 0;
	}
	end = strptime(text, "%Y-%m-%d", &tm);
	if (end && *end == 'T')
		end = strptime(end + 1, "%H:%M", &tm);
	if (!end || *end)
		return -1;
	tm.tm_isdst = -1;
	*ms = (int64_t)mktime(&tm) * 1000;
	return 0;
}

static int when_arg(const struct cli_cmd *self, const char *flag, const char *text, int64_t *ms)
{
	if (text && parse_when(text, ms) < 0)
		return cli_usage_error(self, "bad --%s '%s' (a duration back from now such as 1d or 12h, or a date such as 2026-12-01)",
				       flag, text);
	return 0;
}

/* Append key=value (escaped) to a query being built. */
static void add_query(FILE *q, const char *key, const char *value)
{
	char *v;

	if (!value || !*value)
		return;
	v = url_escape(value);
	fprintf(q, "&%s=%s", key, v);
	free(v);
}

static const char *my_name(char *buf, size_t len)
{
	struct passwd pw, *res = NULL;
	char tmp[4096];

	if (getpwuid_r(getuid(), &pw, tmp, sizeof tmp, &res) != 0 || !res)
		snprintf(buf, len, "%u", (unsigned)getuid());
	else
		snprintf(buf, len, "%s", pw.pw_name);
	return buf;
}

static void when_text(int64_t ms, char *buf, size_t len)
{
	time_t t = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0 || !localtime_r(&t, &tm))
		snprintf(buf, len, "-");
	else
		strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

static void span_text(int64_t ms, char *buf, size_t len)
{
	if (ms <= 0)
		snprintf(buf, len, "-");
	else if (ms < 1000)
		snprintf(buf, len, "%lldms", (long long)ms);
	else
		format_duration((uint64_t)(ms / 1000), buf, len);
}

/* The jobs of GET /v1/history/jobs: as the answer came (json, for --json)
 * and read (jobs, n, newest first). */
struct history {
	json_t *json;
	struct api_history_job *jobs;
	size_t n;
};

/* GET /v1/history/jobs with first (the listing's own arguments) and the
 * filters of the command line into h (json with --json, else jobs). -1 with
 * *rc (and the reason printed). */
static int fetch_jobs(const struct cli_cmd *self, const struct hopts *o, const char *first,
		      struct history *h, int *rc)
{
	struct client c = { 0 };
	struct api_reply reply = { 0 };
	char me[256], *query = NULL, *path, *base, *err = NULL;
	int64_t since = 0, until = 0;
	size_t qlen = 0;
	FILE *q;
	int ret = -1;

	memset(h, 0, sizeof *h);
	*rc = CLI_FAIL;
	if (when_arg(self, "since", o->since, &since) || when_arg(self, "until", o->until, &until)) {
		*rc = CLI_USAGE;
		return -1;
	}
	q = open_memstream(&query, &qlen);
	if (!q) {
		*rc = cli_fail("out of memory");
		return -1;
	}
	fprintf(q, "%s&limit=%d", first, HISTORY_LIMIT);
	add_query(q, "user", o->user ? o->user : o->all ? NULL : my_name(me, sizeof me));
	add_query(q, "team", o->team);
	add_query(q, "state", o->state);
	if (since)
		fprintf(q, "&since_ms=%lld", (long long)since);
	if (until)
		fprintf(q, "&until_ms=%lld", (long long)until);
	fclose(q);
	base = api_path(API_HISTORY_JOBS, NULL);
	path = xasprintf("%s?%s", base, query);
	free(base);
	if (client_open(&c, o->sched, &err) < 0 ||
	    client_call(&c, "GET", path, NULL, 0, CALL_TIMEOUT_MS, &reply, &err) < 0)
		cli_fail("%s", err);
	else if (o->format == OUT_JSON && !(h->json = json_loadb(reply.body, reply.len, 0, NULL)))
		cli_fail("the scheduler at %s answered GET %s with what is not JSON", c.endpoint, path);
	else if (o->format != OUT_JSON && api_read_history(reply.body, reply.len, &h->jobs, &h->n, &err) < 0)
		cli_fail("%s", err);
	else
		ret = 0;
	api_reply_clear(&reply);
	client_close(&c);
	free(path);
	free(query);
	free(err);
	return ret;
}

static void history_clear(struct history *h)
{
	json_decref(h->json);
	api_history_free(h->jobs, h->n);
}

static void print_json(const json_t *j)
{
	char *text = json_dumps(j, JSON_INDENT(2));

	if (text)
		puts(text);
	free(text);
}

/* The instances that succeeded of all, and those that failed: "3/5 ok, 2
 * failed" (never 5/5 for a job whose instances failed). A running job's
 * progress file is its status's (parsa status ID), not this. */
static void progress_text(const struct api_history_job *job, char *buf, size_t len)
{
	int n;

	if (!job->total) {
		snprintf(buf, len, "-");
		return;
	}
	n = snprintf(buf, len, "%lld/%lld ok", (long long)job->succeeded, (long long)job->total);
	if (job->failed > 0 && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ", %lld failed", (long long)job->failed);
}

int cmd_jobs(const struct cli_cmd *self, int argc, char **argv)
{
	struct hopts o;
	char first[96];
	struct history h;
	int rc = CLI_FAIL;

	if (parse_hopts(self, argc, argv, H_ALL | H_USER | H_TEAM | H_STATE | H_SINCE | H_JSON, &o, &rc) < 0)
		return rc;
	/* By default what is going on: unfinished jobs and those ended in the last day. */
	if (!o.since && !o.state)
		snprintf(first, sizeof first, "stages=1&recent=1&since_ms=%lld",
			 (long long)(time_now_ms() - 86400000LL));
	else
		snprintf(first, sizeof first, "stages=1");
	if (fetch_jobs(self, &o, first, &h, &rc) < 0)
		return rc;
	if (o.format == OUT_JSON) {
		print_json(h.json);
	} else {
		printf("%8s %-20s %-10s %-10s %-10s %-20s %-19s %9s\n", "ID", "NAME", "USER", "TEAM",
		       "STATE", "INSTANCES", "SUBMITTED", "TIME");
		for (size_t i = h.n; i-- > 0; ) {
			const struct api_history_job *j = &h.jobs[i];
			int64_t start = j->started_ms, end = j->ended_ms;
			char prog[64], sub[32], span[32];

			progress_text(j, prog, sizeof prog);
			when_text(j->submitted_ms, sub, sizeof sub);
			span_text(start > 0 ? (end > 0 ? end : time_now_ms()) - start : 0, span, sizeof span);
			printf("%8lld %-20.20s %-10.10s %-10.10s %-10s %-20s %-19s %9s\n", (long long)j->id,
			       j->name, j->user, j->team, j->state, prog, sub, span);
		}
	}
	rc = CLI_OK;
	history_clear(&h);
	return rc;
}

static void csv_field(const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

int cmd_history(const struct cli_cmd *self, int argc, char **argv)
{
	struct hopts o;
	struct history h;
	int rc = CLI_FAIL;

	if (parse_hopts(self, argc, argv, H_ALL | H_USER | H_TEAM | H_STATE | H_SINCE | H_UNTIL |
			H_JSON | H_CSV, &o, &rc) < 0)
		return rc;
	if (fetch_jobs(self, &o, "finished=1", &h, &rc) < 0)
		return rc;
	if (o.format == OUT_JSON) {
		print_json(h.json);
		history_clear(&h);
		return CLI_OK;
	}
	if (o.format == OUT_CSV)
		puts("id,name,user,team,state,submitted,waited_s,ran_s,cpu_hours,peak_mem_bytes,reason");
	else
		printf("%8s %-20s %-10s %-10s %-10s %-19s %8s %8s %9s %8s\n", "ID", "NAME", "USER", "TEAM",
		       "STATE", "SUBMITTED", "WAITED", "RAN", "CPU-HOURS", "PEAK-MEM");
	/* Oldest first, as an accounting log reads. */
	for (size_t i = h.n; i-- > 0; ) {
		const struct api_history_job *j = &h.jobs[i];
		long long cpu = j->cpu_ms, rss = j->max_rss;
		char sub[32], waited[32], ran[32], hours[32], peak[32];

		when_text(j->submitted_ms, sub, sizeof sub);
		if (o.format == OUT_CSV) {
			printf("%lld,", (long long)j->id);
			csv_field(j->name);
			putchar(',');
			csv_field(j->user);
			putchar(',');
			csv_field(j->team);
			printf(",%s,%s,%.3f,%.3f,%.3f,", j->state, sub, (double)j->wait_ms / 1000.0,
			       (double)j->run_ms / 1000.0, cpu > 0 ? (double)cpu / 3.6e6 : 0.0);
			if (rss >= 0)
				printf("%lld", rss);
			putchar(',');
			csv_field(j->reason);
			putchar('\n');
			continue;
		}
		span_text(j->wait_ms, waited, sizeof waited);
		span_text(j->run_ms, ran, sizeof ran);
		snprintf(hours, sizeof hours, "%.3f", cpu > 0 ? (double)cpu / 3.6e6 : 0.0);
		if (rss >= 0)
			format_size((uint64_t)rss, peak, sizeof peak);
		else
			snprintf(peak, sizeof peak, "-");
		printf("%8lld %-20.20s %-10.10s %-10.10s %-10s %-19s %8s %8s %9s %8s\n", (long long)j->id,
		       j->name, j->user, j->team, j->state, sub, waited, ran, hours, peak);
	}
	history_clear(&h);
	return CLI_OK;
}

int cmd_usage(const struct cli_cmd *self, int argc, char **argv)
{
	struct client c = { 0 };
	struct api_reply reply = { 0 };
	struct hopts o;
	int64_t since = 0;
	char *path, *err = NULL;
	int rc = CLI_FAIL;

	if (parse_hopts(self, argc, argv, H_BY | H_SINCE | H_CSV | H_JSON, &o, &rc) < 0)
		return rc;
	if (when_arg(self, "since", o.since ? o.since : "30d", &since))
		return CLI_USAGE;
	path = api_path_usage(o.by ? o.by : "team", since,
			      o.format == OUT_CSV ? "csv" : o.format == OUT_JSON ? "json" : "text");
	if (client_open(&c, o.sched, &err) < 0 ||
	    client_call(&c, "GET", path, NULL, 0, CALL_TIMEOUT_MS, &reply, &err) < 0) {
		cli_fail("%s", err);
		goto out;
	}
	fwrite(reply.body, 1, reply.len, stdout);
	if (reply.len && reply.body[reply.len - 1] != '\n')
		putchar('\n');
	rc = CLI_OK;
out:
	api_reply_clear(&reply);
	client_close(&c);
	free(path);
	free(err);
	return rc;
}
