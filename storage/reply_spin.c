/* The learnt spin before sleeping on a reply (reply_spin.h). What is learnt
 * is the share of recent waits whose reply came within the limit, as a
 * moving average (each wait weighs 1/8): at half or more the caller spins
 * the whole limit, below it not at all. A budget that grew and shrank with
 * each wait (KVM's halt polling) fell to nothing and stayed there on a mix
 * of quick replies and a few slow ones (a CREATE the server's disk made
 * wait), which is what a checkpoint folder's tar sends. The spinner yields
 * the CPU on each turn, so that a runnable task there (the server itself,
 * on a loopback mount) goes first.
 *
 * Nobody spins while the host's CPUs are taken: with two CPU burners on
 * 2 cores, a yielding spinner saw its reply only after a burner's time slice
 * and the tar took 29.5 s against 17.1 s asleep in poll (whom the kernel
 * wakes at once). The runnable tasks the kernel counts (/proc/loadavg's
 * fourth field, the caller itself excluded) are sampled every SAMPLE_US and
 * averaged (each sample 1/8); spinning waits for that average to fall
 * below the number of CPUs. A lab host whose cores all run simulations
 * therefore never spins. (Half a CPU below was too strict for the loopback
 * server: its own threads, runnable while it answers, kept the average near
 * 1.5 on 2 cores.) */
#include "reply_spin.h"
#include "util.h"

#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#define SHARE_ONE 1024          /* the share's and the load's fixed-point 1 */
#define SHARE_WEIGHT 8          /* each wait, or load sample, counts 1/8 */
#define SAMPLE_US 50000         /* how often the runnable tasks are counted */
#define RUNNABLE_MAX 65536      /* counts above are taken as this (the fixed point stays an int) */

struct reply_spin {
	int max_us;
	_Atomic int quick_share;        /* of SHARE_ONE: recent waits within max_us */
	atomic_bool spinning;
	int loadavg_fd;                 /* /proc/loadavg; -1: the load is not looked at */
	int cpus_fixed;                 /* online CPUs, times SHARE_ONE */
	_Atomic int64_t sampled_us;     /* when the runnable tasks were last counted */
	_Atomic int others_fixed;       /* their average, the counting caller excluded, times SHARE_ONE */
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
	s->loadavg_fd = s->max_us > 0 ? open("/proc/loadavg", O_RDONLY | O_CLOEXEC) : -1;
	s->cpus_fixed = get_nprocs() * SHARE_ONE;
	atomic_init(&s->sampled_us, 0);
	/* Busy until counted: a mount on a host full of simulations never spins. */
	atomic_init(&s->others_fixed, s->loadavg_fd >= 0 ? s->cpus_fixed : 0);
	return s;
}

void reply_spin_destroy(struct reply_spin *s)
{
	if (!s)
		return;
	if (s->loadavg_fd >= 0)
		close(s->loadavg_fd);
	free(s);
}

int reply_spin_budget(const struct reply_spin *s)
{
	if (!s || s->max_us == 0)
		return 0;
	if (atomic_load(&s->others_fixed) >= s->cpus_fixed)
		return 0;
	return atomic_load(&s->quick_share) >= SHARE_ONE / 2 ? s->max_us : 0;
}

void reply_spin_learn_load(struct reply_spin *s, int runnable_others)
{
	int avg, step;

	if (!s || s->max_us == 0 || runnable_others < 0)
		return;
	if (runnable_others > RUNNABLE_MAX)
		runnable_others = RUNNABLE_MAX;
	avg = atomic_load(&s->others_fixed);
	step = runnable_others * SHARE_ONE - avg;
	/* Rounded away from zero, so that a steady count is reached, not neared. */
	avg += (step + (step > 0 ? SHARE_WEIGHT - 1 : step < 0 ? -(SHARE_WEIGHT - 1) : 0)) / SHARE_WEIGHT;
	atomic_store(&s->others_fixed, avg);
}

/* Count the runnable tasks if the last count is older than SAMPLE_US; one
 * caller counts, the others go on with the average as it is. */
static void sample_load(struct reply_spin *s, int64_t now)
{
	int64_t last = atomic_load(&s->sampled_us);
	char buf[128];
	int running, total;
	ssize_t n;

	if (s->loadavg_fd < 0 || now - last < SAMPLE_US ||
	    !atomic_compare_exchange_strong(&s->sampled_us, &last, now))
		return;
	n = pread(s->loadavg_fd, buf, sizeof buf - 1, 0);
	if (n <= 0)
		return;
	buf[n] = '\0';
	/* "0.52 0.58 0.59 R/T last-pid": R counts this caller too. */
	if (sscanf(buf, "%*s %*s %*s %d/%d", &running, &total) == 2 && running >= 1)
		reply_spin_learn_load(s, running - 1);
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
	int budget, rc = 0;

	if (!s || s->max_us == 0)
		return poll(p, 1, timeout_ms);
	start = now_us();
	sample_load(s, start);
	budget = reply_spin_budget(s);
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
