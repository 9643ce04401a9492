/* Time in the scheduling decisions: when a job may start (its start time),
 * when a stage's instances may start (its window, or else the job's), and
 * when a host takes work (the window its runner registered). Pure functions of
 * the model and a time the caller takes from its clock; the reasons are
 * phrased for `why`. */
#ifndef PARSA_TIMING_H
#define PARSA_TIMING_H

#include "model.h"
#include "placement.h"

#include <stddef.h>
#include <stdint.h>

struct timewin;

/* The job's start time (epoch ms), or 0 when it has none. */
int64_t timing_job_start_ms(const struct job *job);

/* The window the stage's instances start in: its own, else the job's; NULL
 * when they may start at any time. */
const struct timewin *timing_stage_window(const struct stage *stage);

/* May the stage's instances start at now? 1 yes; 0 no, and when buf is not
 * NULL a reason such as "starts at 2026-12-24T22:00:00 (in 3h12m)" or
 * "outside its window (22:00-07:00) until 2026-11-30T22:00:00 (in 8h)". */
int timing_stage_open(const struct stage *stage, int64_t now, char *buf, size_t len);

/* The window fields of a placement host (closed, window, opens_ms,
 * closes_in_ms) for host h at now. */
void timing_host_fill(const struct host *h, int64_t now, struct placement_host *ph);

/* Is host h outside its window at now? */
int timing_host_closed(const struct host *h, int64_t now);

/* "2026-12-24T22:00:00 (in 3h12m)" for a time after now. */
void timing_when(int64_t at, int64_t now, char *buf, size_t len);

#endif
