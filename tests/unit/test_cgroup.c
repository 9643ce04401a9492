/* The cgroup v2 path: the parsers on fixed text; detection that says why
 * there is nothing to use (no 0:: line, not mounted, the root cgroup, not a
 * cgroup folder) and, on the real /proc/self, either skips cleanly (this VM:
 * cgroup v1 holds the controllers) or, where a subtree is delegated, runs the
 * real thing; the files an instance's cgroup is made with, on a fixture
 * folder; and on a cgroup2 mount we may write to (even one without
 * controllers), a real process entering a cgroup, its CPU read from cpu.stat,
 * and the cgroup killed and removed. */
#include "burn.h"
#include "cgroup.h"
#include "tap.h"
#include "textfile.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

TAP_STATE;

#define MB (1024 * 1024)

static char *tmp;

static char *get(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name), *text = read_file(path, 4096, NULL);

	free(path);
	return text;
}

static void test_parsers(void)
{
	char *s = NULL;
	int64_t v = -1;

	is_int(cgroup_parse_self("12:memory:/a\n0::/system.slice/parsa-runner.service\n", &s), 0,
	       "the 0:: line among v1 lines");
	is_str(s, "/system.slice/parsa-runner.service", "its path");
	free(s);
	s = NULL;
	is_int(cgroup_parse_self("4:memory:/x\n1:cpu:/\n", &s), -1, "v1 only: no 0:: line");
	is_int(cgroup_parse_mount("22 1 0:20 / /proc rw - proc proc rw\n"
				  "41 31 0:38 / /sys/fs/cgroup/my\\040tree rw,relatime shared:4 - cgroup2 cgroup2 rw\n",
				  &s), 0, "the cgroup2 line of mountinfo");
	is_str(s, "/sys/fs/cgroup/my tree", "its mount point, escapes undone");
	free(s);
	s = NULL;
	is_int(cgroup_parse_mount("30 1 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n", &s), -1,
	       "cgroup v1 only: no cgroup2 mount");
	is_int(cgroup_parse_keyed("usage_usec 1500000\nuser_usec 1000000\n", "user_usec", &v), 0, "a keyed file");
	is_int(v, 1000000, "its value");
	is_int(cgroup_parse_keyed("usage_usecs 5\n", "usage_usec", &v), -1, "keys match whole");
	ok(cgroup_has_controller("cpuset cpu io memory pids\n", "cpu"), "cpu among the controllers");
	ok(cgroup_has_controller("cpuset cpu io memory pids\n", "memory"), "memory too");
	ok(!cgroup_has_controller("cpuset io", "cpu"), "cpuset is not cpu");
	ok(!cgroup_has_controller("", "cpu"), "nothing in an empty list");
}

/* Detection on a fake /proc/self. */
static void detect(const char *cgroup, const char *mountinfo, const char *want, const char *what)
{
	char *dir = xasprintf("%s/self", tmp), *err = NULL;
	struct cgroup_tree *t;

	mkdir(dir, 0755);
	write_text(dir, "cgroup", cgroup);
	write_text(dir, "mountinfo", mountinfo);
	errno = 0;
	t = cgroup_tree_create(dir, &err);
	ok(!t && errno == ENOTSUP && err && strstr(err, want), "%s: %s", what, err ? err : "(none)");
	cgroup_tree_destroy(t);
	free(err);
	free(dir);
}

static void test_detect(void)
{
	char *mi = xasprintf("41 31 0:38 / %s rw - cgroup2 cgroup2 rw\n", tmp), *text;
	struct cgroup_tree *t;
	char *err = NULL;

	detect("1:cpu:/\n", mi, "no cgroup v2", "cgroup v1 only");
	detect("0::/x\n", "22 1 0:20 / /proc rw - proc proc rw\n", "not mounted", "cgroup2 not mounted");
	detect("0::/\n", mi, "root cgroup", "the root cgroup: nothing delegated");
	text = xasprintf("%s/x", tmp);
	mkdir_p(text, 0755);
	free(text);
	detect("0::/x\n", mi, "not a cgroup v2 folder", "a folder that is not cgroup2");

	/* This machine: the real thing, or a clean skip with the reason. */
	errno = 0;
	t = cgroup_tree_create(NULL, &err);
	if (!t) {
		ok(errno == ENOTSUP || errno == EBUSY || errno == EACCES, "the real /proc/self: %s (errno %d)",
		   err ? err : "?", errno);
		diag("skip: no delegated cgroup v2 subtree here, the runner measures through /proc");
	} else {
		ok(1, "a delegated subtree: %s", cgroup_tree_path(t));
	}
	cgroup_tree_destroy(t);
	free(err);
	free(mi);
}

