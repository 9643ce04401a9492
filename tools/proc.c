#include "proc.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* How much of a log end is read to find its last lines. */
#define TAIL_BYTES 16384

char *find_program(const char *name)
{
	char self[PATH_MAX], *slash, *path, *dirs, *save = NULL;
	ssize_t n;

	/* Next to parsa first: a build tree or an install prefix keeps them together. */
	n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			path = xasprintf("%s/%s", self, name);
			if (access(path, X_OK) == 0)
				return path;
			free(path);
		}
	}
	dirs = xstrdup(getenv("PATH") ? getenv("PATH") : "/usr/local/bin:/usr/bin:/bin");
	for (char *dir = strtok_r(dirs, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		path = xasprintf("%s/%s", *dir ? dir : ".", name);
		if (access(path, X_OK) == 0) {
			free(dirs);
			return path;
		}
		free(path);
	}
	free(dirs);
	errno = ENOENT;
	return NULL;
}

/* In a fresh child: what every program we start gets, before exec. */
static void child_setup(void)
{
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
}

int daemon_start(struct daemon_proc *d, char *const argv[], char **err)
{
	int logfd = -1, pipefd[2] = { -1, -1 }, child_errno = 0, saved;
	pid_t parent = getpid(), pid;
	char stamp[32], *line;
	struct stat st;
	ssize_t n;

	logfd = open(d->log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (logfd < 0) {
		saved = errno;
		errprintf(err, "cannot open %s's log %s: %s", d->name, d->log, strerror(errno));
		errno = saved;
		return -1;
	}
	time_format_iso(time_now_ms(), stamp, sizeof stamp);
	line = xasprintf("---- %s: parsa up starts %s\n", stamp, d->name);
	(void)write_all(logfd, line, strlen(line));
	free(line);
	d->log_start = fstat(logfd, &st) == 0 ? st.st_size : 0;
	/* The exec's outcome comes back on a close-on-exec pipe: EOF means it ran. */
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		goto fail;
	pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0) {
		int fd = open("/dev/null", O_RDONLY);

		child_setup();
		setsid();
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127); /* the supervisor died between fork and prctl */
		if (fd < 0 || dup2(fd, STDIN_FILENO) < 0 || dup2(logfd, STDOUT_FILENO) < 0 ||
		    dup2(logfd, STDERR_FILENO) < 0)
			goto child_fail;
		if (fd > STDERR_FILENO)
			close(fd);
		execv(argv[0], argv);
child_fail:
		child_errno = errno;
		(void)write_all(pipefd[1], &child_errno, sizeof child_errno);
		_exit(127);
	}
	close(pipefd[1]);
	pipefd[1] = -1;
	do
		n = read(pipefd[0], &child_errno, sizeof child_errno);
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	close(logfd);
	if (n > 0) {
		waitpid(pid, NULL, 0);
		errno = child_errno;
		saved = errno;
		errprintf(err, "cannot start %s: %s", argv[0], strerror(child_errno));
		errno = saved;
		return -1;
	}
	d->pid = pid;
	d->exited = 0;
	d->status = 0;
	return 0;
fail:
	saved = errno;
	errprintf(err, "cannot start %s: %s", d->name, strerror(errno));
	if (pipefd[0] >= 0)
		close(pipefd[0]);
	if (pipefd[1] >= 0)
		close(pipefd[1]);
	close(logfd);
	errno = saved;
	return -1;
}

int daemon_reap(struct daemon_proc *d)
{
	pid_t r;
	int status;

	if (d->pid <= 0)
		return 1;
	do
		r = waitpid(d->pid, &status, WNOHANG);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return 0;
	/* ECHILD: someone else reaped it; either way it is gone. */
	d->status = r > 0 ? status : 0;
	d->exited = 1;
	d->pid = 0;
	return 1;
}

void describe_status(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "ended (wait status %#x)", (unsigned)status);
}

const char *text_tail(const char *text, size_t len, int n)
{
	const char *p = text + len;

	/* A final newline ends the last line; it does not start an empty one. */
	if (p > text && p[-1] == '\n')
		p--;
	while (p > text) {
		if (p[-1] == '\n' && --n <= 0)
			break;
		p--;
	}
	return p;
}

char *log_tail(const char *path, off_t start, int lines)
{
	char *buf = NULL, *out = NULL;
	const char *tail, *p;
	size_t cap, used = 0;
	struct stat st;
	ssize_t n;
	off_t from;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size <= start)
		goto out;
	from = st.st_size - start > TAIL_BYTES ? st.st_size - TAIL_BYTES : start;
	buf = xmalloc(TAIL_BYTES + 1);
	n = pread(fd, buf, TAIL_BYTES, from);
	if (n <= 0)
		goto out;
	buf[n] = '\0';
	tail = text_tail(buf, strlen(buf), lines);
	if (from > start && tail == buf) {
		/* Read from the middle of a line: start at the next one. */
		const char *nl = strchr(buf, '\n');

		tail = nl ? nl + 1 : buf + n;
	}
	cap = strlen(tail) + 8 * ((size_t)lines + 1) + 1;
	out = xmalloc(cap);
	out[0] = '\0';
	for (p = tail; *p;) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		used += (size_t)snprintf(out + used, cap - used, "  | %.*s\n", (int)len, p);
		p += len + (end ? 1 : 0);
	}
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return out ? out : xstrdup("");
}

int proc_stat_parse(const char *text, char *comm, size_t len, char *state)
{
	const char *open = strchr(text, '('), *close = strrchr(text, ')');
	size_t n;

	/* The name may hold spaces and parentheses: it runs to the last ')'. */
	if (!open || !close || close < open || close[1] != ' ' || !close[2]) {
		errno = EINVAL;
		return -1;
	}
	n = (size_t)(close - open - 1);
	if (len > 0)
		snprintf(comm, len, "%.*s", (int)n, open + 1);
	*state = close[2];
	return 0;
}

int pid_is(pid_t pid, const char *comm)
{
	char path[64], text[512], name[64], state;
	int fd;
	ssize_t n;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read_all(fd, text, sizeof text - 1);
	close(fd);
	if (n <= 0)
		return 0;
	text[n] = '\0';
	if (proc_stat_parse(text, name, sizeof name, &state) < 0)
		return 0;
	if (state == 'Z' || state == 'X')
		return 0;
	/* The kernel keeps the first 15 characters of the program name. */
	return strncmp(name, comm, 15) == 0;
}

int run_wait(char *const argv[], long timeout_ms)
{
	int64_t deadline = time_mono_ms() + timeout_ms;
	int status;
	pid_t pid, r;

	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open("/dev/null", O_RDONLY);

		child_setup();
		if (fd >= 0)
			dup2(fd, STDIN_FILENO);
		dup2(STDERR_FILENO, STDOUT_FILENO);
		execvp(argv[0], argv);
		dprintf(STDERR_FILENO, "parsa: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	for (;;) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return status;
		if (r < 0 && errno != EINTR)
			return -1;
		if (time_mono_ms() >= deadline) {
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			errno = ETIMEDOUT;
			return -1;
		}
		usleep(10 * 1000);
	}
}
