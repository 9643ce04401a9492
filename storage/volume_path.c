/* The check of a volume path (volume_path.h). */
#include "volume_path.h"

#include <errno.h>
#include <string.h>

int volume_path_check(const char *path, size_t name_max)
{
	const char *p = path;

	if (*path == '/')
		goto bad;
	while (*p) {
		const char *end = strchrnul(p, '/');
		size_t n = (size_t)(end - p);

		if (n > name_max) {
			errno = ENAMETOOLONG;
			return -1;
		}
		if (n == 0 || (n == 2 && p[0] == '.' && p[1] == '.') || (n == 1 && p[0] == '.'))
			goto bad;
		p = *end ? end + 1 : end;
		if (*end && !*p)
			goto bad;
	}
	return 0;
bad:
	errno = EINVAL;
	return -1;
}
