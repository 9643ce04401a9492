/* The NFS backend's cache of names by path, so that a deep path costs one
 * LOOKUP and not one per component, a listing's READDIRPLUS answers the stats
 * that follow it (ls -l), and the calls right after a create (the kernel's
 * getattr, tar's utimens, chown and chmod) find the new file's handle and
 * attributes. Guarded by nb->lock. What an entry holds, and for how long:
 * - a handle (folders: DCACHE_TTL_MS; others: ATTR_TTL_MS), with the type
 *   and fileid that never change for it;
 * - the attributes, for ATTR_TTL_MS, the mount's attribute timeout
 *   (fs/ops.c), and only while nb->attr_epoch has not moved: the mount's own
 *   changes that may show on other names move it (a SETATTR, which reaches
 *   every hard link; a link; a rename; an unlink of a file with links; an
 *   open and a close, since an open file's attributes come from the server
 *   and its writes in flight, never from here);
 * - or that the name is missing, for ATTR_TTL_MS: the mount itself failed
 *   to find it just now (another machine's create shows after that time, as
 *   its changes to attributes do).
 * The mount's own changes to names drop what they touch (dcache_forget,
 * dcache_drop), leaving a mark with the change's sequence number so that a
 * reply to a LOOKUP sent before the change cannot put the old state back. */
#include "nfs_internal.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define DCACHE_TTL_MS 2000          /* how long a folder's handle is trusted */
#define ATTR_TTL_MS 1000            /* attributes, misses, other handles: fs/ops.c's attr_timeout */
#define DCACHE_MAX 16384

