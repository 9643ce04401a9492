/* Fills a state folder's database with a history for bench/web: JOBS finished
 * jobs (100,000) of a two-stage spec (2 instances, then 1) by 20 users in 5
 * teams over the last 90 days, one in ten failed, with per-attempt accounting.
 * Written through the store (store_put_new_job), a thousand jobs per
 * transaction. Prints "key: value" lines. */
#include "model.h"
#include "store_internal.h"
#include "util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCH 1000

static const char spec_text[] =
	"[stage sim]\nrun = true\ninstances = 2\n[stage sum]\nrun = true\nafter = sim\n";

static struct job *make_job(int64_t id, int64_t *next_inst, int64_t now)
{
	struct spec *spec = spec_parse(spec_text, sizeof spec_text - 1, "bench.conf", NULL);
	struct job *job = model_job_new(id, spec);
	int64_t t = now - (int64_t)(90LL * 86400000) + id * (90LL * 86400000 / 100000);
	bool failed = id % 10 == 0;

	job->name = xasprintf("bench-%lld", (long long)(id % 500));
	job->spec_file = xstrdup("bench.conf");
	job->spec_text = xstrdup(spec_text);
	job->spec_len = sizeof spec_text - 1;
	job->uid = 2000 + (uid_t)(id % 20);
	job->gid = 3000 + (gid_t)(id % 5);
	job->user = xasprintf("user%02lld", (long long)(id % 20));
	job->team = xasprintf("team%lld", (long long)(id % 5));
	job->state = failed ? JOB_FAILED : JOB_SUCCEEDED;
	job->reason = xstrdup(failed ? "stage sim failed: instance 1 failed (exit code 1)" : "");
	job->submitted_ms = t;
	job->started_ms = t + 2000 + id % 60000;
	job->ended_ms = job->started_ms + 60000 + (id % 7) * 1000;
	for (size_t s = 0; s < job->nstages; s++) {
		struct stage *st = &job->stages[s];

		st->expanded = true;
		st->state = failed && s == 0 ? STAGE_FAILED : failed ? STAGE_CANCELLED : STAGE_SUCCEEDED;
		st->started_ms = job->started_ms;
		st->ended_ms = job->ended_ms;
		for (int i = 0; i < (s == 0 ? 2 : 1); i++) {
			struct instance *in = model_stage_new_instance(st, (*next_inst)++, NULL);

			in->state = st->state == STAGE_FAILED && i == 1 ? INST_FAILED
				    : st->state == STAGE_CANCELLED ? INST_CANCELLED : INST_SUCCEEDED;
			st->counts[INST_QUEUED]--;
			st->counts[in->state]++;
			in->attempt = 1;
			free(in->host_name);
			in->host_name = xasprintf("node%02lld", (long long)((id + i) % 16));
			in->started_ms = job->started_ms;
			in->ended_ms = job->ended_ms;
			in->exit_code = in->state == INST_FAILED ? 1 : 0;
			in->cpu_ms = 55000 + (id % 13) * 1000;
			in->max_rss = (int64_t)(100 + id % 900) << 20;
		}
	}
	return job;
}

int main(int argc, char **argv)
{
	const char *db = NULL;
	long jobs = 100000;
	int64_t next_inst = 1, now = time_now_ms();
	struct store *st;
	char *err = NULL;
	int c;

	while ((c = getopt(argc, argv, "d:n:")) != -1) {
		if (c == 'd')
			db = optarg;
		else if (c == 'n')
			jobs = strtol(optarg, NULL, 10);
		else
			return 2;
	}
	if (!db || jobs <= 0) {
		fprintf(stderr, "usage: bench_web -d DB [-n JOBS]\n");
		return 2;
	}
	st = store_open(db, &err);
	if (!st) {
		fprintf(stderr, "bench_web: %s\n", err);
		return 1;
	}
	for (long first = 1; first <= jobs; first += BATCH) {
		struct job *batch[BATCH];
		long n = jobs - first + 1 < BATCH ? jobs - first + 1 : BATCH;
		int ok = store_tx_begin(st, &err) == 0;

		for (long k = 0; k < n; k++) {
			batch[k] = make_job(first + k, &next_inst, now);
			ok = ok && store_put_new_job(st, batch[k], &err) == 0;
		}
		if (store_tx_end(st, ok, &err) < 0 || !ok) {
			fprintf(stderr, "bench_web: %s\n", err ? err : "cannot write");
			return 1;
		}
		for (long k = 0; k < n; k++)
			model_job_free(batch[k]);
	}
	store_close(st);
	printf("jobs: %ld\ninstances: %lld\n", jobs, (long long)(next_inst - 1));
	return 0;
}
