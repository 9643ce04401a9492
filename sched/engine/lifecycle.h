/* Job output folders over time: `purge` deletes a finished job's outputs,
 * `keep` protects them from clean-up, and the operator's retention policy
 * deletes the outputs of finished, un-kept jobs once they are older than
 * --retention. Deleting terabytes over NFS takes long, so it happens in a
 * thread of its own, never under the engine's lock. The volume itself records
 * what was kept or purged (jobs/<id>/.keep, jobs/<id>/.purged: the mount does
 * not show them), so the database needs nothing new. */
#ifndef PARSA_LIFECYCLE_H
#define PARSA_LIFECYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct backend;
struct lifecycle;

/* What the thread asks of the engine; called without the engine's lock held. */
struct lifecycle_hooks {
	/* Ids of the jobs that ended before cutoff_ms; *ids malloc'ed. */
	size_t (*ended_before)(void *arg, int64_t cutoff_ms, int64_t **ids);
	/* Add a line to job id's history. */
	void (*note)(void *arg, int64_t id, const char *text);
	void *arg;
};

/* retention_ms 0: no automatic clean-up. storage NULL: nothing to do. */
struct lifecycle *lifecycle_create(struct backend *storage, int64_t retention_ms,
				   const struct lifecycle_hooks *hooks);
int lifecycle_start(struct lifecycle *l, char **err);
/* Stops the thread (a deletion in progress stops between two entries). */
void lifecycle_destroy(struct lifecycle *l);

/* Queue the deletion of job id's outputs (the contents of jobs/<id>/out/<stage>/;
 * the stage folders stay, empty) on behalf of who. Returns at once. */
void lifecycle_purge(struct lifecycle *l, int64_t id, const char *who);
/* Protect job id's outputs from retention (kept = false: no longer). */
void lifecycle_keep(struct lifecycle *l, int64_t id, bool kept);

/* "30d" -> ms, for --retention; -1 with *err when it does not parse. */
int lifecycle_parse_retention(const char *text, int64_t *ms, char **err);

#endif
