/* The writes a mount has sent to one file and not yet seen answered, as byte
 * ranges. An NFS server may apply requests in any order (nfs-ganesha runs
 * them on several threads), so a write or read overlapping one of these must
 * wait for it. Not locked: the owner holds its own lock around every call. */
#ifndef PARSA_INFLIGHT_H
#define PARSA_INFLIGHT_H

#include <stdbool.h>
#include <stdint.h>

struct inflight;
struct inflight_range;

struct inflight *inflight_create(void);
/* Ranges still in the set are freed too. */
void inflight_destroy(struct inflight *set);

/* [off, off + len) sent on behalf of owner; the handle goes to remove. */
struct inflight_range *inflight_add(struct inflight *set, uint64_t off, uint64_t len,
				    const void *owner);
void inflight_remove(struct inflight *set, struct inflight_range *r);
bool inflight_empty(const struct inflight *set);

/* Which ranges inflight_overlap looks at. */
enum inflight_whose {
	INFLIGHT_ANY,
	INFLIGHT_MINE,          /* only those of owner */
	INFLIGHT_OTHERS,        /* only those of other owners */
};

/* The owner of a range overlapping [off, end), among those whose says, or
 * NULL if none. A writer appending past everything in flight is answered
 * without looking at each range. */
const void *inflight_overlap(const struct inflight *set, uint64_t off, uint64_t end,
			     const void *owner, enum inflight_whose whose);

#endif
