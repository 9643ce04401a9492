#include "util.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int errprintf(char **err, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (err) {
		char *text = NULL;

		va_start(ap, fmt);
		if (vasprintf(&text, fmt, ap) < 0)
			text = NULL;
		va_end(ap);
		free(*err);
		*err = text;
	}
	errno = saved;
	return -1;
}

int64_t time_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t time_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct timespec time_mono_deadline(int64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

void time_format_iso(int64_t ms, char *buf, size_t len)
{
	time_t secs = (time_t)(ms / 1000);
	struct tm tm;

	if (ms <= 0) {
		snprintf(buf, len, "-");
		return;
	}
	localtime_r(&secs, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, p + done, len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

char *read_fd(int fd, size_t max, size_t *lenp)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;

	for (;;) {
		ssize_t n;

		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			buf = xrealloc(buf, cap);
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			errno = EFBIG;
			goto fail;
		}
	}
	buf[len] = '\0';
	if (lenp)
		*lenp = len;
	return buf;
fail:
	free(buf);
	return NULL;
}

char *read_file(const char *path, size_t max, size_t *lenp)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), saved;
	char *buf;

	if (fd < 0)
		return NULL;
	buf = read_fd(fd, max, lenp);
	saved = errno;
	close(fd);
	errno = saved;
	return buf;
}

int mkdir_p(const char *path, mode_t mode)
{
	char *copy = xstrdup(path);
	int rc = -1;

	for (char *p = copy + 1; ; p++) {
		if (*p == '/' || *p == '\0') {
			char saved = *p;

			*p = '\0';
			if (mkdir(copy, mode) < 0 && errno != EEXIST)
				goto out;
			*p = saved;
			if (saved == '\0')
				break;
		}
	}
	rc = 0;
out:
	free(copy);
	return rc;
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		fatalx("out of memory allocating %zu bytes", n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		fatalx("out of memory allocating %zu x %zu bytes", n, size);
	return p;
}

void mem_give_back(void)
{
	malloc_trim(0);
}

void mem_one_arena(size_t large_block)
{
	mallopt(M_ARENA_MAX, 1);
	mallopt(M_MMAP_THRESHOLD, (int)large_block);
	mallopt(M_TRIM_THRESHOLD, (int)(4 * large_block));
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		fatalx("out of memory allocating %zu bytes", n);
	return q;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");

	if (!p)
		fatalx("out of memory");
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	char *p;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		fatalx("out of memory");
	va_end(ap);
	return p;
}

char *squeeze_blanks(const char *text)
{
	char *out = xmalloc(strlen(text) + 1), *o = out;
	bool blank = false;

	while (*text == ' ' || *text == '\t')
		text++;
	for (; *text; text++) {
		if (*text == ' ' || *text == '\t') {
			blank = true;
			continue;
		}
		if (blank && o > out)
			*o++ = ' ';
		blank = false;
		*o++ = *text;
	}
	*o = '\0';
	return out;
}

const char *line_value(const char *text, const char *key, char sep)
{
	size_t klen = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (strncmp(p, key, klen) == 0 && p[klen] == sep)
			return p + klen + 1;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

void child_default_signals(void)
{
	struct sigaction dfl;
	sigset_t none;

	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	for (int s = 1; s < NSIG; s++)
		sigaction(s, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}
