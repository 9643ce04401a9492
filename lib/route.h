/* Matching a path against a route table's patterns, the one matcher of the
 * scheduler's API, its web page and the mount's tree: '*' stands for one path
 * segment and a final '**' for any number of them, and what they stood for is
 * handed back. Runs of '/' count as one, and a trailing '/' as none. */
#ifndef PARSA_ROUTE_H
#define PARSA_ROUTE_H

#include <stddef.h>

/* What one '*' matched: len bytes at start, inside the path (not NUL-terminated). */
struct route_span {
	const char *start;
	size_t len;
};

/* route_match copies at most this many segments. */
enum { ROUTE_MAX_ARGS = 8 };

/* Match path against pattern ("/jobs/ * /out/ **" without the spaces): on a
 * match, the number of '*' (at most max), spans[i] set to what the i-th
 * matched, and *rest (when rest is not NULL and the pattern ends in "**") to
 * the end of path it matched, without its leading '/' ("" for none). -1 when
 * path does not match or has more '*' segments than max. Copies nothing: a
 * mount's lookup pays only the comparisons. */
int route_match_spans(const char *pattern, const char *path, struct route_span *spans, size_t max,
		      const char **rest);

/* Match path against pattern, filling args (at most max, at most
 * ROUTE_MAX_ARGS, pointers into buf of len bytes) with what each '*' matched,
 * NUL-terminated. 1 on a match, else 0 (also when they do not fit in buf). */
int route_match(const char *pattern, const char *path, char *buf, size_t len, const char **args,
		size_t max);

#endif
