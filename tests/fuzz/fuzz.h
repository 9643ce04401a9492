/* What the harnesses share: the input as a C string (the parsers of one
 * value take those), and a harness run in UTC, so that a clock change cannot
 * move a minute under its checks. */
#ifndef PARSA_FUZZ_H
#define PARSA_FUZZ_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* data and a NUL (malloc'ed); a NUL inside ends the string early, as it
 * would for any C caller. */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);

	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	return text;
}

/* A parser's refusal keeps its promise: errno EINVAL and a message (freed). */
static inline void fuzz_refused(char *err)
{
	if (errno != EINVAL || !err || !*err)
		abort();
	free(err);
}

/* Defines LLVMFuzzerInitialize (libFuzzer's, and replay.c's) to set TZ:
 * UTC, or $PARSA_FUZZ_TZ to try a zone with clock changes by hand. */
#define FUZZ_IN_UTC \
	int LLVMFuzzerInitialize(int *argc, char ***argv) \
	{ \
		const char *zone = getenv("PARSA_FUZZ_TZ"); \
		(void)argc; \
		(void)argv; \
		setenv("TZ", zone && *zone ? zone : "UTC", 1); \
		tzset(); \
		return 0; \
	}

#endif
