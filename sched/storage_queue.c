/* One thread running storage work in order (see storage_queue.h). */
#include "storage_queue.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct piece {
	void (*run)(void *arg);
	void (*drop)(void *arg);
	void *arg;
	struct piece *next;
};

struct storage_queue {
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct piece *head, *tail;    /* protected by lock */
	bool stopping;                /* protected by lock */
	bool started;
	pthread_t thread;
};

static void *storage_queue_main(void *arg)
{
	struct storage_queue *q = arg;

	pthread_setname_np(pthread_self(), "storage-work");
	pthread_mutex_lock(&q->lock);
	for (;;) {
		struct piece *p;

		while (!q->stopping && !q->head)
			pthread_cond_wait(&q->wake, &q->lock);
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

	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->wake, NULL);
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
	if (q->tail)
		q->tail->next = p;
	else
		q->head = p;
	q->tail = p;
	pthread_cond_signal(&q->wake);
	pthread_mutex_unlock(&q->lock);
}
