/* What the files of the local-folder backend share (backend_local.c has the
 * design): the backend and open-file structures, paths resolved beneath the
 * volume root (local_at.c) and the open files written behind, by inode
 * (local_track.c). Only for storage/backend_local.c, local_at.c, local_track.c. */
#ifndef PARSA_LOCAL_INTERNAL_H
#define PARSA_LOCAL_INTERNAL_H

#include "backend.h"
#include "local_wb.h"
#include "prefetch.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Writes at least this large go to the disk directly, written behind
 * (local_wb.h), once a descriptor has written DIRECT_AFTER bytes that way;
 * smaller ones, and the start of every file, through the page cache, where
 * they gather. A write-behind costs a thread, and close waits for the disk:
 * copying a thousand 256 KiB files took about 1.5 times as long with it. */
#define DIRECT_MIN (128u << 10)
#define DIRECT_AFTER (4u << 20)

struct local_backend {
	struct backend base;    /* first: the generic header */
	int root_fd;            /* O_PATH directory fd of the volume root */
	bool chown_created;     /* running as root: hand new files to the caller */
	pthread_mutex_t track_lock; /* guards tracked and every file's track_next */
	struct backend_file *tracked; /* open files with a write-behind */
	struct prefetch *prefetch; /* read-ahead, off the FUSE threads */
};

enum helper_state { HELPER_UNTRIED, HELPER_ON, HELPER_OFF };

struct backend_file {
	struct local_backend *lb;
	int fd;
	int flags;              /* as opened */
	pthread_mutex_t lock;   /* guards the fields up to wb; wb is set under it
				 * and track_lock, once, and stays until close */
	enum helper_state direct;
	uint64_t big_written;   /* bytes of large writes, up to DIRECT_AFTER */
	off_t next_off;         /* where a sequential reader reads next */
	off_t hinted;           /* the disk was asked to read up to here */
	struct local_wb *wb;
	bool tracked;           /* in lb->tracked; dev and ino are set */
	dev_t dev;
	ino_t ino;
	struct backend_file *track_next;
};

/* A path split into an open parent directory and the last component. */
struct at {
	int dirfd;
	bool own;               /* dirfd must be closed */
	char *name;             /* malloc'ed last component, "." for the root */
};

static inline struct local_backend *local(struct backend *b)
{
	return (struct local_backend *)b;
}

/* ---- local_at.c: paths beneath the volume root, new entries given away ---- */

int at_open(struct local_backend *lb, const char *path, struct at *at);
void at_close(struct at *at);
int give_away(struct local_backend *lb, int dirfd, const char *name, const struct backend_cred *cred);
int give_away_or_undo(struct local_backend *lb, const struct at *at, const struct backend_cred *cred,
		      int unlink_flags);

/* ---- local_track.c: open files written behind, by inode ---- */

void untrack(struct backend_file *f);
struct local_wb *wb_start(struct backend_file *f, size_t size);
struct local_wb *wb_of(struct backend_file *f);
bool tracked_any(struct local_backend *lb);
void drain_others(struct local_backend *lb, const struct backend_file *self, dev_t dev, ino_t ino);
int settle(struct backend_file *f);
void settle_at(struct local_backend *lb, const struct at *at);

#endif
