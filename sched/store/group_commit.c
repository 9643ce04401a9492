/* The group commit queue (see group_commit.h): a mutex, one condition for
 * "a group ended", and a singly linked queue with a tail pointer. */
#include "group_commit.h"
#include "util.h"

#include <pthread.h>
#include <stdlib.h>

struct group_commit {
	group_commit_fn fn;
	void *arg;
	pthread_mutex_t lock;
	pthread_cond_t ended;         /* a group was committed */
	struct group_item *head;      /* waiting; protected by lock */
	struct group_item **tail;     /* protected by lock */
	bool leading;                 /* a group is being committed; protected by lock */
	size_t ngroups, nitems;       /* protected by lock */
	struct group_item **batch;    /* the leader's (leading) */
	size_t batch_cap;
};

struct group_commit *group_commit_create(group_commit_fn fn, void *arg)
{
	struct group_commit *g = xcalloc(1, sizeof *g);

	g->fn = fn;
	g->arg = arg;
	g->tail = &g->head;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->ended, NULL);
	return g;
}

void group_commit_destroy(struct group_commit *g)
{
	if (!g)
		return;
	pthread_cond_destroy(&g->ended);
	pthread_mutex_destroy(&g->lock);
	free(g->batch);
	free(g);
}

/* Lock held, leading: take the whole queue into g->batch. */
static size_t take_queue(struct group_commit *g)
{
	size_t n = 0;

	for (struct group_item *it = g->head; it; it = it->next) {
		if (n == g->batch_cap) {
			g->batch_cap = g->batch_cap ? g->batch_cap * 2 : 16;
			g->batch = xrealloc(g->batch, g->batch_cap * sizeof *g->batch);
		}
		g->batch[n++] = it;
	}
	g->head = NULL;
	g->tail = &g->head;
	return n;
}

void group_commit_run(struct group_commit *g, struct group_item *item)
{
	item->next = NULL;
	item->done = false;
	pthread_mutex_lock(&g->lock);
	*g->tail = item;
	g->tail = &item->next;
	while (!item->done) {
		size_t n;

		if (g->leading) {
			pthread_cond_wait(&g->ended, &g->lock);
			continue;
		}
		/* Ours is queued and nobody commits: we lead everything queued,
		 * which arrived while the previous group was committed. */
		g->leading = true;
		n = take_queue(g);
		pthread_mutex_unlock(&g->lock);
		g->fn(g->arg, g->batch, n);
		pthread_mutex_lock(&g->lock);
		for (size_t i = 0; i < n; i++)
			g->batch[i]->done = true;
		g->ngroups++;
		g->nitems += n;
		g->leading = false;
		/* The waiters of this group return; one of the rest leads next. */
		pthread_cond_broadcast(&g->ended);
	}
	pthread_mutex_unlock(&g->lock);
}

void group_commit_counts(struct group_commit *g, size_t *groups, size_t *items)
{
	pthread_mutex_lock(&g->lock);
	*groups = g->ngroups;
	*items = g->nitems;
	pthread_mutex_unlock(&g->lock);
}

size_t group_commit_queued(struct group_commit *g)
{
	size_t n = 0;

	pthread_mutex_lock(&g->lock);
	for (struct group_item *it = g->head; it; it = it->next)
		n++;
	pthread_mutex_unlock(&g->lock);
	return n;
}

bool group_commit_leading(struct group_commit *g)
{
	bool leading;

	pthread_mutex_lock(&g->lock);
	leading = g->leading;
	pthread_mutex_unlock(&g->lock);
	return leading;
}
