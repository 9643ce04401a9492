/* The writes in flight of one file: overlap by owner, the sequential writer's
 * short cut (a write beyond everything never looks at the ranges, and never
 * finds one), ranges answered in any order, and an emptied set forgetting
 * its span. */
#include "inflight.h"
#include "tap.h"

#include <stdlib.h>

TAP_STATE;

int main(void)
{
	struct inflight *set = inflight_create();
	struct inflight_range *r[4];
	int me, other;

	ok(inflight_empty(set), "a new set is empty");
	ok(inflight_overlap(set, 0, UINT64_MAX, NULL, INFLIGHT_OTHERS) == NULL, "nothing overlaps an empty set");

	r[0] = inflight_add(set, 0, 100, &me);
	r[1] = inflight_add(set, 100, 100, &me);
	r[2] = inflight_add(set, 500, 10, &other);
	ok(!inflight_empty(set), "not empty after adds");
	ok(inflight_overlap(set, 200, 300, &me, INFLIGHT_ANY) == NULL, "the gap [200, 300) overlaps nothing");
	ok(inflight_overlap(set, 199, 200, &me, INFLIGHT_MINE) == &me, "the last byte of a range overlaps");
	ok(inflight_overlap(set, 200, 201, &me, INFLIGHT_MINE) == NULL, "an adjacent range does not");
	ok(inflight_overlap(set, 50, 60, &me, INFLIGHT_OTHERS) == NULL, "only my ranges there: none of others");
	ok(inflight_overlap(set, 0, 1000, &me, INFLIGHT_OTHERS) == &other, "another owner's range is found");
	ok(inflight_overlap(set, 505, 506, NULL, INFLIGHT_OTHERS) == &other, "owner NULL: every range counts");
	ok(inflight_overlap(set, 510, 4096, &me, INFLIGHT_ANY) == NULL, "a write beyond everything finds nothing");
	ok(inflight_overlap(set, 10, 10, &me, INFLIGHT_ANY) == NULL, "an empty range overlaps nothing");

	inflight_remove(set, r[1]);
	ok(inflight_overlap(set, 150, 160, &me, INFLIGHT_ANY) == NULL, "an answered range is gone");
	ok(inflight_overlap(set, 90, 160, &me, INFLIGHT_ANY) == &me, "its neighbour stays");
	inflight_remove(set, r[0]);
	inflight_remove(set, r[2]);
	ok(inflight_empty(set), "empty once every range is answered");
	r[3] = inflight_add(set, 1000, 10, &me);
	ok(inflight_overlap(set, 0, 1000, &me, INFLIGHT_ANY) == NULL, "the span starts anew after emptying");
	ok(inflight_overlap(set, UINT64_MAX - 5, UINT64_MAX, &me, INFLIGHT_ANY) == NULL, "far past the end");
	r[3] = inflight_add(set, UINT64_MAX - 10, 100, &other);
	ok(inflight_overlap(set, UINT64_MAX - 1, UINT64_MAX, &me, INFLIGHT_OTHERS) == &other,
	   "a range reaching the end of the offsets is clipped, not wrapped");
	inflight_destroy(set);   /* frees what is still in it */
	return done_testing();
}
