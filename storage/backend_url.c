/* Choosing a backend from a volume URL (backend_create, backend.h): the one
 * place that knows every kind, so that none of them needs another, the
 * fault-injecting wrapper included (its inner volume is made here). */
#include "backend.h"
#include "util.h"

#include <errno.h>
#include <string.h>

/* fault:OPTIONS:URL: the inner volume first, then the wrapper around it. */
static struct backend *fault_create(const char *url, char **err)
{
	const char *colon = strchr(url + 6, ':');
	struct backend *inner;

	if (!colon || !colon[1]) {
		errno = EINVAL;
		errprintf(err, "storage '%s': expected fault:OPTIONS:URL (e.g. fault:eio=mkdir:/srv/parsa)", url);
		return NULL;
	}
	inner = backend_create(colon + 1, err);
	return inner ? backend_fault_create(url, inner, err) : NULL;
}

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
	if (strncmp(url, "fault:", 6) == 0)
		return fault_create(url, err);
	errno = EINVAL;
	errprintf(err, "storage '%s' is neither /path, file:///path nor nfs://server/export/path", url);
	return NULL;
}
