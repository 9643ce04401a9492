/* What fscheck's commands share: TAP-like output, sizes with suffixes, a
 * monotonic clock, and the commands themselves (fscheck.c dispatches:
 * fscheck_random.c is the random-operation checker, fscheck_posix.c the
 * small POSIX cases). */
#ifndef PARSA_FSCHECK_H
#define PARSA_FSCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define KIB (1024L)
#define MIB (1024L * 1024L)

/* TAP-like output: a numbered ok / not ok line per check. */
struct tap {
	int run;
	int failed;
};

__attribute__((format(printf, 3, 4)))
bool tap_ok(struct tap *t, bool cond, const char *fmt, ...);
/* The plan line and a summary; the exit status: 1 if a check failed. */
int tap_done(const struct tap *t);
/* A size with an optional K, M or G suffix; -1 with errno EINVAL if it is not one. */
long long parse_size(const char *s);
double now_s(void);
/* Prints the usage; returns 2, the exit status of a wrong command line. */
int fscheck_usage(void);
/* splitmix64: both the random stream and the data pattern. */
uint64_t mix64(uint64_t x);
/* The bytes that write number op puts at file offset off (fscheck_random.c):
 * every write's data is its own, so a wrong byte tells which write it came
 * from. */
unsigned char pattern_byte(uint64_t seed, long op, off_t off);
void pattern_fill(unsigned char *buf, uint64_t seed, long op, off_t off, size_t len);

int cmd_random(int argc, char **argv);
int cmd_overwrite(int argc, char **argv);
int cmd_unlinked(int argc, char **argv);
int cmd_socket(int argc, char **argv);
int cmd_setuid(int argc, char **argv);

#endif
