/* Who is calling (docs/api.md, "Who is calling"): SO_PEERCRED on the unix
 * socket, a munge credential bound to the request over TCP, and the
 * X-Parsa-Uid/Gid/Groups headers of a trusted caller acting for somebody else. */
#ifndef PARSA_API_IDENTITY_H
#define PARSA_API_IDENTITY_H

#include "api_call.h"

#include <stdbool.h>
#include <sys/types.h>

struct auth;

/* libmicrohttpd's MHD_OPTION_NOTIFY_CONNECTION: notes, when a connection
 * starts, what its socket tells of the caller, for every request on it. */
void api_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
		       enum MHD_ConnectionNotificationCode toe);

/* Did conn come through the unix socket (false for TCP, or when it cannot
 * be told)? */
bool api_on_unix_socket(struct MHD_Connection *conn);

/* Fill c->who and c->trusted (root or self_uid). target is the request target
 * as sent, which a TCP request's credential must be bound to (checked with
 * auth). 0; -1 when the caller cannot be told; -2 when a TCP request's
 * credential is refused (c->auth_error, c->auth_busy). */
int api_identify(struct call *c, const char *method, const char *target, struct auth *auth,
		 uid_t self_uid);

/* The caller's supplementary groups in c->who: from X-Parsa-Groups, else the
 * group database, else just the primary group. Looked up once. */
void api_caller_groups(struct call *c);

#endif
