/* Small helpers every module uses: error text out-parameters (flux's errprintf),
 * time in milliseconds, and whole-file or whole-buffer I/O that retries on EINTR. */
#ifndef PARSA_UTIL_H
#define PARSA_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* If err is not NULL, replace *err with a newly allocated formatted message
 * (the caller frees it). Always returns -1 and leaves errno as it was, so
 * callers write: return errprintf(err, "%s:%d: unknown key", file, line); */
int errprintf(char **err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Wall-clock and monotonic time in milliseconds. */
int64_t time_now_ms(void);
int64_t time_mono_ms(void);
/* The CLOCK_MONOTONIC time ms from now, for pthread_cond_timedwait on a
 * condition variable made with pthread_condattr_setclock(CLOCK_MONOTONIC). */
struct timespec time_mono_deadline(int64_t ms);

/* Format epoch milliseconds as local ISO 8601 ("2026-11-30T14:02:11"); "-" for 0. */
void time_format_iso(int64_t ms, char *buf, size_t len);

/* write()/read() the whole buffer, retrying on EINTR and short counts.
 * Return 0 (or bytes read) on success, -1 with errno on failure. */
int write_all(int fd, const void *buf, size_t len);

/* In a child between fork and exec: every signal back to its default action
 * and none blocked, whatever the parent (a daemon reading signals through
 * signalfd or sigwait, ignoring SIGPIPE) had set. Async-signal-safe. */
void child_default_signals(void);
ssize_t read_all(int fd, void *buf, size_t len);

/* Read a whole file into a NUL-terminated malloc'ed buffer of at most max bytes.
 * Returns NULL with errno (EFBIG past max). *len may be NULL. */
char *read_file(const char *path, size_t max, size_t *len);
/* The same from an open descriptor, from where it stands to its end; fd stays open. */
char *read_fd(int fd, size_t max, size_t *len);

/* mkdir -p with mode for each created component; 0 or -1/errno. */
int mkdir_p(const char *path, mode_t mode);

/* Allocation that cannot fail silently: abort with a message on ENOMEM. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* An answer of at least this many bytes is large: once it is freed, give the
 * memory back (mem_give_back). */
#define MEM_LARGE ((size_t)256 << 10)

/* Hand the memory malloc keeps free back to the system (malloc_trim). glibc
 * keeps freed heap pages for reuse, in every thread's arena and below
 * M_TRIM_THRESHOLD, so one multi-megabyte answer (a listing of jobs/) built
 * and freed on a connection thread grows the daemon for good. Call it after
 * freeing something large, never on a hot path: it walks every arena. */
void mem_give_back(void);

/* One malloc arena for every thread of a daemon (mallopt M_ARENA_MAX), so
 * that mem_give_back reaches the memory: glibc makes up to 8 arenas a core,
 * and each connection or FUSE thread that built one listing kept its peak.
 * The daemons' threads mostly wait on sockets and locks, so they do not queue
 * on malloc's lock. It also fixes malloc's thresholds: blocks of large_block
 * bytes and more are mmap'ed (and go back at free), and the heap's top is
 * trimmed past 4 x large_block. Left dynamic, glibc raises them to the
 * largest block ever freed (a 7 MB answer: then 14 MB of free heap is never
 * given back), and a listing's buffers, freed after the last mem_give_back
 * (libfuse frees a directory's entries at releasedir), stayed for good; but
 * below them a block freed and asked for again (the data path's) is reused
 * instead of mapped and zeroed anew. Call before any thread. */
void mem_one_arena(size_t large_block);

/* text without leading blanks and with every run of blanks (spaces, tabs) as
 * one space, for display. Malloc'ed. */
char *squeeze_blanks(const char *text);

/* In text of "KEY<sep>VALUE" lines (/proc and /sys files: "MemTotal: 5 kB",
 * "usage_usec 12"), where the value of the first line whose key is key
 * starts (just after sep), or NULL. */
const char *line_value(const char *text, const char *key, char sep);

#endif
