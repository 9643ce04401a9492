/* The last hour of every host's live use for /hosts/<h>: a thread copies each
 * host's last heartbeat (cpu and memory, the whole machine's and the
 * outside's, stamped with the heartbeat's time) every SAMPLE_MS into a ring
 * per host, from the engine's copy (engine_host_loads_json); a host that sent
 * none since is skipped.
 * In memory only: a restarted scheduler starts a new hour. */
#include "web_internal.h"

#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SAMPLE_MS 10000
#define RING 360 /* an hour */

struct sample {
	int64_t ms;
	float cpu, outside_cpu, mem, outside_mem;
};

struct ring {
	char *host;
	struct sample s[RING];
	size_t head, n;
};

struct web_samples {
	struct engine *engine;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;   /* guards rings, nrings and stop */
	pthread_cond_t wake;
	bool stop;
	struct ring *rings;
	size_t nrings;
};

static struct ring *ring_of(struct web_samples *s, const char *host)
{
	for (size_t i = 0; i < s->nrings; i++)
		if (strcmp(s->rings[i].host, host) == 0)
			return &s->rings[i];
	return NULL;
}

static void take_samples(struct web_samples *s)
{
	json_t *loads = engine_host_loads_json(s->engine);

	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < json_array_size(loads); i++) {
		const json_t *h = json_array_get(loads, i);
		struct ring *r = ring_of(s, jstr(h, "name"));
		int64_t ms = jint(h, "ms");

		if (r && r->n && r->s[(r->head + RING - 1) % RING].ms == ms)
			continue; /* no heartbeat since the last sample: a gap, not a flat line */
		if (!r) {
			s->rings = xrealloc(s->rings, (s->nrings + 1) * sizeof *s->rings);
			r = &s->rings[s->nrings++];
			memset(r, 0, sizeof *r);
			r->host = xstrdup(jstr(h, "name"));
		}
		r->s[r->head] = (struct sample){ ms, (float)jnum(h, "cpu"), (float)jnum(h, "outside_cpu"),
			(float)jnum(h, "mem"), (float)jnum(h, "outside_mem") };
		r->head = (r->head + 1) % RING;
		if (r->n < RING)
			r->n++;
	}
	pthread_mutex_unlock(&s->lock);
	json_decref(loads);
}

static void *sampler(void *arg)
{
	struct web_samples *s = arg;
	struct timespec until;

	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		pthread_mutex_unlock(&s->lock);
		take_samples(s);
		pthread_mutex_lock(&s->lock);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += SAMPLE_MS / 1000;
		while (!s->stop && pthread_cond_timedwait(&s->wake, &s->lock, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

struct web_samples *web_samples_create(struct engine *e)
{
	struct web_samples *s = xcalloc(1, sizeof *s);

	s->engine = e;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->wake, NULL);
	s->started = pthread_create(&s->thread, NULL, sampler, s) == 0;
	return s;
}

void web_samples_destroy(struct web_samples *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	if (s->started)
		pthread_join(s->thread, NULL);
	for (size_t i = 0; i < s->nrings; i++)
		free(s->rings[i].host);
	free(s->rings);
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

json_t *web_samples_json(struct web_samples *s, const char *host)
{
	json_t *list = json_array();
	struct ring *r;

	pthread_mutex_lock(&s->lock);
	r = ring_of(s, host);
	for (size_t i = 0; r && i < r->n; i++) {
		const struct sample *x = &r->s[(r->head + RING - r->n + i) % RING];

		json_array_append_new(list, json_pack("[I,f,f,f,f]", (json_int_t)x->ms, (double)x->cpu,
						      (double)x->outside_cpu, (double)x->mem,
						      (double)x->outside_mem));
	}
	pthread_mutex_unlock(&s->lock);
	return list;
}
