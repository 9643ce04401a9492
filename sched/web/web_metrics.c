/* /metrics in the Prometheus text format (0.0.4): hosts (from the engine's
 * views), jobs and instances by state and teams' cpu time (from the records),
 * the engine's counters, the volume and the build. No label names a job or
 * an instance, so the series stay as many as hosts, states and teams. */
#include "web_internal.h"

#include "space.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#ifndef PARSA_VERSION
#define PARSA_VERSION "0.0.0"
#endif

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: backslash, quote and newline escaped. */
static void label(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

/* One series per host of a number taken from its view. */
struct host_metric {
	const char *name, *type, *help;
	const char *object, *key;   /* views_host_json: object (or NULL) and key */
	const char *part;           /* a "part" label, or NULL */
	double scale;
};

static const struct host_metric host_metrics[] = {
	{ "parsa_host_cores", "gauge", "Cores the host offers to parsa.", NULL, "cpus", NULL, 1 },
	{ "parsa_host_reserved_cores", "gauge", "Cores reserved by parsa's instances.", "reserved", "cpus", NULL, 1 },
	{ "parsa_host_memory_bytes", "gauge", "Memory the host offers to parsa.", NULL, "mem", NULL, 1 },
	{ "parsa_host_reserved_memory_bytes", "gauge", "Memory reserved by parsa's instances.", "reserved", "mem", NULL, 1 },
	{ "parsa_host_cpu_ratio", "gauge", "Live CPU use of the whole host (0-1), split into parsa's instances and outside parsa.", "live", "parsa_cpu_pct", "parsa", 0.01 },
	{ NULL, NULL, NULL, "live", "outside_cpu_pct", "outside", 0.01 },
	{ "parsa_host_memory_ratio", "gauge", "Live memory use of the whole host (0-1), split into parsa's instances and outside parsa.", "live", "parsa_mem_pct", "parsa", 0.01 },
	{ NULL, NULL, NULL, "live", "outside_mem_pct", "outside", 0.01 },
	{ "parsa_host_running_instances", "gauge", "Instances assigned to or running on the host.", NULL, "running", NULL, 1 },
};

static void hosts_metrics(FILE *f, const json_t *hosts)
{
	head(f, "parsa_host_up", "gauge", "1 if the host's runner sent a heartbeat in time and the host is not draining.");
	for (size_t i = 0; i < json_array_size(hosts); i++) {
		const json_t *h = json_array_get(hosts, i);

		fputs("parsa_host_up{host=\"", f);
		label(f, jstr(h, "name"));
		fprintf(f, "\"} %d\n", strcmp(jstr(h, "state"), "up") == 0);
	}
	for (size_t m = 0; m < ARRAY_LEN(host_metrics); m++) {
		const struct host_metric *hm = &host_metrics[m];
		const char *name = hm->name;

		for (size_t k = m; !name; k--)
			name = host_metrics[k].name;
		if (hm->name)
			head(f, hm->name, hm->type, hm->help);
		for (size_t i = 0; i < json_array_size(hosts); i++) {
			const json_t *h = json_array_get(hosts, i);
			const json_t *o = hm->object ? json_object_get(h, hm->object) : h;

			fprintf(f, "%s{host=\"", name);
			label(f, jstr(h, "name"));
			if (hm->part)
				fprintf(f, "\",part=\"%s", hm->part);
			fprintf(f, "\"} %.17g\n", jnum(o, hm->key) * hm->scale);
		}
	}
}

/* Hosts whose runner hands instances to Slurm (their view's "executor"):
 * its jobs there and how old its last answer from Slurm is. A local host
 * has no series here. now: the scheduler's wall clock. */
static void slurm_host_metrics(FILE *f, const json_t *hosts, int64_t now)
{
	static const char *const states[] = { "pending", "running" };
	const json_t *h, *x;
	size_t i, n = 0;

	json_array_foreach(hosts, i, h)
		n += json_is_object(json_object_get(h, "executor"));
	if (n == 0)
		return;
	head(f, "parsa_host_slurm_jobs", "gauge", "The host's jobs in Slurm (runner --executor slurm), by Slurm state.");
	json_array_foreach(hosts, i, h)
		for (size_t s = 0; s < ARRAY_LEN(states); s++)
			if (json_is_object(x = json_object_get(h, "executor"))) {
				fputs("parsa_host_slurm_jobs{host=\"", f);
				label(f, jstr(h, "name"));
				fprintf(f, "\",state=\"%s\"} %lld\n", states[s], (long long)jint(x, states[s]));
			}
	head(f, "parsa_host_slurm_last_poll_age_seconds", "gauge",
	     "Seconds since the host's runner last had an answer from squeue (-1: none yet).");
	json_array_foreach(hosts, i, h)
		if (json_is_object(x = json_object_get(h, "executor"))) {
			int64_t at = jint(x, "last_poll_ms");

			fputs("parsa_host_slurm_last_poll_age_seconds{host=\"", f);
			label(f, jstr(h, "name"));
			fprintf(f, "\"} %.3f\n", at > 0 ? (double)(now > at ? now - at : 0) / 1000.0 : -1.0);
		}
	head(f, "parsa_host_slurm_poll_failing", "gauge", "1 while the host's runner's last query to Slurm failed.");
	json_array_foreach(hosts, i, h)
		if (json_is_object(x = json_object_get(h, "executor"))) {
			fputs("parsa_host_slurm_poll_failing{host=\"", f);
			label(f, jstr(h, "name"));
			fprintf(f, "\"} %d\n", json_is_string(json_object_get(x, "poll_error")));
		}
}

static void by_state(FILE *f, const char *name, const char *help, const json_t *counts,
		     const char *const *states, size_t n)
{
	head(f, name, "gauge", help);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s{state=\"%s\"} %lld\n", name, states[i], (long long)jint(counts, states[i]));
}

/* A series per team of the numbers in teams ({team: n}). */
static void per_team(FILE *f, const char *name, const char *type, const char *help, json_t *teams)
{
	const char *team;
	json_t *v;

	head(f, name, type, help);
	json_object_foreach(teams, team, v) {
		fprintf(f, "%s{team=\"", name);
		label(f, team);
		fprintf(f, "\"} %.3f\n", json_number_value(v));
	}
}

static void engine_metrics(FILE *f, const struct engine_counters *c)
{
	static const double le[ENGINE_PASS_BUCKETS] = ENGINE_PASS_BUCKET_S;
	static const char *const results[ENDED_NKINDS] = {
		[ENDED_SUCCEEDED] = "succeeded", [ENDED_FAILED] = "failed",
		[ENDED_CANCELLED] = "cancelled", [ENDED_REQUEUED] = "requeued",
	};

	head(f, "parsa_instance_attempts_ended_total", "counter",
	     "Attempts of instances that ended since the scheduler started, by result (a failed attempt that is retried counts as failed; requeued: its runner stopped or its host's window closed).");
	for (int i = 0; i < ENDED_NKINDS; i++)
		fprintf(f, "parsa_instance_attempts_ended_total{result=\"%s\"} %llu\n", results[i],
			(unsigned long long)c->ended[i]);
	head(f, "parsa_scheduling_pass_duration_seconds", "histogram",
	     "How long each scheduling pass took (roll-up, fair share, placement, commit).");
	for (int i = 0; i < ENGINE_PASS_BUCKETS; i++)
		fprintf(f, "parsa_scheduling_pass_duration_seconds_bucket{le=\"%g\"} %llu\n",
			le[i], (unsigned long long)c->pass_le[i]);
	fprintf(f, "parsa_scheduling_pass_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
		   "parsa_scheduling_pass_duration_seconds_sum %.9f\n"
		   "parsa_scheduling_pass_duration_seconds_count %llu\n",
		(unsigned long long)c->passes, c->pass_seconds, (unsigned long long)c->passes);
}

void web_page_metrics(struct page *p)
{
	static const char *const job_states[] = { "queued", "running", "succeeded", "failed", "cancelled" };
	static const char *const inst_states[] = { "queued", "assigned", "running", "succeeded", "failed",
		"cancelled" };
	struct engine *e = p->deps->engine;
	struct engine_counters c;
	json_t *hosts, *totals, *teams, *fair;
	uint64_t avail = 0, reserved = 0;
	char *err = NULL, *text = NULL;
	const char *team;
	json_t *v;
	size_t len = 0;
	FILE *f;

	totals = records_totals(p->deps->records, true, &err);
	if (!totals) {
		web_error(p, MHD_HTTP_SERVICE_UNAVAILABLE, err ? err : "cannot read the history");
		free(err);
		return;
	}
	teams = json_object_get(totals, "team_cpu_seconds");
	fair = json_object();
	hosts = engine_hosts_json(e);
	json_object_foreach(teams, team, v)
		json_object_set_new(fair, team, json_real(engine_fairshare_usage(e, team)));
	engine_get_counters(e, &c);
	f = open_memstream(&text, &len);
	if (!f)
		abort();
	head(f, "parsa_build_info", "gauge", "The running parsa-sched's version.");
	fprintf(f, "parsa_build_info{version=\"%s\"} 1\n", PARSA_VERSION);
	hosts_metrics(f, hosts);
	slurm_host_metrics(f, hosts, engine_now_ms(e));
	by_state(f, "parsa_jobs", "Jobs in the history by state.", json_object_get(totals, "jobs"),
		 job_states, ARRAY_LEN(job_states));
	by_state(f, "parsa_instances", "Instances in the history by state.",
		 json_object_get(totals, "instances"), inst_states, ARRAY_LEN(inst_states));
	head(f, "parsa_submissions_total", "counter", "Jobs submitted (the highest job id given).");
	fprintf(f, "parsa_submissions_total %lld\n", (long long)jint(totals, "submissions"));
	engine_metrics(f, &c);
	per_team(f, "parsa_team_cpu_seconds_total", "counter",
		 "CPU time the runners measured for each team's instances, over the whole history.", teams);
	per_team(f, "parsa_team_fair_share_cpu_seconds", "gauge",
		 "Each team's fair-share usage: reserved cores times run time, decayed with the half-life; the least used team goes first.",
		 fair);
	if (space_free(engine_space(e), &avail, &reserved) == 0) {
		head(f, "parsa_volume_free_bytes", "gauge", "Free space on the job volume, as last measured.");
		fprintf(f, "parsa_volume_free_bytes %llu\n", (unsigned long long)avail);
		head(f, "parsa_volume_reserved_bytes", "gauge", "Space on the volume reserved by running stages' disk.");
		fprintf(f, "parsa_volume_reserved_bytes %llu\n", (unsigned long long)reserved);
	}
	fclose(f);
	web_reply_raw(p, "text/plain; version=0.0.4; charset=utf-8", text, len);
	json_decref(hosts);
	json_decref(totals);
	json_decref(fair);
}
