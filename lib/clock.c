#include "clock.h"
#include "log.h"
#include "timewin.h"
#include "units.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A clock file is a line of text. */
#define CLOCK_FILE_MAX 256

struct clock {
	char *file;               /* NULL: the system clock */
	pthread_mutex_t lock;
	/* The file as last read (protected by lock): it is parsed again only
	 * when it changes. An absolute time is kept as an offset from the system
	 * clock, which is what it means. */
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	off_t size;
	bool have;
	int64_t offset_ms;
	bool warned;
};

struct clock *clock_create(const char *file)
{
	struct clock *c = xcalloc(1, sizeof *c);

	c->file = file ? xstrdup(file) : NULL;
	pthread_mutex_init(&c->lock, NULL);
	return c;
}

void clock_destroy(struct clock *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	free(c->file);
	free(c);
}

int clock_parse(const char *text, int64_t mtime_ms, int64_t *offset_ms)
{
	char line[CLOCK_FILE_MAX];
	size_t n;
	uint64_t secs;
	int64_t at, in;
	char *end;

	snprintf(line, sizeof line, "%s", text);
	n = strcspn(line, "\r\n");
	line[n] = '\0';
	while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
		line[--n] = '\0';
	if (n == 0) {
		*offset_ms = 0;
		return 0;
	}
	if (line[0] == '+' || line[0] == '-') {
		if (parse_duration(line + 1, &secs) < 0 || secs > (uint64_t)INT32_MAX * 100) {
			errno = EINVAL;
			return -1;
		}
		*offset_ms = (line[0] == '-' ? -1 : 1) * (int64_t)secs * 1000;
		return 0;
	}
	if (line[0] == '@') {
		errno = 0;
		at = strtoll(line + 1, &end, 10);
		if (errno || end == line + 1 || *end) {
			errno = EINVAL;
			return -1;
		}
	} else if (timewin_parse_start(line, &at, &in, NULL) < 0 || in != 0) {
		errno = EINVAL;
		return -1;
	}
	/* The file's time was true when it was written; it flows on from there. */
	*offset_ms = at * 1000 - mtime_ms;
	return 0;
}

/* Read the file again if it changed. Caller holds c->lock. */
static void refresh_locked(struct clock *c)
{
	char text[CLOCK_FILE_MAX];
	struct stat st;
	int64_t offset, mtime_ms;
	ssize_t n;
	int fd;

	if (stat(c->file, &st) < 0) {
		c->have = false;
		c->offset_ms = 0;
		return;
	}
	if (c->have && st.st_dev == c->dev && st.st_ino == c->ino && st.st_size == c->size &&
	    st.st_mtim.tv_sec == c->mtime.tv_sec && st.st_mtim.tv_nsec == c->mtime.tv_nsec)
		return;
	fd = open(c->file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read_all(fd, text, sizeof text - 1);
	close(fd);
	if (n < 0)
		return;
	text[n] = '\0';
	mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
	if (clock_parse(text, mtime_ms, &offset) < 0) {
		if (!c->warned)
			log_warnx("clock file %s: '%.*s' is not +DURATION, -DURATION, a local time or "
				  "@EPOCH; keeping the last time", c->file, (int)strcspn(text, "\n"), text);
		c->warned = true;
		return;
	}
	if (!c->have || offset != c->offset_ms)
		log_info("clock file %s: the clock is %+lld s from the system clock", c->file,
			 (long long)(offset / 1000));
	c->warned = false;
	c->have = true;
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	c->size = st.st_size;
	c->mtime = st.st_mtim;
	c->offset_ms = offset;
}

static int64_t offset_of(struct clock *c)
{
	int64_t offset;

	if (!c || !c->file)
		return 0;
	pthread_mutex_lock(&c->lock);
	refresh_locked(c);
	offset = c->offset_ms;
	pthread_mutex_unlock(&c->lock);
	return offset;
}

int64_t clock_now_ms(struct clock *c)
{
	return time_now_ms() + offset_of(c);
}

int64_t clock_mono_ms(struct clock *c)
{
	return time_mono_ms() + offset_of(c);
}

int64_t clock_offset_ms(struct clock *c)
{
	return offset_of(c);
}
