/* The volume's state as the mount tells it (see storage_watch.h). The state
 * itself is the backend's (backend_health): every call that fails for want of
 * the server, and every answer, moves it; the probe only asks when nobody
 * else does. */
#include "storage_watch.h"
#include "backend.h"
#include "data_dir.h"
#include "fs_node.h"
#include "log.h"
#include "unlinked.h"
#include "util.h"

#include <errno.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROBE_UP_MS 3000            /* between probes while the volume answers */
#define PROBE_DOWN_MS 1000          /* ...and while it does not: its return is seen soon */
#define PROBE_TIMEOUT_MS 5000       /* one probe waits this long for an answer */

struct storage_watch {
	struct fs_ctx *fs;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stop;                  /* protected by lock */
	unsigned int pending;       /* STORAGE_PENDING_*; only the thread touches it */
};

/* Start-up's work on the volume, once it answers. Failures for other reasons
 * are said once and not tried again (as at start). */
static void do_pending(struct storage_watch *sw)
{
	struct fs_ctx *fs = sw->fs;

	if (sw->pending & STORAGE_PENDING_DATA) {
		if (data_dir_prepare(fs) == 0) {
			log_info("made data/ on the storage %s now that it answers", fs->storage_url);
			sw->pending &= ~(unsigned int)STORAGE_PENDING_DATA;
		} else if (backend_health(fs->backend, NULL, NULL)) {
			log_warn("cannot make data/ on the storage %s", fs->storage_url);
			sw->pending &= ~(unsigned int)STORAGE_PENDING_DATA;
		}
	}
	if (sw->pending & STORAGE_PENDING_UNLINKED) {
		char *dir = unlinked_prepare(fs->backend);

		if (dir || backend_health(fs->backend, NULL, NULL)) {
			if (!dir)
				log_warn("cannot make a folder for unlinked open files on the storage %s",
					 fs->storage_url);
			sw->pending &= ~(unsigned int)STORAGE_PENDING_UNLINKED;
		}
		free(dir);
	}
}

static void *watch_main(void *arg)
{
	struct storage_watch *sw = arg;

	pthread_mutex_lock(&sw->lock);
	while (!sw->stop) {
		struct timespec until;
		int64_t wait_ms;

		pthread_mutex_unlock(&sw->lock);
		/* Unmounting (SIGTERM, fusermount -u): the loop waits for every
		 * request being served, so those waiting for the volume stop
		 * waiting (each at its next try, within 2 s). */
		if (sw->fs->fuse && fuse_session_exited(fuse_get_session(sw->fs->fuse)))
			backend_set_patience(sw->fs->backend, 0);
		else if (backend_probe(sw->fs->backend, PROBE_TIMEOUT_MS) == 0 && sw->pending)
			do_pending(sw);
		wait_ms = backend_health(sw->fs->backend, NULL, NULL) ? PROBE_UP_MS : PROBE_DOWN_MS;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += wait_ms / 1000;
		until.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&sw->lock);
		while (!sw->stop && pthread_cond_timedwait(&sw->wake, &sw->lock, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&sw->lock);
	return NULL;
}

struct storage_watch *storage_watch_create(struct fs_ctx *fs, unsigned int pending)
{
	struct storage_watch *sw = xcalloc(1, sizeof *sw);
	pthread_condattr_t attr;

	sw->fs = fs;
	sw->pending = pending;
	pthread_mutex_init(&sw->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&sw->wake, &attr);
	pthread_condattr_destroy(&attr);
	errno = pthread_create(&sw->thread, NULL, watch_main, sw);
	if (errno != 0) {
		int saved = errno;

		pthread_cond_destroy(&sw->wake);
		pthread_mutex_destroy(&sw->lock);
		free(sw);
		errno = saved;
		return NULL;
	}
	return sw;
}

void storage_watch_destroy(struct storage_watch *sw)
{
	if (!sw)
		return;
	pthread_mutex_lock(&sw->lock);
	sw->stop = true;
	pthread_cond_signal(&sw->wake);
	pthread_mutex_unlock(&sw->lock);
	pthread_join(sw->thread, NULL);
	pthread_cond_destroy(&sw->wake);
	pthread_mutex_destroy(&sw->lock);
	free(sw);
}

/* Reasons come from libnfs and servers: one line, no control bytes, so that
 * a reader parsing "key: value" lines cannot be misled. */
static char *one_line(const char *text)
{
	char *s = xstrdup(text ? text : "");

	for (char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	return s;
}

char *storage_watch_text(const struct fs_ctx *fs)
{
	int64_t since = 0;
	char *reason = NULL, *clean, *text;
	char when[64] = "";
	struct tm tm;
	time_t t;

	if (backend_health(fs->backend, &since, &reason))
		return xasprintf("state: reachable\nvolume: %s\n", fs->storage_url ? fs->storage_url : "");
	t = (time_t)since;
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
	clean = one_line(reason);
	text = xasprintf("state: unreachable\nsince: %lld (%s)\nvolume: %s\nreason: %s\n",
			 (long long)since, when, fs->storage_url ? fs->storage_url : "", clean);
	free(clean);
	free(reason);
	return text;
}

char *storage_watch_status_line(const struct fs_ctx *fs)
{
	int64_t since = 0;
	char *reason = NULL, *clean, *line, waits[64];
	char when[16] = "?";
	struct tm tm;
	time_t t;

	if (backend_health(fs->backend, &since, &reason))
		return NULL;
	t = (time_t)since;
	if (localtime_r(&t, &tm))
		strftime(when, sizeof when, "%H:%M:%S", &tm);
	if (fs->storage_patience_ms > 0)
		snprintf(waits, sizeof waits, "waits up to %lld s", (long long)(fs->storage_patience_ms / 1000));
	else
		snprintf(waits, sizeof waits, "fails at once");
	clean = one_line(reason);
	line = xasprintf("storage: unreachable since %s (%s); I/O in out/ and data/ %s\n", when, clean, waits);
	free(clean);
	free(reason);
	return line;
}

/* ---- /storage: 0444, the daemon's, answered from memory ---- */

static int storage_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	(void)p;
	fs_stat_file(fs, st, 0444, fs->uid, fs->gid, 0);
	return 0;
}

static int storage_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	char *text;

	(void)p;
	if (fs_check_read_only(flags) < 0)
		return -1;
	text = storage_watch_text(fs);
	*file = text_file_create(text, strlen(text));
	return 0;
}

const struct node_ops storage_file_ops = {
	.getattr = storage_getattr,
	.open = storage_open,
	.truncate = fs_refuse_truncate,
};
