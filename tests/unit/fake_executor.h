/* A fake executor (runner/executor.h) for the instance table's unit tests:
 * nothing runs. The test says what each instance does (fake_executor_set),
 * and the executor tells the table on its next poll or when its one
 * descriptor is read, batched as a Slurm executor's squeue would be. What it
 * "runs" outlives the tables that use it, so a second table can reattach. */
#ifndef PARSA_TESTS_FAKE_EXECUTOR_H
#define PARSA_TESTS_FAKE_EXECUTOR_H

#include "executor.h"

struct executor *fake_executor_create(void);

/* The next start fails with *err = reason. */
void fake_executor_fail_next(struct executor *e, const char *reason);

/* What instance id.attempt does now (st is copied), told on the next poll or
 * ready. -1 with errno ENOENT when it was never started. */
int fake_executor_set(struct executor *e, int64_t id, int64_t attempt, const struct exec_status *st);

/* What the table asked of instance id.attempt: how many times it was
 * started, the signals it got (the last, and how many), the stop reason
 * kept, whether it was forgotten. 0 / NULL for one never started. */
int fake_executor_starts(struct executor *e, int64_t id, int64_t attempt);
int fake_executor_last_signal(struct executor *e, int64_t id, int64_t attempt);
int fake_executor_nsignals(struct executor *e, int64_t id, int64_t attempt);
const char *fake_executor_stop(struct executor *e, int64_t id, int64_t attempt);
int fake_executor_forgotten(struct executor *e, int64_t id, int64_t attempt);
/* Handles not released. */
int fake_executor_handles(struct executor *e);

#endif
