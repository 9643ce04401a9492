/* The views' lines for hosts whose runner hands instances to a batch system
 * (runner --executor slurm): the host's facts in hosts/<h>/status and its
 * JSON (partition, jobs pending and running in Slurm, the last poll), an
 * instance's Slurm job id, and `why`'s lines for instances that wait in
 * Slurm, grouped by host and Slurm's reason. A local host's views have none
 * of them. Pure functions of the model: the caller holds the engine lock. */
#ifndef PARSA_VIEWS_EXEC_H
#define PARSA_VIEWS_EXEC_H

#include "model.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* hosts/<h>/status: "executor: slurm", "slurm partition: ...", "slurm jobs:
 * 2 pending, 3 running", "slurm cpus: ...", "slurm last poll: 1.2 s ago"
 * "slurm poll error: ..." while queries fail, and "slurm accounting: on"
 * or "off" once the runner knows. Nothing for a local host. */
void views_host_exec_text(FILE *f, const struct host *h, int64_t now_ms);

/* Its "executor" member: an object, or JSON null for a local host. */
json_t *views_host_exec_json(const struct host *h);

/* An instance's "slurm job: 1234_7", once it ended and where Slurm keeps
 * accounting "slurm state: CANCELLED by alice", and while it waits in
 * Slurm, "slurm reason: Priority". Nothing when it never was a Slurm job. */
void views_instance_exec_text(FILE *f, const struct instance *inst);

/* `why` of a stage: "  2 instances wait in Slurm on slurm1: Priority
 * (Slurm's reason)" per host and reason, the first few groups. */
void views_why_exec(FILE *f, const struct stage *stage);

#endif
