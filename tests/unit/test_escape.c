/* The escaping of user strings in text views and the refusal of spec file
 * names with control characters (lib/escape.h). */
#include "escape.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

TAP_STATE;

static const struct {
	const char *in, *out;
} cases[] = {
	{ "plain.conf", "plain.conf" },
	{ "", "" },
	{ "x\nstate: failed\nowner: alice.conf", "x\\nstate: failed\\nowner: alice.conf" },
	{ "tab\there", "tab\\there" },
	{ "cr\r", "cr\\r" },
	{ "back\\slash", "back\\\\slash" },
	{ "esc\x1b[31m", "esc\\x1b[31m" },
	{ "del\x7f", "del\\x7f" },
	{ "\x01\x1f", "\\x01\\x1f" },
	{ "caf\xc3\xa9 ok", "caf\xc3\xa9 ok" },   /* UTF-8 stays */
};

int main(void)
{
	char buf[8], *err = NULL;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *e = escape_text(cases[i].in);

		is_str(e, cases[i].out, "escape_text of case %zu", i);
		ok(!strchr(e, '\n') && !strchr(e, '\r'), "case %zu: no line break left", i);
		is_int(escape_needed(cases[i].in), strcmp(cases[i].in, cases[i].out) != 0,
		       "escape_needed agrees for case %zu", i);
		free(e);
	}
	ok(escape_find_control("fine name.conf", buf, sizeof buf) == NULL, "no control character");
	ok(escape_find_control("back\\slash", buf, sizeof buf) == NULL, "a backslash is no control character");
	is_str(escape_find_control("a\nb", buf, sizeof buf), "\\n", "a newline is found as \\n");
	is_str(escape_find_control("a\x02", buf, sizeof buf), "\\x02", "other bytes as \\xNN");

	is_int(escape_check_file_name("ok.conf", &err), 0, "a plain file name passes");
	ok(err == NULL, "and says nothing");
	errno = 0;
	is_int(escape_check_file_name("x\nstate: failed", &err), -1, "a newline is refused");
	is_int(errno, EINVAL, "with EINVAL");
	ok(err && strstr(err, "x\\nstate: failed: the file name holds a control character (\\n)"),
	   "naming the file escaped and what was found: %s", err ? err : "(null)");
	ok(err && !strchr(err, '\n'), "the reason itself is one line");
	free(err);
	return done_testing();
}
