/* data/ on the storage backend (see data_dir.h). */
#include "data_dir.h"
#include "backend.h"
#include "util.h"

#include <errno.h>
#include <unistd.h>

#define DATA_MODE 01777

/* The backend path of a node under data/ (rest "" is data/ itself). */
static char *volume_path(const struct fs_path *p)
{
	return *p->rest ? xasprintf("data/%s", p->rest) : xstrdup("data");
}

/* Within data/ only; elsewhere is another volume as far as mv is concerned. */
static int two_paths(const struct fs_path *from, const struct fs_path *to)
{
	if (to->ops != &data_dir.node) {
		errno = EXDEV;
		return -1;
	}
	/* data/ itself is part of the mount's fixed layout. */
	if (!*from->rest || !*to->rest) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

const struct volume_dir data_dir = {
	.node = VOLUME_DIR_NODE,
	.path = volume_path,
	/* Its mode 1777 is what lets every job add files. */
	.fixed_top = true,
	.pair = two_paths,
};

int data_dir_prepare(struct fs_ctx *fs)
{
	struct backend_cred self = { geteuid(), getegid() };
	struct backend *b = fs->backend;
	struct stat st;

	if (backend_getattr(b, "data", &st) == 0)
		return S_ISDIR(st.st_mode) ? 0 : (errno = ENOTDIR, -1);
	if (errno != ENOENT)
		return -1;
	/* Another mount may make it at the same moment: that is fine. */
	if (backend_mkdir(b, &self, "data", DATA_MODE) < 0 && errno != EEXIST)
		return -1;
	/* mkdir's mode went through a umask on some servers: say it again. */
	return backend_chmod(b, "data", DATA_MODE);
}
