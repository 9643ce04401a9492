/* Read-ahead hints from a thread (see prefetch.h). */
#include "prefetch.h"
#include "util.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

/* A sequential reader keeps four hints of 4 MiB in flight; a few readers fit. */
#define PREFETCH_QUEUE 64

struct hint {
	int fd;                 /* a duplicate, closed once the hint is given */
	off_t off;
	size_t len;
};

struct prefetch {
	pthread_mutex_t lock;   /* guards the fields below */
	pthread_cond_t work;    /* a hint was queued, or stop */
	pthread_t thread;
	bool started;
	bool stop;
	struct hint queue[PREFETCH_QUEUE];
	unsigned int head;
	unsigned int count;
};

static void *prefetch_main(void *arg)
{
	struct prefetch *p = arg;

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		struct hint h;

		if (!p->count) {
			pthread_cond_wait(&p->work, &p->lock);
			continue;
		}
		h = p->queue[p->head];
		p->head = (p->head + 1) % PREFETCH_QUEUE;
		p->count--;
		pthread_mutex_unlock(&p->lock);
		posix_fadvise(h.fd, h.off, (off_t)h.len, POSIX_FADV_WILLNEED);
		close(h.fd);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

struct prefetch *prefetch_create(void)
{
	struct prefetch *p = xcalloc(1, sizeof *p);

	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	return p;
}

void prefetch_destroy(struct prefetch *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->lock);
	if (p->started)
		pthread_join(p->thread, NULL);
	for (; p->count; p->count--, p->head = (p->head + 1) % PREFETCH_QUEUE)
		close(p->queue[p->head].fd);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

void prefetch_ask(struct prefetch *p, int fd, off_t off, size_t len)
{
	bool queued = false;

	pthread_mutex_lock(&p->lock);
	if (!p->started && !p->stop && pthread_create(&p->thread, NULL, prefetch_main, p) == 0)
		p->started = true;
	if (p->started && !p->stop && p->count < PREFETCH_QUEUE) {
		int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);

		if (copy >= 0) {
			p->queue[(p->head + p->count) % PREFETCH_QUEUE] =
				(struct hint){ .fd = copy, .off = off, .len = len };
			p->count++;
			pthread_cond_signal(&p->work);
			queued = true;
		}
	}
	pthread_mutex_unlock(&p->lock);
	if (!queued)
		posix_fadvise(fd, off, (off_t)len, POSIX_FADV_WILLNEED);
}
