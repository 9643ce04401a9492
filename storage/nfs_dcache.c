/* The NFS backend's cache of names by path, so that a deep path costs one
 * LOOKUP and not one per component, a listing's READDIRPLUS answers the stats
 * that follow it (ls -l), and the calls right after a create or a SETATTR
 * (the kernel's getattr; tar's utimens, chown and chmod) find the file's
 * handle and attributes. Guarded by nb->lock. An entry holds:
 * - a handle (folders: DCACHE_TTL_MS; others: ATTR_TTL_MS), with the type
 *   and fileid that never change for it;
 * - attributes, for ATTR_TTL_MS, the mount's attribute timeout (fs/ops.c);
 * - or that the name is missing, for ATTR_TTL_MS: the mount itself failed
 *   to find it just now, or it is in a folder the mount made in that time
 *   and has not made since (another machine's create shows after that
 *   time, as its changes to attributes do). Every entry made after such a
 *   folder expires after the folder's knowledge does, so a name the cache
 *   no longer holds was never made here.
 * The mount's own changes keep it true:
 * - to a name (create, remove, rename...): what they touch is dropped, the
 *   folder's attributes too, leaving a mark with the change's number
 *   (ns_seq), so that a reply to a request sent before cannot put the old
 *   state back; a miss holds only while no name changed since;
 * - to a file's attributes, which every hard link shows: a write, truncate,
 *   SETATTR, open, close, link or remove of fileid X moves attr_seq and
 *   notes it in X's bucket (ATTR_BUCKETS, by fileid); a file's attributes
 *   hold only while its bucket has not moved since they were asked for.
 *   An open file's attributes are not taken from LOOKUP or READDIRPLUS (its
 *   writes may be in flight), only from its own create or SETATTR. */
#include "nfs_internal.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define DCACHE_TTL_MS 2000          /* how long a folder's handle is trusted */
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

/* Under nb->lock: whether attributes of fileid asked at attr_seq seq still
 * hold (nothing of ours changed them since). */
static bool attr_unchanged(const struct nfs_backend *nb, uint64_t fileid, uint64_t seq)
{
	return nb->attr_bucket[fileid % ATTR_BUCKETS] <= seq && nb->attr_all <= seq;
}

