/* libFuzzer harness for time windows and start times (lib/timewin.c). Its
 * promises: a refusal is EINVAL with a message; for an accepted window the
 * next change is after the moment asked, at a minute, and really a change
 * (inside differs there from inside now), or -1 only when the window never
 * changes. Run in UTC, so that a clock change cannot move a minute. */
#include "fuzz.h"
#include "timewin.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

FUZZ_IN_UTC

/* 2026-01-01, mid-minute on a leap day, the last moment of a year. Not a
 * day the clocks change (with PARSA_FUZZ_TZ): next_change is an hour off
 * there by design (lib/timewin.c), only contains() is exact. */
static const int64_t moments[] = { 1767225600000LL, 1709164830500LL, 1798761599999LL };

static void check_window(const struct timewin *w)
{
	if (!timewin_text(w))
		abort();
	for (size_t i = 0; i < sizeof moments / sizeof *moments; i++) {
		int64_t ms = moments[i], next = timewin_next_change(w, ms);
		bool in = timewin_contains(w, ms);

		if (next == -1) {
			/* Never changes: the same a day and a half later. */
			if (timewin_contains(w, ms + 36 * 3600 * 1000LL) != in)
				abort();
			continue;
		}
		if (next <= ms || next % 60000 != 0 || next - ms > 7 * 24 * 3600 * 1000LL)
			abort();
		if (timewin_contains(w, next) == in || timewin_contains(w, next - 1) != in)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct timewin *w;
	int64_t at_s = -1, in_s = -1;
	char *text, *err = NULL;

	if (size > 1024)
		return 0;
	text = fuzz_text(data, size);
	errno = 0;
	w = timewin_parse(text, &err);
	if (w) {
		if (err)
			abort();
		check_window(w);
		timewin_destroy(w);
	} else {
		fuzz_refused(err);
		err = NULL;
	}
	errno = 0;
	if (timewin_parse_start(text, &at_s, &in_s, &err) == 0) {
		if (err || (at_s != 0 && in_s != 0) || in_s < 0)
			abort();
	} else {
		fuzz_refused(err);
	}
	free(text);
	return 0;
}
