/* Names in a spec: what a stage or variable name may be, and the known name
 * nearest to a mistyped one, for the "(did you mean 'cpus'?)" of messages. */
#include "spec_internal.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

/* Case-insensitive Levenshtein distance; b is a short candidate. */
size_t spec_edit_distance(const char *a, const char *b)
{
	size_t row[STAGE_NAME_MAX + 2];
	size_t bl = strlen(b), al = strlen(a);

	if (bl > STAGE_NAME_MAX)
		return (size_t)-1;
	if (al > bl + 8)
		return al - bl; /* too far apart to be a typo; skip the work */
	for (size_t j = 0; j <= bl; j++)
		row[j] = j;
	for (size_t i = 1; i <= al; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= bl; j++) {
			size_t up = row[j];
			size_t cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
			size_t best = diag + cost;

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[bl];
}

/* The candidate nearest to word, if it is close enough to be a typo. */
const char *spec_nearest(const char *word, const char *const *cands, size_t n)
{
	const char *best = NULL;
	size_t best_d = (size_t)-1;

	for (size_t i = 0; i < n; i++) {
		size_t d = spec_edit_distance(word, cands[i]);
		size_t limit = strlen(cands[i]) <= 3 ? 1 : 2;

		/* A word cut short ("prio") is as good as a typo. */
		if (strlen(word) >= 3 && strlen(word) < strlen(cands[i]) &&
		    strncasecmp(word, cands[i], strlen(word)) == 0)
			d = 1;
		if (d <= limit && d < strlen(cands[i]) && d < best_d) {
			best = cands[i];
			best_d = d;
		}
	}
	return best;
}

bool spec_is_identifier(const char *s)
{
	if (!isalpha((unsigned char)*s) && *s != '_')
		return false;
	for (s++; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_')
			return false;
	return true;
}

bool spec_is_stage_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > STAGE_NAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("_.-", *s))
			return false;
	return true;
}