/* Under nb->lock. */
static uint64_t bump(struct nfs_backend *nb, uint64_t fileid)
{
	nb->attr_bucket[fileid % ATTR_BUCKETS] = ++nb->attr_seq;
	return nb->attr_seq;
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

/* Under nb->lock: whether path's folder is one we made and know whole. */
static bool in_known_folder(struct nfs_backend *nb, const char *path, int64_t now)
{
	const char *slash = strrchr(path, '/');
	struct dcache_entry *d;
	char *parent;

	if (!slash)
		return false;
	parent = xasprintf("%.*s", (int)(slash - path), path);
	d = find(nb, parent);
	free(parent);
	return d && d->state == DCACHE_HANDLE && d->type == NF3DIR && d->complete_until > now;
}

int dcache_lookup(struct nfs_backend *nb, const char *path, struct fhbuf *fh, fattr3 *attr)
{
	int64_t now = time_mono_ms();
	struct dcache_entry *e;
	int ret = DCACHE_MISS;

	pthread_mutex_lock(&nb->lock);
	e = find(nb, path);
	if ((!e || e->expires <= now) && in_known_folder(nb, path, now))
		ret = DCACHE_ABSENT;
	if (e && e->expires > now) {
		if (e->state == DCACHE_MISSING && e->seq == nb->ns_seq) {
			ret = DCACHE_ABSENT;
		} else if (e->state == DCACHE_HANDLE && e->type) {
			/* (A handle put without attributes has no type: ask.) */
			*fh = e->fh;
			if (e->have_attr && e->attr_expires > now &&
			    (e->type == NF3DIR || attr_unchanged(nb, e->fileid, e->seq))) {
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

struct dcache_stamp dcache_stamp(struct nfs_backend *nb)
{
	struct dcache_stamp s;

	pthread_mutex_lock(&nb->lock);
	s.ns = nb->ns_seq;
	s.attr = nb->attr_seq;
	pthread_mutex_unlock(&nb->lock);
	return s;
}

/* Under nb->lock: the handle of path, and attr (NULL: none) as of attr_seq
 * seq unless keep_attr is false, from a request sent at ns_seq ns. */
static void put_locked(struct nfs_backend *nb, const char *path, const struct fhbuf *fh,
		       const fattr3 *attr, uint64_t ns, uint64_t seq, bool keep_attr)
{
	int64_t now = time_mono_ms();
	struct dcache_entry *e = entry(nb, path);

	if (e->changed > ns)
		return;
	if (e->state != DCACHE_HANDLE || (attr && (e->type != attr->type || e->fileid != attr->fileid)))
		e->have_attr = false;
	e->state = DCACHE_HANDLE;
	e->fh = *fh;
	if (attr) {
		e->type = attr->type;
		e->fileid = attr->fileid;
	}
	e->expires = now + (e->type == NF3DIR ? DCACHE_TTL_MS : ATTR_TTL_MS);
	if (attr && keep_attr && (attr->type == NF3DIR || attr_unchanged(nb, attr->fileid, seq))) {
		e->attr = *attr;
		e->have_attr = true;
		e->attr_expires = now + ATTR_TTL_MS;
		e->seq = seq;
	}
}

void dcache_put_attr(struct nfs_backend *nb, const char *path, const struct fhbuf *fh,
		     const fattr3 *attr, struct dcache_stamp at)
{
	/* An open file's attributes come from the server and its writes. */
	bool keep = !(attr && attr->type == NF3REG && reg_is_open(nb, attr->fileid));

	pthread_mutex_lock(&nb->lock);
	put_locked(nb, path, fh, attr, at.ns, at.attr, keep);
	pthread_mutex_unlock(&nb->lock);
}

uint64_t dcache_put_mine(struct nfs_backend *nb, const char *path, const struct fhbuf *fh,
			 const fattr3 *attr, struct dcache_stamp at)
{
	uint64_t seq = 0;

	pthread_mutex_lock(&nb->lock);
	if (attr->type == NF3DIR) {
		put_locked(nb, path, fh, attr, nb->ns_seq, nb->attr_seq, true);
	} else {
		bool ours = attr_unchanged(nb, attr->fileid, at.attr);

		/* Moved whatever happens: other names of the file asked
		 * before now hold what the change replaced. */
		seq = bump(nb, attr->fileid);
		put_locked(nb, path, fh, attr, nb->ns_seq, seq, ours);
		if (!ours)
			seq = 0;
	}
	pthread_mutex_unlock(&nb->lock);
	return seq;
}

bool dcache_put_mine_named(struct nfs_backend *nb, const char *path, const fattr3 *attr,
			   struct dcache_stamp at)
{
	struct dcache_entry *e;
	bool put = false;

	pthread_mutex_lock(&nb->lock);
	e = find(nb, path);
	/* Only where the cache still says path names this file (a rename
	 * since dropped it): attributes, never a name. */
	if (e && e->state == DCACHE_HANDLE && e->expires > time_mono_ms() && e->type == attr->type &&
	    e->fileid == attr->fileid && attr_unchanged(nb, attr->fileid, at.attr)) {
		uint64_t seq = bump(nb, attr->fileid);

		e->attr = *attr;
		e->have_attr = true;
		e->attr_expires = time_mono_ms() + ATTR_TTL_MS;
		e->seq = seq;
		put = true;
	}
	pthread_mutex_unlock(&nb->lock);
	return put;
}

bool dcache_attr_holds(struct nfs_backend *nb, uint64_t fileid, uint64_t seq)
{
	bool holds;

	pthread_mutex_lock(&nb->lock);
	holds = seq && attr_unchanged(nb, fileid, seq);
	pthread_mutex_unlock(&nb->lock);
	return holds;
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

void dcache_put_missing(struct nfs_backend *nb, const char *path, struct dcache_stamp at)
{
	struct dcache_entry *e;

	pthread_mutex_lock(&nb->lock);
	/* Only while no change of ours to any name came between. */
	if (at.ns == nb->ns_seq) {
		e = entry(nb, path);
		e->state = DCACHE_MISSING;
		e->have_attr = false;
		e->seq = at.ns;
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

/* Under nb->lock: a name in folder dir_path changed, so did the folder's
 * attributes (mtime, nlink): the reply's (dir_attr, NULL if none) are taken
 * when no other change of ours to that folder came between the request
 * (at) and now, since the order of the two is unknown. */
static void folder_changed(struct nfs_backend *nb, const char *dir_path, const struct fhbuf *dir,
			   const fattr3 *dir_attr, struct dcache_stamp at)
{
	struct dcache_entry *e = find(nb, dir_path);
	bool take = dir_attr && dir && (!e || e->changed <= at.ns);

	mark_changed(nb, dir_path, true);
	if (take)
		put_locked(nb, dir_path, dir, dir_attr, nb->ns_seq, nb->attr_seq, true);
}

void dcache_folder_changed(struct nfs_backend *nb, const char *dir_path, const struct fhbuf *dir,
			   const fattr3 *dir_attr, struct dcache_stamp at)
{
	pthread_mutex_lock(&nb->lock);
	nb->ns_seq++;
	folder_changed(nb, dir_path, dir, dir_attr, at);
	pthread_mutex_unlock(&nb->lock);
}

void dcache_forget(struct nfs_backend *nb, const char *path, const struct fhbuf *dir,
		   const fattr3 *dir_attr, struct dcache_stamp at)
{
	const char *slash = strrchr(path, '/');
	char *parent = xasprintf("%.*s", slash ? (int)(slash - path) : 0, path);

	pthread_mutex_lock(&nb->lock);
	nb->ns_seq++;
	mark_changed(nb, path, false);
	folder_changed(nb, parent, dir, dir_attr, at);
	pthread_mutex_unlock(&nb->lock);
	free(parent);
}

void dcache_touch(struct nfs_backend *nb, const char *path, uint64_t fileid)
{
	pthread_mutex_lock(&nb->lock);
	nb->ns_seq++;
	mark_changed(nb, path, true);
	bump(nb, fileid);
	pthread_mutex_unlock(&nb->lock);
}

void dcache_changed(struct nfs_backend *nb, uint64_t fileid)
{
	pthread_mutex_lock(&nb->lock);
	bump(nb, fileid);
	pthread_mutex_unlock(&nb->lock);
}

void dcache_changed_all(struct nfs_backend *nb)
{
	pthread_mutex_lock(&nb->lock);
	nb->attr_all = ++nb->attr_seq;
	pthread_mutex_unlock(&nb->lock);
}

/* Under nb->lock: forget everything below path. */
static void drop_below(struct nfs_backend *nb, const char *path)
{
	size_t n = strlen(path);

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
}

void dcache_drop(struct nfs_backend *nb, const char *path, const struct fhbuf *dir,
		 const fattr3 *dir_attr, struct dcache_stamp at)
{
	dcache_forget(nb, path, dir, dir_attr, at);
	pthread_mutex_lock(&nb->lock);
	drop_below(nb, path);
	pthread_mutex_unlock(&nb->lock);
}

void dcache_made_folder(struct nfs_backend *nb, const char *path)
{
	struct dcache_entry *e;

	pthread_mutex_lock(&nb->lock);
	/* What an earlier folder of that name held is not this one's. */
	drop_below(nb, path);
	e = find(nb, path);
	if (e && e->state == DCACHE_HANDLE && e->type == NF3DIR)
		e->complete_until = time_mono_ms() + ATTR_TTL_MS;
	pthread_mutex_unlock(&nb->lock);
}

void dcache_drop_name(struct nfs_backend *nb, const char *path)
{
	pthread_mutex_lock(&nb->lock);
	nb->ns_seq++;
	mark_changed(nb, path, false);
	drop_below(nb, path);
	pthread_mutex_unlock(&nb->lock);
}
