/* Sizes and durations as people write them. Parsing is exact integer arithmetic
 * (no floating point), so "1.5T" is exactly 1.5 * 2^40 bytes on every machine;
 * a fraction that does not come out whole is rounded down. */
#include "units.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* More fraction digits than this are read but ignored: 10^18 still fits in 64
 * bits, and the 19th digit of a fraction cannot matter for a resource size. */
#define FRACTION_DIGITS_MAX 18
/* format_size prints an exact form up to this long ("1023.5M" is not). */
#define FORMAT_EXACT_MAX 6

/* A decimal number as written: the whole part, and the fraction as an integer
 * with its number of digits (".25" is frac 25, frac_digits 2). */
struct decimal {
	uint64_t whole;
	uint64_t frac;
	int frac_digits;
};

/* Read DIGITS or DIGITS.DIGITS at *pp and advance *pp past it. Returns 0, or
 * -1 with errno EINVAL (no digits; "1." or ".5") or ERANGE (whole part
 * overflows 64 bits). */
static int read_decimal(const char **pp, struct decimal *d)
{
	const char *p = *pp;

	memset(d, 0, sizeof *d);
	if (!isdigit((unsigned char)*p)) {
		errno = EINVAL;
		return -1;
	}
	for (; isdigit((unsigned char)*p); p++) {
		unsigned digit = (unsigned)(*p - '0');

		if (d->whole > (UINT64_MAX - digit) / 10) {
			errno = ERANGE;
			return -1;
		}
		d->whole = d->whole * 10 + digit;
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p)) {
			errno = EINVAL;
			return -1;
		}
		for (; isdigit((unsigned char)*p); p++) {
			if (d->frac_digits < FRACTION_DIGITS_MAX) {
				d->frac = d->frac * 10 + (uint64_t)(*p - '0');
				d->frac_digits++;
			}
		}
	}
	*pp = p;
	return 0;
}

/* floor(d * mult), or -1/ERANGE when it does not fit in 64 bits. The fraction
 * is multiplied in 128 bits: frac < 10^18 and mult <= 2^50 need up to 110. */
static int scale_decimal(const struct decimal *d, uint64_t mult, uint64_t *out)
{
	unsigned __int128 pow10 = 1, part;
	uint64_t total;

	if (mult != 0 && d->whole > UINT64_MAX / mult) {
		errno = ERANGE;
		return -1;
	}
	total = d->whole * mult;
	for (int i = 0; i < d->frac_digits; i++)
		pow10 *= 10;
	part = (unsigned __int128)d->frac * mult / pow10;
	if (part > UINT64_MAX - total) {
		errno = ERANGE;
		return -1;
	}
	*out = total + (uint64_t)part;
	return 0;
}

static const char *skip_space(const char *p)
{
	while (isspace((unsigned char)*p))
		p++;
	return p;
}

/* The multiplier of a size unit letter (case-insensitive), or 0. */
static uint64_t size_unit(char c)
{
	switch (tolower((unsigned char)c)) {
	case 'k': return UINT64_C(1) << 10;
	case 'm': return UINT64_C(1) << 20;
	case 'g': return UINT64_C(1) << 30;
	case 't': return UINT64_C(1) << 40;
	case 'p': return UINT64_C(1) << 50;
	default: return 0;
	}
}

/* NUMBER [spaces] [K|M|G|T|P] [B|iB], case-insensitive, or NUMBER [B]; spaces
 * around the whole are allowed. */
int parse_size(const char *text, uint64_t *bytes)
{
	struct decimal d;
	uint64_t mult = 1;
	const char *p;

	if (!text) {
		errno = EINVAL;
		return -1;
	}
	p = skip_space(text);
	if (read_decimal(&p, &d) < 0)
		return -1;
	p = skip_space(p);
	if (size_unit(*p)) {
		mult = size_unit(*p++);
		if (tolower((unsigned char)p[0]) == 'i' && tolower((unsigned char)p[1]) == 'b')
			p += 2;
		else if (tolower((unsigned char)*p) == 'b')
			p++;
	} else if (tolower((unsigned char)*p) == 'b') {
		p++;
	}
	if (*skip_space(p) != '\0') {
		errno = EINVAL;
		return -1;
	}
	return scale_decimal(&d, mult, bytes);
}

/* Seconds in a duration unit letter (case-insensitive), or 0. */
static uint64_t duration_unit(char c)
{
	switch (tolower((unsigned char)c)) {
	case 's': return 1;
	case 'm': return 60;
	case 'h': return 3600;
	case 'd': return 86400;
	case 'w': return 604800;
	default: return 0;
	}
}

