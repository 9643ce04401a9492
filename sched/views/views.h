/* Renderings of the model for people and programs: the text views behind
 * jobs/<id>/{status,why,events}, stages, instances, hosts and the cluster
 * status ("key: value" lines), and the JSON forms of docs/api.md. Pure
 * functions of the model: the caller holds the engine lock and frees the result. */
#ifndef PARSA_VIEWS_H
#define PARSA_VIEWS_H

#include "model.h"
#include "placement.h"

#include <jansson.h>
#include <stdint.h>

/* JSON (new references). */
json_t *views_assignment_json(const struct instance *inst);
/* now (the engine's clock) dates progress estimates and time waits. */
json_t *views_job_json(const struct job *job, int64_t now);  /* status.json */
json_t *views_host_json(const struct host *h, int up);
/* The instances running on h: [{job, name, stage, index, state, started_ms}]. */
json_t *views_host_running_json(const struct host *h);
/* stages/<s>/instances/<i>/status.json: times (ms, the host's clock), usage,
 * host, attempt, exit, reason; unknown numbers are null. */
json_t *views_instance_json(const struct instance *inst);

/* Text (malloc'ed, NUL-terminated). */
char *views_job_status(const struct job *job, int64_t now);
char *views_job_events(const struct job *job);
char *views_stage_status(const struct stage *stage, int64_t now);
char *views_instance_status(const struct instance *inst);
/* hosts: the placement view of every host (engine_placement_hosts). */
char *views_job_why(struct model *m, const struct job *job,
		    const struct placement_host *hosts, size_t nhosts, int64_t now);
char *views_host_status(const struct host *h, int up, int64_t now_ms);
/* up[i] tells whether model_host_at(m, i) is up; jobs[] counts every job
 * per state (the store's, store_job_counts). */
char *views_cluster_status(struct model *m, const int64_t jobs[5], const int *up, int64_t now_ms);

/* "succeeded 1/1", "succeeded, 3 of 200 failed" (failures it tolerates) or
 * "running (3 running, 5 done, 12 queued, 0 failed of 20)". */
void views_stage_summary(const struct stage *stage, char *buf, size_t len);

/* Which of a stage's instances failed for good: "instances 1, 7 failed
 * (exit code 3)", the list cut after a few; "" when none did. The stage's
 * failure reason, in its status, its events and the job's reason. */
void views_stage_failures(const struct stage *stage, char *buf, size_t len);

#endif
