/* Munge credentials for API requests over TCP. A client binds each credential
 * to one request: the payload names the method, the request target (path and
 * query) and the SHA-256 of the body, so a captured credential cannot be used
 * for another request, and munged's replay cache refuses it for the same one a
 * second time. The scheduler learns the caller's uid and gid from munged. */
#ifndef PARSA_AUTH_H
#define PARSA_AUTH_H

#include <stddef.h>
#include <sys/types.h>

struct auth;

/* The scheme of the Authorization header: "Authorization: MUNGE <credential>". */
#define AUTH_SCHEME "MUNGE"

/* munge_socket: munged's socket, NULL for libmunge's default
 * (/run/munge/munge.socket.2). Never fails. */
struct auth *auth_create(const char *munge_socket);
void auth_destroy(struct auth *a);
const char *auth_socket(const struct auth *a);

/* A credential for one request (malloc'ed, base64 text). NULL with errno and
 * *err when munged cannot be asked (e.g. "munged is not running: ..."). */
char *auth_sign(struct auth *a, const char *method, const char *target,
		const void *body, size_t len, char **err);

/* Check an Authorization header value against the request it came with. 0
 * with *uid and *gid from the credential, or -1 with errno EACCES and *err
 * saying why it was refused (forged, another key, expired, replayed, bound to
 * another request), or EAGAIN when munged cannot be asked. */
int auth_verify(struct auth *a, const char *header, const char *method, const char *target,
		const void *body, size_t len, uid_t *uid, gid_t *gid, char **err);

#endif
