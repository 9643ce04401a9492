#include "volume.h"
#include "launch.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The file is a few lines; anything past this is not ours. */
#define VOLUME_FILE_MAX 4096

struct volume_watch {
	char *path;                 /* <mount>/storage */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	/* Protected by lock: */
	struct volume_state state;  /* the last read's */
	int64_t reading_mono;       /* a read in progress began then; 0: none */
	int64_t reading_wall_s;     /* the same on the wall clock, for since */
	bool stop;
	int refs;                   /* the owner's and the thread's */
};

/* Copy the value of "key: value" lines (after the colon and blanks, up to
 * the end of the line) into buf. */
static void copy_value(const char *v, char *buf, size_t len)
{
	size_t n;

	v += strspn(v, " \t");
	n = strcspn(v, "\r\n");
	if (n >= len)
		n = len - 1;
	memcpy(buf, v, n);
	buf[n] = '\0';
}

int volume_state_parse(const char *text, int64_t fallback_since, struct volume_state *out)
{
	int state = -1;  /* 1 reachable, 0 not */
	char value[64];

	memset(out, 0, sizeof *out);
	for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		if (strncmp(line, "state:", 6) == 0) {
			copy_value(line + 6, value, sizeof value);
			if (strcmp(value, "reachable") == 0)
				state = 1;
			else if (strcmp(value, "unreachable") == 0)
				state = 0;
		} else if (strncmp(line, "since:", 6) == 0) {
			copy_value(line + 6, value, sizeof value);
			out->down_since = strtoll(value, NULL, 10);
		} else if (strncmp(line, "reason:", 7) == 0) {
			copy_value(line + 7, out->reason, sizeof out->reason);
		}
	}
	if (state < 0) {
		memset(out, 0, sizeof *out);
		errno = EINVAL;
		return -1;
	}
	if (state == 1) {
		memset(out, 0, sizeof *out);
		return 0;
	}
	if (out->down_since <= 0)
		out->down_since = fallback_since > 0 ? fallback_since : 1;
	return 0;
}

/* One read of the file, on the reader's thread; true when the file could not
 * be read for the volume's reason (the since is then now_s, not the mount's). A file that is missing, or
 * unreadable for a reason other than the volume's, or says nothing we know,
 * counts as reachable: that is a mount without the file (an old parsafs, or
 * none), and the instances' own starts tell the rest (runner/launch.c). */
static bool read_state(const char *path, int64_t now_s, struct volume_state *out)
{
	char buf[VOLUME_FILE_MAX + 1];
	ssize_t n = -1;
	size_t got = 0;
	int fd, err = 0;

	memset(out, 0, sizeof *out);
	/* O_NONBLOCK: the mount answers from memory; on anything else it
	 * is at least a hint not to wait. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		err = errno;
	} else {
		while (got < VOLUME_FILE_MAX &&
		       ((n = read(fd, buf + got, VOLUME_FILE_MAX - got)) > 0 || (n < 0 && errno == EINTR)))
			if (n > 0)
				got += (size_t)n;
		if (n < 0)
			err = errno;
		close(fd);
	}
	if (err) {
		if (!launch_volume_errno(err))
			return false;
		out->down_since = now_s;
		snprintf(out->reason, sizeof out->reason, "cannot read %s: %s", path, strerror(err));
		return true;
	}
	buf[got] = '\0';
	if (volume_state_parse(buf, now_s, out) < 0)
		memset(out, 0, sizeof *out);
	return false;
}

static void release(struct volume_watch *w)
{
	int left;

	pthread_mutex_lock(&w->lock);
	left = --w->refs;
	pthread_mutex_unlock(&w->lock);
	if (left > 0)
		return;
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->wake);
	free(w->path);
	free(w);
}

static void *reader(void *arg)
{
	struct volume_watch *w = arg;
	struct volume_state st;
	bool own;

	pthread_setname_np(pthread_self(), "volume");
	pthread_mutex_lock(&w->lock);
	while (!w->stop) {
		struct timespec until;
		int64_t now_s = (int64_t)time(NULL);

		w->reading_mono = time_mono_ms();
		w->reading_wall_s = now_s;
		pthread_mutex_unlock(&w->lock);
		own = read_state(w->path, now_s, &st);
		pthread_mutex_lock(&w->lock);
		w->reading_mono = 0;
		/* An outage seen by failing reads keeps the since it began with. */
		if (own && w->state.down_since > 0)
			st.down_since = w->state.down_since;
		w->state = st;
		until = time_mono_deadline(VOLUME_READ_INTERVAL_MS);
		while (!w->stop && pthread_cond_timedwait(&w->wake, &w->lock, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&w->lock);
	release(w);
	return NULL;
}

struct volume_watch *volume_watch_create(const char *mount, char **err)
{
	struct volume_watch *w = xcalloc(1, sizeof *w);
	pthread_condattr_t ca;
	int rc;

	w->path = xasprintf("%s/storage", mount);
	w->refs = 2;
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->wake, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&w->thread, NULL, reader, w);
	if (rc) {
		w->refs = 1;
		release(w);
		errno = rc;
		errprintf(err, "cannot start the reader of the mount's storage state: %s", strerror(rc));
		return NULL;
	}
	return w;
}

void volume_watch_destroy(struct volume_watch *w)
{
	struct timespec until;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	/* A reader stuck in a read of the mount cannot be joined: it is left
	 * to end (and free what it holds) if the read ever returns. */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	if (pthread_timedjoin_np(w->thread, NULL, &until) != 0) {
		log_warnx("%s does not answer: leaving its reader behind", w->path);
		pthread_detach(w->thread);
	}
	release(w);
}

void volume_watch_get(struct volume_watch *w, struct volume_state *out)
{
	int64_t hung;

	memset(out, 0, sizeof *out);
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	*out = w->state;
	hung = w->reading_mono ? time_mono_ms() - w->reading_mono : 0;
	if (hung >= VOLUME_HUNG_MS && out->down_since <= 0) {
		out->down_since = w->reading_wall_s > 0 ? w->reading_wall_s : 1;
		snprintf(out->reason, sizeof out->reason, "the mount does not answer: a read of %s has "
			 "waited %" PRId64 " s", w->path, hung / 1000);
	}
	pthread_mutex_unlock(&w->lock);
}
