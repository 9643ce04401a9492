/* One thread running storage work in order (see storage_queue.h). */
#include "storage_queue.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct piece {
	void (*run)(void *arg);
	void (*drop)(void *arg);
	void *arg;
	int64_t due_ms;               /* monotonic; 0: at once */
	struct piece *next;
};

struct storage_queue {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct piece *head, *tail;    /* protected by lock */
	struct piece *later;          /* by due_ms, earliest first; protected by lock */
	bool stopping;                /* protected by lock */
	bool started;
	pthread_t thread;
};

/* Lock held: p at the end of the pieces to run now. */
static void append_locked(struct storage_queue *q, struct piece *p)
{
	p->next = NULL;
	if (q->tail)
		q->tail->next = p;
	else
		q->head = p;
	q->tail = p;
}

/* Lock held: the later pieces whose time has come join the others. */
static void move_due_locked(struct storage_queue *q, int64_t now)
{
	while (q->later && q->later->due_ms <= now) {
		struct piece *p = q->later;

		q->later = p->next;
		append_locked(q, p);
	}
}

static void *storage_queue_main(void *arg)
{
	struct storage_queue *q = arg;

	pthread_setname_np(pthread_self(), "storage-work");
	pthread_mutex_lock(&q->lock);
	for (;;) {
		struct piece *p;

		for (;;) {
			move_due_locked(q, time_mono_ms());
			if (q->stopping || q->head)
				break;
			if (q->later) {
				int64_t left = q->later->due_ms - time_mono_ms();
				struct timespec until = time_mono_deadline(left > 0 ? left : 0);

				pthread_cond_timedwait(&q->wake, &q->lock, &until);
			} else {
				pthread_cond_wait(&q->wake, &q->lock);
			}
		}
		if (q->stopping)
			break;
		p = q->head;
		q->head = p->next;
		if (!q->head)
			q->tail = NULL;
		/* The piece takes the engine's lock to hand its result back: never
		 * hold ours meanwhile, so that posting never waits for storage. */
		pthread_mutex_unlock(&q->lock);
		p->run(p->arg);
		free(p);
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

struct storage_queue *storage_queue_create(void)
{
	struct storage_queue *q = xcalloc(1, sizeof *q);
	pthread_condattr_t attr;

	pthread_mutex_init(&q->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&q->wake, &attr);
	pthread_condattr_destroy(&attr);
	return q;
}

int storage_queue_start(struct storage_queue *q, char **err)
{
	int rc = pthread_create(&q->thread, NULL, storage_queue_main, q);

	if (rc != 0) {
		errno = rc;
		return errprintf(err, "cannot start the storage thread: %s", strerror(rc));
	}
	q->started = true;
	return 0;
}

void storage_queue_destroy(struct storage_queue *q)
{
	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stopping = true;
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
	if (q->started)
		pthread_join(q->thread, NULL);
	move_due_locked(q, INT64_MAX);
	while (q->head) {
		struct piece *p = q->head;

		q->head = p->next;
		p->drop(p->arg);
		free(p);
	}
	pthread_cond_destroy(&q->wake);
	pthread_mutex_destroy(&q->lock);
	free(q);
}

void storage_queue_post(struct storage_queue *q, void (*run)(void *arg), void (*drop)(void *arg),
			void *arg)
{
	struct piece *p = xcalloc(1, sizeof *p);

	p->run = run;
	p->drop = drop;
	p->arg = arg;
	pthread_mutex_lock(&q->lock);
	append_locked(q, p);
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
}

void storage_queue_post_after(struct storage_queue *q, int64_t delay_ms, void (*run)(void *arg),
			      void (*drop)(void *arg), void *arg)
{
	struct piece *p = xcalloc(1, sizeof *p), **at;

	p->run = run;
	p->drop = drop;
	p->arg = arg;
	p->due_ms = time_mono_ms() + (delay_ms > 0 ? delay_ms : 0);
	pthread_mutex_lock(&q->lock);
	/* After those due at the same time: the order they came in. */
	for (at = &q->later; *at && (*at)->due_ms <= p->due_ms; at = &(*at)->next)
		;
	p->next = *at;
	*at = p;
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
}
