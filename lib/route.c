#include "route.h"

#include <string.h>

int route_match(const char *pattern, const char *path, char *buf, size_t len, const char **args,
		size_t max)
{
	size_t nargs = 0;
	char *save_u = NULL, *save_p = NULL, *u, *p;
	char pat[128];

	if (strlen(path) >= len || strlen(pattern) >= sizeof pat)
		return 0;
	strcpy(buf, path);
	strcpy(pat, pattern);
	u = strtok_r(buf, "/", &save_u);
	p = strtok_r(pat, "/", &save_p);
	while (u && p) {
		if (strcmp(p, "*") == 0) {
			if (nargs == max)
				return 0;
			args[nargs++] = u;
		} else if (strcmp(p, u) != 0) {
			return 0;
		}
		u = strtok_r(NULL, "/", &save_u);
		p = strtok_r(NULL, "/", &save_p);
	}
	return !u && !p;
}
