/* Empty job folders made ahead of time (see spare_folders.h). */
#include "spare_folders.h"
#include "backend.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The spares are made in this many subfolders of dir. dir is marked a top
 * folder (backend_spread), so that ext4 places each subfolder like a home
 * directory, in a block group of its own, while a spare made inside one goes
 * to its parent's group at the cost of a plain mkdir. Making every spare a
 * top folder instead would search the block groups for each (2.5 times the
 * cost, measured); keeping all of them in one group would have each new one
 * scan past the inodes the lab's deleted jobs freed there (ext4 without a
 * journal skips inodes freed in the last minutes). */
#define SPARE_BUCKETS 16

/* After the volume refused to make one (full, or down): how long to wait
 * before the next try, twice as long after each failure in a row up to
 * RETRY_MAX_MS (an outage of hours costs a try each half minute).
 * Submissions make their own folders meanwhile. */
#define RETRY_MS 1000
#define RETRY_MAX_MS 30000

/* A take of a job's folder less than SPARE_FOLDERS_QUIET_MS after the one
 * before is part of a burst of submissions: the pools are refilled once no
 * job's folder was taken for that long, or at once when fewer than a quarter
 * of a kind is left, so that the mkdirs of a refill (three times a take's
 * cost) come after the burst instead of competing with it for the cores and
 * the volume. A lone submission's spares are made again at once, while its
 * job is being placed, not when it starts. */
#define QUIET_MS SPARE_FOLDERS_QUIET_MS

struct spare {
	char *path;                   /* "<dir>/<bucket>/<n>" */
	uid_t uid;                    /* its owner as made: a take gives it away */
	gid_t gid;                    /* only when the submitter is someone else */
};

struct pool {
	struct spare *ready;          /* keep slots, n used */
	size_t n;
	size_t taken;
	bool refilling;               /* ran low: made up to half in one go */
};

struct spare_folders {
	struct backend *b;
	char *dir;
	size_t keep;
	pthread_mutex_t lock;
	pthread_cond_t wake;          /* a pool runs low, the first take after a rest, or stop */
	struct pool pools[SPARE_KINDS]; /* protected by lock */
	bool given_up;                /* a spare could not be given away; protected by lock */
	bool stopping;                /* protected by lock */
	bool resting;                 /* the thread waits for no time; protected by lock */
	int64_t last_take_ms;         /* of a job's folder, monotonic; protected by lock */
	int64_t prev_take_ms;         /* the one before; protected by lock */
	bool started;
	uint64_t next_name;           /* the thread's own */
	pthread_t thread;
};

struct spare_folders *spare_folders_create(struct backend *b, const char *dir, size_t keep)
{
	struct spare_folders *sp = xcalloc(1, sizeof *sp);
	pthread_condattr_t attr;

	sp->b = b;
	sp->dir = xstrdup(dir);
	sp->keep = keep ? keep : 1;
	for (int k = 0; k < SPARE_KINDS; k++)
		sp->pools[k].ready = xcalloc(sp->keep, sizeof *sp->pools[k].ready);
	pthread_mutex_init(&sp->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&sp->wake, &attr);
	pthread_condattr_destroy(&attr);
	return sp;
}

/* Lock held: wait up to ms for a take or the stop. */
static void wait_ms_locked(struct spare_folders *sp, int64_t ms)
{
	struct timespec ts = time_mono_deadline(ms);

	pthread_cond_timedwait(&sp->wake, &sp->lock, &ts);
}

/* One new spare of kind, or -1 with errno (nothing left behind). */
static int make_one(struct spare_folders *sp, enum spare_kind kind, struct spare *out)
{
	struct backend_cred self = { geteuid(), getegid() };
	uint64_t n = sp->next_name++;
	char *path = xasprintf("%s/%" PRIu64 "/%" PRIu64, sp->dir, n % SPARE_BUCKETS, n);
	char *sub = xasprintf("%s/out", path);
	struct stat st;
	int ret = -1, saved = 0;

	if (backend_mkdir(sp->b, &self, path, 0755) < 0) {
		saved = errno;
		goto out;
	}
	if ((kind == SPARE_JOB && backend_mkdir(sp->b, &self, sub, 0755) < 0) ||
	    backend_getattr(sp->b, path, &st) < 0) {
		saved = errno;
		backend_remove_tree(sp->b, path);
		goto out;
	}
	out->path = path;
	out->uid = st.st_uid;
	out->gid = st.st_gid;
	path = NULL;
	ret = 0;
out:
	free(path);
	free(sub);
	errno = saved;
	return ret;
}

