/* The scheduler's durable state: one sqlite database on local disk (WAL,
 * BEGIN IMMEDIATE for every write, a busy timeout, quick_check at open). It
 * loads the whole model at start and writes changed objects in one
 * transaction. Errors: ENOSPC (disk full), EAGAIN (busy), EIO (anything else). */
#ifndef PARSA_STORE_H
#define PARSA_STORE_H

#include "model.h"

struct store;

/* Open (creating if needed) the database at path, check its integrity and
 * schema version. NULL with errno and *err (e.g. the database is corrupt). */
struct store *store_open(const char *path, char **err);
void store_close(struct store *st);

/* Load every host, job, stage, instance and event into an empty model. */
int store_load(struct store *st, struct model *m, char **err);

/* Write one new job (its spec text, stages, instances and events) in one
 * transaction. On success the job's objects are clean and persisted. */
int store_insert_job(struct store *st, struct job *job, char **err);

/* Write everything model_dirty() lists in one transaction, then model_clean().
 * On failure nothing is written and the objects stay dirty. */
int store_flush(struct store *st, struct model *m, char **err);

#endif
