/* The store read outside the engine's lock (engine-private): jobs that left
 * memory, and the lists and counts that cover every job. A read-only
 * connection of its own (store_open_reader; WAL lets it read while the
 * engine writes), one caller at a time (its own mutex), and the last few old
 * jobs it read, kept whole for the views that follow (a mount reads a job's
 * files one by one). A slow disk slows these reads only, never a pass. */
#ifndef PARSA_HISTORY_READER_H
#define PARSA_HISTORY_READER_H

#include "model.h"
#include "store.h"

#include <stdint.h>
#include <sys/types.h>

struct history_reader;

/* On the database of st (opened, its schema made). NULL with errno and *err. */
struct history_reader *history_reader_open(const struct store *st, char **err);
void history_reader_close(struct history_reader *r);

/* fn(arg, m, job) with old job id read back into a model of its own, under
 * the reader's mutex (job and m are the reader's: copy what is kept). gen is
 * the engine's count of changes to old jobs (history.changes): a copy kept
 * under another count is read again. 1 when fn ran, 0 when there is no such
 * job, -1 with errno EIO and *err when the store failed. */
typedef void (*history_job_fn)(void *arg, struct model *m, const struct job *job);
int history_reader_job(struct history_reader *r, int64_t id, uint64_t gen, history_job_fn fn,
		       void *arg, char **err);

/* store_list_jobs, store_last_job and store_job_counts on the reader's connection. */
int history_reader_list(struct history_reader *r, int64_t since_ms, int64_t uid, store_job_fn on_job,
			void *arg, char **err);
int history_reader_last(struct history_reader *r, uid_t uid, int64_t *id, char **err);
int history_reader_counts(struct history_reader *r, int64_t counts[5], char **err);

#endif
