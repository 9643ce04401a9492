/* fscheck: data-path checks the shell cannot do well, for the integration
 * tests of a mount (local or NFS storage): a seeded random-operation checker
 * against an in-memory model (fscheck_random.c), the overwrite regression,
 * and small POSIX cases (fscheck_posix.c: an unlinked open file, a unix
 * socket, set-uid cleared by a write). This file: the shared helpers and the
 * command table. */
#include "fscheck.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- small helpers ---- */

bool tap_ok(struct tap *t, bool cond, const char *fmt, ...)
{
	va_list ap;

	t->run++;
	if (!cond)
		t->failed++;
	printf("%s %d - ", cond ? "ok" : "not ok", t->run);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return cond;
}

int tap_done(const struct tap *t)
{
	printf("1..%d\n", t->run);
	if (t->failed)
		printf("# %d of %d checks failed\n", t->failed, t->run);
	return t->failed ? 1 : 0;
}

long long parse_size(const char *s)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || v < 0)
		goto bad;
	switch (*end) {
	case 'k': case 'K': v *= KIB; end++; break;
	case 'm': case 'M': v *= MIB; end++; break;
	case 'g': case 'G': v *= 1024 * MIB; end++; break;
	}
	if (*end == 'i' && end[1] == 'B')
		end += 2;
	if (*end)
		goto bad;
	return v;
bad:
	errno = EINVAL;
	return -1;
}

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}


int fscheck_usage(void)
{
	fprintf(stderr,
		"usage: fscheck random [--seed N] [--ops N] [--max-size SIZE] [--two-fds]\n"
		"                      [--skip pread,ftruncate,truncate,fsync,reopen,fstat,stat] FILE\n"
		"       fscheck overwrite SIZE N FILE\n"
		"       fscheck unlinked [--rmdir] FILE\n"
		"       fscheck socket PATH\n"
		"       fscheck setuid FILE UID [GID]\n");
	return 2;
}

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
} commands[] = {
	{ "random", cmd_random },
	{ "overwrite", cmd_overwrite },
	{ "unlinked", cmd_unlinked },
	{ "socket", cmd_socket },
	{ "setuid", cmd_setuid },
};

int main(int argc, char **argv)
{
	size_t i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		return fscheck_usage();
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	return fscheck_usage();
}
