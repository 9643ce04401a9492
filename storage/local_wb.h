/* Write-behind for large writes of the local backend. A writer copies its
 * data into one of a few aligned buffers and returns; a thread of the file's
 * own writes it to the disk with O_DIRECT, in order, while FUSE fetches the
 * next request. Bytes then cost one copy from memory we reuse instead of a
 * copy into freshly allocated page-cache pages, and the disk works while the
 * writer does. An error is kept and returned by every later call, as the NFS
 * backend does with its write-behind. */
#ifndef PARSA_LOCAL_WB_H
#define PARSA_LOCAL_WB_H

#include <stddef.h>
#include <sys/types.h>

struct local_wb;

/* direct_fd: an O_DIRECT descriptor of the file (the write-behind owns and
 * closes it); fd: the file's own descriptor, borrowed, for a piece O_DIRECT
 * refuses after all; align: what offsets, sizes and buffers of direct_fd must
 * be multiples of. NULL with errno when no thread can be started. */
struct local_wb *local_wb_create(int direct_fd, int fd, unsigned int align);

/* True when a write of size bytes at off may be queued. */
int local_wb_fits(const struct local_wb *wb, size_t size, off_t off);

/* Queue size bytes at off (local_wb_fits() said yes) and return size, or -1
 * with the error of an earlier write. Waits while every buffer is in use. */
ssize_t local_wb_write(struct local_wb *wb, const void *buf, size_t size, off_t off);

/* Wait until everything queued is written: 0, or -1 with the first error. */
int local_wb_drain(struct local_wb *wb);

/* Drain, stop the thread, close direct_fd, free; returns like local_wb_drain(). */
int local_wb_destroy(struct local_wb *wb);

#endif
