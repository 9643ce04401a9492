/* The supervisor behind `parsa up`: it starts parsa-sched, parsafs and
 * parsa-runner in that order, waits for each to be ready with a deadline,
 * watches them, brings back one that ends (again and again, 1 s to 30 s
 * apart, while the others keep running), and stops them in the reverse order
 * (runner; unmount, then parsafs; scheduler) on SIGINT/SIGTERM/SIGHUP only.
 * It is the foreground `parsa up` process itself, or with --detach its
 * forked child. */
#ifndef PARSA_DAEMONS_H
#define PARSA_DAEMONS_H

#include "paths.h"

/* What `parsa up` passes through to the runner (NULL: the runner's default). */
/* Where `parsa up` serves the web page unless told: this machine only, any free port. */
#define UP_WEB_DEFAULT "127.0.0.1:0"

struct up_opts {
	const char *cpus;
	const char *mem;
	const char *scratch_size;
	const char *cpu_limit;
	const char *mem_limit;
	const char *host_name;
	const char *web;          /* parsa-sched --web: HOST:PORT or off (NULL: 127.0.0.1:0) */
	int detach;
};

/* How a supervisor tells whoever started it that the start is over. */
struct up_notify {
	int fd;                       /* --detach: the socket to the waiting parent; -1 in the foreground */
	const char *default_endpoint; /* to tell a user when PARSA_SCHED must be set */
};

/* Run the whole life of the daemons. The caller has blocked SIGINT, SIGTERM,
 * SIGHUP and SIGCHLD (they are read through a signalfd here) and holds the
 * locks. On a successful start the announcement goes to stdout (foreground)
 * or "ok\n" to notify->fd; a failed start first stops what had started, then
 * sends "error\n<text>" to notify->fd. Returns 0 when stopped by a signal,
 * -1 with *err (for the caller to print) when the start failed (a daemon
 * that ends after the start is brought back, never fatal); everything is
 * stopped and STATE/up.json removed either way. */
int supervise(const struct up_paths *paths, const struct up_opts *opts,
	      const struct up_notify *notify, char **err);

/* What `parsa up` prints once everything is ready. */
void up_announce(const struct up_paths *paths, int detached, const char *default_endpoint);

#endif