/* Either a plain NUMBER of seconds, or one or more NUMBER UNIT components,
 * each unit at most once ("1h30m", "2d 12h", "1.5h"). */
int parse_duration(const char *text, uint64_t *seconds)
{
	uint64_t total = 0;
	unsigned seen = 0;
	int components = 0;
	const char *p;

	if (!text) {
		errno = EINVAL;
		return -1;
	}
	p = skip_space(text);
	if (*p == '\0') {
		errno = EINVAL;
		return -1;
	}
	while (*p != '\0') {
		struct decimal d;
		uint64_t mult, part;
		unsigned bit;

		if (read_decimal(&p, &d) < 0)
			return -1;
		p = skip_space(p);
		mult = duration_unit(*p);
		if (mult == 0) {
			/* A bare number is seconds, but only on its own: "1h30" is
			 * more likely a typo than 1h30s. */
			if (*p != '\0' || components > 0) {
				errno = EINVAL;
				return -1;
			}
			mult = 1;
			bit = 0;
		} else {
			bit = 1u << (strchr("smhdw", tolower((unsigned char)*p)) - "smhdw");
			if (seen & bit) {
				errno = EINVAL;
				return -1;
			}
			seen |= bit;
			p++;
		}
		if (scale_decimal(&d, mult, &part) < 0)
			return -1;
		if (part > UINT64_MAX - total) {
			errno = ERANGE;
			return -1;
		}
		total += part;
		components++;
		p = skip_space(p);
	}
	*seconds = total;
	return 0;
}

/* The exact form in the largest unit that has one (a whole number or one
 * decimal, plain bytes last) when it is short enough to read at a glance;
 * otherwise the value rounded to one decimal in the largest unit it reaches. */
void format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "KMGTP";
	char exact[48];
	int top = -1;

	if (len == 0)
		return;
	for (int i = 0; i < 5; i++)
		if (bytes >= UINT64_C(1) << (10 * (i + 1)))
			top = i;
	snprintf(exact, sizeof exact, "%llu", (unsigned long long)bytes);
	for (int i = top; i >= 0; i--) {
		uint64_t unit = UINT64_C(1) << (10 * (i + 1));
		uint64_t whole = bytes / unit, rem = bytes % unit;

		if (rem == 0) {
			snprintf(exact, sizeof exact, "%llu%c", (unsigned long long)whole, units[i]);
			break;
		}
		if (rem * 10 % unit == 0) {
			snprintf(exact, sizeof exact, "%llu.%llu%c", (unsigned long long)whole,
				 (unsigned long long)(rem * 10 / unit), units[i]);
			break;
		}
	}
	if (top < 0 || strlen(exact) <= FORMAT_EXACT_MAX) {
		snprintf(buf, len, "%s", exact);
		return;
	}
	/* Round in the largest unit, carrying into the next one when the
	 * value rounds up to 1024 of it. */
	for (int i = top; ; i++) {
		uint64_t unit = UINT64_C(1) << (10 * (i + 1));
		uint64_t whole = bytes / unit, rem = bytes % unit;
		uint64_t tenth = (rem * 10 + unit / 2) / unit;

		if (tenth == 10) {
			whole++;
			tenth = 0;
		}
		if (whole >= 1024 && i + 1 < 5)
			continue;
		/* Rounded up to 16384P, the text would not read back (2^64
		 * bytes overflow): the fuzzer found UINT64_MAX. */
		if (i == 4 && whole >= 16384) {
			whole = 16383;
			tenth = 9;
		}
		snprintf(buf, len, "%llu.%llu%c", (unsigned long long)whole,
			 (unsigned long long)tenth, units[i]);
		return;
	}
}

void format_duration(uint64_t seconds, char *buf, size_t len)
{
	static const struct {
		char unit;
		uint64_t secs;
	} parts[] = { { 'w', 604800 }, { 'd', 86400 }, { 'h', 3600 }, { 'm', 60 }, { 's', 1 } };
	size_t used = 0;

	if (len == 0)
		return;
	buf[0] = '\0';
	if (seconds == 0) {
		snprintf(buf, len, "0s");
		return;
	}
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
		uint64_t n = seconds / parts[i].secs;
		int w;

		if (n == 0)
			continue;
		seconds %= parts[i].secs;
		w = snprintf(buf + used, len - used, "%llu%c", (unsigned long long)n, parts[i].unit);
		if (w < 0 || (size_t)w >= len - used) {
			buf[used] = '\0'; /* whole components only */
			return;
		}
		used += (size_t)w;
	}
}
