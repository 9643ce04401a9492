/* What the two halves of queue/ share: fs/queue_dir.c (the folder: its
 * names, lookups, the .rejected reports) and fs/queue_file.c (an open file
 * of it: the spec's text in memory and its submission at close). Private
 * to those two files. */
#ifndef PARSA_QUEUE_DIR_INTERNAL_H
#define PARSA_QUEUE_DIR_INTERNAL_H

#include "queue_dir.h"
#include "fs_node.h"
#include "sched_link.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define REJECTED_SUFFIX ".rejected"
#define CLONE_JOB_NAME "clone"

struct spec_file {
	struct fs_file base;
	struct queue_dir *q;
	char *name;                /* file name sent with the spec */
	bool clone;                /* opened as queue/.clone */
	struct fs_identity who;    /* the creator: the spec is submitted as them */
	pid_t opener;              /* see spec_flush */
	char *workdir;             /* the creator's working folder (its instances run
				    * there, lib/spec.h), or NULL when unknown */
	uint64_t parent_node;      /* the folder's node id in the kernel, from the CREATE
				    * (fs/wire.h); 0: unknown */
	struct timespec created;
	atomic_size_t size;        /* len, for getattr without the lock */
	pthread_mutex_t lock;      /* guards the members below */
	char *text;
	size_t len, cap;
	bool too_big;              /* a write went past SPEC_MAX_BYTES */
	bool submitted;
	int result;                /* errno of the submission, 0 once accepted */
	char *answer;              /* clone: "42\n", or the errors */
	size_t answer_len;
	bool read_started;         /* clone: answer_base is set */
	off_t answer_base;         /* clone: offset of the first read */
	bool error_told;           /* clone: one read failed with result */
	/* protected by q->lock */
	bool listed;
	struct spec_file *next;
};

struct rejected {
	char *name;                /* "lab.conf.rejected" */
	uid_t uid;
	gid_t gid;
	char *text;
	size_t len;
	struct timespec when;
	struct rejected *next;
};

/* The kernel keeps a name in its dentry cache for up to entry_timeout after
 * the spec left queue/ (libfuse's high-level fuse_invalidate_path() drops the
 * attributes, not the name), and asks for its attributes again before reusing
 * it (`printf ... > queue/x.conf` twice in a second). The flush that submits
 * drops the name itself (drop_cached_name); where that cannot be done, answering
 * ESTALE once instead of ENOENT for such a name makes the VFS redo the lookup,
 * which then misses, so the open creates a new file. */
#define GONE_SLOTS 64
#define GONE_MS 3000

struct gone_name {
	char name[NAME_MAX + 1];
	int64_t until_ms;          /* monotonic */
};

struct queue_dir {
	struct fs_ctx *fs;
	const char *folder;        /* "queue", or "schedules" (fs/schedules_dir.c) */
	char *post_path;           /* where a spec is sent (api_path of a POST route) */
	bool once;                 /* a token per submission, asked again until answered */
	pthread_mutex_t lock;
	struct gone_name gone[GONE_SLOTS]; /* ring; protected by lock */
	unsigned next_gone;        /* protected by lock */
	struct spec_file *open;    /* named files being written; protected by lock */
	struct rejected *rejected; /* newest first; protected by lock */
	size_t nrejected;          /* protected by lock */
	atomic_uint accepted;      /* submissions accepted, for QUEUE_FORGET_EVERY */
	void (*on_accepted)(void *arg); /* queue_dir_on_accepted, or NULL */
	void *on_accepted_arg;
};


/* An open file of the folder called name (clone: queue/.clone), created by
 * the caller of the request; the caller's fs_file. Freed at its release. */
struct spec_file *queue_spec_file_new(struct queue_dir *q, const char *name, bool clone);

/* The kernel may keep a name in its cache for a moment after it left the folder. */
void queue_invalidate(struct queue_dir *q, const char *name);

/* Keep text as file's report, queue/<file>.rejected, owned by who (the
 * oldest go past QUEUE_MAX_REJECTED). */
void queue_add_rejected(struct queue_dir *q, const char *file, const struct fs_identity *who,
			const char *text);

/* Forget uid's report called name (anybody's with uid (uid_t)-1). */
void queue_remove_rejected(struct queue_dir *q, const char *name, uid_t uid);

#endif