/* Lock held: fewer than a quarter of p's spares left. */
static bool low_locked(const struct spare_folders *sp, const struct pool *p)
{
	return p->n < (sp->keep + 3) / 4;
}

/* A pool that ran low in a burst is made up to half before the thread waits
 * for the quiet again. Stopping just above the low mark had the thread wake
 * for every take of a long burst (two per submission), and each such wake-up
 * and each hand-over of the lock was the submission's to pay: 3.3-4.3 futex
 * calls per held submission of a long loop, now 0.9-1.5. */
static size_t refill_to(const struct spare_folders *sp)
{
	return (sp->keep + 1) / 2;
}

/* Lock held: the kind with the fewest spares ready, SPARE_KINDS if all are full. */
static enum spare_kind emptiest_locked(struct spare_folders *sp)
{
	enum spare_kind best = SPARE_KINDS;

	for (int k = 0; k < SPARE_KINDS; k++)
		if (sp->pools[k].n < sp->keep && (best == SPARE_KINDS || sp->pools[k].n < sp->pools[best].n))
			best = (enum spare_kind)k;
	return best;
}

/* The spares' folder and its buckets, from empty: 0 once all are there, or
 * -1 with errno (the volume away at start): tried again before the next
 * spare. */
static int prepare(struct spare_folders *sp)
{
	struct backend_cred self = { geteuid(), getegid() };
	int ret = 0;

	/* An earlier run's spares were made by another process's rules (and
	 * may be half made after a crash): start from an empty folder. */
	if (backend_remove_tree(sp->b, sp->dir) < 0 && errno != ENOENT)
		log_debug("%s: cannot remove an earlier run's spare folders: %s", sp->dir,
			  strerror(errno));
	if (backend_mkdir(sp->b, &self, sp->dir, 0700) < 0 && errno != EEXIST) {
		int saved = errno;

		log_debug("%s: cannot make it: %s", sp->dir, strerror(saved));
		errno = saved;
		return -1;
	}
	backend_spread(sp->b, sp->dir);
	for (int i = 0; i < SPARE_BUCKETS && ret == 0; i++) {
		char *bucket = xasprintf("%s/%d", sp->dir, i);

		if (backend_mkdir(sp->b, &self, bucket, 0700) < 0 && errno != EEXIST)
			ret = -1;
		free(bucket);
	}
	return ret;
}

static void *spare_folders_main(void *arg)
{
	struct spare_folders *sp = arg;
	bool told = false, prepared = false;
	int64_t retry_ms = RETRY_MS;

	pthread_setname_np(pthread_self(), "spare-folders");
	pthread_mutex_lock(&sp->lock);
	for (;;) {
		struct spare s;
		enum spare_kind kind = SPARE_KINDS;
		struct pool *p;
		int rc;

		while (!sp->stopping && (sp->given_up || (kind = emptiest_locked(sp)) == SPARE_KINDS)) {
			sp->resting = true;
			pthread_cond_wait(&sp->wake, &sp->lock);
			sp->resting = false;
		}
		if (sp->stopping)
			break;
		p = &sp->pools[kind];
		if (low_locked(sp, p))
			p->refilling = true;
		if (!p->refilling && sp->last_take_ms - sp->prev_take_ms < QUIET_MS) {
			int64_t quiet = time_mono_ms() - sp->last_take_ms;

			if (quiet < QUIET_MS) {
				wait_ms_locked(sp, QUIET_MS - quiet);
				continue;
			}
		}
		pthread_mutex_unlock(&sp->lock);
		rc = prepared ? 0 : prepare(sp);
		if (rc == 0) {
			prepared = true;
			rc = make_one(sp, kind, &s);
			/* The folder went (a volume away at start, or replaced). */
			if (rc < 0 && errno == ENOENT)
				prepared = false;
		}
		pthread_mutex_lock(&sp->lock);
		if (rc < 0) {
			/* Full or unreachable: the submissions' own mkdir tells
			 * them why; try again later. */
			if (!told)
				log_debug("%s: cannot make a spare job folder: %s", sp->dir,
					  strerror(errno));
			told = true;
			if (!sp->stopping)
				wait_ms_locked(sp, retry_ms);
			retry_ms = retry_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : retry_ms * 2;
			continue;
		}
		told = false;
		retry_ms = RETRY_MS;
		if (sp->stopping || p->n >= sp->keep) {
			pthread_mutex_unlock(&sp->lock);
			backend_remove_tree(sp->b, s.path);
			free(s.path);
			pthread_mutex_lock(&sp->lock);
			continue;
		}
		p->ready[p->n++] = s;
		if (p->n >= refill_to(sp))
			p->refilling = false;
	}
	pthread_mutex_unlock(&sp->lock);
	return NULL;
}

