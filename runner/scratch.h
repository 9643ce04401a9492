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

/* The progress file ($PARSA_PROGRESS) of the instance whose scratch folder is
 * scratch: beside it, so that it lives and goes with it. Malloc'ed. */
char *progress_path(const char *scratch);

/* Create an empty folder at path (replacing a leftover one), mode 0700, owned
 * by uid:gid when the runner is root. 0, or -1 with errno and *err. */
int scratch_prepare(const char *path, uid_t uid, gid_t gid, char **err);

/* Remove path and everything under it. 0 (also when it does not exist), or -1
 * with errno and *err. */
int scratch_remove(const char *path, char **err);

#endif
