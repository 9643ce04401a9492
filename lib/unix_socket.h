/* Asking a unix socket whether anything listens on it: how the scheduler and
 * `parsa up` tell a live scheduler's socket from one left by a scheduler that
 * died (which they remove before binding their own). */
#ifndef PARSA_UNIX_SOCKET_H
#define PARSA_UNIX_SOCKET_H

/* 1 when something accepts connections on the unix socket at path, else 0
 * (nothing there, nothing listening, or path too long to connect to). */
int unix_socket_answers(const char *path);

#endif
