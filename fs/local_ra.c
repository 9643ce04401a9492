/* Read-ahead of one piece for a local file (see local_ra.h). */
#include "local_ra.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

enum piece_state { PIECE_EMPTY, PIECE_WANTED, PIECE_READING, PIECE_READY };

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
	/* The one piece read ahead. */
	enum piece_state state;
	off_t off;
	size_t size;
	uint64_t piece_epoch;   /* the epoch it was asked for in */
	char *buf;
	ssize_t n;
	int err;
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

static void *reader(void *arg)
{
	struct local_ra *ra = arg;

	pthread_mutex_lock(&ra->lock);
	for (;;) {
		off_t off;
		size_t size;
		char *buf;
		ssize_t n;

		while (ra->state != PIECE_WANTED && !ra->stop)
			pthread_cond_wait(&ra->work, &ra->lock);
		if (ra->stop)
			break;
		ra->state = PIECE_READING;
		off = ra->off;
		size = ra->size;
		pthread_mutex_unlock(&ra->lock);
		/* Writes queued before the piece was asked for land first; later
		 * ones change the epoch, which makes the piece worthless. */
		ra->settle(ra->settle_arg);
		buf = xmalloc(size);
		n = read_full(ra->fd, buf, size, off);
		pthread_mutex_lock(&ra->lock);
		ra->buf = buf;
		ra->n = n;
		ra->err = n < 0 ? errno : 0;
		ra->state = PIECE_READY;
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

/* Take the piece read ahead if it is (off, size) and the file has not changed
 * since it was asked for; NULL otherwise (and a stale piece is thrown away).
 * Called with the lock held. */
static char *take_piece(struct local_ra *ra, size_t size, off_t off, ssize_t *n, int *err)
{
	char *buf = NULL;

	if (ra->state == PIECE_EMPTY || ra->off != off || ra->size != size) {
		/* Somebody else's piece: leave one being read to the thread. */
		if (ra->state == PIECE_READY) {
			free(ra->buf);
			ra->buf = NULL;
			ra->state = PIECE_EMPTY;
		} else if (ra->state == PIECE_WANTED) {
			ra->state = PIECE_EMPTY;
		}
		return NULL;
	}
	while (ra->state == PIECE_READING || ra->state == PIECE_WANTED)
		pthread_cond_wait(&ra->done, &ra->lock);
	if (ra->piece_epoch == ra->epoch) {
		buf = ra->buf;
		*n = ra->n;
		*err = ra->err;
		if (*n < 0) {
			free(buf);
			buf = NULL;
		}
	} else {
		free(ra->buf);
	}
	ra->buf = NULL;
	ra->state = PIECE_EMPTY;
	return buf;
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
		if (ra->state == PIECE_EMPTY && ra->next_off == off + (off_t)size) {
			ra->off = off + (off_t)size;
			ra->size = size;
			ra->piece_epoch = ra->epoch;
			ra->state = PIECE_WANTED;
			pthread_cond_signal(&ra->work);
		}
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
	free(ra->buf);
	pthread_cond_destroy(&ra->done);
	pthread_cond_destroy(&ra->work);
	pthread_mutex_destroy(&ra->lock);
	free(ra);
}
