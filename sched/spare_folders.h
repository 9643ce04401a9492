/* Job folders made ahead of time: a thread of its own keeps a few empty
 * folders (each with its out/) ready on the storage volume, and a submission
 * renames one into place instead of creating them. On ext4 a new folder costs
 * the Orlov search for a block group, most of a submission's time otherwise;
 * a rename costs a directory entry. */
#ifndef PARSA_SPARE_FOLDERS_H
#define PARSA_SPARE_FOLDERS_H

#include <stddef.h>

struct backend;
struct backend_cred;

/* The spares live in dir (relative to the volume's root, made if missing;
 * what an earlier run left there is removed first), keep of them at a time.
 * Nothing is made before spare_folders_start. */
struct spare_folders *spare_folders_create(struct backend *b, const char *dir, size_t keep);
int spare_folders_start(struct spare_folders *sp, char **err);
/* Stops the thread; the spares stay on the volume for the next start. */
void spare_folders_destroy(struct spare_folders *sp);

/* Rename a spare to path (which must not exist; its parent must) and give it
 * and its out/ to cred, as backend_mkdir would have. 0, or -1 with errno:
 * EAGAIN when none is ready (or the pool gave up: the volume refused to give
 * one away), EEXIST when path exists, else the volume's error; then nothing
 * was taken and the caller makes the folders itself. */
int spare_folders_take(struct spare_folders *sp, const char *path, const struct backend_cred *cred);

/* For tests and GET /v1/stats: spares ready now, and taken so far. */
void spare_folders_counts(struct spare_folders *sp, size_t *ready, size_t *taken);

#endif
