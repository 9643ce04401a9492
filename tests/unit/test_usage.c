/* Measuring instances' process trees through /proc, with real processes: an
 * "instance" (a session leader, as launch.c makes them) that burns CPU for
 * 0.5 s while a grandchild in a session of its own allocates and touches
 * 50 MB; its neighbour that only sleeps; CPU time that stays counted after a
 * process leaves the tree unwaited; and the parser and attribution on fixed
 * input. */
#include "burn.h"
#include "tap.h"
#include "usage.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

TAP_STATE;

#define MB (1024 * 1024)

/* The grandchild writes its pid to mem_fd once it has touched its memory;
 * the child a byte to cpu_fd once it has burnt its CPU. */
static pid_t start_instance(int mem_fd, int cpu_fd)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	setsid();
	if (fork() == 0) {
		/* Its own session: found as a descendant, not by session. */
		char *mem;

		pid_t self = getpid();

		setsid();
		mem = malloc(50 * MB);
		if (mem)
			memset(mem, 1, 50 * MB);
		if (write(mem_fd, &self, sizeof self) != sizeof self)
			_exit(1);
		pause();
		_exit(0);
	}
	burn_ms(500);
	if (write(cpu_fd, "c", 1) != 1)
		_exit(1);
	pause();
	_exit(0);
}

static pid_t start_sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		setsid();
		pause();
		_exit(0);
	}
	return pid;
}

static void test_real_tree(void)
{
	struct usage *u = usage_create("/proc");
	struct usage_state a = USAGE_STATE_INIT, b = USAGE_STATE_INIT;
	struct usage_target t[2];
	struct usage_scan_info info;
	int mem_fds[2], cpu_fds[2];
	char c;
	char *err = NULL;
	pid_t inst, sleeper, grandchild = 0;
	int64_t cpu_before;

	if (pipe(mem_fds) < 0 || pipe(cpu_fds) < 0) {
		ok(0, "pipe");
		return;
	}
	inst = start_instance(mem_fds[1], cpu_fds[1]);
	sleeper = start_sleeper();
	/* Both the memory and the CPU are done. */
	if (read(mem_fds[0], &grandchild, sizeof grandchild) != sizeof grandchild ||
	    read(cpu_fds[0], &c, 1) != 1)
		diag("no word from the instance");
	t[0] = (struct usage_target){ .pid = inst, .state = &a };
	t[1] = (struct usage_target){ .pid = sleeper, .state = &b };
	/* First the neighbour alone: the instance's processes are in no tree
	 * then, and remembered so (a reattached instance is seen like this). */
	is_int(usage_sample(u, t + 1, 1, &err), 0, "a sample of the neighbour alone");
	usage_last_scan(u, &info);
	ok(info.read == info.processes, "reads every process the first time (%zu)", info.read);
	/* A process born on the host between two scans is read once: on a
	 * busy host (a build beside the test) a scan may meet some, so the
	 * claim is that some scan of a few reads only the neighbour's tree,
	 * where without the memory every scan reads every process. */
	is_int(usage_sample(u, t + 1, 1, &err), 0, "again");
	usage_last_scan(u, &info);
	for (int tries = 0; tries < 20 && info.read > 2; tries++) {
		usleep(20 * 1000);
		if (usage_sample(u, t + 1, 1, &err) < 0)
			break;
		usage_last_scan(u, &info);
	}
	ok(info.read <= 2 && info.processes > 3, "then only the neighbour's tree: %zu of %zu read",
	   info.read, info.processes);
	is_int(usage_sample(u, t, 2, &err), 0, "a sample of two instances");
	ok(a.now.cpu_ms >= 400 && a.now.cpu_ms <= 900, "the instance's tree used ~500 ms of CPU: %lld ms",
	   (long long)a.now.cpu_ms);
	ok(a.now.rss >= 50 * MB && a.now.rss < 90 * MB,
	   "and holds the grandchild's 50 MB (in a session of its own): %lld MB", (long long)(a.now.rss / MB));
	ok(a.now.max_rss >= a.now.rss, "its peak is at least that");
	ok(b.now.cpu_ms >= 0 && b.now.cpu_ms < 50, "the sleeping neighbour used next to no CPU: %lld ms",
	   (long long)b.now.cpu_ms);
	ok(b.now.rss > 0 && b.now.rss < 20 * MB, "nor much memory: %lld kB", (long long)(b.now.rss / 1024));
	usage_last_scan(u, &info);
	ok(info.processes > 3 && info.matched >= 3, "%zu processes, %zu in the trees, %zu read, in %.2f ms",
	   info.processes, info.matched, info.read, info.ms);

	/* The instance (its first process) ends; its grandchild, in another
	 * session, is left to init. The CPU it used does not vanish. */
	cpu_before = a.now.cpu_ms;
	kill(inst, SIGKILL);
	waitpid(inst, NULL, 0);
	is_int(usage_sample(u, t, 1, &err), 0, "a sample with the instance's first process gone");
	ok(a.now.cpu_ms >= cpu_before, "CPU never goes down: %lld ms after %lld", (long long)a.now.cpu_ms,
	   (long long)cpu_before);
	ok(a.now.rss < 5 * MB, "the orphan is no longer in the tree: %lld kB", (long long)(a.now.rss / 1024));
	ok(a.now.max_rss >= 50 * MB, "the peak stays: %lld MB", (long long)(a.now.max_rss / MB));

	kill(sleeper, SIGKILL);
	waitpid(sleeper, NULL, 0);
	if (grandchild > 0)
		kill(grandchild, SIGKILL);
	free(err);
	close(mem_fds[0]);
	close(mem_fds[1]);
	close(cpu_fds[0]);
	close(cpu_fds[1]);
	usage_destroy(u);
}

