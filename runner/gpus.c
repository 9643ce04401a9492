#include "gpus.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SMI_OUTPUT_MAX 65536


int gpus_count_devices(const char *dev_dir)
{
	DIR *d = opendir(dev_dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL) {
		const char *p = de->d_name;

		if (strncmp(p, "nvidia", 6) != 0 || p[6] == '\0')
			continue;
		if (strspn(p + 6, "0123456789") == strlen(p + 6))
			n++;
	}
	closedir(d);
	return n;
}

int gpus_parse_smi(const char *text)
{
	const char *p = text;
	int n = 0;

	/* "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-...)"; MIG devices are the
	 * indented "  MIG 1g.5gb Device 0: ..." lines below theirs. */
	while (p && *p) {
		if (strncmp(p, "GPU ", 4) == 0 && p[4] >= '0' && p[4] <= '9')
			n++;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return n;
}

/* Run smi -L for at most timeout_ms. Its output (malloc'ed), or NULL with
 * *why when it is not installed, failed or took too long. */
static char *run_smi(const char *smi, int timeout_ms, char **why)
{
	char *argv[] = { (char *)smi, "-L", NULL }, *out = xmalloc(SMI_OUTPUT_MAX);
	posix_spawn_file_actions_t actions;
	int fds[2] = { -1, -1 }, rc, status = 0;
	int64_t deadline = time_mono_ms() + timeout_ms;
	size_t len = 0;
	pid_t pid = -1;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		errprintf(why, "cannot create a pipe: %s", strerror(errno));
		goto fail;
	}
	posix_spawn_file_actions_init(&actions);
	posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
	posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
	rc = posix_spawnp(&pid, smi, &actions, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&actions);
	close(fds[1]);
	fds[1] = -1;
	if (rc != 0) {
		errprintf(why, "%s: %s", smi, strerror(rc));
		pid = -1;
		goto fail;
	}
	for (;;) {
		int64_t left = deadline - time_mono_ms();
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		ssize_t n;

		if (left <= 0) {
			errprintf(why, "%s -L took more than %d ms", smi, timeout_ms);
			kill(pid, SIGKILL);
			goto fail;
		}
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		n = read(fds[0], out + len, SMI_OUTPUT_MAX - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		if (len == SMI_OUTPUT_MAX - 1) {
			/* Not what -L prints: do not wait for the rest. */
			kill(pid, SIGKILL);
			break;
		}
	}
	out[len] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		errprintf(why, "%s -L failed (status %d)", smi, status);
		free(out);
		return NULL;
	}
	return out;
fail:
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	free(out);
	return NULL;
}

int gpus_detect(const char *smi, const char *dev_dir, int timeout_ms, char **how)
{
	char *why = NULL, *out = run_smi(smi ? smi : "nvidia-smi", timeout_ms, &why);
	int n;

	if (out) {
		n = gpus_parse_smi(out);
		free(out);
		if (how)
			*how = xasprintf("%d from nvidia-smi -L", n);
		return n;
	}
	n = gpus_count_devices(dev_dir ? dev_dir : "/dev");
	if (how)
		*how = xasprintf("%d from the %s/nvidiaN device files (%s)", n, dev_dir ? dev_dir : "/dev",
				 why ? why : "no nvidia-smi");
	free(why);
	return n;
}
