/* Job folders made ahead of time: a thread of its own keeps empty folders
 * ready on the storage volume, of two kinds: a job's (with its out/) and a
 * stage's, and a submission renames them into place instead of creating
 * them. The answer to a submission waits for its folders, and new folders
 * were a third of its time; a rename costs a directory entry. A pool is
 * refilled after a burst of takes (or, when it runs low, up to half at once),
 * not during. */
#ifndef PARSA_SPARE_FOLDERS_H
#define PARSA_SPARE_FOLDERS_H

#include <stddef.h>

struct backend;
struct backend_cred;

/* A job's folder taken within this long of the one before is part of a
 * burst; a burst's pools are refilled this long after its last take (a lone
 * take's at once, a low pool's too). */
#define SPARE_FOLDERS_QUIET_MS 20

enum spare_kind {
	SPARE_JOB,                    /* jobs/<id>/ with an empty out/ */
	SPARE_STAGE,                  /* an empty folder: jobs/<id>/out/<stage>/ */
	SPARE_KINDS
};

/* The spares live in dir (relative to the volume's root, made if missing;
 * what an earlier run left there is removed first), keep of each kind at a
 * time. Nothing is made before spare_folders_start. */
struct spare_folders *spare_folders_create(struct backend *b, const char *dir, size_t keep);
int spare_folders_start(struct spare_folders *sp, char **err);
/* Stops the thread; the spares stay on the volume for the next start. */
void spare_folders_destroy(struct spare_folders *sp);

/* Rename a spare of kind to path (which must not exist; its parent must) and
 * give it (and a job's out/) to cred, as backend_mkdir would have. 0, or -1
 * with errno: EAGAIN when none is ready (or the pool gave up: the volume
 * refused to give one away, EPERM or EACCES), EEXIST when path exists, else
 * the volume's error; then nothing was taken and the caller makes the folder
 * itself. */
int spare_folders_take(struct spare_folders *sp, enum spare_kind kind, const char *path,
		       const struct backend_cred *cred);

/* For tests and GET /v1/stats: spares of kind ready now, and taken so far. */
void spare_folders_counts(struct spare_folders *sp, enum spare_kind kind, size_t *ready,
			  size_t *taken);

#endif
