/* jobs/: one folder per job, owned by its submitter, made of views of the
 * scheduler's state (spec, status, status.json, why, events: fetched once at
 * open), wait (a read blocks until the job or stage ends), ctl (each written
 * line is a command), stages/<s>/{status,log,wait,instances/<i>/{status,log}}
 * and jobs/last. out/ is out_dir.c; the logs are files of the storage. */
#ifndef PARSA_JOBS_DIR_H
#define PARSA_JOBS_DIR_H

#include "fs_node.h"

extern const struct node_ops jobs_root_ops;      /* jobs/ */
extern const struct node_ops jobs_last_ops;      /* jobs/last */
extern const struct node_ops job_dir_ops;        /* jobs/<id> */
extern const struct node_ops job_spec_ops;       /* jobs/<id>/spec */
extern const struct node_ops job_view_ops;       /* jobs/<id>/{status,status.json,why,events} */
extern const struct node_ops job_wait_ops;       /* jobs/<id>/wait */
extern const struct node_ops job_ctl_ops;        /* jobs/<id>/ctl */
extern const struct node_ops stages_dir_ops;     /* jobs/<id>/stages */
extern const struct node_ops stage_dir_ops;      /* jobs/<id>/stages/<s> */
extern const struct node_ops stage_status_ops;   /* jobs/<id>/stages/<s>/status */
extern const struct node_ops stage_wait_ops;     /* jobs/<id>/stages/<s>/wait */
extern const struct node_ops stage_log_ops;      /* jobs/<id>/stages/<s>/log */
extern const struct node_ops instances_dir_ops;  /* jobs/<id>/stages/<s>/instances */
extern const struct node_ops instance_dir_ops;   /* .../instances/<i> */
extern const struct node_ops instance_status_ops;/* .../instances/<i>/status */
extern const struct node_ops instance_log_ops;   /* .../instances/<i>/log */

/* jobs/<id>/<name>: the handlers of each file from its row in
 * lib/api_paths.c (API_FILE_VIEW: job_view_ops, ...); none for a name that
 * is none of its files, or one of its folders (stages, out: routes of their
 * own, matched first). */
extern const struct node_ops job_file_family;

/* Where instance i of stage s of job id writes: "jobs/<id>/log/<s>/<i>.log". */
char *jobs_log_path(int64_t id, const char *stage, int index);

#endif
