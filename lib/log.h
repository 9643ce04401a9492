/* Logging for every parsa daemon and tool, after OpenBSD's log.h: messages go to
 * stderr in the foreground and to syslog otherwise; the _warn variants append
 * strerror(errno); fatal and fatalx log and exit(1). */
#ifndef PARSA_LOG_H
#define PARSA_LOG_H

#include <stdarg.h>

enum log_level { LOG_LEVEL_WARN = 0, LOG_LEVEL_INFO = 1, LOG_LEVEL_DEBUG = 2 };

/* Set once by main before any thread starts; the settings are read-only afterwards. */
void log_init(const char *progname, int to_stderr, enum log_level level);
/* Log to path (appended, created 0640) instead of stderr or syslog: for a
 * daemon started by hand (--log-file). Call after log_init, before threads
 * start. Appends whole lines, so logrotate's copytruncate is safe. 0, or -1
 * with errno and *err (malloc'ed). */
int log_to_file(const char *path, char **err);
int log_enabled(enum log_level level);

void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A library's own warning (libmicrohttpd's external logger has this shape):
 * one line, "PREFIX: message" with its newline cut; prefix is a string. */
void log_warnx_lib(void *prefix, const char *fmt, va_list ap);
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
