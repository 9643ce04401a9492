#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

/* Written once by log_init() before threads exist, then only read: the one
 * file-scope state of the project, as in OpenBSD's log.c. */
static struct {
	const char *progname;
	int to_stderr;
	enum log_level level;
	FILE *file;             /* --log-file, else NULL: stderr */
} log_cfg = { "parsa", 1, LOG_LEVEL_INFO, NULL };

void log_init(const char *progname, int to_stderr, enum log_level level)
{
	log_cfg.progname = progname;
	log_cfg.to_stderr = to_stderr;
	log_cfg.level = level;
	if (!to_stderr)
		openlog(progname, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

int log_to_file(const char *path, char **err)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY, 0640);
	FILE *f = fd >= 0 ? fdopen(fd, "a") : NULL;

	if (!f) {
		int saved = errno;

		if (fd >= 0)
			close(fd);
		errno = saved;
		return errprintf(err, "cannot open the log file %s: %s", path, strerror(saved));
	}
	setvbuf(f, NULL, _IOLBF, 0);
	log_cfg.file = f;
	log_cfg.to_stderr = 1;
	return 0;
}

int log_enabled(enum log_level level)
{
	return level <= log_cfg.level;
}

static void vlog(int priority, const char *errtext, const char *fmt, va_list ap)
{
	char msg[2048];

	vsnprintf(msg, sizeof msg, fmt, ap);
	if (log_cfg.to_stderr) {
		struct timespec ts;
		struct tm tm;
		char stamp[32];

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(stamp, sizeof stamp, "%H:%M:%S", &tm);
		fprintf(log_cfg.file ? log_cfg.file : stderr, "%s.%03ld %s: %s%s%s\n", stamp, ts.tv_nsec / 1000000,
			log_cfg.progname, msg, errtext ? ": " : "", errtext ? errtext : "");
	} else {
		syslog(priority, "%s%s%s", msg, errtext ? ": " : "", errtext ? errtext : "");
	}
}

void log_warn(const char *fmt, ...)
{
	char ebuf[128];
	const char *etext;
	int saved = errno;
	va_list ap;

	etext = strerror_r(saved, ebuf, sizeof ebuf);
	va_start(ap, fmt);
	vlog(LOG_WARNING, etext, fmt, ap);
	va_end(ap);
	errno = saved;
}

void log_warnx(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_WARNING, NULL, fmt, ap);
	va_end(ap);
	errno = saved;
}

void log_warnx_lib(void *prefix, const char *fmt, va_list ap)
{
	char msg[512];

	vsnprintf(msg, sizeof msg, fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_warnx("%s: %s", (const char *)prefix, msg);
}

void log_info(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (!log_enabled(LOG_LEVEL_INFO))
		return;
	va_start(ap, fmt);
	vlog(LOG_INFO, NULL, fmt, ap);
	va_end(ap);
	errno = saved;
}

void log_debug(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (!log_enabled(LOG_LEVEL_DEBUG))
		return;
	va_start(ap, fmt);
	vlog(LOG_DEBUG, NULL, fmt, ap);
	va_end(ap);
	errno = saved;
}

void fatal(const char *fmt, ...)
{
	char ebuf[128];
	const char *etext = strerror_r(errno, ebuf, sizeof ebuf);
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_CRIT, etext, fmt, ap);
	va_end(ap);
	exit(1);
}

void fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(LOG_CRIT, NULL, fmt, ap);
	va_end(ap);
	exit(1);
}
