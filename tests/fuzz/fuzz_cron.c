/* libFuzzer harness for `every =` (lib/cron.c): cron lines, @aliases and
 * periods. Its promises: a refusal is EINVAL with a message; an accepted
 * rule gives a next run strictly after the moment asked (or -1), on a
 * minute for a cron line and on anchor + k * period for a period, and that
 * run is its own successor's predecessor (asking again from just before it
 * finds it again). Run in UTC, so that a clock change cannot move a minute. */
#include "cron.h"
#include "fuzz.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

FUZZ_IN_UTC

/* Moments around which the next run is asked: 2026-01-01, a leap day, the
 * last minute of a year, the epoch, and half an hour before the clock
 * changes of Europe (2026-03-29) and the US (2026-11-01), for PARSA_FUZZ_TZ. */
static const int64_t moments[] = { 1767225600000LL, 1709164800123LL, 1798761599000LL, 0,
				   1774744200000LL, 1793511000000LL };

static void check_every(const struct every *e)
{
	uint64_t period = every_period_s(e);
	const char *text = every_text(e);

	if (!text)
		abort();
	if (period && period < 60)
		abort();
	for (size_t i = 0; i < sizeof moments / sizeof *moments; i++) {
		int64_t after = moments[i], anchor = moments[i] - 1000;
		int64_t next = every_next(e, anchor, after);

		if (next == -1)
			continue;
		if (next <= after)
			abort();
		if (period ? (next - anchor) % (int64_t)(period * 1000) != 0 : next % 60000 != 0)
			abort();
		if (every_next(e, anchor, next - 1) != next)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct every *e;
	char *text, *err = NULL;

	if (size > 512)
		return 0;
	text = fuzz_text(data, size);
	errno = 0;
	e = every_parse(text, &err);
	if (e) {
		if (err)
			abort();
		check_every(e);
		every_destroy(e);
	} else {
		fuzz_refused(err);
	}
	free(text);
	return 0;
}
