/* libFuzzer harness for sizes and durations (lib/units.c) as specs, flags
 * and parsa.conf write them. Besides no crash: a refusal is EINVAL or
 * ERANGE; a duration printed by format_duration() reads back the same; a
 * size printed by format_size() reads back within its one decimal. */
#include "fuzz.h"
#include "units.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check_size(const char *text)
{
	uint64_t v, back;
	char buf[64];

	errno = 0;
	if (parse_size(text, &v) < 0) {
		if (errno != EINVAL && errno != ERANGE)
			abort();
		return;
	}
	format_size(v, buf, sizeof buf);
	if (parse_size(buf, &back) < 0)
		abort();
	/* One decimal of the unit: within 5% (exact below 1K). */
	if (v < 1024 ? back != v : (back > v ? back - v : v - back) > v / 20 + 1)
		abort();
}

static void check_duration(const char *text)
{
	uint64_t v, back;
	char buf[64];

	errno = 0;
	if (parse_duration(text, &v) < 0) {
		if (errno != EINVAL && errno != ERANGE)
			abort();
		return;
	}
	format_duration(v, buf, sizeof buf);
	if (parse_duration(buf, &back) < 0 || back != v)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;

	/* Longer than any value a person writes: the parsers see C strings. */
	if (size > 256)
		return 0;
	text = fuzz_text(data, size);
	check_size(text);
	check_duration(text);
	free(text);
	return 0;
}
