/* The database's write-ahead log copied back into the database on a thread of
 * its own. sqlite does it inside the commit that crosses its threshold, so one
 * submission in a few dozen paid for the copy and its two fsyncs; here the
 * writer's commits only signal the thread. */
#ifndef PARSA_CHECKPOINTER_H
#define PARSA_CHECKPOINTER_H

#include <sqlite3.h>
#include <stddef.h>

/* The log is copied once it holds this many pages (8 MB of a new database's
 * 2 kB pages, 16 MB of an older one's 4 kB; four times sqlite's default). A
 * submission adds about 15 pages, most of them the same few b-tree leaves
 * again, and a copy writes each page once: a longer log cuts the copies' CPU
 * per submission by about 40% (issue 16: on a journalled ext4 the checkpoint
 * thread took 140 against 80-95 us, and held submissions ran 9% faster,
 * 831-884/s against 934-972/s; measured with 4 kB pages). */
#define CHECKPOINT_PAGES 4000
/* A log the copy could not reset (commits came during it, or a reader held
 * it) is copied again after this many more pages, not at every commit: each
 * copy fsyncs twice, and 3,000 held submissions in a row made 934 fdatasyncs
 * (38 now), each a commit of ext4's journal that the submissions' renames and
 * log writes waited for. */
#define CHECKPOINT_PAGES_AGAIN (CHECKPOINT_PAGES / 4)
/* If the thread falls behind this far, the writer copies it itself. */
#define CHECKPOINT_PAGES_INLINE 16000

struct checkpointer;

/* Takes over writer's automatic checkpoints (its wal hook) and opens a
 * connection of its own to path. NULL with errno and *err. */
struct checkpointer *checkpointer_create(sqlite3 *writer, const char *path, char **err);
/* While nobody uses writer: gives its checkpoints back to sqlite. */
void checkpointer_destroy(struct checkpointer *cp);
/* How many copies the thread made so far (for tests). */
size_t checkpointer_copies(struct checkpointer *cp);

#endif