/* The files of an instance's cgroup, on a fixture folder standing for the
 * kernel's: what cgroup_make writes and what cgroup_read makes of them. */
static void test_fixture(void)
{
	char *base = xasprintf("%s/tree", tmp), *inst = xasprintf("%s/7.1", base), *path, *text, *err = NULL;
	static const char *const files[] = { "memory.max", "memory.swap.max", "memory.oom.group", "cpuset.cpus" };
	static const struct {
		const char *file, *want, *what;
	} written[] = {
		{ "memory.max", "104857600\n", "memory.max is the stage's mem" },
		{ "memory.swap.max", "0\n", "no swap past it" },
		{ "memory.oom.group", "1\n", "an OOM kill takes the whole group" },
		{ "cpuset.cpus", "0-1", "cpuset.cpus are its cores" },
	};
	struct cgroup_tree *t;
	struct instance_usage u;
	int64_t kills = -1;

	mkdir_p(inst, 0755);
	for (size_t i = 0; i < ARRAY_LEN(files); i++)
		write_text(inst, files[i], "");
	write_text(inst, "cpu.stat", "usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n");
	write_text(inst, "memory.current", "52428800\n");
	write_text(inst, "memory.peak", "104857600\n");
	write_text(inst, "memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n");
	t = cgroup_tree_open(base, true);
	path = cgroup_make(t, "7.1", 100 * MB, "0-1", &err);
	is_str(path, inst, "the instance's cgroup is named after it");
	for (size_t i = 0; i < ARRAY_LEN(written); i++) {
		text = get(inst, written[i].file);
		is_str(text, written[i].want, "%s", written[i].what);
		free(text);
	}
	is_int(cgroup_read(inst, &u, &kills), 0, "its usage reads");
	ok(u.cpu_ms == 1234 && u.rss == 50 * MB && u.max_rss == 100 * MB && kills == 1,
	   "cpu 1234 ms, rss 50M, peak 100M, 1 OOM kill");
	text = xasprintf("%s/memory.peak", inst);
	unlink(text);
	free(text);
	cgroup_read(inst, &u, &kills);
	is_int(u.max_rss, -1, "no memory.peak (before 5.19): no peak");
	free(path);
	free(err);
	err = NULL;
	path = cgroup_make(t, "missing/deeper", 0, NULL, &err);
	ok(!path && err && strstr(err, "cannot create"), "a cgroup that cannot be made says why: %s", err ? err : "");
	free(err);
	cgroup_tree_destroy(t);
	free(inst);
	free(base);
}

/* A child that enters the cgroup as launch.c's does (writing 0 to its
 * cgroup.procs), then burns 300 ms, then touches alloc_mb, then waits. */
static pid_t child_in(const char *cg, int alloc_mb, int ready_fd)
{
	char *procs = xasprintf("%s/cgroup.procs", cg);
	int fd = open(procs, O_WRONLY | O_CLOEXEC);
	pid_t pid;

	free(procs);
	pid = fork();
	if (pid == 0) {
		char *mem;

		if (fd < 0 || write(fd, "0", 1) != 1)
			_exit(3);
		burn_ms(300);
		if (write(ready_fd, "r", 1) != 1)
			_exit(4);
		if (alloc_mb > 0 && (mem = malloc((size_t)alloc_mb * MB)) != NULL)
			memset(mem, 1, (size_t)alloc_mb * MB);
		pause();
		_exit(0);
	}
	if (fd >= 0)
		close(fd);
	return pid;
}

