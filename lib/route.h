/* Matching a request's path against a route table's patterns, for the
 * scheduler's API and its web page: '*' stands for one path segment, and the
 * segments it stood for are handed back. */
#ifndef PARSA_ROUTE_H
#define PARSA_ROUTE_H

#include <stddef.h>

/* Match path against pattern ("/v1/jobs/ * /status" without the spaces),
 * filling args (at most max pointers into buf, a copy of path split at '/',
 * of len bytes) with what each '*' matched. 1 on a match, else 0. */
int route_match(const char *pattern, const char *path, char *buf, size_t len, const char **args,
		size_t max);

#endif