int spare_folders_start(struct spare_folders *sp, char **err)
{
	int rc = pthread_create(&sp->thread, NULL, spare_folders_main, sp);

	if (rc != 0) {
		errno = rc;
		return errprintf(err, "cannot start the spare folders' thread: %s", strerror(rc));
	}
	sp->started = true;
	return 0;
}

void spare_folders_destroy(struct spare_folders *sp)
{
	if (!sp)
		return;
	pthread_mutex_lock(&sp->lock);
	sp->stopping = true;
	pthread_cond_broadcast(&sp->wake);
	pthread_mutex_unlock(&sp->lock);
	if (sp->started)
		pthread_join(sp->thread, NULL);
	for (int k = 0; k < SPARE_KINDS; k++) {
		for (size_t i = 0; i < sp->pools[k].n; i++)
			free(sp->pools[k].ready[i].path);
		free(sp->pools[k].ready);
	}
	pthread_cond_destroy(&sp->wake);
	pthread_mutex_destroy(&sp->lock);
	free(sp->dir);
	free(sp);
}

/* A spare not used after all goes back, or away when the pool is full. */
static void put_back(struct spare_folders *sp, struct pool *p, struct spare *s)
{
	bool kept = false;

	pthread_mutex_lock(&sp->lock);
	if (!sp->given_up && p->n < sp->keep) {
		p->ready[p->n++] = *s;
		kept = true;
	}
	pthread_mutex_unlock(&sp->lock);
	if (!kept) {
		backend_remove_tree(sp->b, s->path);
		free(s->path);
	}
}

int spare_folders_take(struct spare_folders *sp, enum spare_kind kind, const char *path,
		       const struct backend_cred *cred)
{
	struct pool *p = &sp->pools[kind];
	struct spare s;
	char *sub = NULL;
	int ret = -1, saved = 0;

	pthread_mutex_lock(&sp->lock);
	if (sp->given_up || p->n == 0) {
		pthread_mutex_unlock(&sp->lock);
		errno = EAGAIN;
		return -1;
	}
	s = p->ready[--p->n];
	if (kind == SPARE_JOB) {
		sp->prev_take_ms = sp->last_take_ms;
		sp->last_take_ms = time_mono_ms();
	}
	/* Marked here, not by the thread: a spare it was making as the pool
	 * ran low would lift it over the mark before the thread looked. Else
	 * the thread, waiting for a quiet moment, wakes on its own, or is
	 * refilling this pool already. */
	if (low_locked(sp, p) && !p->refilling) {
		p->refilling = true;
		pthread_cond_signal(&sp->wake);
	} else if (sp->resting) {
		pthread_cond_signal(&sp->wake);
	}
	pthread_mutex_unlock(&sp->lock);

	if (backend_rename(sp->b, s.path, path, RENAME_NOREPLACE) < 0) {
		saved = errno;
		put_back(sp, p, &s);
		goto out;
	}
	free(s.path);
	if (cred && (cred->uid != s.uid || cred->gid != s.gid)) {
		sub = kind == SPARE_JOB ? xasprintf("%s/out", path) : NULL;
		if (backend_chown(sp->b, path, cred->uid, cred->gid) < 0 ||
		    (sub && backend_chown(sp->b, sub, cred->uid, cred->gid) < 0)) {
			/* The volume gone in between (an outage) is no reason to
			 * give up on spares: the caller makes this job's folders
			 * (or waits for the volume). */
			if (errno != EPERM && errno != EACCES) {
				saved = errno;
				backend_remove_tree(sp->b, path);
				goto out;
			}
			/* A scheduler that may not give folders away (not root,
			 * a volume that squashes root) makes them as each job's
			 * owner, as before the spares. */
			log_info("%s: cannot give a spare folder to uid %u (%s): each job's folders "
				 "are made at its submission from now on", sp->dir, (unsigned)cred->uid,
				 strerror(errno));
			backend_remove_tree(sp->b, path);
			pthread_mutex_lock(&sp->lock);
			sp->given_up = true;
			pthread_mutex_unlock(&sp->lock);
			saved = EAGAIN;
			goto out;
		}
	}
	pthread_mutex_lock(&sp->lock);
	p->taken++;
	pthread_mutex_unlock(&sp->lock);
	ret = 0;
out:
	free(sub);
	errno = saved;
	return ret;
}

void spare_folders_counts(struct spare_folders *sp, enum spare_kind kind, size_t *ready,
			  size_t *taken)
{
	pthread_mutex_lock(&sp->lock);
	*ready = sp->pools[kind].n;
	*taken = sp->pools[kind].taken;
	pthread_mutex_unlock(&sp->lock);
}
