/* Whether a process still holds a descriptor on a path, asked of
 * /proc/PID/fd with readlink, which names the file without touching it: the
 * mount must never call into itself. */
#ifndef PARSA_PROC_FD_H
#define PARSA_PROC_FD_H

#include <stdbool.h>
#include <sys/types.h>

/* A process that is gone or exiting holds nothing. A descriptor whose name
 * the kernel dropped from its cache since (readlink adds " (deleted)") still
 * counts as one on path. */
bool proc_holds_path(pid_t pid, const char *path);

#endif
