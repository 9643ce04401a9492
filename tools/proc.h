/* Child processes for `parsa up`: finding the daemon binaries, starting one
 * with its output appended to a log, reaping it, telling how it ended, reading
 * the last lines it logged, and recognising a pid from a run file as still
 * being the program it was (pids are reused). */
#ifndef PARSA_PROC_H
#define PARSA_PROC_H

#include <stddef.h>
#include <sys/types.h>

struct daemon_proc {
	const char *name;  /* "parsa-sched": the program, also its /proc comm */
	const char *role;  /* "sched": the log's name, for messages */
	char *log;         /* STATE/logs/<role>.log (malloc'ed) */
	off_t log_start;   /* size of the log when this run started: tails begin here */
	pid_t pid;         /* 0 before start and after it has been reaped */
	int status;        /* wait status once reaped */
	int exited;        /* reaped at least once */
};

/* The program next to this executable (readlink /proc/self/exe), else in
 * $PATH. Malloc'ed path, or NULL with errno ENOENT. */
char *find_program(const char *name);

/* Start argv (argv[0] an absolute path) in its own session, stdin from
 * /dev/null, stdout and stderr appended to d->log after a line naming the
 * start, with no signal blocked and default dispositions, and SIGTERM when the
 * process that started it dies (so a crashed supervisor leaves no orphans).
 * Returns once the program is exec'ed: 0, or -1 with errno and *err. */
int daemon_start(struct daemon_proc *d, char *const argv[], char **err);

/* Reap d if it has ended (never blocks). 1 if it is gone (now or before), 0 if it runs. */
int daemon_reap(struct daemon_proc *d);

/* "exited with status 1" / "was killed by signal 9 (Killed)". */
void describe_status(int status, char *buf, size_t len);

/* The last `lines` lines of a log from offset start (only the tail of a large
 * log is read), each prefixed with "  | ". Malloc'ed; "" when there are none. */
char *log_tail(const char *path, off_t start, int lines);

/* The start of the last n lines of text (text itself if it has fewer). */
const char *text_tail(const char *text, size_t len, int n);

/* Parse /proc/PID/stat text: the command name (up to len bytes) and the state letter. */
int proc_stat_parse(const char *text, char *comm, size_t len, char *state);

/* 1 if pid is alive (not a zombie) and its command name is comm (compared to
 * the 15 characters the kernel keeps), else 0. */
int pid_is(pid_t pid, const char *comm);

/* Run argv to completion with stdout/stderr to this process's stderr, killing
 * it after timeout_ms. Returns its wait status, or -1 with errno. */
int run_wait(char *const argv[], long timeout_ms);

#endif
