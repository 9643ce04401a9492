/* User-supplied strings (file names, job names, reasons, items, host names,
 * environment values) in "key: value" text: the one rule that keeps them from
 * starting a line or a field. Control characters (below 0x20, and DEL) and
 * the backslash become C escapes (\n, \t, \r, \\, \xNN), so a reader can tell
 * a value's own backslash from an escape and no value can forge a line. */
#ifndef PARSA_ESCAPE_H
#define PARSA_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

/* The first control character of s (as escape_text would write it: "\n",
 * "\x01"; into buf of at least 5 bytes), or NULL when s has none. For a
 * refusal that says what was found. */
const char *escape_find_control(const char *s, char *buf, size_t len);

/* Whether escape_text(s) would differ from s. */
bool escape_needed(const char *s);

/* s with every control character, DEL and backslash escaped. Malloc'ed. */
char *escape_text(const char *s);

/* A spec's file name must hold no control character: it is written into
 * views and logs. 0, or -1 with errno EINVAL and *err saying which one was
 * found and what to do. */
int escape_check_file_name(const char *name, char **err);

#endif
