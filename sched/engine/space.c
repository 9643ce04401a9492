/* Free space on the volume and its reservation by stages (see space.h). */
#include "space.h"
#include "backend.h"
#include "log.h"
#include "model.h"
#include "units.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct space {
	struct backend *storage;
	int64_t period_ms;
	void (*changed)(void *arg);
	void *arg;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool stopping;          /* protected by lock */
	bool known;             /* protected by lock: avail holds a measurement */
	uint64_t avail;         /* protected by lock: bytes free for unprivileged users */
	char error[256];        /* protected by lock: why it is unknown */
	/* Pass state: only under the engine's lock. */
	bool pass_known;
	uint64_t pass_avail;
	uint64_t reserved;      /* declared by instances assigned or running */
	uint64_t placed;        /* declared by what this pass placed */
	int64_t denied_group;   /* last group refused for space (-1: none) */
	struct placement_gate inner;
	bool have_inner;
};

/* Measure once; tell the engine when it matters (became known, or moved by
 * more than 1% of what was free). */
static void measure(struct space *s)
{
	struct statvfs st;
	bool tell = false;
	int rc = backend_statfs(s->storage, "", &st);
	int saved = errno;

	pthread_mutex_lock(&s->lock);
	if (rc == 0) {
		uint64_t avail = (uint64_t)st.f_bavail * st.f_frsize;
		uint64_t diff = avail > s->avail ? avail - s->avail : s->avail - avail;

		tell = !s->known || diff > s->avail / 100;
		s->avail = avail;
		s->known = true;
		s->error[0] = '\0';
	} else {
		if (s->known || !s->error[0])
			log_warnx("storage: cannot read the free space of the volume: %s", strerror(saved));
		tell = s->known;
		s->known = false;
		snprintf(s->error, sizeof s->error, "%s", strerror(saved));
	}
	pthread_mutex_unlock(&s->lock);
	if (tell && s->changed)
		s->changed(s->arg);
}

static void *space_main(void *arg)
{
	struct space *s = arg;

	pthread_mutex_lock(&s->lock);
	while (!s->stopping) {
		struct timespec until;

		pthread_mutex_unlock(&s->lock);
		measure(s);
		pthread_mutex_lock(&s->lock);
		until = time_mono_deadline(s->period_ms);
		if (!s->stopping)
			pthread_cond_timedwait(&s->wake, &s->lock, &until);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

struct space *space_create(struct backend *storage, int64_t period_ms,
			   void (*changed)(void *arg), void *arg)
{
	struct space *s = xcalloc(1, sizeof *s);
	pthread_condattr_t attr;

	s->storage = storage;
	s->period_ms = period_ms > 0 ? period_ms : 2000;
	s->changed = changed;
	s->arg = arg;
	s->denied_group = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &attr);
	pthread_condattr_destroy(&attr);
	return s;
}

int space_start(struct space *s, char **err)
{
	int rc;

	if (!s->storage)
		return 0;
	rc = pthread_create(&s->thread, NULL, space_main, s);
	if (rc != 0) {
		errno = rc;
		return errprintf(err, "cannot start the space thread: %s", strerror(rc));
	}
	s->started = true;
	return 0;
}

void space_destroy(struct space *s)
{
	if (!s)
		return;
	if (s->started) {
		pthread_mutex_lock(&s->lock);
		s->stopping = true;
		pthread_cond_signal(&s->wake);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->thread, NULL);
	}
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void space_begin_pass(struct space *s, uint64_t reserved)
{
	pthread_mutex_lock(&s->lock);
	s->pass_known = s->known || !s->storage;
	s->pass_avail = s->storage ? s->avail : UINT64_MAX;
	pthread_mutex_unlock(&s->lock);
	s->reserved = reserved;
	s->placed = 0;
	s->denied_group = -1;
}

int space_avail(struct space *s, uint64_t *avail)
{
	int ret = -1;

	pthread_mutex_lock(&s->lock);
	if (s->known || !s->storage) {
		*avail = s->storage ? s->avail : UINT64_MAX;
		ret = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

int space_free(struct space *s, uint64_t *avail, uint64_t *reserved)
{
	*reserved = s->reserved;
	return space_avail(s, avail);
}

/* Bytes a new request may count on in this pass. */
static uint64_t unreserved(const struct space *s)
{
	uint64_t taken = s->reserved + s->placed;

	return s->pass_avail > taken ? s->pass_avail - taken : 0;
}

static int gate_allow(void *arg, const struct placement_host *hosts, size_t h,
		      const struct placement_req *req)
{
	struct space *s = arg;

	if (req->disk > 0 && (!s->pass_known || req->disk > unreserved(s))) {
		s->denied_group = req->group;
		return 0;
	}
	return !s->have_inner || !s->inner.allow || s->inner.allow(s->inner.arg, hosts, h, req);
}

static void gate_blocked(void *arg, const struct placement_host *hosts, size_t nhosts,
			 const struct placement_req *req)
{
	struct space *s = arg;

	/* Waiting for space is not waiting for a host: it keeps none. */
	if (req->group == s->denied_group)
		return;
	if (s->have_inner && s->inner.blocked)
		s->inner.blocked(s->inner.arg, hosts, nhosts, req);
}

static void gate_placed(void *arg, const struct placement_host *hosts, size_t h,
			const struct placement_req *req)
{
	struct space *s = arg;

	s->placed += req->disk;
	if (s->have_inner && s->inner.placed)
		s->inner.placed(s->inner.arg, hosts, h, req);
}

struct placement_gate space_gate(struct space *s, const struct placement_gate *inner)
{
	s->have_inner = inner != NULL;
	if (inner)
		s->inner = *inner;
	return (struct placement_gate){
		.allow = gate_allow,
		.blocked = gate_blocked,
		.placed = gate_placed,
		.arg = s,
	};
}

char *space_why_job(struct space *s, const struct job *job, char *text)
{
	uint64_t avail = 0, reserved = 0;
	int known = space_free(s, &avail, &reserved);

	for (size_t i = 0; i < job->nstages; i++) {
		const struct stage *stage = &job->stages[i];
		uint64_t need = stage->spec->disk, left;
		char a[32], b[32], c[32], *more;

		if (need == 0 || stage->counts[INST_QUEUED] == 0 ||
		    (stage->state != STAGE_QUEUED && stage->state != STAGE_RUNNING))
			continue;
		format_size(need, a, sizeof a);
		if (known < 0) {
			char error[256];

			pthread_mutex_lock(&s->lock);
			snprintf(error, sizeof error, "%s", s->error[0] ? s->error : "not measured yet");
			pthread_mutex_unlock(&s->lock);
			more = xasprintf("%sstage %s: waits for space on the volume: needs %s, free space "
					 "unknown (%s)\n", text, stage->spec->name, a, error);
		} else {
			left = avail > reserved ? avail - reserved : 0;
			if (need <= left)
				continue;
			format_size(avail, b, sizeof b);
			format_size(reserved, c, sizeof c);
			more = xasprintf("%sstage %s: waits for space on the volume: needs %s, %s free "
					 "and %s of it reserved by running stages\n", text,
					 stage->spec->name, a, b, c);
		}
		free(text);
		text = more;
	}
	return text;
}
