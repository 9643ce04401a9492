/* Read-ahead from threads (see prefetch.h). */
#include "prefetch.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <unistd.h>

/* A sequential reader keeps four hints of 4 MiB in flight; a few readers fit. */
#define PREFETCH_QUEUE 64
/* A thread waits for the disk while it reads ahead: readers of several files
 * at once each need one, a few are enough to keep a disk busy. The hints of
 * one file are given one at a time, in order: two threads reading one file
 * at two places make the kernel's read-ahead of it small (~1 MiB disk
 * requests against ~3.4 MiB). */
#define PREFETCH_THREADS 4

struct hint {
	int key;                /* the caller's descriptor: its hints go in order (a
				 * number reused after a close only orders two files) */
	int fd;                 /* a duplicate, closed once the hint is given */
	off_t off;
	size_t len;
};

struct prefetch {
	pthread_mutex_t lock;   /* guards the fields below but devnull */
	pthread_cond_t work;    /* a hint was queued, or stop */
	pthread_t threads[PREFETCH_THREADS];
	int busy_key[PREFETCH_THREADS]; /* the key each thread gives, or -1 */
	unsigned int started;
	unsigned int idle;      /* threads waiting for a hint */
	bool stop;
	struct hint queue[PREFETCH_QUEUE];
	unsigned int head;
	unsigned int count;
	int devnull;            /* where read-ahead data goes; -1: hints only */
};

/* posix_fadvise(WILLNEED) reads page by page (4 KiB folios, disk requests of
 * ~1 MiB here, against ~3.4 MiB for the kernel's sequential read-ahead) and
 * does not wait: the fallback, and what is done in place. */
static void hint_only(int fd, off_t off, size_t len)
{
	posix_fadvise(fd, off, (off_t)len, POSIX_FADV_WILLNEED);
}

/* Read the range into the page cache: splicing a file to /dev/null takes
 * references to its pages, reading them ahead as a sequential reader would,
 * and drops them; nothing is copied. */
static void read_ahead(const struct prefetch *p, const struct hint *h)
{
	off_t off = h->off;
	size_t left = h->len;

	while (left > 0 && p->devnull >= 0) {
		ssize_t n = sendfile(p->devnull, h->fd, &off, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			return; /* end of file */
		if (n < 0)
			break;  /* a file that cannot be spliced */
		left -= (size_t)n;
	}
	if (left > 0)
		hint_only(h->fd, off, left);
}

/* Whether a thread is giving a hint of key. Called with p->lock held. */
static bool key_busy(const struct prefetch *p, int key)
{
	for (unsigned int t = 0; t < p->started; t++)
		if (p->busy_key[t] == key)
			return true;
	return false;
}

/* Whether a hint of key waits in the queue. Called with p->lock held. */
static bool key_queued(const struct prefetch *p, int key)
{
	for (unsigned int i = 0; i < p->count; i++)
		if (p->queue[(p->head + i) % PREFETCH_QUEUE].key == key)
			return true;
	return false;
}

/* Take out the first queued hint of a key no thread is giving; false if
 * there is none. Called with p->lock held. */
static bool take_hint(struct prefetch *p, struct hint *h)
{
	for (unsigned int i = 0; i < p->count; i++) {
		unsigned int at = (p->head + i) % PREFETCH_QUEUE;

		if (key_busy(p, p->queue[at].key))
			continue;
		*h = p->queue[at];
		/* Close the gap: the hints before it move up one place. */
		for (; i > 0; i--, at = (at + PREFETCH_QUEUE - 1) % PREFETCH_QUEUE)
			p->queue[at] = p->queue[(at + PREFETCH_QUEUE - 1) % PREFETCH_QUEUE];
		p->head = (p->head + 1) % PREFETCH_QUEUE;
		p->count--;
		return true;
	}
	return false;
}

struct worker {
	struct prefetch *p;
	unsigned int index;
};

static void *prefetch_main(void *arg)
{
	struct prefetch *p = ((struct worker *)arg)->p;
	unsigned int me = ((struct worker *)arg)->index;

	free(arg);
	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		struct hint h;

		if (!take_hint(p, &h)) {
			p->idle++;
			pthread_cond_wait(&p->work, &p->lock);
			p->idle--;
			continue;
		}
		p->busy_key[me] = h.key;
		pthread_mutex_unlock(&p->lock);
		read_ahead(p, &h);
		close(h.fd);
		pthread_mutex_lock(&p->lock);
		p->busy_key[me] = -1;  /* its next hint is taken on the next turn */
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* Start one more thread. Called with p->lock held. */
static void start_thread(struct prefetch *p)
{
	struct worker *w = xmalloc(sizeof *w);

	*w = (struct worker){ .p = p, .index = p->started };
	p->busy_key[p->started] = -1;
	if (pthread_create(&p->threads[p->started], NULL, prefetch_main, w) == 0)
		p->started++;
	else
		free(w);
}

struct prefetch *prefetch_create(void)
{
	struct prefetch *p = xcalloc(1, sizeof *p);

	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	p->devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	return p;
}

void prefetch_destroy(struct prefetch *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->lock);
	for (unsigned int i = 0; i < p->started; i++)
		pthread_join(p->threads[i], NULL);
	for (; p->count; p->count--, p->head = (p->head + 1) % PREFETCH_QUEUE)
		close(p->queue[p->head].fd);
	if (p->devnull >= 0)
		close(p->devnull);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

void prefetch_ask(struct prefetch *p, int fd, off_t off, size_t len)
{
	bool queued = false;

	pthread_mutex_lock(&p->lock);
	/* One more thread when every one is busy and this file is not: its
	 * hints wait for the thread that gives one of them. */
	if (!p->stop && !p->idle && p->started < PREFETCH_THREADS && !key_busy(p, fd) &&
	    !key_queued(p, fd))
		start_thread(p);
	if (p->started && !p->stop && p->count < PREFETCH_QUEUE) {
		int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);

		if (copy >= 0) {
			p->queue[(p->head + p->count) % PREFETCH_QUEUE] =
				(struct hint){ .key = fd, .fd = copy, .off = off, .len = len };
			p->count++;
			pthread_cond_signal(&p->work);
			queued = true;
		}
	}
	pthread_mutex_unlock(&p->lock);
	if (!queued)
		hint_only(fd, off, len);
}
