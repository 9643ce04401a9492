/* Which files a process holds open, from /proc (see proc_fd.h). */
#include "proc_fd.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

bool proc_holds_path(pid_t pid, const char *path)
{
	char dir[64], link[PATH_MAX];
	struct dirent *de;
	bool found = false;
	DIR *d;

	if (pid <= 0 || !path)
		return false;
	snprintf(dir, sizeof dir, "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		ssize_t n = readlinkat(dirfd(d), de->d_name, link, sizeof link - 1);

		if (n > 0) {
			link[n] = '\0';
			found = strcmp(link, path) == 0;
		}
	}
	closedir(d);
	return found;
}
