/* One path matcher for every route table (see route.h). */
#include "route.h"

#include <string.h>

static const char *skip_slashes(const char *s)
{
	while (*s == '/')
		s++;
	return s;
}

int route_match_spans(const char *pattern, const char *path, struct route_span *spans, size_t max,
		      const char **rest)
{
	size_t n = 0;

	for (;;) {
		const char *pattern_end, *path_end;
		size_t pattern_len, path_len;

		pattern = skip_slashes(pattern);
		path = skip_slashes(path);
		if (pattern[0] == '*' && pattern[1] == '*' && pattern[2] == '\0') {
			if (rest)
				*rest = path;
			return (int)n;
		}
		if (!*pattern || !*path)
			return !*pattern && !*path ? (int)n : -1;
		pattern_end = strchrnul(pattern, '/');
		path_end = strchrnul(path, '/');
		pattern_len = (size_t)(pattern_end - pattern);
		path_len = (size_t)(path_end - path);
		if (pattern_len == 1 && *pattern == '*') {
			if (n == max)
				return -1;
			spans[n].start = path;
			spans[n++].len = path_len;
		} else if (pattern_len != path_len || memcmp(pattern, path, path_len) != 0) {
			return -1;
		}
		pattern = pattern_end;
		path = path_end;
	}
}

int route_match(const char *pattern, const char *path, char *buf, size_t len, const char **args,
		size_t max)
{
	struct route_span spans[ROUTE_MAX_ARGS];
	size_t used = 0;
	int n = route_match_spans(pattern, path, spans,
				  max < ROUTE_MAX_ARGS ? max : ROUTE_MAX_ARGS, NULL);

	if (n < 0)
		return 0;
	for (int i = 0; i < n; i++) {
		if (len - used < spans[i].len + 1)
			return 0;
		memcpy(buf + used, spans[i].start, spans[i].len);
		buf[used + spans[i].len] = '\0';
		args[i] = buf + used;
		used += spans[i].len + 1;
	}
	return 1;
}
