/* Each instance's private scratch folder on the host's local disk,
 * <scratch>/<job>.<stage>.<index>: created empty and owned by the submitter
 * before the instance starts, removed with everything in it after it ends.
 * Removal never follows a symbolic link, since the user controls the contents. */
#ifndef PARSA_RUNNER_SCRATCH_H
#define PARSA_RUNNER_SCRATCH_H

#include <sys/types.h>

#include "assign.h"

/* The folder's path for an assignment (the caller frees it). */
char *scratch_path(const char *root, const struct assignment *a);

/* The progress file ($PARSA_PROGRESS) of an assignment, in the folder dir
 * (the runner's runtime folder, see runner/main.c). Malloc'ed. */
char *progress_path(const char *dir, const struct assignment *a);

/* Remove path and everything under it. 0 (also when it does not exist), or -1
 * with errno and *err. */
int scratch_remove(const char *path, char **err);

/* Empty folders of ended instances, kept in <root>/.pool and renamed into
 * place for the next ones. An instance's folder made and removed each time
 * costs ext4 a new inode, and its allocator scans every inode freed in the
 * last minutes to find one: with hundreds of short instances a second that
 * scan dominates. A rename allocates nothing. */
struct scratch_pool;

/* Take over <root>/.pool (what an earlier runner left there is removed).
 * NULL with errno and *err. */
struct scratch_pool *scratch_pool_create(const char *root, char **err);
void scratch_pool_destroy(struct scratch_pool *pool);

/* An empty folder at path (replacing a leftover one), mode 0700, owned by
 * uid:gid when the runner is root: a pooled one, else a new one (pool may be
 * NULL). 0, or -1 with errno and *err. */
int scratch_prepare(struct scratch_pool *pool, const char *path, uid_t uid, gid_t gid, char **err);

/* Remove everything under path and put the folder back in the pool (or
 * remove it when the pool is full or NULL). Its owner loses it first, so a process
 * the instance left behind cannot write into it once another user has it.
 * 0 (also when path does not exist), or -1 with errno and *err. */
int scratch_release(struct scratch_pool *pool, const char *path, char **err);

#endif
