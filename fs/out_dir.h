/* jobs/<id>/out/...: a job's output folders, straight from the storage
 * backend with full POSIX behaviour for their owner (the kernel checks modes
 * from the backend's own attributes); only the owner (or root) removes or
 * renames inside, whatever the modes. */
#ifndef PARSA_OUT_DIR_H
#define PARSA_OUT_DIR_H

#include "volume_dir.h"

extern const struct volume_dir out_dir;   /* jobs/<id>/out and everything below */

#endif
