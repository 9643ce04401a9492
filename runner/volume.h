/* The volume as this host's parsafs sees it: the runner reads <mount>/storage
 * (docs/filesystem.md), which the mount answers from memory, on a thread of
 * its own, so that a mount that stops answering never holds up the main loop.
 * While the volume is unreachable the runner starts nothing and says so in
 * every heartbeat (storage_down_since, lib/proto.h). */
#ifndef PARSA_RUNNER_VOLUME_H
#define PARSA_RUNNER_VOLUME_H

#include <stddef.h>
#include <stdint.h>

/* How often the file is read, and how long a read may hang before the mount
 * itself counts as unreachable. */
#define VOLUME_READ_INTERVAL_MS 500
#define VOLUME_HUNG_MS 10000

/* What the file says. */
struct volume_state {
	int64_t down_since;   /* epoch seconds; 0: reachable */
	char reason[512];     /* "" while reachable */
};

/* Parse the file's text ("state: reachable" or "state: unreachable" with
 * "since: <epoch seconds> (...)" and "reason: ..." lines, any other lines
 * ignored). 0, or -1 with errno EINVAL for a text without a known state; an
 * unreachable state without a since takes fallback_since. */
int volume_state_parse(const char *text, int64_t fallback_since, struct volume_state *out);

struct volume_watch;

/* Starts the reader of <mount>/storage. Never fails for a missing file (no
 * parsafs there, or one too old to have it: reachable). NULL with errno and
 * *err only when the thread cannot start. */
struct volume_watch *volume_watch_create(const char *mount, char **err);
/* Stops the reader; one stuck in the mount is left behind (it frees itself
 * should the read ever return). */
void volume_watch_destroy(struct volume_watch *w);

/* The latest state (never blocks): the file's, or unreachable when a read has
 * hung for VOLUME_HUNG_MS. w may be NULL (reachable). */
void volume_watch_get(struct volume_watch *w, struct volume_state *out);

#endif
