/* Read-ahead for the local backend, done by threads of its own. A range is
 * brought into the page cache by sending it to /dev/null: that is the
 * kernel's own sequential read-ahead (large folios, disk requests of several
 * MiB) without a copy, but it waits for the disk, so no FUSE thread may do it. */
#ifndef PARSA_PREFETCH_H
#define PARSA_PREFETCH_H

#include <stddef.h>
#include <sys/types.h>

struct prefetch;

/* Threads start with the first hints, a few at most. */
struct prefetch *prefetch_create(void);

/* Stop the threads; hints not yet given are dropped. */
void prefetch_destroy(struct prefetch *p);

/* Have len bytes of fd at off read into the page cache, soon. The caller may
 * close fd at once (the queue keeps a duplicate). When the queue is full or
 * no thread can run, the kernel is only asked to read the range
 * (POSIX_FADV_WILLNEED), which does not wait. */
void prefetch_ask(struct prefetch *p, int fd, off_t off, size_t len);

#endif
