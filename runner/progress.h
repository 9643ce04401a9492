/* Live progress of the instances on this host. Each instance gets a file,
 * $PARSA_PROGRESS = <its scratch folder>.progress (owned by its user, in the
 * runner's scratch root where the user cannot replace it; a Slurm job's is on
 * the job's volume, progress_poll), to which it writes
 * DONE/TOTAL or a percentage, a line at a time; a stage with progress =
 * files:N has the entries of its output folder counted instead. One thread
 * watches them all with libinotifytools (whose state is global, so only that
 * thread calls it) and sends each change to the scheduler (POST
 * /v1/instances/<id>/progress) as it happens, at most one report per instance
 * a second; the heartbeat carries the last values too. Progress is a nicety:
 * nothing here stops an instance from running. */
#ifndef PARSA_RUNNER_PROGRESS_H
#define PARSA_RUNNER_PROGRESS_H

#include "proto.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Reports about one instance are at least this far apart. */
#define PROGRESS_INTERVAL_MS 1000
/* A file written on another machine (progress_poll) is read this often:
 * inotify never hears of it, and each read is a round trip to its volume. */
#define PROGRESS_POLL_MS 5000

struct progress;

/* Reports go to the scheduler at endpoint; state_dir holds the file the
 * thread is woken with. NULL with errno and *err. */
struct progress *progress_create(const char *endpoint, const char *state_dir, char **err);
/* Sends nothing more; removes no progress file. */
void progress_destroy(struct progress *p);

/* progress_path() (scratch.h) names an instance's progress file. */

/* Make an instance's progress file: empty when fresh (else kept as it is),
 * owned by uid:gid. 0, or -1 with *err. progress_watch() makes it too. */
int progress_file_make(const char *file, uid_t uid, gid_t gid, bool fresh, char **err);

/* Watch an instance: its progress file (created empty when fresh, else kept,
 * and owned by uid:gid), or with files > 0 the folder count_dir, whose
 * entries (not starting with '.') are counted out of files. 0, or -1 with
 * *err (the instance runs all the same). */
int progress_watch(struct progress *p, int64_t id, int64_t attempt, const char *file, uid_t uid,
		   gid_t gid, bool fresh, const char *count_dir, uint64_t files, char **err);

/* As progress_watch, for an instance on another machine (a Slurm job) whose
 * file (or counted folder) is on the job's volume: inotify would hear of no
 * write there, so it is read every PROGRESS_POLL_MS, on the thread (a slow
 * volume holds back no one else); the instance makes the file itself. */
void progress_poll(struct progress *p, int64_t id, int64_t attempt, const char *file, const char *count_dir,
		   uint64_t files);

/* The instance ended: its last value is sent, then the watch and the file go. */
void progress_forget(struct progress *p, int64_t id, int64_t attempt);

/* Fill in the last progress of the heartbeat's entries that have one. */
void progress_fill(struct progress *p, struct heartbeat_entry *entries, size_t n);

/* Parse what an instance wrote: the last line that is DONE/TOTAL, N% or N
 * (a percentage). 0 with *done and *total (100 for a percentage), or -1. */
int progress_parse(const char *text, size_t len, double *done, double *total);

#endif
