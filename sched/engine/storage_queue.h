/* Work on the storage volume that must not run under the engine's lock (a
 * slow disk or NFS server must not stall scheduling): making a scheduled
 * run's job folders, listing a foreach stage's input. A thread of its own runs
 * the pieces one at a time in the order they came; each piece hands its result
 * back itself, taking the engine's lock only to apply it. Separate from the
 * clean-up thread (lifecycle.h), where a purge of terabytes would hold a new
 * job's folders up for hours. */
#ifndef PARSA_STORAGE_QUEUE_H
#define PARSA_STORAGE_QUEUE_H

#include <stdint.h>

struct storage_queue;

struct storage_queue *storage_queue_create(void);
/* Pieces posted before this wait for it. */
int storage_queue_start(struct storage_queue *q, char **err);
/* Stops the thread after the piece in progress; the pieces still queued are
 * dropped (their drop function is called), not run. */
void storage_queue_destroy(struct storage_queue *q);

/* Run run(arg) on the thread; if the queue stops first, drop(arg) instead.
 * Either frees what arg holds. Returns at once; any thread, any lock held. */
void storage_queue_post(struct storage_queue *q, void (*run)(void *arg), void (*drop)(void *arg),
			void *arg);
/* The same, run no sooner than delay_ms from now (then after the pieces
 * already due): a piece that the volume refused tries again later without
 * holding up the others. */
void storage_queue_post_after(struct storage_queue *q, int64_t delay_ms, void (*run)(void *arg),
			      void (*drop)(void *arg), void *arg);

#endif
