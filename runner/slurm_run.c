/* slurm_run.h: fork, drop to the user in the child (setgroups, setgid, setuid,
 * as launch.c does for a local instance), exec; the parent writes stdin and
 * reads both outputs with poll until the child closes them or the time is up. */
#include "slurm_run.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

void slurm_run_result_clear(struct slurm_run_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

struct run_who {
	bool change;
	uid_t uid;
	gid_t gid;
	gid_t groups[256];
	size_t ngroups;
	char *home, *user;
	pid_t parent;  /* the runner: the child checks it is still there */
};

static int who_from_json(const json_t *id, struct run_who *w, char **err)
{
	const json_t *groups = json_object_get(id, "groups"), *g;
	size_t i;

	memset(w, 0, sizeof *w);
	if (!id)
		return 0;
	if (!json_is_integer(json_object_get(id, "uid")) || !json_is_integer(json_object_get(id, "gid"))) {
		errno = EINVAL;
		return errprintf(err, "the identity is incomplete");
	}
	w->change = json_is_true(json_object_get(id, "change"));
	w->uid = (uid_t)json_integer_value(json_object_get(id, "uid"));
	w->gid = (gid_t)json_integer_value(json_object_get(id, "gid"));
	json_array_foreach(groups, i, g) {
		if (w->ngroups < sizeof w->groups / sizeof w->groups[0])
			w->groups[w->ngroups++] = (gid_t)json_integer_value(g);
	}
	if (json_string_value(json_object_get(id, "home")))
		w->home = xasprintf("HOME=%s", json_string_value(json_object_get(id, "home")));
	if (json_string_value(json_object_get(id, "user")))
		w->user = xasprintf("USER=%s", json_string_value(json_object_get(id, "user")));
	/* A root runner never submits as root for someone else, nor as itself
	 * for a user: identity_decide() refused uid 0 unless the user is root. */
	return 0;
}

/* Between fork and exec: async-signal-safe calls only. */
static void __attribute__((noreturn)) child(char *const *argv, char *const *envp, const struct run_who *w,
					    int in, int out, int errfd)
{
	child_default_signals();
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(errfd, 2) < 0)
		_exit(126);
	if (w->change) {
		if (setgroups(w->ngroups, w->groups) < 0 || setgid(w->gid) < 0 || setuid(w->uid) < 0)
			_exit(126);
		if (w->uid != 0 && setuid(0) == 0)
			_exit(126);
	}
	/* Never outlive the runner (set after the uid changed, which clears
	 * it): an sbatch left behind by a runner killed -9 could submit after
	 * the next runner looked for its tag, and run an instance twice. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != w->parent)
		_exit(126);
	if (chdir("/") < 0)
		_exit(126);
	close_range(3, ~0U, 0);
	execvpe(argv[0], argv, envp);
	_exit(127);
}

/* Append what fd has to *buf; 0 at end of file. */
static int drain(int fd, char **buf, size_t *len)
{
	char chunk[4096];
	ssize_t n = read(fd, chunk, sizeof chunk);

	if (n <= 0)
		return n < 0 && (errno == EINTR || errno == EAGAIN) ? 1 : 0;
	*buf = xrealloc(*buf, *len + (size_t)n + 1);
	memcpy(*buf + *len, chunk, (size_t)n);
	*len += (size_t)n;
	(*buf)[*len] = '\0';
	return 1;
}

int slurm_run(char *const *argv, const char *input, const json_t *identity, int timeout_ms,
	      struct slurm_run_result *res, char **err)
{
	int pin[2] = { -1, -1 }, pout[2] = { -1, -1 }, perr[2] = { -1, -1 };
	struct run_who w;
	/* The runner's PATH finds the Slurm its operator meant (and a test's fakes). */
	char *envp[6], *path = xasprintf("PATH=%s", getenv("PATH") && *getenv("PATH") ? getenv("PATH") :
					 "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin");
	char *conf = getenv("SLURM_CONF") ? xasprintf("SLURM_CONF=%s", getenv("SLURM_CONF")) : NULL;
	size_t ne = 0, outlen = 0, errlen = 0, inlen = input ? strlen(input) : 0, inoff = 0;
	int64_t deadline = time_mono_ms() + timeout_ms;
	int rc = -1, status = 0;
	bool killed = false;
	pid_t pid = -1;

	memset(res, 0, sizeof *res);
	res->out = xstrdup("");
	res->err = xstrdup("");
	if (who_from_json(identity, &w, err) < 0)
		goto out;
	/* A clean environment: only where the commands and Slurm's config are,
	 * and who the user is. */
	envp[ne++] = path;
	if (conf)
		envp[ne++] = conf;
	if (w.home)
		envp[ne++] = w.home;
	if (w.user)
		envp[ne++] = w.user;
	envp[ne] = NULL;
	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
		errprintf(err, "cannot create a pipe: %s", strerror(errno));
		goto out;
	}
	w.parent = getpid();
	pid = fork();
	if (pid < 0) {
		errprintf(err, "cannot fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		child(argv, envp, &w, pin[0], pout[1], perr[1]);
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	pin[0] = pout[1] = perr[1] = -1;
	fcntl(pin[1], F_SETFL, O_NONBLOCK);
	if (inlen == 0) {
		close(pin[1]);
		pin[1] = -1;
	}
	while (pout[0] >= 0 || perr[0] >= 0) {
		struct pollfd p[3] = { { pout[0], POLLIN, 0 }, { perr[0], POLLIN, 0 }, { pin[1], POLLOUT, 0 } };
		int64_t left = deadline - time_mono_ms();

		if (left <= 0) {
			kill(pid, SIGKILL);
			killed = true;
			break;
		}
		if (poll(p, 3, (int)left) < 0 && errno != EINTR)
			break;
		if (p[0].revents && !drain(pout[0], &res->out, &outlen)) {
			close(pout[0]);
			pout[0] = -1;
		}
		if (p[1].revents && !drain(perr[0], &res->err, &errlen)) {
			close(perr[0]);
			perr[0] = -1;
		}
		if (p[2].revents) {
			ssize_t n = write(pin[1], input + inoff, inlen - inoff);

			if (n > 0)
				inoff += (size_t)n;
			if ((n < 0 && errno != EAGAIN && errno != EINTR) || inoff == inlen) {
				close(pin[1]);
				pin[1] = -1;
			}
		}
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	res->status = killed ? 128 + SIGKILL : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	rc = 0;
out:
	for (int i = 0; i < 2; i++) {
		if (pin[i] >= 0)
			close(pin[i]);
		if (pout[i] >= 0)
			close(pout[i]);
		if (perr[i] >= 0)
			close(perr[i]);
	}
	free(path);
	free(conf);
	free(w.home);
	free(w.user);
	return rc;
}

