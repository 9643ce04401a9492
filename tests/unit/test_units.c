/* Sizes and durations: what parses to what, what is refused and with which
 * errno, and the human forms format_size/format_duration print. */
#include "tap.h"
#include "units.h"

#include <errno.h>
#include <stdint.h>

TAP_STATE;

#define K (UINT64_C(1) << 10)
#define M (UINT64_C(1) << 20)
#define G (UINT64_C(1) << 30)
#define T (UINT64_C(1) << 40)
#define P (UINT64_C(1) << 50)

static const struct {
	const char *text;
	uint64_t bytes;
} good_sizes[] = {
	{ "0", 0 },
	{ "1", 1 },
	{ "512", 512 },
	{ "100B", 100 },
	{ "1K", K },
	{ "1k", K },
	{ "1KB", K },
	{ "1kib", K },
	{ "1KiB", K },
	{ "512M", 512 * M },
	{ "32G", 32 * G },
	{ "32gb", 32 * G },
	{ "3T", 3 * T },
	{ "2P", 2 * P },
	{ "1.5T", T + T / 2 },
	{ "1.5K", 1536 },
	{ "0.5G", G / 2 },
	{ "1.25M", M + M / 4 },
	{ "1.1K", 1126 },                 /* 1126.4, rounded down */
	{ "1.5", 1 },                     /* a fraction of a byte is dropped */
	{ "0.000000000000000001P", 0 },
	{ "1.0000000000000000000000001K", K }, /* digits past 18 are ignored */
	{ "32 G", 32 * G },
	{ "  6G  ", 6 * G },
	{ "18446744073709551615", UINT64_MAX },
	{ "16383P", 16383 * P },
	{ "15.99P", 15 * P + (99 * P) / 100 },
};

static const char *const bad_sizes[] = {
	"", " ", "lots", "-1", "-1G", "+1G", "G", "1X", "1GG", "1Gx", "1.G", ".5G", "1..5G",
	"1e3", "1,5G", "1 K B", "0x10", "1iB", "1 2", "12 34G",
};

static const char *const range_sizes[] = {
	"18446744073709551616", "16384P", "99999999999999999999999", "17179869184T",
	"16384.5P",
};

static const struct {
	const char *text;
	uint64_t secs;
} good_durations[] = {
	{ "0", 0 },
	{ "45", 45 },
	{ "90s", 90 },
	{ "45m", 2700 },
	{ "12h", 43200 },
	{ "2d", 172800 },
	{ "1w", 604800 },
	{ "1h30m", 5400 },
	{ "1h 30m", 5400 },
	{ "30m1h", 5400 },
	{ "1w2d3h4m5s", 604800 + 2 * 86400 + 3 * 3600 + 4 * 60 + 5 },
	{ "1.5h", 5400 },
	{ "0.5m", 30 },
	{ "1H", 3600 },
	{ " 10s ", 10 },
};

static const char *const bad_durations[] = {
	"", "  ", "soon", "-1", "-1h", "h", "1x", "1h30", "1hh", "1h1h", "1.h", "1 2",
	"90 1h", "1y", "1min",
};

static const char *const range_durations[] = {
	"18446744073709551616", "40000000000000w", "18446744073709551615s1m",
};

static const struct {
	uint64_t bytes;
	const char *text;
} formats[] = {
	{ 0, "0" },
	{ 1, "1" },
	{ 1023, "1023" },
	{ 1024, "1K" },
	{ 1536, "1.5K" },
	{ 34359738368ULL, "32G" },
	{ 6 * G, "6G" },
	{ 3 * T, "3T" },
	{ T + T / 2, "1.5T" },
	{ 20 * G, "20G" },
	{ 1025, "1025" },              /* exact and short: plain bytes */
	{ 1000 * M, "1000M" },
	{ M + M / 4, "1280K" },
	{ 1400000000ULL, "1.3G" },     /* no short exact form: rounded */
	{ 123456789ULL, "117.7M" },
	{ 1024 * P, "1024P" },
	{ UINT64_MAX, "16383.9P" },    /* rounded down: 16384P would not read back */
	{ 1024 * K - 1, "1.0M" },      /* rounds up into the next unit */
};

static const struct {
	uint64_t secs;
	const char *text;
} durations_fmt[] = {
	{ 0, "0s" },
	{ 45, "45s" },
	{ 90, "1m30s" },
	{ 5400, "1h30m" },
	{ 86400, "1d" },
	{ 604800 + 3600, "1w1h" },
	{ 3 * 86400 + 5, "3d5s" },
};

