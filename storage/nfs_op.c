/* An operation of the NFS backend by path: who it acts as (whoami), its
 * connection and deadline (run_op, which retries once on a fresh connection),
 * and its path checked and resolved to file handles through the directory
 * cache (lookup_dir, lookup_parent, lookup_path). */
#include "nfs_internal.h"
#include "util.h"
#include "volume_path.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void whoami(struct nfs_backend *nb, const struct backend_cred *cred, struct backend_cred *out)
{
	if (cred)
		*out = *cred;
	else if (nb->base.who)
		nb->base.who(nb->base.who_arg, out);
	else {
		out->uid = geteuid();
		out->gid = getegid();
	}
}

/* Relative, no "." or "..", no empty components (backend.h). A component
 * over NAME_MAX is ENAMETOOLONG, as from Linux's own client (nfs_lookup
 * checks the server's namelen, 255 here): the volume cannot hold it. */
int check_path(const char *path)
{
	return volume_path_check(path, NFS_NAME_MAX);
}

/* The handle of folder path ("" is the root): from the cache for the longest
 * known prefix, then one LOOKUP per remaining component. */
int lookup_dir(struct op *op, const char *path, struct fhbuf *fh)
{
	size_t len = strlen(path), known = len, pos;
	char *copy = xstrdup(path);
	struct call call;
	int ret = -1;

	/* known: the length of the longest prefix whose handle is cached. */
	while (known > 0) {
		char *slash;

		copy[known] = '\0';
		if (dcache_get(op->nb, copy, fh))
			break;
		slash = memrchr(copy, '/', known);
		known = slash ? (size_t)(slash - copy) : 0;
	}
	memcpy(copy, path, len + 1);
	if (known == 0)
		*fh = op->c->root;
	for (pos = known == 0 ? 0 : known + 1; pos < len; ) {
		size_t e = pos;

		while (e < len && copy[e] != '/')
			e++;
		copy[e] = '\0';
		if (rpc_lookup(op, fh, copy + pos, &call) < 0)
			goto out;
		if (!call.have_fh) {
			errno = EIO;
			goto out;
		}
		if (call.have_attr && call.attr.type != NF3DIR) {
			errno = ENOTDIR;
			goto out;
		}
		*fh = call.fh;
		dcache_put(op->nb, copy, fh);
		copy[e] = '/';
		pos = e + 1;
	}
	ret = 0;
out:
	free(copy);
	return ret;
}

/* The handle of path's folder, and its last component (points into path). */
int lookup_parent(struct op *op, const char *path, struct fhbuf *dir, const char **name)
{
	const char *slash;
	char *parent;
	int ret;

	if (check_path(path) < 0)
		return -1;
	if (!*path) {
		errno = EINVAL;
		return -1;
	}
	slash = strrchr(path, '/');
	if (!slash) {
		*name = path;
		*dir = op->c->root;
		return 0;
	}
	*name = slash + 1;
	parent = xasprintf("%.*s", (int)(slash - path), path);
	ret = lookup_dir(op, parent, dir);
	free(parent);
	return ret;
}

/* Handle and attributes of path itself, not following a final symlink,
 * from the cache of names where it knows them (nfs_dcache.c). need_attr
 * false: the caller wants of attr only the type and fileid, which a cached
 * handle has. A name the server says is missing is remembered as such. */
int lookup_path(struct op *op, const char *path, struct fhbuf *fh, fattr3 *attr, bool need_attr)
{
	struct fhbuf dir;
	const char *name;
	struct call call;
	struct dcache_stamp at;

	if (check_path(path) < 0)
		return -1;
	if (!*path) {
		*fh = op->c->root;
		if (rpc_getattr(op, fh, &call) < 0)
			return -1;
		*attr = call.attr;
		return 0;
	}
	switch (dcache_lookup(op->nb, path, fh, attr)) {
	case DCACHE_FULL:
		return 0;
	case DCACHE_HANDLE_ONLY:
		if (!need_attr)
			return 0;
		break;
	case DCACHE_ABSENT:
		errno = ENOENT;
		return -1;
	}
	at = dcache_stamp(op->nb);
	if (lookup_parent(op, path, &dir, &name) < 0)
		return -1;
	if (rpc_lookup(op, &dir, name, &call) < 0) {
		if (errno == ENOENT)
			dcache_put_missing(op->nb, path, at);
		return -1;
	}
	if (!call.have_fh) {
		errno = EIO;
		return -1;
	}
	*fh = call.fh;
	if (!call.have_attr && rpc_getattr(op, fh, &call) < 0)
		return -1;
	*attr = call.attr;
	dcache_put_attr(op->nb, path, fh, attr, at);
	return 0;
}

/* Run fn(op, arg) with a connection acting as cred (NULL: the caller of the
 * identity hook). Retried at once on a fresh connection when the first one
 * was an idle one that turned out dead, or when a cached handle went stale.
 * While the server cannot be reached (no mount, no answer, the connection
 * died) it is tried again with the backend's patience (patience_wait); a
 * try after one that got no answer has op->retried set, since the server
 * may have carried that one out. */
int run_op(struct nfs_backend *nb, const struct backend_cred *cred,
		  int (*fn)(struct op *op, void *arg), void *arg)
{
	struct patience pat = { 0 };
	bool retried = false, fresh_tried = false, stale_tried = false;
	int ret = -1;

	for (;;) {
		struct op op = { .nb = nb, .retried = retried };
		bool again = false, lost = false;
		int saved;

		whoami(nb, cred, &op.cred);
		op.deadline = time_mono_ms() + nb->timeout_ms;
		op.c = conn_get(nb, op.deadline, !nfs_patient(nb));
		if (!op.c) {
			if (patience_wait(nb, &pat))
				continue;
			return -1;
		}
		ret = fn(&op, arg);
		saved = errno;
		/* A request libnfs would not queue fails the same way on any
		 * connection: not something to wait out. */
		if (ret < 0 && op.c->broken && !op.c->unsent) {
			if (op.c->reused && !fresh_tried && saved != ETIMEDOUT) {
				/* An idle connection the server had dropped. */
				fresh_tried = again = true;
			} else {
				char *why = saved == ETIMEDOUT ?
					xasprintf("no answer within %.1f s", nb->timeout_ms / 1000.0) :
					conn_error(op.c, "the connection failed");

				if (saved == ETIMEDOUT)
					nfs_server_failed(nb);
				nfs_unreachable(nb, why);
				free(why);
				lost = true;
			}
			retried = true;
		}
		if (ret < 0 && saved == ESTALE && !stale_tried) {
			stale_tried = again = true;
			pthread_mutex_lock(&nb->lock);
			dcache_clear_locked(nb);
			pthread_mutex_unlock(&nb->lock);
		}
		conn_put(nb, op.c);
		errno = saved;
		if (again)
			continue;
		if (lost && patience_wait(nb, &pat))
			continue;
		return ret;
	}
}
