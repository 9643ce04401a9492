#include "cpulist.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The end of a list: its NUL, or a last newline. */
static int at_end(const char *p)
{
	return *p == '\0' || (*p == '\n' && p[1] == '\0');
}

/* One item of a list at *pp: N or N-M. Hand-written rather than strtol so
 * that it is async-signal-safe (no locale). 1 with *lo, *hi and *pp past it
 * and its comma, 0 at the end, -1 when it is not an item. */
static int next_item(const char **pp, int *lo, int *hi)
{
	const char *p = *pp;
	long v[2] = { 0, 0 };
	int n = 0;

	while (*p == ' ' || *p == '\t')
		p++;
	if (at_end(p))
		return 0;
	for (;;) {
		if (*p < '0' || *p > '9')
			return -1;
		for (v[n] = 0; *p >= '0' && *p <= '9'; p++) {
			v[n] = v[n] * 10 + (*p - '0');
			if (v[n] > CPULIST_MAX_ID)
				return -1;
		}
		if (n == 0 && *p == '-') {
			p++;
			n = 1;
			continue;
		}
		break;
	}
	if (n == 0)
		v[1] = v[0];
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == ',') {
		p++;
		/* "0," ends nothing: an item must follow a comma. */
		while (*p == ' ' || *p == '\t')
			p++;
		if (at_end(p))
			return -1;
	} else if (!at_end(p)) {
		return -1;
	}
	if (v[1] < v[0])
		return -1;
	*lo = (int)v[0];
	*hi = (int)v[1];
	*pp = p;
	return 1;
}

int cpulist_to_set(const char *text, cpu_set_t *set)
{
	const char *p = text;
	int lo, hi, rc;

	CPU_ZERO(set);
	while ((rc = next_item(&p, &lo, &hi)) > 0)
		for (int i = lo; i <= hi; i++)
			CPU_SET(i, set);
	if (rc < 0) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int cpulist_parse(const char *text, int *ids, size_t max)
{
	cpu_set_t set;
	size_t n = 0;

	/* Through a set: ascending order and no repeats whatever the text. */
	if (cpulist_to_set(text, &set) < 0)
		return -1;
	for (int i = 0; i <= CPULIST_MAX_ID; i++) {
		if (!CPU_ISSET(i, &set))
			continue;
		if (n == max) {
			errno = E2BIG;
			return -1;
		}
		ids[n++] = i;
	}
	return (int)n;
}

int cpulist_format(const int *ids, size_t n, bool ranges, char *buf, size_t len)
{
	cpu_set_t set;
	size_t used = 0;

	if (len == 0) {
		errno = ENOSPC;
		return -1;
	}
	buf[0] = '\0';
	CPU_ZERO(&set);
	for (size_t i = 0; i < n; i++)
		if (ids[i] >= 0 && ids[i] <= CPULIST_MAX_ID)
			CPU_SET(ids[i], &set);
	for (int i = 0; i <= CPULIST_MAX_ID; i++) {
		int end = i, w;

		if (!CPU_ISSET(i, &set))
			continue;
		while (ranges && end < CPULIST_MAX_ID && CPU_ISSET(end + 1, &set))
			end++;
		if (end > i)
			w = snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", i, end);
		else
			w = snprintf(buf + used, len - used, "%s%d", used ? "," : "", i);
		if (w < 0 || (size_t)w >= len - used) {
			buf[0] = '\0';
			errno = ENOSPC;
			return -1;
		}
		used += (size_t)w;
		i = end;
	}
	return (int)used;
}
