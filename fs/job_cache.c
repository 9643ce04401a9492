/* The job metadata cache (see job_cache.h): a hash of immutable entries under
 * one mutex; a refresh builds a new entry and swaps it in. */
#include "job_cache.h"
#include "api_answers.h"
#include "api_paths.h"
#include "backend.h"
#include "log.h"
#include "sched_link.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	CACHE_BUCKETS = 1024,
	CACHE_MAX = JOB_CACHE_MAX,
	CACHE_KEEP_MS = 600000,     /* how long an entry may serve in an outage */
};

struct slot {
	struct job_meta *meta;
	struct slot *next;
};

struct job_cache {
	struct sched_link *link;
	struct backend *backend;
	int64_t ttl_ms;
	pthread_mutex_t lock;
	struct slot *buckets[CACHE_BUCKETS];  /* protected by lock */
	size_t count;                          /* protected by lock */
	/* The last listing of jobs/, by id, for the stats that follow it (ls
	 * -l) while young: one array, not an entry per job, and freed once
	 * stale. Protected by lock. Each row is what a stat of jobs/<id> needs. */
	struct api_owner *listing;
	size_t nlisting;
	int64_t listing_ms;
};

static size_t bucket_of(int64_t id)
{
	return (size_t)((uint64_t)id * 11400714819323198485ull >> 54) % CACHE_BUCKETS;
}

static struct job_meta *meta_new(int64_t id)
{
	struct job_meta *m = xcalloc(1, sizeof *m);

	m->id = id;
	atomic_init(&m->refs, 1);
	return m;
}

void job_meta_put(const struct job_meta *meta)
{
	struct job_meta *m = (struct job_meta *)meta;

	if (!m || atomic_fetch_sub(&m->refs, 1) != 1)
		return;
	for (size_t i = 0; i < m->nstages; i++)
		free(m->stages[i].name);
	free(m->stages);
	free(m);
}

static const struct job_meta *meta_get(struct job_meta *m)
{
	atomic_fetch_add(&m->refs, 1);
	return m;
}

int job_meta_stage(const struct job_meta *meta, const char *name)
{
	for (size_t i = 0; i < meta->nstages; i++)
		if (strcmp(meta->stages[i].name, name) == 0)
			return (int)i;
	return -1;
}

struct job_cache *job_cache_create(struct sched_link *link, struct backend *backend, int64_t ttl_ms)
{
	struct job_cache *cache = xcalloc(1, sizeof *cache);

	cache->link = link;
	cache->backend = backend;
	cache->ttl_ms = ttl_ms;
	pthread_mutex_init(&cache->lock, NULL);
	return cache;
}

void job_cache_destroy(struct job_cache *cache)
{
	if (!cache)
		return;
	for (size_t b = 0; b < CACHE_BUCKETS; b++) {
		struct slot *s = cache->buckets[b], *next;

		for (; s; s = next) {
			next = s->next;
			job_meta_put(s->meta);
			free(s);
		}
	}
	free(cache->listing);
	pthread_mutex_destroy(&cache->lock);
	free(cache);
}

/* Caller holds the lock. Returns the slot of id or NULL. */
static struct slot *find_locked(struct job_cache *cache, int64_t id)
{
	for (struct slot *s = cache->buckets[bucket_of(id)]; s; s = s->next)
		if (s->meta->id == id)
			return s;
	return NULL;
}

/* Caller holds the lock. Drops the entries fetched more than max_age ms ago. */
static void sweep_locked(struct job_cache *cache, int64_t now, int64_t max_age)
{
	for (size_t b = 0; b < CACHE_BUCKETS; b++) {
		struct slot **pp = &cache->buckets[b];

		while (*pp) {
			struct slot *s = *pp;

			if (now - s->meta->fetched_ms > max_age) {
				*pp = s->next;
				job_meta_put(s->meta);
				free(s);
				cache->count--;
			} else {
				pp = &s->next;
			}
		}
	}
}

/* Caller holds the lock. Makes room for one more entry: first drops what is
 * too old to serve even in an outage, then what is past its ttl, then, when
 * every entry is young (more than CACHE_MAX jobs read within a ttl), the
 * entries of one bucket after another. The cache never holds more than
 * CACHE_MAX. */
static void make_room_locked(struct job_cache *cache)
{
	int64_t now = time_mono_ms();

	if (cache->count < CACHE_MAX)
		return;
	sweep_locked(cache, now, CACHE_KEEP_MS);
	if (cache->count >= CACHE_MAX)
		sweep_locked(cache, now, cache->ttl_ms);
	for (size_t b = 0; cache->count >= CACHE_MAX && b < CACHE_BUCKETS; b++) {
		while (cache->buckets[b] && cache->count >= CACHE_MAX) {
			struct slot *s = cache->buckets[b];

			cache->buckets[b] = s->next;
			job_meta_put(s->meta);
			free(s);
			cache->count--;
		}
	}
}

