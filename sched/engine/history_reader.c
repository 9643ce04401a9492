/* The history reader (history_reader.h): a store on a read-only connection,
 * a mutex, and a few old jobs kept, each in a model of its own. */
#include "history_reader.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

enum {
	KEPT_JOBS = 8,        /* old jobs kept after a view */
	KEPT_MS = 30000,      /* each for this long after its last view */
};

struct kept {
	struct model *m;      /* NULL: a free slot */
	const struct job *job;
	int64_t id;
	uint64_t gen;
	int64_t used_mono;
};

struct history_reader {
	pthread_mutex_t lock; /* the connection's statements and kept[] */
	struct store *st;
	struct kept kept[KEPT_JOBS];
};

struct history_reader *history_reader_open(const struct store *st, char **err)
{
	struct history_reader *r = xcalloc(1, sizeof *r);

	r->st = store_open_reader(store_path(st), err);
	if (!r->st) {
		free(r);
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	return r;
}

static void kept_free(struct kept *k)
{
	model_destroy(k->m);
	*k = (struct kept){ 0 };
}

void history_reader_close(struct history_reader *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < KEPT_JOBS; i++)
		kept_free(&r->kept[i]);
	store_close(r->st);
	pthread_mutex_destroy(&r->lock);
	free(r);
}

/* Lock held. Job id as kept (NULL: not, or no longer good), dropping what
 * is out of date; *slot: where to keep it otherwise (a free slot, or the
 * stalest). */
static struct kept *kept_find(struct history_reader *r, int64_t id, uint64_t gen, int64_t mono,
			      struct kept **slot)
{
	struct kept *found = NULL;

	*slot = NULL;
	for (size_t i = 0; i < KEPT_JOBS; i++) {
		struct kept *k = &r->kept[i];

		if (k->m && (k->gen != gen || mono - k->used_mono >= KEPT_MS))
			kept_free(k);
		if (k->m && k->id == id)
			found = k;
		else if (!*slot || !k->m || ((*slot)->m && k->used_mono < (*slot)->used_mono))
			*slot = k;
	}
	return found;
}

int history_reader_job(struct history_reader *r, int64_t id, uint64_t gen, history_job_fn fn,
		       void *arg, char **err)
{
	int64_t mono = time_mono_ms();
	struct kept *k, *slot;
	struct job *job = NULL;
	struct model *m;
	int rc = 1;

	pthread_mutex_lock(&r->lock);
	k = kept_find(r, id, gen, mono, &slot);
	if (!k) {
		m = model_create();
		rc = store_load_job(r->st, m, id, &job, err);
		if (rc < 0)
			errno = EIO;
		if (rc <= 0) {
			model_destroy(m);
			goto out;
		}
		kept_free(slot);
		k = slot;
		*k = (struct kept){ .m = m, .job = job, .id = id, .gen = gen };
	}
	k->used_mono = mono;
	fn(arg, k->m, k->job);
out:
	pthread_mutex_unlock(&r->lock);
	return rc;
}

int history_reader_list(struct history_reader *r, int64_t since_ms, int64_t uid, store_job_fn on_job,
			void *arg, char **err)
{
	int rc;

	pthread_mutex_lock(&r->lock);
	rc = store_list_jobs(r->st, since_ms, uid, on_job, arg, err);
	pthread_mutex_unlock(&r->lock);
	return rc;
}

int history_reader_last(struct history_reader *r, uid_t uid, int64_t *id, char **err)
{
	int rc;

	pthread_mutex_lock(&r->lock);
	rc = store_last_job(r->st, uid, id, err);
	pthread_mutex_unlock(&r->lock);
	return rc;
}

int history_reader_counts(struct history_reader *r, int64_t counts[5], char **err)
{
	int rc;

	pthread_mutex_lock(&r->lock);
	rc = store_job_counts(r->st, counts, err);
	pthread_mutex_unlock(&r->lock);
	return rc;
}
