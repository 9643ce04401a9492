/* Handing out cores and GPUs: distinct while free ones exist, then the least
 * shared; among free ones the least busy; GPUs never shared; what a
 * reattached instance held is held again. */
#include "cores.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>

TAP_STATE;

static void test_share(void)
{
	int ids[] = { 0, 1, 2, 3 }, a[4], b[4], c[4], d[4];
	struct cores *c4 = cores_create(ids, 4, true);

	is_int(cores_total(c4), 4, "four cores");
	is_int(cores_take(c4, 2, a), 2, "an instance of 2 cores");
	ok(a[0] == 0 && a[1] == 1, "gets 0 and 1 (the lowest when all are alike)");
	is_int(cores_take(c4, 1, b), 1, "an instance of 1");
	is_int(b[0], 2, "gets a free one, 2");
	is_int(cores_take(c4, 2, c), 2, "another of 2, with one core free");
	ok(c[0] == 0 && c[1] == 3, "gets the free 3 and then the least shared (0): %d,%d", c[0], c[1]);
	is_int(cores_free(c4), 0, "nothing free");
	cores_release(c4, a, 2);
	is_int(cores_free(c4), 1, "the first one's end frees 1 (0 is still the third's)");
	is_int(cores_take(c4, 1, d), 1, "the next of 1");
	is_int(d[0], 1, "gets the free core");
	is_int(cores_take(c4, 9, a), 4, "more than the host has: every core");
	cores_destroy(c4);
}

static void test_busy(void)
{
	int ids[] = { 0, 1, 2 }, out[3];
	double busy[] = { 0.9, 0.0, 0.5 };
	struct cores *c = cores_create(ids, 3, true);

	cores_set_busy(c, ids, busy, 3);
	is_int(cores_take(c, 1, out), 1, "one core on a host where 0 is busy outside parsa");
	is_int(out[0], 1, "gets the idle core 1");
	is_int(cores_take(c, 1, out), 1, "the next");
	is_int(out[0], 2, "gets the half-busy 2 before the busy 0");
	cores_destroy(c);
}

static void test_exclusive(void)
{
	int ids[] = { 0, 1 }, a[2], b[2], held[] = { 1 };
	struct cores *g = cores_create(ids, 2, false);

	is_int(cores_take(g, 1, a), 1, "a GPU");
	is_int(cores_take(g, 1, b), 1, "another");
	ok(a[0] != b[0], "distinct devices (%d, %d)", a[0], b[0]);
	errno = 0;
	is_int(cores_take(g, 1, b), -1, "a third finds none free");
	is_int(errno, EBUSY, "EBUSY");
	cores_release(g, a, 1);
	cores_release(g, held, 1);
	is_int(cores_free(g), 2, "both back");
	cores_hold(g, held, 1);
	is_int(cores_take(g, 2, a), -1, "a reattached instance's GPU stays held: two are not free");
	is_int(cores_take(g, 1, a), 1, "one is");
	is_int(a[0], 0, "the other one");
	cores_destroy(g);
}

int main(void)
{
	test_share();
	test_busy();
	test_exclusive();
	return done_testing();
}