/* Takes over the caller's reference to m. */
static void store(struct job_cache *cache, struct job_meta *m)
{
	struct slot *s;

	pthread_mutex_lock(&cache->lock);
	s = find_locked(cache, m->id);
	if (s) {
		job_meta_put(s->meta);
		s->meta = m;
	} else {
		make_room_locked(cache);
		s = xcalloc(1, sizeof *s);
		s->meta = m;
		s->next = cache->buckets[bucket_of(m->id)];
		cache->buckets[bucket_of(m->id)] = s;
		cache->count++;
	}
	pthread_mutex_unlock(&cache->lock);
}

static void forget(struct job_cache *cache, int64_t id)
{
	struct slot **pp;

	pthread_mutex_lock(&cache->lock);
	for (pp = &cache->buckets[bucket_of(id)]; *pp; pp = &(*pp)->next) {
		if ((*pp)->meta->id == id) {
			struct slot *s = *pp;

			*pp = s->next;
			job_meta_put(s->meta);
			free(s);
			cache->count--;
			break;
		}
	}
	pthread_mutex_unlock(&cache->lock);
}

/* A new reference to the cached entry of id, or NULL. */
static const struct job_meta *lookup(struct job_cache *cache, int64_t id)
{
	const struct job_meta *m = NULL;
	struct slot *s;

	pthread_mutex_lock(&cache->lock);
	s = find_locked(cache, id);
	if (s)
		m = meta_get(s->meta);
	pthread_mutex_unlock(&cache->lock);
	return m;
}

/* A new full entry from the scheduler's answer about a job (one reference,
 * the caller's); takes the stages of job. */
static struct job_meta *meta_from_answer(int64_t id, struct api_job_meta *job)
{
	struct job_meta *m = meta_new(id);

	m->uid = job->uid;
	m->gid = job->gid;
	m->submitted_ms = job->submitted_ms;
	m->nstages = job->nstages;
	m->stages = xcalloc(m->nstages ? m->nstages : 1, sizeof *m->stages);
	for (size_t i = 0; i < job->nstages; i++) {
		m->stages[i].name = job->stages[i].name;
		m->stages[i].instances = job->stages[i].instances;
		job->stages[i].name = NULL;
	}
	api_job_meta_clear(job);
	m->full = true;
	m->fetched_ms = time_mono_ms();
	return m;
}

/* GET /v1/jobs/<id> into a new full entry (one reference, the caller's). */
static struct job_meta *fetch(struct job_cache *cache, const struct fs_identity *who, int64_t id)
{
	struct api_job_meta job;
	char *path, *text, *err = NULL;
	size_t len = 0;
	int rc;

	path = api_path_id(API_JOB, id);
	text = sched_link_get_text(cache->link, who, path, false, &len);
	free(path);
	if (!text)
		return NULL;
	rc = api_read_job(text, len, &job, &err);
	free(text);
	if (rc < 0) {
		sched_link_unreadable(err);
		return NULL;
	}
	return meta_from_answer(id, &job);
}

void job_cache_prime(struct job_cache *cache, int64_t id, struct api_job_meta *job)
{
	store(cache, meta_from_answer(id, job));
}

/* The scheduler is away: the owner of the job's folder on the storage. */
static struct job_meta *from_storage(struct job_cache *cache, int64_t id)
{
	struct job_meta *m;
	struct stat st;
	char path[64];

	snprintf(path, sizeof path, "jobs/%lld/out", (long long)id);
	if (backend_getattr(cache->backend, path, &st) < 0)
		return NULL;
	m = meta_new(id);
	m->uid = st.st_uid;
	m->gid = st.st_gid;
	m->submitted_ms = (int64_t)st.st_mtim.tv_sec * 1000;
	return m;
}

static int cmp_owner(const void *key, const void *row)
{
	int64_t x = *(const int64_t *)key, y = ((const struct api_owner *)row)->id;

	return x < y ? -1 : x > y;
}

/* The owner of id from a young listing (a new entry, the caller's), or NULL;
 * a stale listing is freed. */
static struct job_meta *from_listing(struct job_cache *cache, int64_t id)
{
	struct job_meta *m = NULL;
	const struct api_owner *row;
	int64_t now = time_mono_ms();

