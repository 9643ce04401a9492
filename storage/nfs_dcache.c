/* The NFS backend's cache of directory handles by path, so that a deep path
 * costs one LOOKUP and not one per component. An entry is trusted for
 * DCACHE_TTL_MS; the cache is bounded (DCACHE_MAX) and guarded by nb->lock. */
#include "nfs_internal.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define DCACHE_TTL_MS 2000          /* how long a directory's handle is trusted */
#define DCACHE_MAX 8192

static size_t hash_str(const char *s)
{
	size_t h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

bool dcache_get(struct nfs_backend *nb, const char *path, struct fhbuf *fh)
{
	struct dcache_entry *e;
	int64_t now = time_mono_ms();
	bool found = false;

	pthread_mutex_lock(&nb->lock);
	for (e = nb->dcache[hash_str(path) % DCACHE_BUCKETS]; e; e = e->next) {
		if (strcmp(e->path, path) == 0) {
			if (e->expires > now) {
				*fh = e->fh;
				found = true;
			}
			break;
		}
	}
	pthread_mutex_unlock(&nb->lock);
	return found;
}

void dcache_clear_locked(struct nfs_backend *nb)
{
	for (size_t i = 0; i < DCACHE_BUCKETS; i++) {
		while (nb->dcache[i]) {
			struct dcache_entry *e = nb->dcache[i];

			nb->dcache[i] = e->next;
			free(e->path);
			free(e);
		}
	}
	nb->ndcache = 0;
}

void dcache_put(struct nfs_backend *nb, const char *path, const struct fhbuf *fh)
{
	size_t h = hash_str(path) % DCACHE_BUCKETS;
	struct dcache_entry *e;

	pthread_mutex_lock(&nb->lock);
	for (e = nb->dcache[h]; e; e = e->next)
		if (strcmp(e->path, path) == 0)
			break;
	if (!e) {
		/* Bounded: past the limit start again rather than track age. */
		if (nb->ndcache >= DCACHE_MAX)
			dcache_clear_locked(nb);
		e = xcalloc(1, sizeof *e);
		e->path = xstrdup(path);
		e->next = nb->dcache[h];
		nb->dcache[h] = e;
		nb->ndcache++;
	}
	e->fh = *fh;
	e->expires = time_mono_ms() + DCACHE_TTL_MS;
	pthread_mutex_unlock(&nb->lock);
}

/* Forget path and everything below it (rmdir, rename). */
void dcache_drop(struct nfs_backend *nb, const char *path)
{
	size_t n = strlen(path);

	pthread_mutex_lock(&nb->lock);
	for (size_t i = 0; i < DCACHE_BUCKETS; i++) {
		struct dcache_entry **pe = &nb->dcache[i];

		while (*pe) {
			struct dcache_entry *e = *pe;

			if (strncmp(e->path, path, n) == 0 && (e->path[n] == '\0' || e->path[n] == '/')) {
				*pe = e->next;
				free(e->path);
				free(e);
				nb->ndcache--;
			} else {
				pe = &e->next;
			}
		}
	}
	pthread_mutex_unlock(&nb->lock);
}
