/* Burning CPU time for the unit tests that measure it (runner/usage.h,
 * runner/cgroup.h): a loop until this thread has used ms of CPU, whatever
 * else the machine does. */
#ifndef PARSA_TEST_BURN_H
#define PARSA_TEST_BURN_H

#include <time.h>

static inline void burn_ms(int ms)
{
	struct timespec a, b;
	volatile unsigned long x = 0;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
	do {
		for (int i = 0; i < 100000; i++)
			x += (unsigned long)i;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

#endif
