#include "cores.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct unit {
	int id;
	int users;      /* instances holding it */
	double busy;    /* 0..1, from the host's per-core CPU figures */
};

struct cores {
	struct unit *units;   /* ascending by id */
	size_t n;
	bool share;
};

static int by_id(const void *a, const void *b)
{
	const struct unit *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

/* Busy in steps of 5%: finer differences are noise between two samples,
 * and whole steps keep the order below a consistent one for qsort. */
static int busy_step(const struct unit *u)
{
	return (int)(u->busy * 20.0 + 0.5);
}

/* The order units are given in: the least held, then the least busy, then
 * the lowest id. */
static int by_preference(const void *a, const void *b)
{
	const struct unit *x = *(const struct unit *const *)a, *y = *(const struct unit *const *)b;

	if (x->users != y->users)
		return x->users - y->users;
	if (busy_step(x) != busy_step(y))
		return busy_step(x) - busy_step(y);
	return (x->id > y->id) - (x->id < y->id);
}

static int ints_ascending(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

struct cores *cores_create(const int *ids, size_t n, bool share)
{
	struct cores *c = xcalloc(1, sizeof *c);

	c->units = xcalloc(n + 1, sizeof *c->units);
	c->share = share;
	for (size_t i = 0; i < n; i++) {
		bool seen = false;

		for (size_t j = 0; j < c->n && !seen; j++)
			seen = c->units[j].id == ids[i];
		if (!seen && ids[i] >= 0)
			c->units[c->n++].id = ids[i];
	}
	qsort(c->units, c->n, sizeof *c->units, by_id);
	return c;
}

void cores_destroy(struct cores *c)
{
	if (!c)
		return;
	free(c->units);
	free(c);
}

size_t cores_total(const struct cores *c)
{
	return c->n;
}

size_t cores_free(const struct cores *c)
{
	size_t n = 0;

	for (size_t i = 0; i < c->n; i++)
		n += c->units[i].users == 0;
	return n;
}

static struct unit *find(struct cores *c, int id)
{
	struct unit key = { .id = id };

	return bsearch(&key, c->units, c->n, sizeof *c->units, by_id);
}

void cores_set_busy(struct cores *c, const int *ids, const double *busy, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct unit *u = find(c, ids[i]);

		if (u)
			u->busy = busy[i] < 0 ? 0 : busy[i] > 1 ? 1 : busy[i];
	}
}

int cores_take(struct cores *c, int want, int *out)
{
	struct unit **order;
	size_t n;

	if (want <= 0)
		return 0;
	if (!c->share && (size_t)want > cores_free(c)) {
		errno = EBUSY;
		return -1;
	}
	n = (size_t)want < c->n ? (size_t)want : c->n;
	order = xcalloc(c->n + 1, sizeof *order);
	for (size_t i = 0; i < c->n; i++)
		order[i] = &c->units[i];
	qsort(order, c->n, sizeof *order, by_preference);
	for (size_t i = 0; i < n; i++) {
		order[i]->users++;
		out[i] = order[i]->id;
	}
	free(order);
	qsort(out, n, sizeof *out, ints_ascending);
	return (int)n;
}

void cores_hold(struct cores *c, const int *ids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct unit *u = find(c, ids[i]);

		if (u)
			u->users++;
	}
}

void cores_release(struct cores *c, const int *ids, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct unit *u = find(c, ids[i]);

		if (u && u->users > 0)
			u->users--;
	}
}
