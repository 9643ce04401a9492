/* schedules/: recurring pipelines. A spec with [job] every = WHEN written here
 * (the same way as into queue/, by queue_dir.c) becomes schedules/<name>/,
 * named after the file without .conf: spec (the text), status and status.json
 * (next run, last runs and their results), ctl (pause, resume, run-now).
 * Removing the folder (rmdir, or rm -r) removes the schedule; the jobs it
 * submitted stay. The names and owners are cached for about a second. */
#ifndef PARSA_SCHEDULES_DIR_H
#define PARSA_SCHEDULES_DIR_H

#include "fs_node.h"

struct schedules_dir;

struct schedules_dir *schedules_dir_create(struct fs_ctx *fs, int64_t ttl_ms);
void schedules_dir_destroy(struct schedules_dir *s);
/* Ask the scheduler again at the next look (arg: the schedules_dir): a
 * schedule was just created or removed through this mount. */
void schedules_dir_forget(void *arg);

extern const struct node_ops schedules_root_ops;  /* schedules/ */
extern const struct node_ops schedule_entry_ops;  /* schedules/<name>: a schedule, or a spec being written */
extern const struct node_ops schedule_view_ops;   /* schedules/<name>/{spec,status,status.json} */
extern const struct node_ops schedule_ctl_ops;    /* schedules/<name>/ctl */

#endif
