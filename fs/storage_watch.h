/* Whether the mount's volume answers, as the mount tells it: a probe thread
 * that asks the volume every few seconds (so the state is fresh when nobody
 * does I/O, and its return is seen within a second or two), the `storage`
 * file at the mount root, the line /parsa/status gets while the volume is
 * unreachable, and what start-up could not do on the volume (data/, the
 * folder of unlinked files), done by the probe thread once it answers. */
#ifndef PARSA_STORAGE_WATCH_H
#define PARSA_STORAGE_WATCH_H

#include <stdbool.h>
#include <stdint.h>

struct fs_ctx;
struct node_ops;
struct storage_watch;

/* What start-up left to do on the volume (storage_watch_create). */
enum storage_pending {
	STORAGE_PENDING_DATA = 1,       /* data/ (data_dir_prepare) */
	STORAGE_PENDING_UNLINKED = 2,   /* the unlinked-files folder (unlinked_prepare) */
};

/* Start the probe thread for fs->backend (fs->storage_url names it in what
 * the mount says). pending: STORAGE_PENDING_* bits still to do. NULL with
 * errno if the thread cannot start (the mount works without it; the state
 * then changes with calls only). */
struct storage_watch *storage_watch_create(struct fs_ctx *fs, unsigned int pending);
/* Stops and joins the thread; NULL is fine. */
void storage_watch_destroy(struct storage_watch *sw);

/* The text of the `storage` file, from memory (never the volume), as the
 * runner parses it: "state: reachable\nvolume: URL\n", or "state:
 * unreachable\nsince: EPOCH (YYYY-MM-DD HH:MM:SS UTC)\nvolume: URL\nreason:
 * ...\n". Malloc'ed. */
char *storage_watch_text(const struct fs_ctx *fs);

/* The line status starts with while the volume is unreachable
 * ("storage: unreachable since HH:MM:SS (reason); I/O in out/ and data/ waits
 * up to N s\n"), or NULL while it is reachable. Malloc'ed. */
char *storage_watch_status_line(const struct fs_ctx *fs);

/* The /storage node. */
extern const struct node_ops storage_file_ops;

#endif
