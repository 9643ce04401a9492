/* The clock every time decision is made by: start times, windows, schedules,
 * backfill and walltime. Normally the system clock. With a clock file (a test
 * facility: parsa-sched and parsa-runner --clock-file PATH) it is the time the
 * file says, read again whenever it changes, so a test moves a running
 * daemon's clock by replacing the file instead of waiting hours:
 *   +1h30m, -90s, +3600       the system clock moved by this much
 *   2030-01-07T06:59:58       this local time, flowing on from when the file
 *   @1893999598               was written (epoch seconds for the second form)
 * A file that is missing or empty means the system clock; a file that does
 * not parse keeps the last good value (and is logged once). Liveness timeouts
 * (heartbeats, long polls) never use it: they stay on the real monotonic clock.
 * Thread-safe. */
#ifndef PARSA_CLOCK_H
#define PARSA_CLOCK_H

#include <stdint.h>

struct clock;

/* file may be NULL: the system clock. Never fails for a missing file. */
struct clock *clock_create(const char *file);
void clock_destroy(struct clock *c);

/* Wall-clock time in epoch milliseconds. c may be NULL: the system clock. */
int64_t clock_now_ms(struct clock *c);

/* A monotonic time that moves with the clock file: the real monotonic clock
 * plus the file's offset, for deadlines measured as durations (walltime). */
int64_t clock_mono_ms(struct clock *c);

/* How far the clock is from the system clock (ms): 0 without a file. */
int64_t clock_offset_ms(struct clock *c);

/* Parse clock file text into its offset from the system clock (ms), given the
 * file's modification time. 0, or -1 with errno EINVAL. */
int clock_parse(const char *text, int64_t mtime_ms, int64_t *offset_ms);

#endif
