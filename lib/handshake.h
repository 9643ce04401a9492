/* The version handshake between the scheduler and its clients: each client
 * names itself, its release and its protocol in its User-Agent
 * ("parsa-runner/0.1.0 (protocol 1)"); the scheduler refuses a protocol it
 * does not speak with a message that says which versions to install. */
#ifndef PARSA_HANDSHAKE_H
#define PARSA_HANDSHAKE_H

#include <stddef.h>

/* The User-Agent of program (e.g. "parsafs") in this release. Malloc'ed. */
char *handshake_user_agent(const char *program);

/* Whether a scheduler of this release talks to a client whose User-Agent is
 * user_agent (NULL, or not a parsa program's, is accepted: curl by hand, a
 * release before the handshake). Returns 0, or -1 with *err the message for
 * the client (malloc'ed). */
int handshake_check(const char *user_agent, char **err);

#endif
