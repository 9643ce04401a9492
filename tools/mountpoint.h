/* Is a folder a mount point right now, and taking a mount away: the two
 * questions `parsa up` and `parsa down` ask about the FUSE mount. As root
 * umount2(2) does it; an ordinary user goes through the setuid fusermount3. */
#ifndef PARSA_MOUNTPOINT_H
#define PARSA_MOUNTPOINT_H

#include <stddef.h>

/* 1 if path is a mount point now (per /proc/self/mountinfo), 0 if not, -1/errno.
 * fstype, if not NULL, receives the file system type ("fuse.parsafs"). */
int is_mounted(const char *path, char *fstype, size_t len);

/* Unmount path, lazily (detached while still in use) when lazy. 0, or -1
 * with errno (EBUSY while files are open in it, ENOENT without fusermount3). */
int unmount(const char *path, int lazy);

#endif
