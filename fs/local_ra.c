/* O_DIRECT read-ahead of a sequential reader (see local_ra.h). */
#include "local_ra.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Chunks read ahead of the reader, and how many are read at once: a disk
 * (a virtual one above all) gives its speed only with several requests in
 * flight, and one O_DIRECT read is one request at a time. */
#define RA_SLOTS 8
#define RA_THREADS 4

/* What the file looked like before a chunk was read: a write, truncate or
 * append that ends after that changes it (timestamps are fine-grained once
 * someone looked at them, as we do). */
struct stamp {
	struct timespec mtime, ctime;
	off_t size;
};

struct ra_slot {
	off_t off;
	bool done;              /* read: buf and len are set */
	char *buf;              /* malloc'ed, NULL after an error */
	ssize_t len;            /* bytes read, or -1 */
	struct stamp stamp;
};

struct local_ra {
	int direct_fd;
	int fd;
	size_t chunk;
	unsigned int align;
	pthread_t threads[RA_THREADS];
	unsigned int nthreads;
	pthread_mutex_t lock;   /* guards the fields below */
	pthread_cond_t work;    /* a slot is free, or stop */
	pthread_cond_t ready;   /* a slot was read */
	struct ra_slot slots[RA_SLOTS];
	unsigned int head;      /* the reader's next slot */
	unsigned int queued;    /* slots being read or read */
	off_t next;             /* where the thread reads next */
	bool at_end;            /* a short read: nothing to read past it */
	uint64_t generation;    /* bumped by every restart */
	bool stopped;           /* local_ra_stop(): nothing more to read */
	bool stop;              /* the threads end */
};

static int stamp_of(int fd, struct stamp *s)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -1;
	s->mtime = st.st_mtim;
	s->ctime = st.st_ctim;
	s->size = st.st_size;
	return 0;
}

