/* What the spec parser's tests share: parse a text as a named file, and
 * check that it is refused with one error line, or accepted. */
#ifndef PARSA_TEST_SPEC_CHECK_H
#define PARSA_TEST_SPEC_CHECK_H

#include "spec.h"
#include "tap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The smallest stage a spec needs, for tests about the rest of it. */
#define STAGE_OK "[stage s]\nrun = true\n"

static inline struct spec *parse_as(const char *text, const char *file, char **err)
{
	return spec_parse(text, strlen(text), file, err);
}

/* Does err hold want as one whole line? */
static inline bool has_line(const char *err, const char *want)
{
	size_t n = strlen(want);

	for (const char *p = err; p && (p = strstr(p, want)); p++)
		if ((p == err || p[-1] == '\n') && (p[n] == '\0' || p[n] == '\n'))
			return true;
	return false;
}

static inline size_t count_lines(const char *s)
{
	size_t n = s && *s ? 1 : 0;

	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

/* text must be refused with EINVAL and with want among the error lines. */
static inline void expect_error(const char *text, const char *want)
{
	char *err = NULL;
	struct spec *spec;

	errno = 0;
	spec = parse_as(text, "t.conf", &err);
	ok(!spec && errno == EINVAL && err && has_line(err, want), "error: %s", want);
	if (!has_line(err, want))
		diag("got: %s", err ? err : "(null)");
	spec_destroy(spec);
	free(err);
}

static inline struct spec *expect_ok(const char *text, const char *what)
{
	char *err = NULL;
	struct spec *spec = parse_as(text, "t.conf", &err);

	ok(spec != NULL, "parses: %s", what);
	if (!spec)
		diag("got: %s", err ? err : "(null)");
	free(err);
	return spec;
}

#endif
