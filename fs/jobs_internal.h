/* What the files of jobs/ share (jobs_dir.c, job_logs.c): which level of a
 * job a path names, its modes, and the lookup of the job, stage and instance
 * in the job cache. Not for other folders. */
#ifndef PARSA_JOBS_INTERNAL_H
#define PARSA_JOBS_INTERNAL_H

#include "fs_node.h"
#include "job_cache.h"

#include <stdint.h>

#define MODE_DIR 0555
#define MODE_VIEW 0444
#define MODE_LOG 0644

enum level { LEVEL_JOB, LEVEL_STAGE, LEVEL_INSTANCE };

struct where {
	int64_t id;
	int stage;                 /* index in meta->stages */
	int index;                 /* instance */
};

/* The job (and stage, and instance) that p names, as a cache reference the
 * caller puts; NULL with ENOENT when one of them does not exist. */
const struct job_meta *jobs_resolve(struct fs_ctx *fs, const struct fs_path *p, enum level level,
				    struct where *w);
/* Attributes of a stage's read-only file (status, wait, log). */
int jobs_stage_file_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st);
/* utimens of a read-only view: EACCES, root included. */
int jobs_refuse_utimens(struct fs_ctx *fs, const struct fs_path *p, const struct timespec tv[2]);

#endif
