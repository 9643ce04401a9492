/* The learnt spin before sleeping on a reply (reply_spin.h). What is learnt
 * is the share of recent waits whose reply came within the limit, as a
 * moving average (each wait weighs 1/8): at half or more the caller spins
 * the whole limit, below it not at all. A budget that grew and shrank with
 * each wait (KVM's halt polling) fell to nothing and stayed there on a mix
 * of quick replies and a few slow ones (a CREATE the server's disk made
 * wait), which is what a checkpoint folder's tar sends. The spinner yields
 * the CPU on each turn, so that a runnable task there (the server itself,
 * on a loopback mount) goes first. */
#include "reply_spin.h"
#include "util.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#define SHARE_ONE 1024          /* the share's fixed-point 1 */
#define SHARE_WEIGHT 8          /* each wait counts 1/8 */

struct reply_spin {
	int max_us;
	_Atomic int quick_share;        /* of SHARE_ONE: recent waits within max_us */
	atomic_bool spinning;
};

static int64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

struct reply_spin *reply_spin_create(int max_us)
{
	struct reply_spin *s = xcalloc(1, sizeof *s);

	s->max_us = max_us > 0 ? max_us : 0;
	/* Quick until shown otherwise: a mount's first replies spin. */
	atomic_init(&s->quick_share, SHARE_ONE);
	atomic_init(&s->spinning, false);
	return s;
}

void reply_spin_destroy(struct reply_spin *s)
{
	free(s);
}

int reply_spin_budget(const struct reply_spin *s)
{
	if (!s || s->max_us == 0)
		return 0;
	return atomic_load(&s->quick_share) >= SHARE_ONE / 2 ? s->max_us : 0;
}

void reply_spin_learn(struct reply_spin *s, int64_t waited_us)
{
	int share;

	if (!s || s->max_us == 0)
		return;
	share = atomic_load(&s->quick_share);
	share += ((waited_us <= s->max_us ? SHARE_ONE : 0) - share) / SHARE_WEIGHT;
	/* Callers learn at once; a lost update only delays the next change. */
	atomic_store(&s->quick_share, share);
}

int reply_spin_poll(struct reply_spin *s, struct pollfd *p, int timeout_ms)
{
	int64_t start, until;
	int budget = reply_spin_budget(s), rc = 0;

	if (!s || s->max_us == 0)
		return poll(p, 1, timeout_ms);
	start = now_us();
	if (budget > 0 && !atomic_exchange(&s->spinning, true)) {
		until = start + budget;
		while ((rc = poll(p, 1, 0)) == 0 && now_us() < until)
			sched_yield();
		atomic_store(&s->spinning, false);
	}
	if (rc == 0)
		rc = poll(p, 1, timeout_ms);
	if (rc >= 0)
		reply_spin_learn(s, rc > 0 ? now_us() - start : INT64_MAX);
	return rc;
}
