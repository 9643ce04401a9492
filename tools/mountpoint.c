#include "mountpoint.h"
#include "paths.h"
#include "proc.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

/* fusermount3 may wait on a busy file system; never longer than this. */
#define UNMOUNT_MS 10000

int is_mounted(const char *path, char *fstype, size_t len)
{
	char *text = read_file("/proc/self/mountinfo", 64 << 20, NULL);
	int found;

	if (!text)
		return -1;
	found = mountinfo_find(text, path, fstype, len);
	free(text);
	return found;
}

int unmount(const char *path, int lazy)
{
	char *argv[] = { "fusermount3", "-u", lazy ? "-z" : "-q", (char *)path, NULL };
	int status;

	if (geteuid() == 0)
		return umount2(path, lazy ? MNT_DETACH : 0);
	/* An ordinary user unmounts a FUSE file system through the setuid helper. */
	if (!lazy) {
		argv[2] = (char *)path;
		argv[3] = NULL;
	}
	status = run_wait(argv, UNMOUNT_MS);
	if (status < 0)
		return -1;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	errno = WIFEXITED(status) && WEXITSTATUS(status) == 127 ? ENOENT : EBUSY;
	return -1;
}
