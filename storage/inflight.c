/* Writes in flight to one file (see inflight.h): a doubly linked list, for
 * removal in any order as the answers come, and the span [lo, hi) of
 * everything added since the set was last empty, so that a sequential writer
 * (each write beyond the last) never walks the list. */
#include "inflight.h"
#include "util.h"

#include <stdlib.h>

struct inflight_range {
	uint64_t off, end;
	const void *owner;
	struct inflight_range *prev, *next;
};

struct inflight {
	struct inflight_range *head;
	uint64_t lo, hi;        /* covers every range in the list (maybe more) */
};

struct inflight *inflight_create(void)
{
	struct inflight *set = xcalloc(1, sizeof *set);

	set->lo = UINT64_MAX;
	return set;
}

void inflight_destroy(struct inflight *set)
{
	if (!set)
		return;
	while (set->head)
		inflight_remove(set, set->head);
	free(set);
}

struct inflight_range *inflight_add(struct inflight *set, uint64_t off, uint64_t len,
				    const void *owner)
{
	struct inflight_range *r = xcalloc(1, sizeof *r);

	r->off = off;
	r->end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
	r->owner = owner;
	r->next = set->head;
	if (set->head)
		set->head->prev = r;
	set->head = r;
	if (r->off < set->lo)
		set->lo = r->off;
	if (r->end > set->hi)
		set->hi = r->end;
	return r;
}

void inflight_remove(struct inflight *set, struct inflight_range *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		set->head = r->next;
	if (r->next)
		r->next->prev = r->prev;
	free(r);
	if (!set->head) {
		set->lo = UINT64_MAX;
		set->hi = 0;
	}
}

bool inflight_empty(const struct inflight *set)
{
	return set->head == NULL;
}

const void *inflight_overlap(const struct inflight *set, uint64_t off, uint64_t end,
			     const void *owner, enum inflight_whose whose)
{
	if (!set->head || off >= set->hi || end <= set->lo || off >= end)
		return NULL;
	for (const struct inflight_range *r = set->head; r; r = r->next) {
		if (whose == INFLIGHT_MINE && r->owner != owner)
			continue;
		if (whose == INFLIGHT_OTHERS && r->owner == owner)
			continue;
		if (r->off < end && off < r->end)
			return r->owner;
	}
	return NULL;
}
