/* Read-ahead of a few pieces for a local file (see local_ra.h). */
#include "local_ra.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* Pieces read ahead of a sequential reader: up to 8 MiB with FUSE's largest
 * requests, as on NFS. One was not enough: the thread, and with it the
 * kernel's own read-ahead, then waited for every request of the reader and
 * left the disk idle in between (busy 67% against 90% for a plain reader);
 * four got to 78%, eight to 86%. */
#define PIECES 8

enum piece_state { PIECE_EMPTY, PIECE_WANTED, PIECE_READING, PIECE_READY };

struct piece {
	enum piece_state state;
	off_t off;
	size_t size;
	uint64_t epoch;         /* the file's epoch when it was asked for */
	char *buf;              /* PIECE_READY: malloc'ed, or NULL on error */
	ssize_t n;
	int err;
};

struct local_ra {
	int fd;
	void (*settle)(void *arg);
	void *settle_arg;
	pthread_t thread;
	pthread_mutex_t lock;   /* guards everything below */
	pthread_cond_t work;    /* a piece is wanted, or stop */
	pthread_cond_t done;    /* a piece is ready */
	bool stop;
	uint64_t epoch;         /* bumped by every change of the file */
	off_t next_off;         /* where a sequential reader reads next */
	struct piece pieces[PIECES];
};

/* Fill buf unless at the end of the file: a short reply is end of file to
 * FUSE. The count, or -1 with errno when nothing was read. */
