/* C-style escapes of user strings for text views (see escape.h). */
#include "escape.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Named escapes; every other control byte is \xNN. */
static const struct {
	unsigned char c;
	const char *text;
} named[] = {
	{ '\n', "\\n" }, { '\t', "\\t" }, { '\r', "\\r" }, { '\\', "\\\\" },
};

static bool is_control(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

/* The escape of c into buf (at least 5 bytes); NULL when c stays as it is. */
static const char *escape_of(unsigned char c, char *buf, size_t len)
{
	for (size_t i = 0; i < ARRAY_LEN(named); i++)
		if (named[i].c == c)
			return named[i].text;
	if (!is_control(c))
		return NULL;
	snprintf(buf, len, "\\x%02x", c);
	return buf;
}

const char *escape_find_control(const char *s, char *buf, size_t len)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (is_control(*p))
			return escape_of(*p, buf, len);
	return NULL;
}

bool escape_needed(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (is_control(*p) || *p == '\\')
			return true;
	return false;
}

char *escape_text(const char *s)
{
	/* At most four bytes for one: "\x1b". */
	char *out = xmalloc(strlen(s) * 4 + 1), *o = out, buf[8];

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		const char *e = escape_of(*p, buf, sizeof buf);

		if (e) {
			size_t n = strlen(e);

			memcpy(o, e, n);
			o += n;
		} else {
			*o++ = (char)*p;
		}
	}
	*o = '\0';
	return out;
}

int escape_check_file_name(const char *name, char **err)
{
	char buf[8], *shown;
	const char *found = escape_find_control(name, buf, sizeof buf);

	if (!found)
		return 0;
	shown = escape_text(name);
	errno = EINVAL;
	errprintf(err, "%s: the file name holds a control character (%s): rename it without one "
		  "(nothing was submitted)", shown, found);
	free(shown);
	errno = EINVAL;
	return -1;
}
