/* Purge, keep and retention of job outputs (see lifecycle.h). */
#include "lifecycle.h"
#include "backend.h"
#include "log.h"
#include "units.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SWEEP_MIN_MS 1000
#define SWEEP_MAX_MS (3600 * 1000)

struct request {
	int64_t id;
	enum { REQ_PURGE, REQ_KEEP, REQ_UNKEEP } what;
	char *who;
	struct request *next;
};

/* A set of job ids (small: grows by doubling, searched linearly from the end,
 * where recent jobs are). */
struct idset {
	int64_t *ids;
	size_t n, cap;
};

struct lifecycle {
	struct backend *storage;
	int64_t retention_ms;
	struct lifecycle_hooks hooks;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping;                /* protected by lock */
	struct request *head, *tail;  /* protected by lock */
	/* Requests the volume refused (an outage): the thread's own, tried
	 * again at later_due, 1 s to 30 s apart, so that a keep is not lost. */
	struct request *later, *later_tail;
	int64_t later_due, later_delay;
	struct idset kept;            /* protected by lock */
	struct idset done;            /* the thread's: purged, or found kept on the volume */
};

static bool idset_has(const struct idset *s, int64_t id)
{
	for (size_t i = s->n; i > 0; i--)
		if (s->ids[i - 1] == id)
			return true;
	return false;
}

static void idset_add(struct idset *s, int64_t id)
{
	if (idset_has(s, id))
		return;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->ids = xrealloc(s->ids, s->cap * sizeof *s->ids);
	}
	s->ids[s->n++] = id;
}

static void idset_del(struct idset *s, int64_t id)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->ids[i] == id)
			s->ids[i] = s->ids[--s->n];
}

static bool stopping(struct lifecycle *l)
{
	bool stop;

	pthread_mutex_lock(&l->lock);
	stop = l->stopping;
	pthread_mutex_unlock(&l->lock);
	return stop;
}

/* A marker file in the job's folder on the volume (created as the scheduler). */
static int marker_write(struct lifecycle *l, int64_t id, const char *name, const char *text)
{
	struct backend_cred self = { geteuid(), getegid() };
	struct backend_file *f = NULL;
	char *path = xasprintf("jobs/%lld/%s", (long long)id, name);
	int ret = -1;

	if (backend_open(l->storage, &self, path, O_WRONLY | O_CREAT | O_TRUNC, 0644, &f) < 0)
		goto out;
	if (backend_pwrite(l->storage, f, text, strlen(text), 0) < 0) {
		int saved = errno;

		backend_close(l->storage, f);
		errno = saved;
		goto out;
	}
	ret = backend_close(l->storage, f);
out:
	if (ret < 0) {
		int saved = errno;

		log_warn("job %lld: cannot write %s on the volume", (long long)id, path);
		errno = saved;
	}
	free(path);
	return ret;
}

/* 1 when the marker is there, 0 when it is not, -1 when the volume cannot
 * say (unreachable): then nothing is decided about the job. */
static int marker_state(struct lifecycle *l, int64_t id, const char *name)
{
	char *path = xasprintf("jobs/%lld/%s", (long long)id, name);
	struct stat st;
	int ret = backend_getattr(l->storage, path, &st) == 0 ? 1 : errno == ENOENT ? 0 : -1;

	free(path);
	return ret;
}

#define LATER_FIRST_MS 1000
#define LATER_MAX_MS 30000

/* r could not be done now (the volume refused): keep it for later. */
static void do_later(struct lifecycle *l, struct request *r)
{
	r->next = NULL;
	if (l->later_tail)
		l->later_tail->next = r;
	else
		l->later = r;
	l->later_tail = r;
	if (!l->later_due) {
		l->later_delay = l->later_delay ? l->later_delay * 2 : LATER_FIRST_MS;
		if (l->later_delay > LATER_MAX_MS)
			l->later_delay = LATER_MAX_MS;
		l->later_due = time_mono_ms() + l->later_delay;
	}
}

struct name_batch {
	char **names;
	size_t n, cap, max;
};

/* Collects names; stops the listing once max are in hand. */
static int collect_name(void *arg, const char *name, const struct stat *st)
{
	struct name_batch *b = arg;

	(void)st;
	if (b->n == b->cap) {
		b->cap = b->cap ? b->cap * 2 : 64;
		b->names = xrealloc(b->names, b->cap * sizeof *b->names);
	}
	b->names[b->n++] = xstrdup(name);
	return b->max && b->n >= b->max;
}

static void batch_clear(struct name_batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->names[i]);
	b->n = 0;
}

/* Remove what is in dir, a batch of names at a time (a folder of a million
 * checkpoints need not fit in memory); 0 or an errno. */