static bool stamp_same(const struct stamp *a, const struct stamp *b)
{
	return a->size == b->size && a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec && a->ctime.tv_sec == b->ctime.tv_sec &&
	       a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* Read one chunk at off into a fresh aligned buffer: its length (short at the
 * end of the file) or -1. */
static ssize_t read_chunk(struct local_ra *ra, off_t off, char **buf)
{
	size_t done = 0;
	void *p;

	if (posix_memalign(&p, ra->align > 4096 ? ra->align : 4096, ra->chunk) != 0)
		return -1;
	while (done < ra->chunk) {
		ssize_t n = pread(ra->direct_fd, (char *)p + done, ra->chunk - done, off + (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(p);
			return -1;
		}
		done += (size_t)n;
		if (n == 0 || (size_t)n % ra->align)
			break;  /* the end of the file */
	}
	*buf = p;
	return (ssize_t)done;
}

static void drop_slots(struct local_ra *ra)
{
	for (; ra->queued; ra->queued--, ra->head = (ra->head + 1) % RA_SLOTS) {
		free(ra->slots[ra->head].buf);
		ra->slots[ra->head].buf = NULL;
	}
	ra->head = 0;
}

static void *reader(void *arg)
{
	struct local_ra *ra = arg;

	pthread_mutex_lock(&ra->lock);
	while (!ra->stop) {
		struct ra_slot *s;
		uint64_t generation = ra->generation;
		struct stamp stamp;
		off_t off = ra->next;
		char *buf = NULL;
		ssize_t len;

		if (ra->queued == RA_SLOTS || ra->at_end || ra->stopped) {
			pthread_cond_wait(&ra->work, &ra->lock);
			continue;
		}
		s = &ra->slots[(ra->head + ra->queued) % RA_SLOTS];
		s->off = off;
		s->done = false;
		s->buf = NULL;
		ra->queued++;
		ra->next += (off_t)ra->chunk;
		pthread_mutex_unlock(&ra->lock);
		len = stamp_of(ra->fd, &stamp) < 0 ? -1 : read_chunk(ra, off, &buf);
		pthread_mutex_lock(&ra->lock);
		if (generation != ra->generation) {
			free(buf);      /* restarted meanwhile: s is no longer ours */
			continue;
		}
		s->done = true;
		s->buf = buf;
		s->len = len;
		s->stamp = stamp;
		if (len < (ssize_t)ra->chunk)
			ra->at_end = true;      /* the end of the file, or an error */
		pthread_cond_broadcast(&ra->ready);
	}
	pthread_mutex_unlock(&ra->lock);
	return NULL;
}

struct local_ra *local_ra_create(int direct_fd, int fd, size_t chunk, unsigned int align, off_t off)
{
	struct local_ra *ra;
	int err = 0;

	if (!chunk || !align || chunk % align || off < 0) {
		errno = EINVAL;
		return NULL;
	}
	ra = xcalloc(1, sizeof *ra);
	ra->direct_fd = direct_fd;
	ra->fd = fd;
	ra->chunk = chunk;
	ra->align = align;
	ra->next = off;
	pthread_mutex_init(&ra->lock, NULL);
	pthread_cond_init(&ra->work, NULL);
	pthread_cond_init(&ra->ready, NULL);
	for (; ra->nthreads < RA_THREADS; ra->nthreads++) {
		err = pthread_create(&ra->threads[ra->nthreads], NULL, reader, ra);
		if (err)
			break;
	}
	if (!ra->nthreads) {
		pthread_cond_destroy(&ra->ready);
		pthread_cond_destroy(&ra->work);
		pthread_mutex_destroy(&ra->lock);
		free(ra);
		errno = err;
		return NULL;
	}
	return ra;
}

/* Forget what was read ahead and go on from off (aligned down: O_DIRECT). */
static void restart(struct local_ra *ra, off_t off)
{
	drop_slots(ra);
	ra->generation++;
	ra->next = off - off % (off_t)ra->align;
	ra->at_end = false;
	pthread_cond_broadcast(&ra->work);
}

ssize_t local_ra_take(struct local_ra *ra, size_t size, off_t off, char **buf)
{
	struct ra_slot *s;
	struct stamp now;
	ssize_t ret = -1;

	pthread_mutex_lock(&ra->lock);
	if (ra->stopped)
		goto out;
	/* The threads have yet to take up the chunk asked for: wait for it. */
	while (!ra->queued && off == ra->next && size == ra->chunk && !ra->at_end && !ra->stopped)
		pthread_cond_wait(&ra->ready, &ra->lock);
	s = &ra->slots[ra->head];
	if (size != ra->chunk || !ra->queued || s->off != off) {
		restart(ra, off + (off_t)size);
		goto out;
	}
	while (!s->done && !ra->stopped)
		pthread_cond_wait(&ra->ready, &ra->lock);
	if (ra->stopped || !s->done || s->len < 0 || stamp_of(ra->fd, &now) < 0 || !stamp_same(&now, &s->stamp)) {
		restart(ra, off + (off_t)size);
		goto out;
	}
	*buf = s->buf;
	s->buf = NULL;
	ret = s->len;
	ra->head = (ra->head + 1) % RA_SLOTS;
	ra->queued--;
	pthread_cond_signal(&ra->work);
out:
	pthread_mutex_unlock(&ra->lock);
	if (ret < 0)
		errno = EAGAIN;
	return ret;
}

void local_ra_stop(struct local_ra *ra)
{
	pthread_mutex_lock(&ra->lock);
	ra->stopped = true;
	drop_slots(ra);
	ra->generation++;
	pthread_cond_broadcast(&ra->ready);
	pthread_mutex_unlock(&ra->lock);
}

void local_ra_destroy(struct local_ra *ra)
{
	if (!ra)
		return;
	pthread_mutex_lock(&ra->lock);
	ra->stop = true;
	pthread_cond_broadcast(&ra->work);
	pthread_cond_broadcast(&ra->ready);
	pthread_mutex_unlock(&ra->lock);
	for (unsigned int i = 0; i < ra->nthreads; i++)
		pthread_join(ra->threads[i], NULL);
	drop_slots(ra);
	close(ra->direct_fd);
	pthread_cond_destroy(&ra->ready);
	pthread_cond_destroy(&ra->work);
	pthread_mutex_destroy(&ra->lock);
	free(ra);
}
