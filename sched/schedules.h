/* Recurring pipelines. A spec with [job] every = WHEN written to schedules/
 * becomes a schedule, named after its file, owned by its writer; each time
 * comes round it submits the spec as a normal job of its owner. Schedules are
 * kept in sqlite with their next run, so a scheduler restart keeps them; a run
 * whose time came while the scheduler was down is made once when it is back
 * (not once per missed period), and the run says it was late. Everything here
 * runs under the engine's lock: the API calls take it, schedules_tick() is
 * called by the scheduling pass, which holds it. */
#ifndef PARSA_SCHEDULES_H
#define PARSA_SCHEDULES_H

#include "engine.h"
#include "store.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The runs a schedule remembers (older ones are still in the database). */
#define SCHEDULE_RUNS_KEPT 20

struct schedules;

/* Load the schedules from the store. NULL with errno and *err. */
struct schedules *schedules_create(struct engine *e, struct store *store, char **err);
void schedules_destroy(struct schedules *s);

/* Submit the runs that are due at now (the engine's lock held). Returns how
 * many jobs were submitted. */
size_t schedules_tick(struct schedules *s, int64_t now);

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

/* Views, NULL with errno ENOENT for an unknown name. The caller frees them. */
json_t *schedules_list_json(struct schedules *s);
json_t *schedules_json(struct schedules *s, const char *name);
char *schedules_status(struct schedules *s, const char *name);
char *schedules_spec(struct schedules *s, const char *name, size_t *len);

#endif
