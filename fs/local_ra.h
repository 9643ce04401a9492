/* Read-ahead of a large sequential reader of a local file, with O_DIRECT. A
 * thread of the file's own reads the next requests from the disk into fresh
 * buffers, which are handed to FUSE without a copy: no page-cache pages to
 * allocate and fill, and the disk works while FUSE answers. What it cannot
 * serve (another offset, a file changed since, an error) the caller reads
 * the usual way, which stays the authority on data and errors. */
#ifndef PARSA_LOCAL_RA_H
#define PARSA_LOCAL_RA_H

#include <stddef.h>
#include <sys/types.h>

struct local_ra;

/* direct_fd: an O_RDONLY | O_DIRECT descriptor of the file (the read-ahead
 * owns and closes it); fd: the file's own descriptor, borrowed, whose stat
 * tells whether the file changed; chunk: the size of the reader's requests, a
 * multiple of align (the direct I/O alignment). Reading starts at off. NULL
 * with errno when no thread can be started. */
struct local_ra *local_ra_create(int direct_fd, int fd, size_t chunk, unsigned int align, off_t off);

/* The size bytes at off, read ahead: their count (short at the end of the
 * file) with *buf malloc'ed for the caller to free; or -1 with EAGAIN when
 * they were not read ahead (then reading restarts after them). */
ssize_t local_ra_take(struct local_ra *ra, size_t size, off_t off, char **buf);

/* The file is about to change through another descriptor: free what was
 * read ahead and read no more; every later take fails with EAGAIN. */
void local_ra_stop(struct local_ra *ra);

/* Stop the threads, close direct_fd, free what was read ahead. */
void local_ra_destroy(struct local_ra *ra);

#endif
