/* make-history DB JOBS INSTANCES [DAYS]: a history of JOBS finished jobs of
 * INSTANCES instances each (a warm stage of one, a sim stage of the rest),
 * ended over the last DAYS days (default 365), written into the scheduler's
 * database DB through the store's own code (sched/store/store*.c: the same rows,
 * spec JSON, events and hourly usage a run writes), 500 jobs a transaction.
 * For bench/history and tests/integration/t0017-history.sh;
 * the scheduler must not be running on DB. One in 20 jobs failed, one in 50
 * was cancelled; owners cycle over three users and two teams. */
#include "model.h"
#include "spec.h"
#include "store.h"
#include "store_internal.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BATCH = 500 };

static const char *const users[] = { "alice", "bob", "carol" };
static const char *const teams[] = { "arch", "systems" };

static struct job *make_job(struct model *m, int64_t id, int64_t inst_id, int ninst, int64_t end_ms)
{
	char text[512], *msg = NULL;
	struct spec *spec;
	struct job *job;
	int64_t start_ms = end_ms - 600000 - (id % 7) * 60000;
	enum inst_state final = id % 20 == 0 ? INST_FAILED : id % 50 == 0 ? INST_CANCELLED : INST_SUCCEEDED;

	snprintf(text, sizeof text,
		 "[job]\nname = history-%lld\n[stage warm]\nrun = true\n"
		 "[stage sim]\nafter = warm\ninstances = %d\ncpus = 1\nrun = true\n",
		 (long long)id, ninst > 1 ? ninst - 1 : 1);
	spec = spec_parse(text, strlen(text), "history.conf", &msg);
	if (!spec) {
		fprintf(stderr, "make-history: %s\n", msg ? msg : "spec");
		exit(1);
	}
	job = model_job_new(id, spec);
	job->name = xasprintf("history-%lld", (long long)id);
	job->spec_file = xstrdup("history.conf");
	job->spec_text = xstrdup(text);
	job->spec_len = strlen(text);
	job->uid = (uid_t)(1000 + id % 3);
	job->gid = (gid_t)(1000 + id % 2);
	job->user = xstrdup(users[id % 3]);
	job->team = xstrdup(teams[id % 2]);
	job->submitted_ms = start_ms - 30000;
	job->started_ms = start_ms;
	job->ended_ms = end_ms;
	job->state = final == INST_SUCCEEDED ? JOB_SUCCEEDED : final == INST_FAILED ? JOB_FAILED
										       : JOB_CANCELLED;
	model_set_text(&job->reason, final == INST_FAILED ? "stage sim failed" : "");
	for (size_t s = 0; s < job->nstages; s++) {
		struct stage *stage = &job->stages[s];
		int n = s == 0 ? 1 : (ninst > 1 ? ninst - 1 : 1);

		stage->expanded = true;
		stage->state = s == 0 || final == INST_SUCCEEDED ? STAGE_SUCCEEDED
				: final == INST_FAILED ? STAGE_FAILED : STAGE_CANCELLED;
		stage->started_ms = start_ms;
		stage->ended_ms = end_ms;
		for (int i = 0; i < n; i++) {
			struct instance *inst = model_stage_new_instance(stage, inst_id++, "");
			enum inst_state st = s == 1 && i == 0 ? final : INST_SUCCEEDED;

			stage->counts[INST_QUEUED]--;
			stage->counts[st]++;
			inst->state = st;
			inst->attempt = 1;
			model_set_text(&inst->host_name, "node1");
			inst->exit_code = st == INST_FAILED ? 1 : 0;
			inst->assigned_ms = start_ms;
			inst->started_ms = start_ms + 100;
			inst->ended_ms = end_ms - 100;
			inst->cpu_ms = 590000;
			inst->max_rss = 200 << 20;
			model_set_text(&inst->cpu_list, "0");
			if (st == INST_FAILED)
				model_set_text(&inst->reason, "exit code 1");
			model_charge(m, job, inst->ended_ms, (double)(inst->ended_ms - inst->started_ms) / 1000.0);
		}
	}
	model_job_event(NULL, job, job->submitted_ms, "submitted by %s", job->user);
	model_job_event(NULL, job, end_ms, "job %s", job_state_name(job->state));
	return job;
}

int main(int argc, char **argv)
{
	struct store *st;
	struct model *m;
	char *err = NULL;
	long jobs, ninst, days = 365;
	int64_t now, next_job, next_inst;
	struct job *batch[BATCH];
	size_t n = 0;

	if (argc < 4 || (jobs = atol(argv[2])) <= 0 || (ninst = atol(argv[3])) <= 0 ||
	    (argc > 4 && (days = atol(argv[4])) <= 0)) {
		fprintf(stderr, "usage: make-history DB JOBS INSTANCES [DAYS]\n");
		return 2;
	}
	st = store_open(argv[1], &err);
	if (!st) {
		fprintf(stderr, "make-history: %s\n", err);
		return 1;
	}
	m = model_create();
	if (store_load(st, m, 0, &err) < 0) {
		fprintf(stderr, "make-history: %s\n", err);
		return 1;
	}
	now = (int64_t)time(NULL) * 1000;
	next_job = model_next_job_id(m);
	next_inst = model_next_instance_id(m);
	for (long j = 0; j < jobs; j++) {
		/* Oldest first, evenly over the days, ending an hour ago at the latest. */
		int64_t end = now - 3600000 - (int64_t)((double)(jobs - j) / (double)jobs * days * 86400000.0);

		batch[n++] = make_job(m, next_job++, next_inst, (int)ninst, end);
		next_inst += ninst > 1 ? ninst : 2;
		if (n == BATCH || j + 1 == jobs) {
			int ok = store_tx_begin(st, &err) == 0;

			for (size_t i = 0; ok && i < n; i++)
				ok = store_put_new_job(st, batch[i], &err) == 0;
			ok = ok && store_put_charges(st, m, &err) == 0;
			if (store_tx_end(st, ok, &err) < 0 || !ok) {
				fprintf(stderr, "make-history: %s\n", err ? err : "write");
				return 1;
			}
			model_clean(m);
			for (size_t i = 0; i < n; i++)
				model_job_free(batch[i]);
			n = 0;
		}
	}
	model_destroy(m);
	store_close(st);
	printf("made: %ld jobs, %ld instances\n", jobs, jobs * (ninst > 1 ? ninst : 2));
	return 0;
}
