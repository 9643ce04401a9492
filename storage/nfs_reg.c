/* The NFS backend's open files by fileid, shared by every open file of an
 * inode: the size stat must not see shrink while writes are in flight, and
 * the order of writes (inflight.h): a write, read or SETATTR waits for the
 * earlier writes in flight that it overlaps, since the server may apply
 * requests in any order. Under nb->reg_lock. */
#include "nfs_internal.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

/* Under reg_lock. */
static struct reg_entry *reg_find(struct nfs_backend *nb, uint64_t fileid)
{
	struct reg_entry *e;

	for (e = nb->reg[fileid % REG_BUCKETS]; e; e = e->next)
		if (e->fileid == fileid)
			break;
	return e;
}

struct reg_entry *reg_open(struct nfs_backend *nb, uint64_t fileid)
{
	struct reg_entry **head = &nb->reg[fileid % REG_BUCKETS], *e;

	pthread_mutex_lock(&nb->reg_lock);
	e = reg_find(nb, fileid);
	if (!e) {
		e = xcalloc(1, sizeof *e);
		e->fileid = fileid;
		e->writes = inflight_create();
		pthread_cond_init(&e->settled, NULL);
		e->next = *head;
		*head = e;
	}
	e->refs++;
	pthread_mutex_unlock(&nb->reg_lock);
	return e;
}

bool reg_is_open(struct nfs_backend *nb, uint64_t fileid)
{
	bool open;

	pthread_mutex_lock(&nb->reg_lock);
	open = reg_find(nb, fileid) != NULL;
	pthread_mutex_unlock(&nb->reg_lock);
	return open;
}

void reg_free(struct reg_entry *e)
{
	inflight_destroy(e->writes);
	pthread_cond_destroy(&e->settled);
	free(e);
}

void reg_close(struct nfs_backend *nb, struct reg_entry *r)
{
	struct reg_entry **pe;

	pthread_mutex_lock(&nb->reg_lock);
	if (--r->refs == 0) {
		for (pe = &nb->reg[r->fileid % REG_BUCKETS]; *pe; pe = &(*pe)->next) {
			if (*pe == r) {
				*pe = r->next;
				reg_free(r);
				break;
			}
		}
	}
	pthread_mutex_unlock(&nb->reg_lock);
}

/* floor = max(floor, end), or = end when set (a truncate: what other open
 * files read ahead is stale). */
void reg_size(struct nfs_backend *nb, struct reg_entry *r, uint64_t end, bool set)
{
	pthread_mutex_lock(&nb->reg_lock);
	if (set || end > r->floor)
		r->floor = end;
	if (set)
		r->gen++;
	pthread_mutex_unlock(&nb->reg_lock);
}

void reg_truncated(struct nfs_backend *nb, uint64_t fileid, uint64_t size)
{
	pthread_mutex_lock(&nb->reg_lock);
	for (struct reg_entry *e = nb->reg[fileid % REG_BUCKETS]; e; e = e->next) {
		if (e->fileid == fileid) {
			e->floor = size;
			e->gen++;
		}
	}
	pthread_mutex_unlock(&nb->reg_lock);
}

uint64_t reg_gen(struct nfs_backend *nb, struct reg_entry *r)
{
	uint64_t gen;

	pthread_mutex_lock(&nb->reg_lock);
	gen = r->gen;
	pthread_mutex_unlock(&nb->reg_lock);
	return gen;
}

/* The attributes, with a size no smaller than what this mount has in flight
 * and the attribute changes an open file keeps (nfs_fattr.c). */
void attr_to_stat_floor(struct nfs_backend *nb, const fattr3 *a, struct stat *st)
{
	fattr3 shown = *a;
	uint64_t floor = 0;

	if (a->type == NF3REG) {
		pthread_mutex_lock(&nb->reg_lock);
		struct reg_entry *e = reg_find(nb, a->fileid);

		if (e) {
			floor = e->floor;
			if (e->pend_file)
				sattr_apply(&shown, &e->pend_sa);
		}
		pthread_mutex_unlock(&nb->reg_lock);
	}
	attr_to_stat(&shown, st);
	if ((uint64_t)st->st_size < floor)
		st->st_size = (off_t)floor;
}

