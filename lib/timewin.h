/* Calendar rules people write in specs and flags, in the local time zone:
 * windows of the week ("22:00-07:00", "sat,sun 00:00-24:00; mon-fri
 * 20:00-08:00") and start times ("2026-12-24T22:00", "+2h"). Pure functions
 * of epoch milliseconds: whoever asks passes the time, so a moved clock moves
 * them too. */
#ifndef PARSA_TIMEWIN_H
#define PARSA_TIMEWIN_H

#include <stdbool.h>
#include <stdint.h>

struct timewin;

/* Parse a window. NULL with errno EINVAL and *err = what is wrong and how to
 * write it (no file or line: the caller adds them). */
struct timewin *timewin_parse(const char *text, char **err);
void timewin_destroy(struct timewin *w);

/* The text it was parsed from, blanks squeezed. */
const char *timewin_text(const struct timewin *w);

/* Is the moment ms inside the window? */
bool timewin_contains(const struct timewin *w, int64_t ms);

/* The first moment after ms (at a minute boundary) at which timewin_contains()
 * changes; -1 when it never does (a window open all week). */
int64_t timewin_next_change(const struct timewin *w, int64_t ms);

/* A start time: "2026-12-24T22:00", "2026-12-24T22:00:30", "2026-12-24 22:00"
 * or "2026-12-24" (local time), which sets *at_s (epoch seconds) and *in_s = 0,
 * or "+DURATION" ("+2h", "+90m"), which sets *in_s and *at_s = 0. 0, or -1 with
 * errno EINVAL and *err. */
int timewin_parse_start(const char *text, int64_t *at_s, int64_t *in_s, char **err);

#endif
