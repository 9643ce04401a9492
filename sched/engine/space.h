/* Space on the storage volume for stages that declare `disk = SIZE`. A thread
 * of its own asks the volume for its free space (statvfs: FSSTAT over NFS)
 * every few seconds, outside the engine's lock, so that a slow or absent NFS
 * server never holds up a scheduling pass. Each pass subtracts what the
 * instances assigned or running declared, and what it places itself, so two
 * stages cannot both count on the same terabytes. */
#ifndef PARSA_SPACE_H
#define PARSA_SPACE_H

#include "placement.h"

#include <stddef.h>
#include <stdint.h>

struct backend;
struct job;
struct space;

/* storage may be NULL (no volume: every request fits). changed(arg) is called
 * from the space thread, without locks held, when the free space it knows
 * changed enough to matter or became known. */
struct space *space_create(struct backend *storage, int64_t period_ms,
			   void (*changed)(void *arg), void *arg);
int space_start(struct space *s, char **err);
/* Stops the thread (if started) and frees s. */
void space_destroy(struct space *s);

/* The rest is called by the scheduling pass, under the engine's lock. */

/* Start a pass: reserved = bytes declared by instances assigned or running. */
void space_begin_pass(struct space *s, uint64_t reserved);
/* A gate for placement_run_gated(): requests whose disk does not fit what is
 * free and unreserved are refused, everything else goes on to inner (which
 * may be NULL). Valid until the next space_gate() call. */
struct placement_gate space_gate(struct space *s, const struct placement_gate *inner);

/* For `why`: append "stage S: waits for space on the volume: ..." lines for
 * job's queued stages that do not fit, to text (malloc'ed; returned, maybe
 * moved). Under the engine's lock. */
char *space_why_job(struct space *s, const struct job *job, char *text);
/* The volume's free space as last measured: 0 and *avail, or -1 when unknown. */
int space_free(struct space *s, uint64_t *avail, uint64_t *reserved);
/* The same without the reservations, from any thread, no lock needed. */
int space_avail(struct space *s, uint64_t *avail);

#endif