/* On a real cgroup2 mount we may write to. */
static void test_real(void)
{
	char *mi = read_file("/proc/self/mountinfo", 1 << 20, NULL), *mnt = NULL, *base = NULL, *cg = NULL;
	char *err = NULL, *text;
	struct cgroup_tree *t = NULL;
	struct instance_usage u;
	struct statfs sfs;
	int64_t kills = 0;
	int fds[2] = { -1, -1 }, status = 0;
	bool memory;
	char c;
	pid_t pid;

	if (!mi || cgroup_parse_mount(mi, &mnt) < 0 || access(mnt, W_OK) < 0 || statfs(mnt, &sfs) < 0) {
		diag("skip: no writable cgroup2 mount here");
		goto out;
	}
	base = xasprintf("%s/parsa-test-cgroup.%d", mnt, (int)getpid());
	if (mkdir(base, 0755) < 0) {
		diag("skip: cannot make %s: %s", base, strerror(errno));
		goto out;
	}
	/* The memory controller for base's children, where the mount has it. */
	text = get(mnt, "cgroup.subtree_control");
	memory = text && cgroup_has_controller(text, "memory");
	free(text);
	if (memory) {
		char *sc = xasprintf("%s/cgroup.subtree_control", base);
		int fd = open(sc, O_WRONLY);

		memory = fd >= 0 && write(fd, "+memory", 7) == 7;
		if (fd >= 0)
			close(fd);
		free(sc);
	}
	t = cgroup_tree_open(base, false);
	cg = cgroup_make(t, "1.1", memory ? 40 * MB : 0, NULL, &err);
	ok(cg != NULL, "a real instance cgroup under %s: %s", base, err ? err : "made");
	if (!cg || pipe(fds) < 0)
		goto out;
	pid = child_in(cg, memory ? 100 : 0, fds[1]);
	ok(read(fds[0], &c, 1) == 1, "a process entered it and burnt 300 ms");
	text = get(cg, "cgroup.procs");
	ok(text && atoi(text) == pid, "it is listed in its cgroup.procs (%s)", text ? text : "");
	free(text);
	is_int(cgroup_read(cg, &u, &kills), 0, "the cgroup's usage reads");
	ok(u.cpu_ms >= 250 && u.cpu_ms < 1000, "cpu.stat: %lld ms of CPU", (long long)u.cpu_ms);
	if (memory) {
		/* The memory controller: 100 MB past memory.max = 40M. */
		waitpid(pid, &status, 0);
		ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "past memory.max the kernel kills it");
		cgroup_read(cg, &u, &kills);
		ok(kills >= 1, "memory.events counts the OOM kill (%lld)", (long long)kills);
	} else {
		diag("skip: this cgroup2 mount has no memory controller (memory.max is not tested here)");
		cgroup_remove(t, cg);
		for (int i = 0; i < 100 && access(cg, F_OK) == 0; i++) {
			usleep(10000);
			cgroup_tree_sweep(t);
		}
		ok(waitpid(pid, &status, 0) == pid && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		   "removing the cgroup killed what was in it (cgroup.kill)");
	}
	cgroup_remove(t, cg);
	for (int i = 0; i < 100 && access(cg, F_OK) == 0; i++) {
		usleep(10000);
		cgroup_tree_sweep(t);
	}
	ok(access(cg, F_OK) < 0, "and it is gone");
out:
	if (fds[0] >= 0) {
		close(fds[0]);
		close(fds[1]);
	}
	if (base && rmdir(base) < 0 && errno != ENOENT)
		diag("cannot remove %s: %s", base, strerror(errno));
	cgroup_tree_destroy(t);
	free(cg);
	free(base);
	free(mnt);
	free(mi);
	free(err);
}

int main(void)
{
	char tmpl[] = "/tmp/parsa-test-cgroup.XXXXXX";
	char *cmd;

	tmp = mkdtemp(tmpl);
	if (!tmp) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	test_parsers();
	test_detect();
	test_fixture();
	test_real();
	cmd = xasprintf("rm -rf '%s'", tmp);
	if (system(cmd) != 0)
		diag("cannot remove %s", tmp);
	free(cmd);
	return done_testing();
}
