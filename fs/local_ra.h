/* Read-ahead for sequential large reads of the local backend. FUSE hands a
 * reader one request at a time, so copying the next piece out of the page
 * cache (and starting the disk's read-ahead for it) was on the reader's path.
 * A thread of the file's own reads the next pieces into fresh buffers while
 * the current one goes to the reader, and each buffer is handed over to
 * libfuse without another copy. What was read ahead is used only if the file
 * did not change in between (local_ra_changed()). */
#ifndef PARSA_LOCAL_RA_H
#define PARSA_LOCAL_RA_H

#include <stddef.h>
#include <sys/types.h>

struct local_ra;

/* fd: the file's descriptor, borrowed. settle(arg) is called by the thread
 * before each read, to let writes still on their way land first. NULL with
 * errno when no thread can be started. */
struct local_ra *local_ra_create(int fd, void (*settle)(void *arg), void *arg);

/* size bytes at off in a malloc'ed buffer the caller frees (*buf): what was
 * read ahead if it is that piece and still good, else read now. The count is
 * short only at the end of the file; -1 with errno. A read that continues the
 * one before has the next piece read ahead. */
ssize_t local_ra_take(struct local_ra *ra, size_t size, off_t off, char **buf);

/* The file changed (a write or a truncate landed, or is queued to): forget
 * what was read ahead before now. */
void local_ra_changed(struct local_ra *ra);

/* Stop the thread and free everything. */
void local_ra_destroy(struct local_ra *ra);

#endif