bool reg_kept_stat(struct nfs_backend *nb, uint64_t fileid, struct stat *st)
{
	struct reg_entry *e;
	fattr3 shown;
	bool known = false;

	pthread_mutex_lock(&nb->reg_lock);
	e = reg_find(nb, fileid);
	/* pend_file is alive while set, and its attr was set at its open. */
	if (e && e->pend_file && e->pend_sa.mtime.set_it == SET_TO_CLIENT_TIME) {
		shown = e->pend_file->attr;
		sattr_apply(&shown, &e->pend_sa);
		if (shown.size < e->floor)
			shown.size = e->floor;
		known = true;
	}
	pthread_mutex_unlock(&nb->reg_lock);
	if (known)
		attr_to_stat(&shown, st);
	return known;
}

/* until: ms from now, for pthread_cond_timedwait. */
static void deadline_in(struct timespec *until, long ms)
{
	clock_gettime(CLOCK_REALTIME, until);
	until->tv_nsec += ms * 1000 * 1000;
	if (until->tv_nsec >= 1000000000L) {
		until->tv_sec++;
		until->tv_nsec -= 1000000000L;
	}
}

/* ---- the order of writes ---- */

struct inflight_range *reg_write_sent(struct backend_file *f, uint64_t off, uint32_t len)
{
	struct nfs_backend *nb = f->nb;
	struct inflight_range *range;

	pthread_mutex_lock(&nb->reg_lock);
	range = inflight_add(f->reg->writes, off, len, f);
	f->reg->gen++;
	pthread_mutex_unlock(&nb->reg_lock);
	return range;
}

/* Answered or cancelled (the callbacks run under f->lock). */
void reg_write_done(struct backend_file *f, struct inflight_range *range)
{
	struct nfs_backend *nb = f->nb;

	pthread_mutex_lock(&nb->reg_lock);
	inflight_remove(f->reg->writes, range);
	f->reg->gen++;
	pthread_cond_broadcast(&f->reg->settled);
	pthread_mutex_unlock(&nb->reg_lock);
}

/* Under f->lock: one of f's own writes in flight overlaps [off, end). */
bool reg_mine_overlap(struct backend_file *f, uint64_t off, uint64_t end)
{
	bool found;

	pthread_mutex_lock(&f->nb->reg_lock);
	found = inflight_overlap(f->reg->writes, off, end, f, INFLIGHT_MINE) != NULL;
	pthread_mutex_unlock(&f->nb->reg_lock);
	return found;
}

/* What reg_wait and reg_settle_others wait for, and what they do about it. */
struct reg_wait_for {
	const struct backend_file *self;
	uint64_t off, end;
	/* Under reg_lock: another open file of r that holds the wait up. */
	struct backend_file *(*find)(struct reg_entry *r, const struct reg_wait_for *w);
	/* Under g->lock: let g finish what holds the wait up. */
	int (*serve)(struct backend_file *g);
};

/* Until find names none: each file it names is served by us when nobody
 * holds its lock (it is not freed meanwhile: its close serves it under its
 * lock first), else by whoever does, awaited on r->settled. */
static int reg_wait_others(struct nfs_backend *nb, struct reg_entry *r, const struct reg_wait_for *w)
{
	int64_t deadline = time_mono_ms() + nb->timeout_ms;
	int ret = 0;

	pthread_mutex_lock(&nb->reg_lock);
	for (;;) {
		struct backend_file *g = w->find(r, w);
		struct timespec until;

		if (!g)
			break;
		if (pthread_mutex_trylock(&g->lock) == 0) {
			pthread_mutex_unlock(&nb->reg_lock);
			(void)w->serve(g);
			file_unlock(g);
			pthread_mutex_lock(&nb->reg_lock);
			continue;
		}
		if (time_mono_ms() >= deadline) {
			errno = ETIMEDOUT;
			ret = -1;
			break;
		}
		deadline_in(&until, 20);
		pthread_cond_timedwait(&r->settled, &nb->reg_lock, &until);
	}
	pthread_mutex_unlock(&nb->reg_lock);
	return ret;
}

/* g has writes in flight, so it is not freed: its close drains them. */
static struct backend_file *find_writes(struct reg_entry *r, const struct reg_wait_for *w)
{
	return (struct backend_file *)inflight_overlap(r->writes, w->off, w->end, w->self, INFLIGHT_OTHERS);
}

