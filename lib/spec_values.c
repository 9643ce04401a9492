/* The value parsers the spec's keys share: whole numbers, lists, sizes and
 * windows, each reporting a bad value with the fix, and the hint added when a
 * value looks like a layout mistake. */
#include "spec_internal.h"
#include "timewin.h"
#include "units.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Extra words for a value error, when the value looks like a layout mistake. */
const char *spec_value_hint(const struct entry *e, const char *value)
{
	if (e->ncont > 0 && strchr(value, '='))
		return " (the indented line below it continues this value: start keys at the beginning of a line)";
	if (strstr(value, " #") || strstr(value, "\t#"))
		return " (comments after a value start with ' ;', not '#')";
	return "";
}

/* A whole decimal number in [min, max]: 0, or -1 if it is not one. */
int spec_parse_int(const char *s, long long min, long long max, long long *out)
{
	bool neg = false;
	long long v = 0;

	if (*s == '-') {
		neg = true;
		s++;
	}
	if (!isdigit((unsigned char)*s))
		return -1;
	for (; isdigit((unsigned char)*s); s++) {
		if (v > (INT64_MAX - (*s - '0')) / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	if (*s != '\0')
		return -1;
	if (neg)
		v = -v;
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* max_failed = N or P%: 0, or -1 if it is neither. */
int spec_parse_max_failed(const char *s, long long *n, bool *pct)
{
	size_t len = strlen(s);
	char whole[24];

	if (len > 1 && len < sizeof whole && s[len - 1] == '%') {
		memcpy(whole, s, len - 1);
		whole[len - 1] = '\0';
		*pct = true;
		return spec_parse_int(whole, 0, 100, n);
	}
	*pct = false;
	return spec_parse_int(s, 0, SPEC_MAX_INSTANCES, n);
}

/* Split a list on commas and white space; empty items are skipped. */
char **spec_split_list(const char *value, size_t *n)
{
	char **items = NULL;
	size_t count = 0, cap = 0;
	const char *s = value;

	for (;;) {
		size_t len;

		while (*s == ',' || isspace((unsigned char)*s))
			s++;
		if (*s == '\0')
			break;
		len = strcspn(s, ", \t\r\n\v\f");
		if (count == cap) {
			cap = cap ? 2 * cap : 4;
			items = xrealloc(items, cap * sizeof *items);
		}
		items[count] = xmalloc(len + 1);
		memcpy(items[count], s, len);
		items[count][len] = '\0';
		count++;
		s += len;
	}
	*n = count;
	return items;
}

void spec_free_list(char **items, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(items[i]);
	free(items);
}

void spec_set_size(struct parser *p, const struct entry *e, const char *v, uint64_t *out)
{
	char cut[SHOWN_MAX + 4];
	uint64_t bytes;

	if (parse_size(v, &bytes) < 0) {
		if (errno == ERANGE)
			spec_report(p, e->line, "%s = %s: too large (the limit is 8191P)", e->key, spec_shown(v, cut));
		else
			spec_report(p, e->line, "%s = %s: not a size; write a number with an optional unit "
			            "K, M, G, T or P, e.g. 512M, 32G, 1.5T%s", e->key, spec_shown(v, cut), spec_value_hint(e, v));
		return;
	}
	if (bytes > VALUE_MAX) {
		spec_report(p, e->line, "%s = %s: too large (the limit is 8191P)", e->key, spec_shown(v, cut));
		return;
	}
	*out = bytes;
}

/* window = WHEN, of a stage or of the whole job (lib/timewin.h). */
void spec_set_window(struct parser *p, const struct entry *e, const char *v, char **text,
		     struct timewin **win)
{
	char cut[SHOWN_MAX + 4], *why = NULL;
	struct timewin *w = timewin_parse(v, &why);

	if (!w) {
		spec_report(p, e->line, "window = %s: %s%s", spec_shown(v, cut), why ? why : "not a window",
		            spec_value_hint(e, v));
		free(why);
		return;
	}
	timewin_destroy(*win);
	free(*text);
	*win = w;
	*text = xstrdup(timewin_text(w));
}
