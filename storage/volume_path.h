/* The paths every backend is given (backend.h): relative to the volume root,
 * no "." or "..", no empty components. One check, for the local and the NFS
 * backends alike. */
#ifndef PARSA_VOLUME_PATH_H
#define PARSA_VOLUME_PATH_H

#include <stddef.h>

/* 0 when path is such a path ("" is the root) and no component is longer
 * than name_max (SIZE_MAX: no limit); else -1 with errno EINVAL, or
 * ENAMETOOLONG for a component too long. */
int volume_path_check(const char *path, size_t name_max);

#endif