static size_t hash_str(const char *s)
{
	size_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

/* Under nb->lock. */
static struct dcache_entry *find(struct nfs_backend *nb, const char *path)
{
	struct dcache_entry *e;

	for (e = nb->dcache[hash_str(path) % DCACHE_BUCKETS]; e; e = e->next)
		if (strcmp(e->path, path) == 0)
			break;
	return e;
}

bool dcache_get(struct nfs_backend *nb, const char *path, struct fhbuf *fh)
{
	struct dcache_entry *e;
	bool found = false;

	pthread_mutex_lock(&nb->lock);
	e = find(nb, path);
	if (e && e->state == DCACHE_HANDLE && e->type == NF3DIR && e->expires > time_mono_ms()) {
		*fh = e->fh;
		found = true;
	}
	pthread_mutex_unlock(&nb->lock);
	return found;
}

int dcache_lookup(struct nfs_backend *nb, const char *path, struct fhbuf *fh, fattr3 *attr)
{
	int64_t now = time_mono_ms();
	struct dcache_entry *e;
	int ret = DCACHE_MISS;

	pthread_mutex_lock(&nb->lock);
	e = find(nb, path);
	if (e && e->expires > now) {
		if (e->state == DCACHE_MISSING && e->epoch == nb->ns_seq) {
			ret = DCACHE_ABSENT;
		} else if (e->state == DCACHE_HANDLE) {
			*fh = e->fh;
			if (e->have_attr && e->attr_expires > now &&
			    e->epoch == atomic_load(&nb->attr_epoch)) {
				*attr = e->attr;
				ret = DCACHE_FULL;
			} else {
				memset(attr, 0, sizeof *attr);
				attr->type = e->type;
				attr->fileid = e->fileid;
				ret = DCACHE_HANDLE_ONLY;
			}
		}
	}
	pthread_mutex_unlock(&nb->lock);
	return ret;
}

static void entry_free(struct dcache_entry *e)
{
	free(e->path);
	free(e);
}

void dcache_clear_locked(struct nfs_backend *nb)
{
	for (size_t i = 0; i < DCACHE_BUCKETS; i++) {
		while (nb->dcache[i]) {
			struct dcache_entry *e = nb->dcache[i];

			nb->dcache[i] = e->next;
			entry_free(e);
		}
	}
	nb->ndcache = 0;
}

/* Under nb->lock: room for one more, dropping the expired entries first and
 * everything when that is not enough (bounded rather than ordered by age). */
static void make_room(struct nfs_backend *nb)
{
	int64_t now = time_mono_ms();

	if (nb->ndcache < DCACHE_MAX)
		return;
	for (size_t i = 0; i < DCACHE_BUCKETS; i++) {
		for (struct dcache_entry **pe = &nb->dcache[i]; *pe; ) {
			struct dcache_entry *e = *pe;

			if (e->expires <= now) {
				*pe = e->next;
				entry_free(e);
				nb->ndcache--;
			} else {
				pe = &e->next;
			}
		}
	}
	if (nb->ndcache >= DCACHE_MAX / 2)
		dcache_clear_locked(nb);
}

/* Under nb->lock: path's entry, made if missing. */
static struct dcache_entry *entry(struct nfs_backend *nb, const char *path)
{
	size_t h = hash_str(path) % DCACHE_BUCKETS;
	struct dcache_entry *e = find(nb, path);

	if (!e) {
		make_room(nb);
		e = xcalloc(1, sizeof *e);
		e->path = xstrdup(path);
		e->next = nb->dcache[h];
		nb->dcache[h] = e;
		nb->ndcache++;
	}
	return e;
}

uint64_t dcache_seq(struct nfs_backend *nb)
{
	uint64_t seq;

	pthread_mutex_lock(&nb->lock);
	seq = nb->ns_seq;
	pthread_mutex_unlock(&nb->lock);
	return seq;
}

uint64_t dcache_epoch(struct nfs_backend *nb)
{
	return atomic_load(&nb->attr_epoch);
}

static void put_entry(struct nfs_backend *nb, const char *path, const struct fhbuf *fh,
		      const fattr3 *attr, uint64_t seq, uint64_t epoch, bool keep_attr)
{
	int64_t now = time_mono_ms();
	struct dcache_entry *e;

	keep_attr = keep_attr && attr && epoch == atomic_load(&nb->attr_epoch);
	pthread_mutex_lock(&nb->lock);
	e = entry(nb, path);
	/* Asked before a change of ours to this name: what came back may be
	 * what the change undid. */
	if (e->changed > seq)
		goto out;
	if (e->state == DCACHE_HANDLE && attr && (e->type != attr->type || e->fileid != attr->fileid))
		e->have_attr = false;
	e->state = DCACHE_HANDLE;
	e->fh = *fh;
	if (attr) {
		e->type = attr->type;
		e->fileid = attr->fileid;
	}
	e->expires = now + (e->type == NF3DIR ? DCACHE_TTL_MS : ATTR_TTL_MS);
	if (keep_attr) {
		e->attr = *attr;
		e->have_attr = true;
		e->attr_expires = now + ATTR_TTL_MS;
		e->epoch = epoch;
	}
out:
	pthread_mutex_unlock(&nb->lock);
}

void dcache_put_attr(struct nfs_backend *nb, const char *path, const struct fhbuf *fh,
		     const fattr3 *attr, uint64_t seq, uint64_t epoch)
{
	/* An open file's attributes come from the server (nfs_reg.c). */
	put_entry(nb, path, fh, attr, seq, epoch, !(attr && attr->type == NF3REG && reg_is_open(nb, attr->fileid)));
}

void dcache_put_created(struct nfs_backend *nb, const char *path, const struct fhbuf *fh,
			const fattr3 *attr)
{
	put_entry(nb, path, fh, attr, dcache_seq(nb), dcache_epoch(nb), true);
}

void dcache_put(struct nfs_backend *nb, const char *path, const struct fhbuf *fh)
{
	struct dcache_entry *e;

	pthread_mutex_lock(&nb->lock);
	e = entry(nb, path);
	if (e->state != DCACHE_HANDLE || e->type != NF3DIR)
		e->have_attr = false;
	e->state = DCACHE_HANDLE;
	e->type = NF3DIR;
	e->fh = *fh;
	e->expires = time_mono_ms() + DCACHE_TTL_MS;
	pthread_mutex_unlock(&nb->lock);
}

void dcache_put_missing(struct nfs_backend *nb, const char *path, uint64_t seq)
{
	struct dcache_entry *e;

	pthread_mutex_lock(&nb->lock);
	/* Only while no change of ours to any name came between (seq). */
	if (seq == nb->ns_seq) {
		e = entry(nb, path);
		e->state = DCACHE_MISSING;
		e->have_attr = false;
		e->epoch = seq;
		e->expires = time_mono_ms() + ATTR_TTL_MS;
	}
	pthread_mutex_unlock(&nb->lock);
}

/* Under nb->lock: the mark of a change to path (see the top). */
static void mark_changed(struct nfs_backend *nb, const char *path, bool keep_handle)
{
	struct dcache_entry *e = entry(nb, path);

	e->changed = nb->ns_seq;
	e->have_attr = false;
	if (!keep_handle || e->state != DCACHE_HANDLE)
		e->state = DCACHE_GONE;
	/* The mark must outlive the slowest reply to an earlier LOOKUP. */
	if (e->state == DCACHE_GONE)
		e->expires = time_mono_ms() + DCACHE_TTL_MS;
}

void dcache_forget(struct nfs_backend *nb, const char *path)
{
	const char *slash = strrchr(path, '/');

	pthread_mutex_lock(&nb->lock);
	nb->ns_seq++;
	mark_changed(nb, path, false);
	/* The folder's own attributes (mtime, nlink) changed too. */
	{
		char *parent = xasprintf("%.*s", slash ? (int)(slash - path) : 0, path);

		mark_changed(nb, parent, true);
		free(parent);
	}
	pthread_mutex_unlock(&nb->lock);
}

void dcache_changed(struct nfs_backend *nb)
{
	atomic_fetch_add(&nb->attr_epoch, 1);
}

/* Forget path and everything below it (rmdir, rename). */
void dcache_drop(struct nfs_backend *nb, const char *path)
{
	size_t n = strlen(path);

	dcache_forget(nb, path);
	pthread_mutex_lock(&nb->lock);
	for (size_t i = 0; i < DCACHE_BUCKETS; i++) {
		struct dcache_entry **pe = &nb->dcache[i];

		while (*pe) {
			struct dcache_entry *e = *pe;

			if (strncmp(e->path, path, n) == 0 && e->path[n] == '/') {
				*pe = e->next;
				entry_free(e);
				nb->ndcache--;
			} else {
				pe = &e->next;
			}
		}
	}
	pthread_mutex_unlock(&nb->lock);
}
