/* data/: the shared data area on the storage volume (QEMU images, timing
 * configurations and other inputs every job may read), passed straight
 * through to the backend like a job's out/. The folder is world-writable
 * with the sticky bit, like /tmp: anyone adds files, only their owner (or
 * root) removes or renames them. */
#ifndef PARSA_DATA_DIR_H
#define PARSA_DATA_DIR_H

#include "volume_dir.h"

extern const struct volume_dir data_dir;   /* data and everything below */

/* Create data/ on the volume (mode 1777) unless it exists; 0 or -1/errno. */
int data_dir_prepare(struct fs_ctx *fs);

#endif
