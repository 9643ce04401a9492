/* The API's paths in the unit tests, made by lib/api_paths.h as every client
 * makes them: TP_PATH(API_JOB_STATUS, 1) where a client calls api_path. Each
 * is kept in a pool of the test's file until tp_free(), so a call reads as
 * one line. */
#ifndef PARSA_PATHS_POOL_H
#define PARSA_PATHS_POOL_H

#include "api_paths.h"
#include "util.h"

#include <stdlib.h>

enum { TP_MAX = 256 };

static char *tp_pool[TP_MAX];
static size_t tp_n;

/* Keep path (malloc'ed) until tp_free(). */
static inline const char *tp_keep(char *path)
{
	if (tp_n == TP_MAX)
		abort();
	tp_pool[tp_n++] = path;
	return path;
}

/* route for job or instance id, stage or host or schedule name and index;
 * query ("timeout_ms=50") appended as it is when not NULL. */
static inline const char *tp_path(enum api_route route, int64_t id, const char *name, int64_t index,
				  const char *query)
{
	char *path = api_path(route, &(struct api_ref){ .id = id, .name = name, .index = index });

	if (query) {
		char *more = xasprintf("%s?%s", path, query);

		free(path);
		path = more;
	}
	return tp_keep(path);
}

#define TP(route) tp_path(route, 0, NULL, 0, NULL)
#define TP_PATH(route, id) tp_path(route, id, NULL, 0, NULL)
#define TP_NAME(route, name) tp_path(route, 0, name, 0, NULL)

static inline void tp_free(void)
{
	while (tp_n)
		free(tp_pool[--tp_n]);
}

#endif