int main(void)
{
	char buf[64];

	for (size_t i = 0; i < sizeof good_sizes / sizeof good_sizes[0]; i++) {
		uint64_t v = 12345;
		int rc = parse_size(good_sizes[i].text, &v);

		is_int(rc, 0, "parse_size(\"%s\") succeeds", good_sizes[i].text);
		ok(v == good_sizes[i].bytes, "parse_size(\"%s\") = %llu (got %llu)", good_sizes[i].text,
		   (unsigned long long)good_sizes[i].bytes, (unsigned long long)v);
	}
	for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
		uint64_t v = 12345;

		errno = 0;
		is_int(parse_size(bad_sizes[i], &v), -1, "parse_size(\"%s\") fails", bad_sizes[i]);
		is_int(errno, EINVAL, "parse_size(\"%s\") sets EINVAL", bad_sizes[i]);
		ok(v == 12345, "parse_size(\"%s\") leaves the output alone", bad_sizes[i]);
	}
	for (size_t i = 0; i < sizeof range_sizes / sizeof range_sizes[0]; i++) {
		uint64_t v;

		errno = 0;
		is_int(parse_size(range_sizes[i], &v), -1, "parse_size(\"%s\") fails", range_sizes[i]);
		is_int(errno, ERANGE, "parse_size(\"%s\") sets ERANGE", range_sizes[i]);
	}
	errno = 0;
	is_int(parse_size(NULL, &(uint64_t){ 0 }), -1, "parse_size(NULL) fails");
	is_int(errno, EINVAL, "parse_size(NULL) sets EINVAL");

	for (size_t i = 0; i < sizeof good_durations / sizeof good_durations[0]; i++) {
		uint64_t v = 12345;
		int rc = parse_duration(good_durations[i].text, &v);

		is_int(rc, 0, "parse_duration(\"%s\") succeeds", good_durations[i].text);
		ok(v == good_durations[i].secs, "parse_duration(\"%s\") = %llu (got %llu)",
		   good_durations[i].text, (unsigned long long)good_durations[i].secs, (unsigned long long)v);
	}
	for (size_t i = 0; i < sizeof bad_durations / sizeof bad_durations[0]; i++) {
		uint64_t v = 12345;

		errno = 0;
		is_int(parse_duration(bad_durations[i], &v), -1, "parse_duration(\"%s\") fails", bad_durations[i]);
		is_int(errno, EINVAL, "parse_duration(\"%s\") sets EINVAL", bad_durations[i]);
		ok(v == 12345, "parse_duration(\"%s\") leaves the output alone", bad_durations[i]);
	}
	for (size_t i = 0; i < sizeof range_durations / sizeof range_durations[0]; i++) {
		uint64_t v;

		errno = 0;
		is_int(parse_duration(range_durations[i], &v), -1, "parse_duration(\"%s\") fails",
		       range_durations[i]);
		is_int(errno, ERANGE, "parse_duration(\"%s\") sets ERANGE", range_durations[i]);
	}

	for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
		format_size(formats[i].bytes, buf, sizeof buf);
		is_str(buf, formats[i].text, "format_size(%llu)", (unsigned long long)formats[i].bytes);
	}
	/* Exact forms read back to the same number; everything reads back,
	 * the very top of the range too (fuzz_units found 16384.0P did not). */
	for (size_t i = 0; i < sizeof good_sizes / sizeof good_sizes[0]; i++) {
		uint64_t back;

		format_size(good_sizes[i].bytes, buf, sizeof buf);
		is_int(parse_size(buf, &back), 0, "format_size(%llu) = \"%s\" parses",
		       (unsigned long long)good_sizes[i].bytes, buf);
		if (good_sizes[i].bytes % 1024 == 0 || good_sizes[i].bytes < 1024)
			ok(back == good_sizes[i].bytes, "\"%s\" reads back as %llu", buf,
			   (unsigned long long)good_sizes[i].bytes);
	}
	format_size(34359738368ULL, buf, 3);
	is_str(buf, "32", "format_size truncates to the buffer");

	for (size_t i = 0; i < sizeof durations_fmt / sizeof durations_fmt[0]; i++) {
		uint64_t back;

		format_duration(durations_fmt[i].secs, buf, sizeof buf);
		is_str(buf, durations_fmt[i].text, "format_duration(%llu)", (unsigned long long)durations_fmt[i].secs);
		is_int(parse_duration(buf, &back), 0, "\"%s\" parses back", buf);
		ok(back == durations_fmt[i].secs, "\"%s\" reads back as %llu", buf,
		   (unsigned long long)durations_fmt[i].secs);
	}
	format_duration(UINT64_MAX, buf, sizeof buf);
	{
		uint64_t back;

		is_int(parse_duration(buf, &back), 0, "format_duration(UINT64_MAX) = \"%s\" parses back", buf);
		ok(back == UINT64_MAX, "and reads back as UINT64_MAX");
	}
	format_duration(5400, buf, 4);
	is_str(buf, "1h", "format_duration keeps whole components in a short buffer");
	return done_testing();
}
