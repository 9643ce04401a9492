/* Recurring pipelines. A spec with [job] every = WHEN written to schedules/
 * becomes a schedule, named after its file, owned by its writer; each time
 * comes round it submits the spec as a normal job of its owner. Schedules are
 * kept in sqlite with their next run, so a scheduler restart keeps them; a run
 * whose time came while the scheduler was down is made once when it is back
 * (not once per missed period), and the run says it was late.
 *
 * The engine owns the lock, the clock and the jobs; this module calls none of
 * its functions. It gets a small table of operations (struct schedules_ops)
 * for the API's calls, and the engine ticks it: schedules_due() says which
 * runs are due, the engine submits each within its pass and tells the outcome
 * with schedules_ran(). Everything here runs under that one lock: the API
 * calls take it through the ops, the engine's pass holds it for the tick. */
#ifndef PARSA_SCHEDULES_H
#define PARSA_SCHEDULES_H

#include "caller.h"
#include "store.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The runs a schedule remembers (older ones are still in the database). */
#define SCHEDULE_RUNS_KEPT 20

struct schedules;
struct schedule;

/* One run of a schedule to submit as a job: its owner, its spec (in row) and
 * what to commit with the job (store_schedule_run(): row, with the next run
 * moved on, and a record of the run with the job's id). It points into the
 * schedule: valid while the lock stays held. */
struct schedule_run {
	struct schedule *schedule;
	struct caller who;           /* the schedule's owner */
	const char *name;            /* the schedule's, for the job's history */
	const char *user;
	int64_t ms;                  /* now: when it is submitted */
	char note[256];              /* "run-now", "late: ...", or "" */
	struct store_schedule row;
	char *groups;                /* row.groups, owned */
};

/* What the schedules need of the engine. */
struct schedules_ops {
	/* The lock every call below is made under (the engine's: a run makes a job). */
	void (*lock)(void *arg);
	void (*unlock)(void *arg);
	/* The time of every decision (the engine's clock). */
	int64_t (*now_ms)(void *arg);
	/* Submit run as a job of its owner, committed with store_schedule_run()
	 * (lock held); *job is its id. -1 with errno and *err: nothing committed. */
	int (*submit)(void *arg, const struct schedule_run *run, int64_t *job, char **err);
	/* The state of job id for the list of runs; NULL when it is gone (lock held). */
	const char *(*job_state)(void *arg, int64_t id);
	void *arg;
};

/* Load the schedules from the store (NULL: none are kept). ops is copied.
 * NULL with errno and *err. */
struct schedules *schedules_create(struct store *store, const struct schedules_ops *ops,
				   char **err);
void schedules_destroy(struct schedules *s);

/* The tick, lock held: the runs due at now, in order (*runs malloc'ed; free
 * them with schedules_runs_free()). Submit each, then tell how it went: job
 * its id, or failed an errno (EINVAL: the spec is refused, the run waits for
 * the next period; anything else: tried again at the next tick) with err. */
size_t schedules_due(struct schedules *s, int64_t now, struct schedule_run **runs);
void schedules_ran(struct schedules *s, const struct schedule_run *run, int failed, int64_t job,
		   const char *err);
void schedules_runs_free(struct schedule_run *runs, size_t n);

/* The calls of the API. Each takes the engine's lock and returns 0, or -1
 * with errno and *err: EINVAL (a bad spec, with file:line), EACCES (not the
 * owner or root), ENOENT (no such schedule), EBUSY (not possible now),
 * EAGAIN/ENOSPC/EIO (could not commit). */

/* Create the schedule that the file name names, or give an existing one of
 * the caller's a new spec. *id is the schedule's. */
int schedules_put(struct schedules *s, const struct caller *who, const char *filename,
		  const char *text, size_t len, int64_t *id, char **err);
int schedules_remove(struct schedules *s, const struct caller *who, const char *name, char **err);
/* pause | resume | run-now */
int schedules_ctl(struct schedules *s, const struct caller *who, const char *name,
		  const char *command, char **err);
/* Those commands, for messages: "pause, resume" + last_sep + "run-now". Malloc'ed. */
char *schedules_ctl_commands(const char *last_sep);
/* Whether command is one of those (see engine_ctl_check). */
int schedules_ctl_check(const char *command, char **err);

/* Views, NULL with errno ENOENT for an unknown name. The caller frees them. */
json_t *schedules_list_json(struct schedules *s);
json_t *schedules_json(struct schedules *s, const char *name);
char *schedules_status(struct schedules *s, const char *name);
char *schedules_spec(struct schedules *s, const char *name, size_t *len);

#endif
