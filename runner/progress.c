#include "progress.h"
#include "api_client.h"
#include "api_paths.h"
#include "log.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inotifytools/inotify.h>
#include <inotifytools/inotifytools.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The end of a progress file that is read: the last line is what counts. */
#define TAIL_BYTES 4096
#define CALL_TIMEOUT_MS 2000

struct entry {
	int64_t id, attempt;
	char *file;              /* the progress file */
	char *dir;               /* files:N: the folder counted; NULL otherwise */
	uint64_t files;
	bool polled;             /* written elsewhere: read now and then, never watched */
	/* The fields below are protected by p->lock. */
	int wd;                  /* -1 until the thread watches it */
	bool watch_failed;
	bool dirty;              /* it may have changed since it was last read */
	bool gone;               /* forgotten: last report, then free */
	bool known;
	double done, total;      /* the last value read */
	double sent_done, sent_total;
	int64_t sent_mono;       /* when it was last sent (0: never) */
	int64_t read_mono;       /* polled: when it was last read (0: never) */
	struct entry *next;
};

struct progress {
	struct api_client *api;  /* the thread's own */
	char *wake;              /* a file whose change wakes the thread */
	pthread_mutex_t lock;
	struct entry *entries;   /* protected by lock */
	bool stopping;           /* protected by lock */
	pthread_t thread;
	bool started;
};

int progress_parse(const char *text, size_t len, double *done, double *total)
{
	char line[128], *end;
	const char *start, *stop = text + len;
	double a, b;
	size_t n;

	/* The last line with something on it. */
	while (stop > text && isspace((unsigned char)stop[-1]))
		stop--;
	start = stop;
	while (start > text && start[-1] != '\n')
		start--;
	n = (size_t)(stop - start);
	if (n == 0 || n >= sizeof line)
		return -1;
	memcpy(line, start, n);
	line[n] = '\0';
	errno = 0;
	a = strtod(line, &end);
	if (end == line || errno || !isfinite(a) || a < 0)
		return -1;
	while (*end == ' ' || *end == '\t')
		end++;
	if (*end == '/') {
		const char *t = end + 1;

		b = strtod(t, &end);
		if (end == t || errno || !isfinite(b) || b <= 0)
			return -1;
	} else {
		if (*end == '%')
			end++;
		b = 100;
	}
	while (*end == ' ' || *end == '\t' || *end == '\r')
		end++;
	if (*end)
		return -1;
	*done = a;
	*total = b;
	return 0;
}

/* What an entry says now: the file's last line, or the folder's count. */
static int read_value(const struct entry *e, double *done, double *total)
{
	char buf[TAIL_BYTES + 1];
	struct stat st;
	ssize_t n;
	int fd, ret = -1;

	if (e->dir) {
		DIR *d = opendir(e->dir);
		struct dirent *de;
		uint64_t count = 0;

		if (!d)
			return -1;
		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] != '.')
				count++;
		closedir(d);
		*done = (double)count;
		*total = (double)e->files;
		return 0;
	}
	fd = open(e->file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && st.st_size > TAIL_BYTES)
		lseek(fd, st.st_size - TAIL_BYTES, SEEK_SET);
	n = read_all(fd, buf, TAIL_BYTES);
	close(fd);
	if (n > 0)
		ret = progress_parse(buf, (size_t)n, done, total);
	return ret;
}

static void entry_free(struct entry *e)
{
	free(e->file);
	free(e->dir);
	free(e);
}

/* POST one value. 0 when the scheduler has it (or will never want it). */
static int send_value(struct progress *p, const struct entry *e, double done, double total)
{
	struct api_reply reply = { 0 };
	struct progress_report value = { .attempt = (int)e->attempt, .done = done, .total = total };
	char *path = api_path_id(API_INSTANCE_PROGRESS, e->id), *body;
	int ret = -1, status;

	body = proto_encode(progress_report_to_json(&value));
	status = body ? api_call(p->api, "POST", path, body, strlen(body), NULL, CALL_TIMEOUT_MS, &reply, NULL) : -1;
	if (status >= 0) {
		/* 4xx: an instance it no longer knows; sending again changes nothing. */
		ret = status >= 500 ? -1 : 0;
		if (status >= 300)
			log_debug("progress of instance %" PRId64 ": HTTP %d", e->id, status);
	}
	api_reply_clear(&reply);
	free(body);
	free(path);
	return ret;
}

