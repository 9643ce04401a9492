/* Measures what the runner's sampling of its instances costs (runner/usage.h):
 * starts INSTANCES instance-like session leaders with PROCS processes in all
 * below them (one in ten in a session of its own, so that the ancestor walk
 * is exercised too, like a stage that daemonizes), then times usage_sample()
 * over all of them SCANS times. Every other process of the machine is read
 * as well, as the runner does. Prints "key: value" lines ending with
 * scan_ms_p50, scan_ms_p99 and scan_ms_max. */
#include "usage.h"
#include "util.h"

#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int by_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* A session leader with n children; the ones in sessions of their own send
 * their pid down fd so that they can be killed at the end. */
static pid_t start_instance(int n, int fd)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	setsid();
	for (int i = 0; i < n; i++) {
		if (fork() == 0) {
			if (i % 10 == 9) {
				pid_t self = getpid();

				setsid();
				if (write(fd, &self, sizeof self) != sizeof self)
					_exit(1);
			}
			pause();
			_exit(0);
		}
	}
	pause();
	_exit(0);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "procs", required_argument, NULL, 'p' },
		{ "instances", required_argument, NULL, 'i' },
		{ "scans", required_argument, NULL, 's' },
		{ NULL, 0, NULL, 0 },
	};
	int procs = 400, ninst = 20, scans = 200, c, fds[2];
	struct usage_target *targets;
	struct usage_state *states;
	struct usage_scan_info info = { 0 };
	struct usage *u;
	pid_t *leaders, loose;
	double *ms;
	char *err = NULL;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			procs = atoi(optarg);
			break;
		case 'i':
			ninst = atoi(optarg);
			break;
		case 's':
			scans = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: bench_usage [--procs N] [--instances N] [--scans N]\n");
			return 2;
		}
	}
	if (procs < 0 || ninst < 1 || scans < 1 || pipe(fds) < 0)
		return 2;
	leaders = xcalloc((size_t)ninst, sizeof *leaders);
	targets = xcalloc((size_t)ninst, sizeof *targets);
	states = xcalloc((size_t)ninst, sizeof *states);
	ms = xcalloc((size_t)scans, sizeof *ms);
	for (int i = 0; i < ninst; i++) {
		leaders[i] = start_instance(procs / ninst, fds[1]);
		states[i] = USAGE_STATE_INIT;
		targets[i] = (struct usage_target){ .pid = leaders[i], .state = &states[i] };
	}
	u = usage_create("/proc");
	/* Until every process exists. */
	for (int tries = 0; tries < 500; tries++) {
		if (usage_sample(u, targets, (size_t)ninst, &err) == 0) {
			usage_last_scan(u, &info);
			if (info.matched >= (size_t)(procs / ninst * ninst + ninst))
				break;
		}
		usleep(10000);
	}
	for (int i = 0; i < scans; i++) {
		if (usage_sample(u, targets, (size_t)ninst, &err) < 0) {
			fprintf(stderr, "bench_usage: %s\n", err);
			break;
		}
		usage_last_scan(u, &info);
		ms[i] = info.ms;
	}
	qsort(ms, (size_t)scans, sizeof *ms, by_double);
	printf("machine: %ld cores\n", sysconf(_SC_NPROCESSORS_ONLN));
	printf("instances: %d\n", ninst);
	printf("processes: %zu\n", info.processes);
	printf("processes_read_per_scan: %zu\n", info.read);
	printf("processes_in_instances: %zu\n", info.matched);
	printf("scans: %d\n", scans);
	printf("scan_ms_p50: %.2f\n", ms[scans / 2]);
	printf("scan_ms_p99: %.2f\n", ms[scans * 99 / 100]);
	printf("scan_ms_max: %.2f\n", ms[scans - 1]);
	for (int i = 0; i < ninst; i++)
		kill(-leaders[i], SIGKILL);
	close(fds[1]);
	while (read(fds[0], &loose, sizeof loose) == sizeof loose)
		kill(loose, SIGKILL);
	for (int i = 0; i < ninst; i++)
		waitpid(leaders[i], NULL, 0);
	usage_destroy(u);
	free(leaders);
	free(targets);
	free(states);
	free(ms);
	free(err);
	return 0;
}
