/* Read-ahead hints for the local backend, given from a thread of their own.
 * Asking the kernel to read ahead (POSIX_FADV_WILLNEED) allocates and submits
 * the pages there and then: about 0.2 ms per MiB, which a FUSE thread serving
 * one sequential reader cannot spare. */
#ifndef PARSA_PREFETCH_H
#define PARSA_PREFETCH_H

#include <stddef.h>
#include <sys/types.h>

struct prefetch;

/* The thread starts with the first hint. */
struct prefetch *prefetch_create(void);

/* Stop the thread; hints not yet given are dropped. */
void prefetch_destroy(struct prefetch *p);

/* Have the kernel read len bytes of fd at off into the page cache, soon. The
 * caller may close fd at once (the queue keeps a duplicate). Given in place
 * when the queue is full or no thread can run. */
void prefetch_ask(struct prefetch *p, int fd, off_t off, size_t len);

#endif