/* Wait until no write in flight of an open file of r other than self (NULL:
 * any) overlaps [off, end). Called holding no file's lock: the other files'
 * writes are answered while their callers or the pump service them, and a
 * file nobody is servicing is drained here. A write that failed stays that
 * file's error, for its own flush and close. */
int reg_wait(struct nfs_backend *nb, struct reg_entry *r, const struct backend_file *self,
		    uint64_t off, uint64_t end)
{
	struct reg_wait_for w = { .self = self, .off = off, .end = end, .find = find_writes, .serve = file_drain };

	return reg_wait_others(nb, r, &w);
}

/* g keeps changes, so it is not freed: its close sends them. */
static struct backend_file *find_kept(struct reg_entry *r, const struct reg_wait_for *w)
{
	return r->pend_file != w->self ? r->pend_file : NULL;
}

/* An error is g's, for its close; ours is only that the changes were sent. */
int reg_settle_others(struct nfs_backend *nb, struct reg_entry *r, const struct backend_file *self)
{
	struct reg_wait_for w = { .self = self, .find = find_kept, .serve = file_settle_attrs };

	return reg_wait_others(nb, r, &w);
}

/* Before a SETATTR by path: the writes of this mount's open files of the
 * inode first, or one landing later would undo it (tar's times), and the
 * attribute changes they keep. */
int reg_wait_fileid(struct nfs_backend *nb, uint64_t fileid)
{
	struct reg_entry *e;
	int ret;

	pthread_mutex_lock(&nb->reg_lock);
	e = reg_find(nb, fileid);
	if (e)
		e->refs++;
	pthread_mutex_unlock(&nb->reg_lock);
	if (!e)
		return 0;
	ret = reg_settle_others(nb, e, NULL);
	if (ret == 0)
		ret = reg_wait(nb, e, NULL, 0, UINT64_MAX);
	reg_close(nb, e);
	return ret;
}

/* Under f->lock when clearing: a caller of reg_lock_creator that locks f
 * afterwards finds it cleared. Clearing also waits until no such caller
 * still holds f pinned (f is freed next). */
void reg_set_creator(struct nfs_backend *nb, struct backend_file *f, bool set)
{
	pthread_mutex_lock(&nb->reg_lock);
	if (set)
		f->reg->creator = f;
	else if (f->reg->creator == f)
		f->reg->creator = NULL;
	pthread_mutex_unlock(&nb->reg_lock);
}

void reg_unpinned_wait(struct nfs_backend *nb, struct backend_file *f)
{
	pthread_mutex_lock(&nb->reg_lock);
	while (f->pins > 0)
		pthread_cond_wait(&f->reg->settled, &nb->reg_lock);
	pthread_mutex_unlock(&nb->reg_lock);
}

static void unpin(struct nfs_backend *nb, struct backend_file *g)
{
	pthread_mutex_lock(&nb->reg_lock);
	g->pins--;
	pthread_cond_broadcast(&g->reg->settled);
	pthread_mutex_unlock(&nb->reg_lock);
}

struct backend_file *reg_lock_creator(struct nfs_backend *nb, uint64_t fileid)
{
	struct backend_file *g = NULL;
	struct reg_entry *e;
	bool still;

	pthread_mutex_lock(&nb->reg_lock);
	e = reg_find(nb, fileid);
	if (e && e->creator) {
		g = e->creator;
		g->pins++;      /* its close waits for us before freeing it */
	}
	pthread_mutex_unlock(&nb->reg_lock);
	if (!g)
		return NULL;
	pthread_mutex_lock(&g->lock);
	pthread_mutex_lock(&nb->reg_lock);
	still = g->reg->creator == g;
	pthread_mutex_unlock(&nb->reg_lock);
	if (!still) {
		pthread_mutex_unlock(&g->lock);
		unpin(nb, g);
		return NULL;
	}
	return g;
}

void reg_unlock_creator(struct nfs_backend *nb, struct backend_file *g)
{
	file_unlock(g);
	unpin(nb, g);
}

/* Under no lock: another open file has a write in flight at or past pos. */
bool reg_others_past(struct backend_file *f, uint64_t pos)
{
	bool found;

	pthread_mutex_lock(&f->nb->reg_lock);
	found = inflight_overlap(f->reg->writes, pos, UINT64_MAX, f, INFLIGHT_OTHERS) != NULL;
	pthread_mutex_unlock(&f->nb->reg_lock);
	return found;
}