/* Start watches the thread has not made yet. Caller holds p->lock. */
static void watch_new_locked(struct entry *e)
{
	/* A file is written (and closed); a folder gets entries or loses them. */
	const int file_events = IN_MODIFY | IN_CLOSE_WRITE;
	const int dir_events = IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM;

	char *key;

	if (e->polled || e->wd >= 0 || e->watch_failed || e->gone)
		return;
	if (!inotifytools_watch_file(e->dir ? e->dir : e->file, e->dir ? dir_events : file_events)) {
		e->watch_failed = true;
		log_warnx("instance %" PRId64 ": cannot watch %s for progress: %s", e->id,
			  e->dir ? e->dir : e->file, strerror(inotifytools_error()));
		return;
	}
	/* The library knows a folder by its name with a '/' at the end. */
	key = e->dir ? xasprintf("%s/", e->dir) : xstrdup(e->file);
	e->wd = inotifytools_wd_from_filename(key);
	free(key);
	if (e->wd < 0) {
		e->watch_failed = true;
		log_warnx("instance %" PRId64 ": lost track of the watch of %s", e->id,
			  e->dir ? e->dir : e->file);
		return;
	}
	e->dirty = true;  /* read what is there already */
}

/* One round: watch new entries, send what is due, free forgotten ones.
 * Returns whether something waits for its interval to pass. Runs on the
 * thread; takes the lock itself but never holds it across I/O. */
static bool round_trip(struct progress *p)
{
	struct entry **pp, *e;
	bool waiting = false;
	int64_t now = time_mono_ms();

	pthread_mutex_lock(&p->lock);
	for (e = p->entries; e; e = e->next) {
		watch_new_locked(e);
		if (!e->polled || e->gone)
			continue;
		/* Come back for it: nothing else says it changed. */
		waiting = true;
		if (now - e->read_mono >= PROGRESS_POLL_MS) {
			e->dirty = true;
			e->read_mono = now;
		}
	}
	for (e = p->entries; e; e = e->next) {
		double done, total;
		bool due, gone;

		if (!e->dirty)
			continue;
		/* A last word is not held back: the instance has ended. */
		due = e->gone || e->sent_mono == 0 || now - e->sent_mono >= PROGRESS_INTERVAL_MS;
		if (!due) {
			waiting = true;
			continue;
		}
		e->dirty = false;
		gone = e->gone;
		pthread_mutex_unlock(&p->lock);
		/* e stays: only this thread frees entries. Its paths never change. */
		if (read_value(e, &done, &total) == 0) {
			bool changed = done != e->sent_done || total != e->sent_total;
			int sent = !changed ? 0 : send_value(p, e, done, total);

			pthread_mutex_lock(&p->lock);
			e->known = true;
			e->done = done;
			e->total = total;
			if (changed) {
				e->sent_mono = now;
				if (sent == 0) {
					e->sent_done = done;
					e->sent_total = total;
				} else if (!gone) {
					e->dirty = true;  /* the scheduler is away: later */
					waiting = true;
				}
			}
		} else {
			pthread_mutex_lock(&p->lock);
		}
	}
	for (pp = &p->entries; (e = *pp) != NULL; ) {
		if (!e->gone || e->dirty) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		if (e->wd >= 0)
			inotifytools_remove_watch_by_wd(e->wd);
		if (unlink(e->file) < 0 && errno != ENOENT)
			log_warn("cannot remove %s", e->file);
		entry_free(e);
	}
	pthread_mutex_unlock(&p->lock);
	return waiting;
}

static void *progress_main(void *arg)
{
	struct progress *p = arg;

	for (;;) {
		struct inotify_event *ev;
		bool waiting, stopping;

		waiting = round_trip(p);
		pthread_mutex_lock(&p->lock);
		stopping = p->stopping;
		pthread_mutex_unlock(&p->lock);
		if (stopping)
			break;
		/* Seconds are the library's unit: a report held back by the interval
		 * goes at the latest a second later. One event a turn: this library
		 * has no non-blocking read (0 waits for ever too), and never with
		 * the lock held. */
		ev = inotifytools_next_event(waiting ? 1 : -1);
		if (!ev)
			continue;
		pthread_mutex_lock(&p->lock);
		for (struct entry *e = p->entries; e; e = e->next)
			if (e->wd == ev->wd || (ev->mask & IN_Q_OVERFLOW))
				e->dirty = true;
		pthread_mutex_unlock(&p->lock);
	}
	return NULL;
}

/* Wake the thread: a change of the wake file is an event it waits for. */
static void wake(struct progress *p)
{
	int fd = open(p->wake, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd >= 0) {
		if (write(fd, "", 0) < 0)
			log_debug("cannot write %s", p->wake);
		close(fd);
	}
}

