/* The one path matcher (lib/route.h) of the API's, the web page's and the
 * mount's route tables: '*' is one segment, a final '**' any number; runs of
 * '/' are one and a trailing '/' none; spans point into the path; route_match
 * copies them NUL-terminated and refuses what does not fit. */
#include "route.h"
#include "tap.h"

#include <string.h>

TAP_STATE;

static void spans(void)
{
	struct route_span s[3];
	const char *rest = "unset";

	is_int(route_match_spans("/jobs/*/stages/*", "/jobs/42/stages/warm", s, 3, NULL), 2,
	       "two '*', two spans");
	ok(s[0].len == 2 && strncmp(s[0].start, "42", 2) == 0, "the first is 42");
	ok(s[1].len == 4 && strncmp(s[1].start, "warm", 4) == 0, "the second is warm");
	is_int(route_match_spans("/jobs/*/out/**", "/jobs/7/out/warm/a/b", s, 3, &rest), 1,
	       "'**' after a '*'");
	is_str(rest, "warm/a/b", "rest is what '**' matched, without its leading '/'");
	rest = "unset";
	is_int(route_match_spans("/jobs/*/out/**", "/jobs/7/out", s, 3, &rest), 1,
	       "'**' matches nothing too");
	is_str(rest, "", "and rest is empty");
	is_int(route_match_spans("/jobs/*/out/**", "/jobs/7/outx/a", s, 3, &rest), -1,
	       "a fixed segment is compared whole");
	is_int(route_match_spans("/jobs/*", "/jobs/42/status", s, 3, NULL), -1, "one '*' is one segment");
	is_int(route_match_spans("/jobs/*/status", "/jobs/42", s, 3, NULL), -1, "a shorter path");
	is_int(route_match_spans("/jobs/*/*", "/jobs/1/2", s, 1, NULL), -1, "no more '*' than max");
	is_int(route_match_spans("/jobs//*/", "//jobs/42//", s, 3, NULL), 1, "runs of '/' are one");
	ok(s[0].len == 2 && strncmp(s[0].start, "42", 2) == 0, "and not part of a segment");
	is_int(route_match_spans("/", "/", s, 3, NULL), 0, "the root, no '*'");
	is_int(route_match_spans("/", "/jobs", s, 3, NULL), -1, "the root is only the root");
	is_int(route_match_spans("/jobs", "/", s, 3, NULL), -1, "and /jobs is not the root");
	is_int(route_match_spans("/jobs/last", "/jobs/lastx", s, 3, NULL), -1, "no prefix match");
	is_int(route_match_spans("/jobs/lastx", "/jobs/last", s, 3, NULL), -1, "nor the reverse");
	is_int(route_match_spans("/a/*", "/a/", s, 3, NULL), -1, "'*' never matches an empty segment");
}

static void copies(void)
{
	char buf[16];
	const char *args[4] = { NULL };

	ok(route_match("/api/jobs/*/stages/*", "/api/jobs/42/stages/warm", buf, sizeof buf, args, 4),
	   "an API route");
	ok(args[0] && strcmp(args[0], "42") == 0 && args[1] && strcmp(args[1], "warm") == 0,
	   "its segments, NUL-terminated");
	ok(!route_match("/api/jobs/*", "/api/jobs/aaaaaaaaaaaaaaaaaaaa", buf, sizeof buf, args, 4),
	   "a segment longer than the buffer is no match, not an overflow");
	ok(route_match("/api/jobs/*", "/api/jobs/aaaaaaaaaaaaaaa", buf, sizeof buf, args, 4),
	   "one that just fits (15 bytes and its NUL)");
	ok(route_match("/api/jobs", "/api/jobs/", buf, sizeof buf, args, 4),
	   "a trailing slash is the same path");
	ok(!route_match("/api/*/*", "/api/a/b", buf, sizeof buf, args, 1), "no more segments than asked");
}

int main(void)
{
	spans();
	copies();
	return done_testing();
}
