/* The placement request of a queued instance, and what keeps a stage's queued
 * instances from being asked for at all: one definition that the scheduling
 * pass (sched/engine/engine_pass.c) places by and that `why`
 * (sched/views/views.c) explains by, so that why cannot tell a story the pass
 * does not follow (tests/unit/test_why_agrees.c holds them to it).
 * In policy/ rather than the engine: like timing.c it is a pure function of
 * the model and a time, and the views use it without the engine's internals. */
#ifndef PARSA_REQUEST_H
#define PARSA_REQUEST_H

#include "model.h"
#include "placement.h"

#include <stddef.h>
#include <stdint.h>

/* Why a stage's queued instances are not asked for now, in the order why
 * tells them. */
enum request_hold {
	REQUEST_OPEN = 0,     /* they are: each queued instance not backing off */
	REQUEST_NONE_QUEUED,  /* the job or stage has ended, waits, or has nothing queued */
	REQUEST_ENDING,       /* the job is being cancelled or failed */
	REQUEST_MAX_RUNNING,  /* max_running are assigned or running */
	REQUEST_HELD,         /* the job is held (ctl 'hold') */
	REQUEST_NOT_YET,      /* before the job's start time or outside the stage's window */
	REQUEST_FOLDERS,      /* the job's folders are not made yet */
};

/* The part of request_stage_hold() that depends on the job alone: 0 when it
 * holds every stage of the job (the pass then skips the job's stages), 1 when
 * the stages must be asked one by one. */
int request_job_open(const struct job *job, int64_t now);

/* What holds the stage's queued instances at now; for REQUEST_NOT_YET buf
 * (when not NULL) gets the reason timing_stage_open() gives. */
enum request_hold request_stage_hold(const struct stage *stage, int64_t now, char *buf, size_t len);

/* How many more of the stage's instances may be assigned under its
 * max_running (LONG_MAX without one; 0 or less: none). */
long request_room(const struct stage *stage);

/* The request for queued instance inst, whose team's fair-share usage is
 * usage (placement_order); cookie is left NULL and host -1. */
void request_make(const struct instance *inst, double usage, struct placement_req *r);

#endif