/* A process leaves the tree (its parent in the tree never waits for it): its
 * CPU time stays counted and what the others use next is added on top. */
static void test_lost(void)
{
	struct usage_state st = USAGE_STATE_INIT;

	usage_update(&st, 1000, 10 * MB, -1);
	is_int(st.now.cpu_ms, 1000, "first reading");
	usage_update(&st, 200, 5 * MB, -1);
	is_int(st.now.cpu_ms, 1000, "800 ms left the tree: still 1000");
	usage_update(&st, 500, 5 * MB, -1);
	is_int(st.now.cpu_ms, 1300, "the rest grew by 300: 1300");
	is_int(st.now.rss, 5 * MB, "rss is what is resident now");
	is_int(st.now.max_rss, 10 * MB, "max_rss the most seen");
	usage_update(&st, 600, 1 * MB, 64 * MB);
	is_int(st.now.max_rss, 64 * MB, "a peak from the source (memory.peak) counts");
	usage_finish(&st, NULL, 5000, 100 * MB);
	is_int(st.now.cpu_ms, 5000, "the end: wait4's total when it is more");
	is_int(st.now.max_rss, 100 * MB, "and ru_maxrss when it is more");
	is_int(st.now.rss, -1, "no rss in the totals");
	usage_finish(&st, NULL, -1, -1);
	is_int(st.now.cpu_ms, 5000, "unknown totals change nothing");
}

static void test_parse(void)
{
	struct proc_stat st;

	is_int(usage_parse_stat("1234 (a) b (c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 "
				"250 50 30 20 20 0 1 0 5000 10000000 300 18446744073709551615\n", &st), 0,
	       "a command name with spaces and parentheses parses");
	ok(st.pid == 1234 && st.ppid == 1 && st.pgrp == 1234 && st.session == 1234, "pid, ppid, pgrp, session");
	is_int(st.cpu_ticks, 350, "utime + stime + cutime + cstime");
	is_int(st.rss_pages, 300, "rss in pages");
	is_int(usage_parse_stat("1234 (x) S 1 2\n", &st), -1, "too short is refused");
	is_int(usage_parse_stat("garbage", &st), -1, "garbage is refused");
}

static void test_attribute(void)
{
	/* 10: instance A (session 10); 11: its child; 12: a grandchild that made
	 * its own session; 13: child of 12; 20: instance B; 21: in B's group
	 * only; 30: unrelated; 31: its child. */
#define P(a, b, c, d) { .pid = a, .ppid = b, .pgrp = c, .session = d }
	const struct proc_stat procs[] = {
		P(10, 5, 10, 10), P(11, 10, 10, 10), P(12, 11, 12, 12), P(13, 12, 12, 12),
		P(20, 5, 20, 20), P(21, 1, 20, 7), P(30, 1, 30, 30), P(31, 30, 30, 30),
	};
#undef P
	const pid_t roots[] = { 20, 10 };
	int owner[8];

	usage_attribute(procs, 8, roots, 2, owner);
	ok(owner[0] == 1 && owner[1] == 1, "the instance and its child are A's (root index 1)");
	ok(owner[2] == 1 && owner[3] == 1, "a descendant in a session of its own too, and its child");
	ok(owner[4] == 0 && owner[5] == 0, "B and a process in B's group are B's");
	ok(owner[6] == -1 && owner[7] == -1, "the rest are nobody's");
}

int main(void)
{
	test_parse();
	test_attribute();
	test_lost();
	test_real_tree();
	return done_testing();
}
