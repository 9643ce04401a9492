/* The read-only web dashboard and /metrics of parsa-sched, on a TCP listener
 * of their own ([web] listen, --web): HTML made here from the views the mount
 * shows (sched/views/views.c through the engine, by job id) and from the job records
 * (sched/store/records.c) for lists and usage. Nothing here changes anything. */
#ifndef PARSA_WEB_H
#define PARSA_WEB_H

#include "backend.h"
#include "engine.h"
#include "records.h"

struct web;

/* What the pages read; none of it is owned by the web server. */
struct web_deps {
	struct engine *engine;
	struct records *records;
	struct backend *storage;   /* the instances' logs and out/ listings */
};

/* Listen on address ("HOST:PORT"; port 0 picks a free one) and serve until
 * web_destroy(). NULL with errno and *err. */
struct web *web_create(const char *address, const struct web_deps *deps, char **err);
/* Where it listens: "http://HOST:PORT/". */
const char *web_url(const struct web *w);
void web_destroy(struct web *w);

#endif
