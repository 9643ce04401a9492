/* Choosing a backend from a volume URL, and the helpers written once on top of
 * the ops table (mkdir -p, rm -r) so that every backend gets them for free. */
#include "backend.h"
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct backend *backend_create(const char *url, char **err)
{
	if (!url || !*url) {
		errno = EINVAL;
		errprintf(err, "no storage given (use --storage /path or nfs://server/export/path)");
		return NULL;
	}
	if (strncmp(url, "file://", 7) == 0)
		return backend_local_create(url + 7, err);
	if (url[0] == '/')
		return backend_local_create(url, err);
	if (strncmp(url, "nfs://", 6) == 0)
		return backend_nfs_create(url, err);
	errno = EINVAL;
	errprintf(err, "storage '%s' is neither /path, file:///path nor nfs://server/export/path", url);
	return NULL;
}

void backend_set_identity(struct backend *b, backend_who_fn who, void *arg)
{
	b->who = who;
	b->who_arg = arg;
}

void backend_destroy(struct backend *b)
{
	if (b)
		b->ops->destroy(b);
}

/* An existing path must be a folder. */
static int is_folder(struct backend *b, const char *path)
{
	struct stat st;

	if (b->ops->getattr(b, path, &st) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return -1;
	}
	return 0;
}

int backend_mkdir_p(struct backend *b, const struct backend_cred *cred, const char *path, mode_t mode)
{
	char *parent = NULL, *slash;
	int ret = -1;

	/* The deepest folder first: for a new job's folders, or one that is
	 * there already, that is one call instead of a walk from the top (each
	 * step a round trip on NFS). Somebody else may create one at the same
	 * moment: EEXIST is fine when it is a folder. */
	if (b->ops->mkdir(b, cred, path, mode) == 0)
		return 0;
	if (errno == EEXIST)
		return is_folder(b, path);
	if (errno != ENOENT)
		return -1;
	parent = xstrdup(path);
	slash = strrchr(parent, '/');
	if (!slash || slash == parent)
		goto out;  /* ENOENT: the volume's root is missing */
	*slash = '\0';
	if (backend_mkdir_p(b, cred, parent, mode) < 0)
		goto out;
	if (b->ops->mkdir(b, cred, path, mode) == 0)
		ret = 0;
	else if (errno == EEXIST)
		ret = is_folder(b, path);
out:
	free(parent);
	return ret;
}

struct name_list {
	char **names;
	size_t n, cap;
};

static int collect_name(void *arg, const char *name, const struct stat *st)
{
	struct name_list *list = arg;

	(void)st;
	if (list->n == list->cap) {
		list->cap = list->cap ? list->cap * 2 : 16;
		list->names = xrealloc(list->names, list->cap * sizeof *list->names);
	}
	list->names[list->n++] = xstrdup(name);
	return 0;
}

int backend_remove_tree(struct backend *b, const char *path)
{
	struct name_list list = { 0 };
	struct stat st;
	int ret = -1, saved;

	/* The volume itself is not a tree anybody may remove. */
	if (!*path) {
		errno = EINVAL;
		goto out;
	}
	if (b->ops->getattr(b, path, &st) < 0) {
		ret = errno == ENOENT ? 0 : -1;
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		ret = b->ops->unlink(b, path) < 0 && errno != ENOENT ? -1 : 0;
		goto out;
	}
	/* Collect first, then remove: removing while listing may skip entries. */
	if (b->ops->readdir(b, path, collect_name, &list) < 0)
		goto out;
	for (size_t i = 0; i < list.n; i++) {
		char *child = xasprintf("%s/%s", path, list.names[i]);
		int rc = backend_remove_tree(b, child);

		free(child);
		if (rc < 0)
			goto out;
	}
	if (b->ops->rmdir(b, path) < 0 && errno != ENOENT)
		goto out;
	ret = 0;
out:
	saved = errno;
	for (size_t i = 0; i < list.n; i++)
		free(list.names[i]);
	free(list.names);
	errno = saved;
	return ret;
}
