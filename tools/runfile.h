/* What a running `parsa up` leaves for `parsa down` and for a second `parsa
 * up` to find: STATE/up.json (the supervisor's and daemons' pids and the
 * paths), the per-mount pointer file (holding STATE), and the locks that make
 * "is it up?" a question the kernel answers: the supervisor holds STATE/up.lock
 * and the pointer's lock for as long as it lives, so a crash frees them. */
#ifndef PARSA_RUNFILE_H
#define PARSA_RUNFILE_H

#include <stdint.h>
#include <sys/types.h>

struct runinfo {
	pid_t pid;          /* the supervisor */
	pid_t sched, fs, runner;
	char *mount, *state, *storage, *endpoint;
	char *web;          /* the web page's URL (STATE/web.url); NULL: none */
	int64_t started_ms;
};

/* Write ri to path atomically (a temporary file renamed over it). 0, or -1 with *err. */
int runinfo_write(const char *path, const struct runinfo *ri, char **err);
/* Read path into ri (fields malloc'ed; runinfo_free() them). 0, or -1 with *err
 * (errno ENOENT when there is no run file). */
int runinfo_read(const char *path, struct runinfo *ri, char **err);
void runinfo_free(struct runinfo *ri);

/* The web page's URL that the scheduler of state wrote (STATE/web.url),
 * malloc'ed; NULL when it serves none. */
char *runinfo_web_url(const char *state);

/* Take an exclusive lock on path without waiting, creating the file.
 * Returns 0 with *fd (close-on-exec) when we hold it, 1 when another process
 * holds it, -1 with errno on error. With removable, the holder may unlink the
 * file while holding the lock; we then retry on the new file so that two
 * processes never both believe they hold it. */
int lock_try(const char *path, int removable, int *fd);

#endif
