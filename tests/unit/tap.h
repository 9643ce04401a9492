/* A minimal TAP producer for the unit tests: ok(), is_int(), is_str(), then
 * done_testing() prints the plan and returns the exit status for main. */
#ifndef PARSA_TAP_H
#define PARSA_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct tap_state {
	int run;
	int failed;
};

/* Each test binary defines exactly one of these in its main file via TAP_STATE. */
extern struct tap_state tap;
#define TAP_STATE struct tap_state tap

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define is_int(got, want, ...) do { \
	long long g_ = (long long)(got), w_ = (long long)(want); \
	if (!tap_ok(g_ == w_, __FILE__, __LINE__, __VA_ARGS__)) \
		printf("#   got %lld, want %lld\n", g_, w_); \
	} while (0)
#define is_str(got, want, ...) do { \
	const char *g_ = (got), *w_ = (want); \
	int same_ = (g_ && w_) ? strcmp(g_, w_) == 0 : g_ == w_; \
	if (!tap_ok(same_, __FILE__, __LINE__, __VA_ARGS__)) \
		printf("#   got \"%s\"\n#  want \"%s\"\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
	} while (0)
#define diag(...) do { printf("# "); printf(__VA_ARGS__); printf("\n"); } while (0)

__attribute__((format(printf, 4, 5)))
static inline int tap_ok(int cond, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	tap.run++;
	if (!cond)
		tap.failed++;
	printf("%s %d - ", cond ? "ok" : "not ok", tap.run);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		printf("#   failed at %s:%d\n", file, line);
	fflush(stdout);
	return cond;
}

static inline int done_testing(void)
{
	printf("1..%d\n", tap.run);
	if (tap.failed)
		printf("# %d of %d failed\n", tap.failed, tap.run);
	return tap.failed ? 1 : 0;
}

#endif
