/* How long a caller about to sleep on a server's reply polls for it first.
 * On loopback or a fast LAN an NFS reply comes in tens of microseconds, and
 * a sleep and wake-up on each side costs as much again on a small VM. A
 * caller spins up to the limit while most recent replies came within it
 * and a CPU is free (the host's runnable tasks, averaged), and sleeps at
 * once otherwise; one caller of a backend spins at a time. */
#ifndef PARSA_REPLY_SPIN_H
#define PARSA_REPLY_SPIN_H

#include <poll.h>
#include <stdint.h>

struct reply_spin;

/* max_us: the longest spin (0: never spin, poll only sleeps). */
struct reply_spin *reply_spin_create(int max_us);
void reply_spin_destroy(struct reply_spin *s);

/* poll(p, 1, timeout_ms) for a reply: spins first where replies have been
 * quick and no other caller spins, then sleeps; how long the descriptor
 * took to become ready is learnt. A NULL s only sleeps. */
int reply_spin_poll(struct reply_spin *s, struct pollfd *p, int timeout_ms);

/* The spin a caller would be given now, in microseconds (for tests and the
 * mount's status). */
int reply_spin_budget(const struct reply_spin *s);

/* What one wait taught: the reply came after waited_us (or not within the
 * wait: waited_us above the limit). reply_spin_poll calls it itself. */
void reply_spin_learn(struct reply_spin *s, int64_t waited_us);

/* One count of the host's runnable tasks besides the caller (reply_spin_poll
 * counts them itself, from /proc/loadavg, every 50 ms). */
void reply_spin_learn_load(struct reply_spin *s, int runnable_others);

#endif
