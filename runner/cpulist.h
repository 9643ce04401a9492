/* Lists of small numbers in the kernel's list syntax, "0-3,8,10-11": the
 * cores an instance is pinned to ($PARSA_CPU_LIST, the same text as
 * Cpus_allowed_list in /proc/self/status) and its GPU indices, which are
 * written without ranges ("0,1", as CUDA_VISIBLE_DEVICES wants them). Pure
 * functions, no allocation: the supervisor's child calls cpulist_to_set()
 * between fork and exec. */
#ifndef PARSA_RUNNER_CPULIST_H
#define PARSA_RUNNER_CPULIST_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

/* The largest number a list may hold (CPU_SETSIZE - 1 on glibc). */
#define CPULIST_MAX_ID (CPU_SETSIZE - 1)

/* Parse text into ids (ascending, no repeats), at most max of them. Blanks
 * around items and a trailing newline are allowed; "" is the empty list.
 * Returns how many, or -1 with errno EINVAL (not a list, a range backwards, a
 * number past CPULIST_MAX_ID) or E2BIG (more than max). */
int cpulist_parse(const char *text, int *ids, size_t max);

/* Write ids (any order; repeats are dropped) as a list into buf: with
 * ranges, runs of two or more as "0-1" as the kernel writes them, else
 * every id ("0,1,2,3").
 * Returns the length, or -1 with errno ENOSPC when buf is too small (buf is
 * then ""). */
int cpulist_format(const int *ids, size_t n, bool ranges, char *buf, size_t len);

/* The set of the cores of text. 0, or -1 with errno EINVAL. Async-signal-safe. */
int cpulist_to_set(const char *text, cpu_set_t *set);

#endif
