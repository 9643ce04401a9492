/* jobs/<id>/out/... on the storage backend (see out_dir.h). */
#include "out_dir.h"
#include "backend.h"
#include "data_dir.h"
#include "job_cache.h"
#include "sched_link.h"
#include "util.h"

#include <errno.h>
#include <string.h>

/* The backend path of a node under jobs/<id>/out; NULL/ENOENT for a bad id. */
static char *volume_path(const struct fs_path *p)
{
	int64_t id;

	if (fs_parse_id(p->arg[0], &id) < 0)
		return NULL;
	if (!*p->rest)
		return xasprintf("jobs/%lld/out", (long long)id);
	return xasprintf("jobs/%lld/out/%s", (long long)id, p->rest);
}

/* A job's outputs are its owner's to delete (or root's), whatever the modes
 * inside say: a group-writable checkpoint folder is for adding to. */
static int check_owner(struct fs_ctx *fs, const struct fs_path *p)
{
	const struct job_meta *meta;
	struct backend_cred cred;
	struct fs_identity who;
	int64_t id;
	bool mine;

	fs_caller_cred(fs, &cred);
	if (cred.uid == 0 || !fs->jobs)
		return 0;
	if (fs_parse_id(p->arg[0], &id) < 0)
		return -1;
	fs_identity_basic(fs, &who);
	meta = job_cache_get(fs->jobs, &who, id, 0);
	fs_identity_clear(&who);
	if (!meta)
		return -1;
	mine = meta->uid == cred.uid;
	job_meta_put(meta);
	if (!mine) {
		errno = EACCES;
		return -1;
	}
	return 0;
}

/* Both ends inside the out/ of one job; another job's out/ is another volume
 * as far as mv is concerned (EXDEV makes it copy), anything else is refused,
 * the out folder itself too (part of the job's fixed layout). */
static int two_paths(const struct fs_path *from, const struct fs_path *to)
{
	/* data/ is on the same volume but not in the job: mv copies. */
	if (to->ops == &data_dir.node) {
		errno = EXDEV;
		return -1;
	}
	if (to->ops != &out_dir.node || !*from->rest || !*to->rest) {
		errno = EPERM;
		return -1;
	}
	if (strcmp(from->arg[0], to->arg[0]) != 0) {
		errno = EXDEV;
		return -1;
	}
	return 0;
}

const struct volume_dir out_dir = {
	.node = VOLUME_DIR_NODE,
	.path = volume_path,
	.may_remove = check_owner,
	.pair = two_paths,
};
