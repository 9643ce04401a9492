/* When a recurring pipeline runs: `every = 0 2 * * *` (cron's five fields,
 * local time) or `every = 6h` (a period). Pure functions of epoch
 * milliseconds, so a moved clock moves them too. */
#ifndef PARSA_CRON_H
#define PARSA_CRON_H

#include <stdint.h>

struct every;

/* A cron line ("MIN HOUR DAY MONTH WEEKDAY", with *, lists, ranges, /steps,
 * jan-dec, sun-sat, and @hourly @daily @midnight @weekly @monthly @yearly) or
 * a duration of at least a minute ("6h", "90m", "1d"). NULL with errno EINVAL
 * and *err = what is wrong (no file or line: the caller adds them). */
struct every *every_parse(const char *text, char **err);
void every_destroy(struct every *e);

/* The text it was parsed from, blanks squeezed. */
const char *every_text(const struct every *e);

/* The first run strictly after after_ms. A period counts from anchor_ms
 * (anchor + k * period, k >= 1); cron ignores the anchor. -1 when there is
 * none in the next eight years. */
int64_t every_next(const struct every *e, int64_t anchor_ms, int64_t after_ms);

/* The period in seconds, 0 for a cron line. */
uint64_t every_period_s(const struct every *e);

#endif
