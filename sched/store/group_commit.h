/* Group commit: callers that each need a piece of work committed join a
 * queue; one of them (the leader) takes everything queued, commits it in one
 * go through a callback, and wakes the others, each of whom returns only
 * after the commit that contained its own item. Used by engine_submit.c:
 * concurrent submissions share one sqlite transaction. */
#ifndef PARSA_GROUP_COMMIT_H
#define PARSA_GROUP_COMMIT_H

#include <stdbool.h>
#include <stddef.h>

/* Embedded in the caller's own struct; the callback finds it again there. */
struct group_item {
	struct group_item *next;   /* the queue's */
	bool done;                 /* the queue's */
};

/* Commits items[0..n) (queue order) in one go; whatever each item's result
 * is goes into the caller's struct around it. Called with no lock of the
 * queue's held, by one thread at a time. */
typedef void (*group_commit_fn)(void *arg, struct group_item *const *items, size_t n);

struct group_commit;

struct group_commit *group_commit_create(group_commit_fn fn, void *arg);
/* No caller may be inside group_commit_run. */
void group_commit_destroy(struct group_commit *g);

/* Queue item and return once a call of fn that contained it has returned:
 * this thread leads a group when no group is being committed, else it waits
 * for the group in flight and then leads (or is part of) the next one. */
void group_commit_run(struct group_commit *g, struct group_item *item);

/* How many groups and items were committed; how many items wait for the
 * next group; is a group being committed (for tests and stats). */
void group_commit_counts(struct group_commit *g, size_t *groups, size_t *items);
size_t group_commit_queued(struct group_commit *g);
bool group_commit_leading(struct group_commit *g);

#endif
