#include "fairshare.h"

#include "units.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct team {
	char *name;
	double usage;       /* cpu-seconds, decayed to as_of_ms */
	int64_t as_of_ms;
	double running;     /* cpu-seconds of instances running now, this pass */
};

struct fairshare {
	int64_t half_life_ms;
	struct team *teams;  /* a lab has a handful of teams: a plain array */
	size_t n, cap;
};

struct fairshare *fairshare_create(int64_t half_life_ms)
{
	struct fairshare *f = xcalloc(1, sizeof *f);

	f->half_life_ms = half_life_ms > 0 ? half_life_ms : FAIRSHARE_HALF_LIFE_MS;
	return f;
}

void fairshare_destroy(struct fairshare *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n; i++)
		free(f->teams[i].name);
	free(f->teams);
	free(f);
}

int64_t fairshare_half_life_ms(const struct fairshare *f)
{
	return f->half_life_ms;
}

static struct team *team(struct fairshare *f, const char *name, int create)
{
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->teams[i].name, name) == 0)
			return &f->teams[i];
	if (!create)
		return NULL;
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 8;
		f->teams = xrealloc(f->teams, f->cap * sizeof *f->teams);
	}
	memset(&f->teams[f->n], 0, sizeof f->teams[f->n]);
	f->teams[f->n].name = xstrdup(name);
	return &f->teams[f->n++];
}

/* 2^(-dt/half-life): how much of what was used dt ago still counts. */
static double decay(const struct fairshare *f, int64_t dt_ms)
{
	return exp2(-(double)dt_ms / (double)f->half_life_ms);
}

static double usage_at(const struct fairshare *f, const struct team *t, int64_t now_ms)
{
	return t->usage * decay(f, now_ms - t->as_of_ms);
}

void fairshare_charge(struct fairshare *f, const char *name, double cpu_seconds, int64_t at_ms)
{
	struct team *t = team(f, name, 1);

	if (!(cpu_seconds > 0))
		return;
	if (t->as_of_ms == 0) {
		t->usage = cpu_seconds;
		t->as_of_ms = at_ms;
	} else if (at_ms >= t->as_of_ms) {
		t->usage = usage_at(f, t, at_ms) + cpu_seconds;
		t->as_of_ms = at_ms;
	} else {
		/* Charged out of order (at start, from the database): decay the
		 * newcomer to the team's reference time instead. */
		t->usage += cpu_seconds * decay(f, t->as_of_ms - at_ms);
	}
}

void fairshare_clear_running(struct fairshare *f)
{
	for (size_t i = 0; i < f->n; i++)
		f->teams[i].running = 0;
}

void fairshare_add_running(struct fairshare *f, const char *name, double cpu_seconds)
{
	if (cpu_seconds > 0)
		team(f, name, 1)->running += cpu_seconds;
}

double fairshare_usage(struct fairshare *f, const char *name, int64_t now_ms)
{
	struct team *t = team(f, name, 0);

	return t ? usage_at(f, t, now_ms) + t->running : 0;
}

static int by_usage(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

char *fairshare_text(struct fairshare *f, int64_t now_ms)
{
	/* Pairs of (usage, index) sorted by usage. */
	double *order = xcalloc(2 * (f->n + 1), sizeof *order);
	char half[32], *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	if (!out)
		abort();
	format_duration((uint64_t)(f->half_life_ms / 1000), half, sizeof half);
	fprintf(out, "fair share: usage in cpu-seconds, half-life %s; the least used team goes first\n",
		half);
	for (size_t i = 0; i < f->n; i++) {
		order[2 * i] = usage_at(f, &f->teams[i], now_ms) + f->teams[i].running;
		order[2 * i + 1] = (double)i;
	}
	qsort(order, f->n, 2 * sizeof *order, by_usage);
	for (size_t i = 0; i < f->n; i++) {
		const struct team *t = &f->teams[(size_t)order[2 * i + 1]];

		fprintf(out, "team %s: usage %.0f cpu-s (%.0f running)\n", t->name, order[2 * i],
			t->running);
	}
	fclose(out);
	free(order);
	return text;
}
