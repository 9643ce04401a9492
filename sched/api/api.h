/* The scheduler's HTTP/1.1 + JSON API (docs/api.md) with libmicrohttpd on a
 * unix socket: caller identity from SO_PEERCRED (and X-Parsa-* headers from
 * trusted callers), a static route table, errno -> HTTP status at this edge
 * only. One thread per connection, so that long polls may block in the engine. */
#ifndef PARSA_API_H
#define PARSA_API_H

#include "engine.h"
#include "records.h"

#include <stdbool.h>

struct api;

/* Listen on a unix socket at path and serve requests until api_destroy(). The
 * socket appears at path only once requests are answered (it is bound under a
 * temporary name and renamed), so its existence means "ready". Refuses to
 * start when another scheduler answers at path. */
struct api *api_create(const char *path, struct engine *engine, char **err);
/* Also serve the API on TCP at address ("HOST:PORT", ":PORT" for all
 * addresses). Every request there must carry a munge credential bound to it
 * (auth.h), checked with munged at munge_socket (NULL: the default); the
 * caller's uid and gid come from the credential, and uid 0 is trusted like
 * root on the unix socket. -1 with errno and *err. */
int api_listen_tcp(struct api *api, const char *address, const char *munge_socket, char **err);

/* The same, also answering /v1/history/jobs and /v1/usage from records
 * (sched/store/records.h), which the caller closes after api_destroy(). */
struct api *api_create_with_records(const char *path, struct engine *engine,
				    struct records *records, char **err);

/* Stop serving (call engine_stop() first so that long polls return) and remove
 * the socket. */
void api_destroy(struct api *api);

/* Whether the server has a handler for route (an enum api_route of
 * lib/api_paths.h): every route of the contract has one (test_api checks). */
bool api_serves(int route);

/* The HTTP status for an errno from the engine. */
unsigned int api_status_for_errno(int err);

#endif