	pthread_mutex_lock(&cache->lock);
	if (cache->listing && now - cache->listing_ms >= cache->ttl_ms) {
		free(cache->listing);
		cache->listing = NULL;
		cache->nlisting = 0;
	}
	row = cache->listing ? bsearch(&id, cache->listing, cache->nlisting, sizeof *row, cmp_owner)
			     : NULL;
	if (row) {
		m = meta_new(id);
		m->uid = row->uid;
		m->gid = row->gid;
		m->submitted_ms = row->submitted_ms;
		m->fetched_ms = cache->listing_ms;
	}
	pthread_mutex_unlock(&cache->lock);
	return m;
}

static bool usable(const struct job_meta *m, int flags)
{
	return !(flags & JOB_NEED_STAGES) || m->full;
}

const struct job_meta *job_cache_get(struct job_cache *cache, const struct fs_identity *who,
				     int64_t id, int flags)
{
	const struct job_meta *old = lookup(cache, id);
	struct job_meta *m;
	int saved;

	if (old && usable(old, flags) && !(flags & JOB_FRESH) && old->fetched_ms &&
	    time_mono_ms() - old->fetched_ms < cache->ttl_ms)
		return old;
	if (!(flags & (JOB_FRESH | JOB_NEED_STAGES)) && (m = from_listing(cache, id))) {
		job_meta_put(old);
		return m;
	}
	m = fetch(cache, who, id);
	if (m) {
		job_meta_put(old);
		/* Our reference first: once stored, a concurrent refresh or
		 * forget of the same job may drop the cache's at any moment. */
		meta_get(m);
		store(cache, m);
		return m;
	}
	saved = errno;
	if (saved == ENOENT) {
		job_meta_put(old);
		forget(cache, id);
		errno = ENOENT;
		return NULL;
	}
	/* Unreachable or busy: an older answer is better than none. */
	if (old && usable(old, flags))
		return old;
	job_meta_put(old);
	if ((saved == ENOTCONN || saved == EIO || saved == EAGAIN) && !(flags & JOB_NEED_STAGES)) {
		m = from_storage(cache, id);
		if (m) {
			atomic_store(&m->refs, 2);
			store(cache, m);
			return m;
		}
	}
	errno = saved;
	return NULL;
}

static int add_id(int64_t **ids, size_t *n, size_t *cap, int64_t id)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		*ids = xrealloc(*ids, *cap * sizeof **ids);
	}
	(*ids)[(*n)++] = id;
	return 0;
}

struct dir_ids {
	int64_t *ids;
	size_t n, cap;
};

static int collect_id(void *arg, const char *name, const struct stat *st)
{
	struct dir_ids *d = arg;
	char *end;
	long long v;

	(void)st;
	errno = 0;
	v = strtoll(name, &end, 10);
	if (!*end && errno == 0 && v > 0 && name[0] != '0')
		add_id(&d->ids, &d->n, &d->cap, v);
	return 0;
}

static int cmp_id(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int job_cache_list(struct job_cache *cache, const struct fs_identity *who, int64_t **ids, size_t *n)
{
	struct dir_ids d = { 0 };
	struct api_owner *rows, *stale;
	size_t nrows, len = 0;
	char *text, *path, *err = NULL;
	int saved, rc;

	*ids = NULL;
	*n = 0;
	path = api_path_owners();
	text = sched_link_get_text(cache->link, who, path, false, &len);
	free(path);
	if (!text) {
		saved = errno;
		if (saved != ENOTCONN && saved != EIO)
			return -1;
		/* Through an outage, the job folders on the storage are the list. */
		if (backend_readdir(cache->backend, "jobs", collect_id, &d) < 0) {
			errno = saved;
			return -1;
		}
		qsort(d.ids, d.n, sizeof *d.ids, cmp_id);
		*ids = d.ids;
		*n = d.n;
		return 0;
	}
	rc = api_read_owners(text, len, &rows, &nrows, &err);
	free(text);
	if (rc < 0)
		return sched_link_unreadable(err);
	d.ids = xcalloc(nrows + 1, sizeof *d.ids);
	for (size_t i = 0; i < nrows; i++)
		d.ids[d.n++] = rows[i].id;
	pthread_mutex_lock(&cache->lock);
	stale = cache->listing;
	cache->listing = rows;
	cache->nlisting = nrows;
	cache->listing_ms = time_mono_ms();
	pthread_mutex_unlock(&cache->lock);
	free(stale);
	*ids = d.ids;
	*n = d.n;
	return 0;
}

size_t job_cache_count(struct job_cache *cache)
{
	size_t n;

	pthread_mutex_lock(&cache->lock);
	n = cache->count;
	pthread_mutex_unlock(&cache->lock);
	return n;
}