static ssize_t read_full(int fd, char *buf, size_t size, off_t off)
{
	size_t done = 0;

	while (done < size) {
		ssize_t n = pread(fd, buf + done, size - done, off + (off_t)done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return done ? (ssize_t)done : -1;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* The wanted piece nearest the start of the file: the reader needs it first. */
static struct piece *next_wanted(struct local_ra *ra)
{
	struct piece *best = NULL;

	for (int i = 0; i < PIECES; i++) {
		struct piece *p = &ra->pieces[i];

		if (p->state == PIECE_WANTED && (!best || p->off < best->off))
			best = p;
	}
	return best;
}

static void *reader(void *arg)
{
	struct local_ra *ra = arg;

	pthread_mutex_lock(&ra->lock);
	for (;;) {
		struct piece *p;
		off_t off;
		size_t size;
		char *buf;
		ssize_t n;

		while (!(p = next_wanted(ra)) && !ra->stop)
			pthread_cond_wait(&ra->work, &ra->lock);
		if (ra->stop)
			break;
		p->state = PIECE_READING;
		off = p->off;
		size = p->size;
		pthread_mutex_unlock(&ra->lock);
		/* Writes queued before the piece was asked for land first; later
		 * ones change the epoch, which makes the piece worthless. */
		ra->settle(ra->settle_arg);
		buf = xmalloc(size);
		n = read_full(ra->fd, buf, size, off);
		pthread_mutex_lock(&ra->lock);
		p->err = n < 0 ? errno : 0;
		p->n = n;
		p->buf = buf;
		if (n < 0) {
			free(buf);
			p->buf = NULL;
		}
		p->state = PIECE_READY;
		pthread_cond_broadcast(&ra->done);
	}
	pthread_mutex_unlock(&ra->lock);
	return NULL;
}

struct local_ra *local_ra_create(int fd, void (*settle)(void *arg), void *arg)
{
	struct local_ra *ra = xcalloc(1, sizeof *ra);
	int err;

	ra->fd = fd;
	ra->settle = settle;
	ra->settle_arg = arg;
	ra->next_off = -1;
	pthread_mutex_init(&ra->lock, NULL);
	pthread_cond_init(&ra->work, NULL);
	pthread_cond_init(&ra->done, NULL);
	err = pthread_create(&ra->thread, NULL, reader, ra);
	if (err) {
		pthread_cond_destroy(&ra->done);
		pthread_cond_destroy(&ra->work);
		pthread_mutex_destroy(&ra->lock);
		free(ra);
		errno = err;
		return NULL;
	}
	return ra;
}

static void piece_clear(struct piece *p)
{
	free(p->buf);
	p->buf = NULL;
	p->state = PIECE_EMPTY;
}

/* Take the piece read ahead for (off, size) if there is one and the file has
 * not changed since it was asked for; NULL otherwise. Pieces a reader that
 * moved elsewhere will not want are dropped, except one being read, which
 * the next call drops. Called with the lock held. */
static char *take_piece(struct local_ra *ra, size_t size, off_t off, ssize_t *n, int *err)
{
	off_t end = off + (off_t)size * (PIECES + 1);
	struct piece *match = NULL;
	char *buf = NULL;

	for (int i = 0; i < PIECES; i++) {
		struct piece *p = &ra->pieces[i];

		if (p->state == PIECE_EMPTY)
			continue;
		/* Asked for again after a change: the newest is the one. */
		if (p->off == off && p->size == size && (!match || p->epoch > match->epoch))
			match = p;
	}
	for (int i = 0; i < PIECES; i++) {
		struct piece *p = &ra->pieces[i];

		if (p->state != PIECE_EMPTY && p != match && p->state != PIECE_READING &&
		    (p->off <= off || p->off >= end || p->size != size))
			piece_clear(p);
	}
	if (!match)
		return NULL;
	while (match->state != PIECE_READY)
		pthread_cond_wait(&ra->done, &ra->lock);
	if (match->epoch == ra->epoch && match->buf) {
		buf = match->buf;
		*n = match->n;
		*err = match->err;
		match->buf = NULL;
	}
	piece_clear(match);
	return buf;
}

/* Ask for the pieces after off that are not asked for yet, as far as free
 * slots go. Called with the lock held. */
static void want_after(struct local_ra *ra, size_t size, off_t off)
{
	for (int k = 1; k <= PIECES; k++) {
		off_t o = off + (off_t)size * k;
		struct piece *free_slot = NULL;
		bool have = false;

		for (int i = 0; i < PIECES; i++) {
			struct piece *p = &ra->pieces[i];

			if (p->state == PIECE_EMPTY)
				free_slot = free_slot ? free_slot : p;
			else if (p->off == o && p->size == size && p->epoch == ra->epoch)
				have = true;
		}
		if (have)
			continue;
		if (!free_slot)
			break;
		free_slot->off = o;
		free_slot->size = size;
		free_slot->epoch = ra->epoch;
		free_slot->state = PIECE_WANTED;
		pthread_cond_signal(&ra->work);
	}
}

ssize_t local_ra_take(struct local_ra *ra, size_t size, off_t off, char **buf)
{
	bool sequential, taken;
	ssize_t n = -1;
	int err = 0;

	pthread_mutex_lock(&ra->lock);
	*buf = take_piece(ra, size, off, &n, &err);
	taken = *buf != NULL;
	sequential = off == ra->next_off;
	ra->next_off = off + (off_t)size;
	pthread_mutex_unlock(&ra->lock);
	if (!taken) {
		*buf = xmalloc(size ? size : 1);
		n = read_full(ra->fd, *buf, size, off);
		err = errno;
	}
	if (n < 0) {
		free(*buf);
		*buf = NULL;
		errno = err ? err : EIO;
		return -1;
	}
	/* A short read was the end of the file: nothing to read ahead there. */
	if (sequential && (size_t)n == size && size > 0) {
		pthread_mutex_lock(&ra->lock);
		if (ra->next_off == off + (off_t)size)
			want_after(ra, size, off);
		pthread_mutex_unlock(&ra->lock);
	}
	return n;
}

void local_ra_changed(struct local_ra *ra)
{
	pthread_mutex_lock(&ra->lock);
	ra->epoch++;
	pthread_mutex_unlock(&ra->lock);
}

void local_ra_destroy(struct local_ra *ra)
{
	if (!ra)
		return;
	pthread_mutex_lock(&ra->lock);
	ra->stop = true;
	pthread_cond_signal(&ra->work);
	pthread_mutex_unlock(&ra->lock);
	pthread_join(ra->thread, NULL);
	for (int i = 0; i < PIECES; i++)
		free(ra->pieces[i].buf);
	pthread_cond_destroy(&ra->done);
	pthread_cond_destroy(&ra->work);
	pthread_mutex_destroy(&ra->lock);
	free(ra);
}