struct progress *progress_create(const char *endpoint, const char *state_dir, char **err)
{
	struct progress *p = xcalloc(1, sizeof *p);
	int rc;

	p->wake = xasprintf("%s/progress.wake", state_dir);
	pthread_mutex_init(&p->lock, NULL);
	p->api = api_client_create(endpoint, err);
	if (!p->api)
		goto fail;
	wake(p);
	/* Early, while the descriptor number is small: the library select()s. */
	if (!inotifytools_initialize() || !inotifytools_watch_file(p->wake, IN_CLOSE_WRITE)) {
		errno = inotifytools_error() ? inotifytools_error() : EIO;
		errprintf(err, "cannot start watching for progress (inotify): %s", strerror(errno));
		goto fail;
	}
	rc = pthread_create(&p->thread, NULL, progress_main, p);
	if (rc != 0) {
		errno = rc;
		errprintf(err, "cannot start the progress thread: %s", strerror(rc));
		goto fail;
	}
	p->started = true;
	return p;
fail:
	progress_destroy(p);
	return NULL;
}

void progress_destroy(struct progress *p)
{
	struct entry *e, *next;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = true;
	pthread_mutex_unlock(&p->lock);
	if (p->started) {
		wake(p);
		pthread_join(p->thread, NULL);
	}
	inotifytools_cleanup();
	for (e = p->entries; e; e = next) {
		next = e->next;
		entry_free(e);
	}
	api_client_destroy(p->api);
	pthread_mutex_destroy(&p->lock);
	unlink(p->wake);
	free(p->wake);
	free(p);
}

int progress_file_make(const char *file, uid_t uid, gid_t gid, bool fresh, char **err)
{
	int fd;

	/* O_NOFOLLOW: the scratch root is ours, but be strict about what we chown. */
	fd = open(file, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (fresh ? O_TRUNC : 0), 0644);
	if (fd < 0)
		return errprintf(err, "cannot create %s: %s", file, strerror(errno));
	if (geteuid() == 0 && fchown(fd, uid, gid) < 0) {
		int saved = errno;

		close(fd);
		unlink(file);
		errno = saved;
		return errprintf(err, "cannot give %s to uid %u: %s", file, (unsigned)uid, strerror(saved));
	}
	close(fd);
	return 0;
}

static void entry_add(struct progress *p, int64_t id, int64_t attempt, const char *file, const char *count_dir,
		      uint64_t files, bool polled)
{
	struct entry *e = xcalloc(1, sizeof *e);

	e->id = id;
	e->attempt = attempt;
	e->file = xstrdup(file);
	e->dir = files > 0 && count_dir ? xstrdup(count_dir) : NULL;
	e->files = files;
	e->polled = polled;
	e->wd = -1;
	e->sent_done = e->sent_total = -1;
	pthread_mutex_lock(&p->lock);
	e->next = p->entries;
	p->entries = e;
	pthread_mutex_unlock(&p->lock);
	wake(p);
}

int progress_watch(struct progress *p, int64_t id, int64_t attempt, const char *file, uid_t uid,
		   gid_t gid, bool fresh, const char *count_dir, uint64_t files, char **err)
{
	if (progress_file_make(file, uid, gid, fresh, err) < 0)
		return -1;
	entry_add(p, id, attempt, file, count_dir, files, false);
	return 0;
}

void progress_poll(struct progress *p, int64_t id, int64_t attempt, const char *file, const char *count_dir,
		   uint64_t files)
{
	entry_add(p, id, attempt, file, count_dir, files, true);
}

void progress_forget(struct progress *p, int64_t id, int64_t attempt)
{
	bool found = false;

	pthread_mutex_lock(&p->lock);
	for (struct entry *e = p->entries; e; e = e->next) {
		if (e->id == id && e->attempt == attempt && !e->gone) {
			e->gone = true;
			e->dirty = true;
			found = true;
		}
	}
	pthread_mutex_unlock(&p->lock);
	if (found)
		wake(p);
}

void progress_fill(struct progress *p, struct heartbeat_entry *entries, size_t n)
{
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < n; i++) {
		struct heartbeat_entry *he = &entries[i];

		for (struct entry *e = p->entries; e; e = e->next) {
			if (e->id != he->id || e->attempt != he->attempt || !e->known)
				continue;
			he->progress_done = e->done;
			he->progress_total = e->total;
			break;
		}
	}
	pthread_mutex_unlock(&p->lock);
}