static int empty_folder(struct lifecycle *l, const char *dir, size_t *removed)
{
	struct name_batch b = { .max = 1024 };
	int failed = 0;

	while (!failed && !stopping(l)) {
		if (backend_readdir(l->storage, dir, collect_name, &b) < 0) {
			failed = errno == ENOENT ? 0 : errno;
			break;
		}
		if (b.n == 0)
			break;
		for (size_t i = 0; i < b.n && !failed; i++) {
			char *path = xasprintf("%s/%s", dir, b.names[i]);

			if (backend_remove_tree(l->storage, path) < 0) {
				log_warn("cannot remove %s from the volume", path);
				failed = errno ? errno : EIO;
			} else {
				(*removed)++;
			}
			free(path);
		}
		batch_clear(&b);
	}
	batch_clear(&b);
	free(b.names);
	return failed;
}

/* Empty every jobs/<id>/out/<stage>/; the stage folders stay. */
static void purge(struct lifecycle *l, int64_t id, const char *who)
{
	char *out = xasprintf("jobs/%lld/out", (long long)id);
	struct name_batch stages = { 0 };
	size_t removed = 0;
	int failed = 0;
	char text[256];

	if (backend_readdir(l->storage, out, collect_name, &stages) < 0 && errno != ENOENT)
		failed = errno;
	for (size_t i = 0; i < stages.n && !failed && !stopping(l); i++) {
		char *dir = xasprintf("%s/%s", out, stages.names[i]);
		struct stat st;

		/* Something other than a stage folder goes as a whole. */
		if (backend_getattr(l->storage, dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
			if (backend_remove_tree(l->storage, dir) < 0)
				failed = errno;
			else
				removed++;
		} else {
			failed = empty_folder(l, dir, &removed);
		}
		free(dir);
	}
	batch_clear(&stages);
	free(stages.names);
	if (failed) {
		snprintf(text, sizeof text, "outputs purge by %s incomplete: %zu entries removed, then %s",
			 who, removed, strerror(failed));
	} else if (stopping(l)) {
		snprintf(text, sizeof text, "outputs purge by %s interrupted by a shutdown (%zu entries "
			 "removed): purge again", who, removed);
	} else {
		snprintf(text, sizeof text, "outputs purged by %s (%zu entries)", who, removed);
		if (marker_write(l, id, ".purged", text) == 0)
			idset_add(&l->done, id);
	}
	log_info("job %lld: %s", (long long)id, text);
	if (l->hooks.note)
		l->hooks.note(l->hooks.arg, id, text);
	free(out);
}

/* Retention: the outputs of finished jobs older than the limit, unless kept. */
static void sweep(struct lifecycle *l)
{
	int64_t *ids = NULL;
	size_t n;

	if (!l->retention_ms || !l->hooks.ended_before)
		return;
	n = l->hooks.ended_before(l->hooks.arg, time_now_ms() - l->retention_ms, &ids);
	for (size_t i = 0; i < n && !stopping(l); i++) {
		bool kept;

		pthread_mutex_lock(&l->lock);
		kept = idset_has(&l->kept, ids[i]);
		pthread_mutex_unlock(&l->lock);
		if (kept || idset_has(&l->done, ids[i]))
			continue;
		/* Kept or purged before a restart: the volume says so. One
		 * it cannot answer for (an outage) waits for the next sweep. */
		{
			int keep = marker_state(l, ids[i], ".keep");
			int purged = keep == 0 ? marker_state(l, ids[i], ".purged") : keep;
			int out = purged == 0 ? marker_state(l, ids[i], "out") : 1;

			if (keep < 0 || purged < 0 || out < 0)
				continue;
			if (keep || purged || !out) {
				idset_add(&l->done, ids[i]);
				continue;
			}
		}
		purge(l, ids[i], "retention");
	}
	free(ids);
}

/* Do r; true when it is done (or cannot be, for good), false when the
 * volume refused it and it is to be tried again later. */
static bool handle(struct lifecycle *l, struct request *r)
{
	char *path = xasprintf("jobs/%lld/.keep", (long long)r->id);
	bool done = true;

	switch (r->what) {
	case REQ_PURGE:
		idset_del(&l->done, r->id);
		purge(l, r->id, r->who);
		break;
	case REQ_KEEP:
		/* A job folder that is gone needs no marker; a volume away does. */
		if (marker_write(l, r->id, ".keep", r->who) < 0 && errno != ENOENT)
			done = false;
		break;
	case REQ_UNKEEP:
		if (backend_unlink(l->storage, path) < 0 && errno != ENOENT) {
			log_warn("job %lld: cannot remove %s (tried again later)", (long long)r->id, path);
			done = false;
		}
		idset_del(&l->done, r->id);
		break;
	}
	free(path);
	return done;
}

static int64_t sweep_every(const struct lifecycle *l)
{
	int64_t ms = l->retention_ms / 10;

	return ms < SWEEP_MIN_MS ? SWEEP_MIN_MS : ms > SWEEP_MAX_MS ? SWEEP_MAX_MS : ms;
}

static void *lifecycle_main(void *arg)
{
	struct lifecycle *l = arg;
	int64_t next_sweep = time_mono_ms();

	pthread_mutex_lock(&l->lock);
	while (!l->stopping) {
		struct request *r;

		/* Those the volume refused go after what came meanwhile. */
		if (l->later && time_mono_ms() >= l->later_due) {
			if (l->tail)
				l->tail->next = l->later;
			else
				l->head = l->later;
			l->tail = l->later_tail;
			l->later = l->later_tail = NULL;
			l->later_due = 0;
		}
		r = l->head;
		if (r) {
			l->head = r->next;
			if (!l->head)
				l->tail = NULL;
			pthread_mutex_unlock(&l->lock);
			if (handle(l, r)) {
				free(r->who);
				free(r);
				pthread_mutex_lock(&l->lock);
				if (!l->later)
					l->later_delay = 0;
			} else {
				pthread_mutex_lock(&l->lock);
				do_later(l, r);
			}
			continue;
		}
		if (l->retention_ms && time_mono_ms() >= next_sweep) {
			pthread_mutex_unlock(&l->lock);
			sweep(l);
			next_sweep = time_mono_ms() + sweep_every(l);
			pthread_mutex_lock(&l->lock);
			continue;
		}
		{
			int64_t wait = l->retention_ms ? next_sweep - time_mono_ms() : 3600 * 1000;
			struct timespec until;

			if (l->later && l->later_due - time_mono_ms() < wait)
				wait = l->later_due - time_mono_ms();
			until = time_mono_deadline(wait > 0 ? wait : 0);

			pthread_cond_timedwait(&l->wake, &l->lock, &until);
		}
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

struct lifecycle *lifecycle_create(struct backend *storage, int64_t retention_ms,
				   const struct lifecycle_hooks *hooks)
{
	struct lifecycle *l = xcalloc(1, sizeof *l);
	pthread_condattr_t attr;

	l->storage = storage;
	l->retention_ms = retention_ms > 0 ? retention_ms : 0;
	if (hooks)
		l->hooks = *hooks;
	pthread_mutex_init(&l->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&l->wake, &attr);
	pthread_condattr_destroy(&attr);
	return l;
}

int lifecycle_start(struct lifecycle *l, char **err)
{
	int rc;

	if (!l->storage)
		return 0;
	rc = pthread_create(&l->thread, NULL, lifecycle_main, l);
	if (rc != 0) {
		errno = rc;
		return errprintf(err, "cannot start the clean-up thread: %s", strerror(rc));
	}
	l->started = true;
	return 0;
}

void lifecycle_destroy(struct lifecycle *l)
{
	if (!l)
		return;
	if (l->started) {
		pthread_mutex_lock(&l->lock);
		l->stopping = true;
		pthread_cond_signal(&l->wake);
		pthread_mutex_unlock(&l->lock);
		pthread_join(l->thread, NULL);
	}
	if (l->tail)
		l->tail->next = l->later;
	else
		l->head = l->later;
	while (l->head) {
		struct request *r = l->head;

		l->head = r->next;
		free(r->who);
		free(r);
	}
	free(l->kept.ids);
	free(l->done.ids);
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

static void enqueue(struct lifecycle *l, int64_t id, int what, const char *who)
{
	struct request *r = xcalloc(1, sizeof *r);

	r->id = id;
	r->what = what;
	r->who = xstrdup(who ? who : "?");
	pthread_mutex_lock(&l->lock);
	if (what == REQ_KEEP)
		idset_add(&l->kept, id);
	else if (what == REQ_UNKEEP)
		idset_del(&l->kept, id);
	if (l->tail)
		l->tail->next = r;
	else
		l->head = r;
	l->tail = r;
	pthread_cond_signal(&l->wake);
	pthread_mutex_unlock(&l->lock);
}

void lifecycle_purge(struct lifecycle *l, int64_t id, const char *who)
{
	if (l->storage)
		enqueue(l, id, REQ_PURGE, who);
}

void lifecycle_keep(struct lifecycle *l, int64_t id, bool kept)
{
	if (l->storage)
		enqueue(l, id, kept ? REQ_KEEP : REQ_UNKEEP, kept ? "kept" : "");
}

int lifecycle_parse_retention(const char *text, int64_t *ms, char **err)
{
	uint64_t secs;

	if (parse_duration(text, &secs) < 0 || secs == 0 || secs > 100ull * 365 * 86400) {
		errno = EINVAL;
		return errprintf(err, "retention '%s': expected a duration such as 30d, 12h or 90m", text);
	}
	*ms = (int64_t)secs * 1000;
	return 0;
}
