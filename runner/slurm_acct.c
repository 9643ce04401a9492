#include "slurm_acct.h"

#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int slurm_config_accounting(const char *text)
{
	static const char key[] = "AccountingStorageType";

	for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		const char *p = line + sizeof key - 1;
		size_t n;

		if (strncmp(line, key, sizeof key - 1) != 0 || (*p != ' ' && *p != '='))
			continue;
		p += strspn(p, " ");
		if (*p++ != '=')
			continue;
		p += strspn(p, " ");
		n = strcspn(p, " \n");
		return !(n == 23 && strncmp(p, "accounting_storage/none", 23) == 0) && n > 0;
	}
	errno = ENOENT;
	return -1;
}

bool slurm_acct_disabled(const char *text)
{
	return strstr(text, "accounting storage is disabled") != NULL;
}

/* A whole decimal number in [s, s+n). */
static int number(const char *s, size_t n, int64_t *v)
{
	int64_t x = 0;

	if (n == 0 || n > 15)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		x = x * 10 + (s[i] - '0');
	}
	*v = x;
	return 0;
}

int slurm_acct_duration(const char *s, size_t n, int64_t *ms)
{
	const char *end = s + n, *dash = memchr(s, '-', n), *dot;
	int64_t days = 0, part[3] = { 0 }, frac = 0, v;
	size_t nparts = 0, fn;

	if (dash) {
		if (number(s, (size_t)(dash - s), &days) < 0)
			goto bad;
		s = dash + 1;
	}
	dot = memchr(s, '.', (size_t)(end - s));
	if (dot) {
		/* Milliseconds, as sacct writes them: three digits (fewer: tenths...). */
		fn = (size_t)(end - dot - 1);
		if (fn == 0 || fn > 3 || number(dot + 1, fn, &frac) < 0)
			goto bad;
		for (; fn < 3; fn++)
			frac *= 10;
		end = dot;
	}
	while (s < end) {
		const char *colon = memchr(s, ':', (size_t)(end - s));
		const char *stop = colon ? colon : end;

		if (nparts == 3 || number(s, (size_t)(stop - s), &v) < 0)
			goto bad;
		part[nparts++] = v;
		s = colon ? colon + 1 : end;
		if (colon && s == end)
			goto bad;
	}
	/* MM:SS or HH:MM:SS; a day count needs the hours. */
	if (nparts < 2 || (dash && nparts != 3))
		goto bad;
	v = nparts == 3 ? part[0] * 3600 + part[1] * 60 + part[2] : part[0] * 60 + part[1];
	*ms = (days * 86400 + v) * 1000 + frac;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int slurm_acct_size(const char *s, size_t n, int64_t *bytes)
{
	static const char units[] = "KMGTP";
	double mult = 1, v;
	char buf[32], *end;
	const char *u;

	if (n == 0) {
		*bytes = -1;
		return 0;
	}
	if (n >= sizeof buf || !isdigit((unsigned char)s[0]))
		goto bad;
	memcpy(buf, s, n);
	buf[n] = '\0';
	u = strchr(units, buf[n - 1]);
	if (buf[n - 1] && u) {
		for (const char *k = units; k <= u; k++)
			mult *= 1024;
		buf[n - 1] = '\0';
	}
	errno = 0;
	v = strtod(buf, &end);
	if (errno || *end || v < 0)
		goto bad;
	*bytes = (int64_t)(v * mult + 0.5);
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

static struct slurm_acct *record_of(struct slurm_acct **recs, size_t *n, size_t *cap, const char *id, size_t len)
{
	struct slurm_acct *a;

	if (len >= sizeof a->id)
		return NULL;
	for (size_t i = 0; i < *n; i++)
		if (strlen((*recs)[i].id) == len && memcmp((*recs)[i].id, id, len) == 0)
			return &(*recs)[i];
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*recs = xrealloc(*recs, *cap * sizeof **recs);
	}
	a = &(*recs)[(*n)++];
	*a = (struct slurm_acct){ .cancel_uid = -1, .cpu_ms = -1, .max_rss = -1 };
	memcpy(a->id, id, len);
	a->id[len] = '\0';
	return a;
}

/* One line: JobID|State|ExitCode|TotalCPU|MaxRSS. */
static int parse_line(const char *line, const char *end, struct slurm_acct **recs, size_t *n, size_t *cap,
		      char **err)
{
	const char *f[5], *p = line, *dot;
	size_t len[5], idlen;
	struct slurm_acct *a;
	bool step;
	int64_t v;

	for (int i = 0; i < 5; i++) {
		f[i] = slurm_field(&p, end, &len[i]);
		if (!f[i])
			return errprintf(err, "%d fields, want 5 (%s)", i, SLURM_SACCT_FORMAT);
	}
	dot = memchr(f[0], '.', len[0]);
	idlen = dot ? (size_t)(dot - f[0]) : len[0];
	step = dot != NULL;
	if (idlen == 0 || !isdigit((unsigned char)f[0][0]))
		return errprintf(err, "JobID '%.*s' unreadable", (int)len[0], f[0]);
	a = record_of(recs, n, cap, f[0], idlen);
	if (!a)
		return errprintf(err, "JobID '%.*s' too long", (int)len[0], f[0]);
	/* The peak of any step: the batch script's, or a step it ran. */
	if (slurm_acct_size(f[4], len[4], &v) < 0)
		return errprintf(err, "MaxRSS '%.*s' unreadable", (int)len[4], f[4]);
	if (v > a->max_rss)
		a->max_rss = v;
	if (step)
		return 0;
	{
		size_t sn = strcspn(f[1], " |\n");

		if (sn == 0 || sn >= sizeof a->state || sn > len[1])
			return errprintf(err, "State '%.*s' unreadable", (int)len[1], f[1]);
		memcpy(a->state, f[1], sn);
		a->state[sn] = '\0';
		if (len[1] > sn + 4 && strncmp(f[1] + sn, " by ", 4) == 0 &&
		    number(f[1] + sn + 4, len[1] - sn - 4, &v) == 0)
			a->cancel_uid = (long)v;
	}
	{
		const char *colon = memchr(f[2], ':', len[2]);
		int64_t code, sig;

		if (!colon || number(f[2], (size_t)(colon - f[2]), &code) < 0 ||
		    number(colon + 1, (size_t)(f[2] + len[2] - colon - 1), &sig) < 0 || code > 255 || sig > 255)
			return errprintf(err, "ExitCode '%.*s' unreadable", (int)len[2], f[2]);
		a->has_exit = true;
		a->exit_code = (int)code;
		a->exit_signal = (int)sig;
	}
	if (len[3] && slurm_acct_duration(f[3], len[3], &a->cpu_ms) < 0)
		return errprintf(err, "TotalCPU '%.*s' unreadable", (int)len[3], f[3]);
	return 0;
}

int slurm_acct_parse(const char *text, struct slurm_acct **out, size_t *n, char **err)
{
	struct slurm_acct *recs = NULL;
	size_t count = 0, cap = 0;
	int lineno = 0;
	char *why = NULL;

	*out = NULL;
	*n = 0;
	for (const char *p = text; *p;) {
		const char *eol = strchr(p, '\n');
		const char *end = eol ? eol : p + strlen(p);

		lineno++;
		if (end > p && strspn(p, " \t") < (size_t)(end - p) &&
		    parse_line(p, end, &recs, &count, &cap, &why) < 0) {
			errprintf(err, "sacct line %d: %s", lineno, why ? why : "unreadable");
			free(why);
			free(recs);
			errno = EINVAL;
			return -1;
		}
		p = eol ? eol + 1 : end;
	}
	*out = recs;
	*n = count;
	return 0;
}

const struct slurm_acct *slurm_acct_find(const struct slurm_acct *recs, size_t n, const char *id)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(recs[i].id, id) == 0)
			return &recs[i];
	return NULL;
}

bool slurm_acct_final(const struct slurm_acct *a)
{
	enum slurm_outcome o;

	return a->state[0] && slurm_state_outcome(a->state, &o) == 0 && o != SLURM_QUEUED && o != SLURM_RUNNING;
}
