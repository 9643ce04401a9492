/* Space on the volume (sched/engine/space.c) as the placement pass sees it: with a
 * real local volume measured by its thread, requests whose disk does not fit
 * what is free minus what running stages and this pass reserved are refused
 * by the gate, the rest go on to the inner gate; a refusal holds no host. */
#include "backend.h"
#include "placement.h"
#include "space.h"
#include "tap.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TAP_STATE;

static int inner_allows, inner_blocked;

static int allow(void *arg, const struct placement_host *hosts, size_t h, const struct placement_req *req)
{
	(void)arg;
	(void)hosts;
	(void)h;
	(void)req;
	inner_allows++;
	return 1;
}

static void blocked(void *arg, const struct placement_host *hosts, size_t n, const struct placement_req *req)
{
	(void)arg;
	(void)hosts;
	(void)n;
	(void)req;
	inner_blocked++;
}

int main(void)
{
	char dir[] = "/tmp/parsa-test-space.XXXXXX";
	struct placement_gate inner = { .allow = allow, .blocked = blocked }, gate;
	struct placement_host host = { .name = "h" };
	struct placement_req req;
	uint64_t avail = 0, reserved = 0;
	struct backend *b;
	struct space *s;
	char *err = NULL;
	int known = -1;

	ok(mkdtemp(dir) != NULL, "a temporary volume");
	b = backend_local_create(dir, &err);
	ok(b != NULL, "local backend");

	/* No volume: everything fits. */
	s = space_create(NULL, 1000, NULL, NULL);
	space_begin_pass(s, 0);
	gate = space_gate(s, NULL);
	memset(&req, 0, sizeof req);
	req.disk = 1ull << 50;
	ok(gate.allow(gate.arg, &host, 0, &req), "without storage any disk fits");
	space_destroy(s);

	s = space_create(b, 50, NULL, NULL);
	ok(space_start(s, &err) == 0, "space thread starts");
	for (int i = 0; i < 200 && (known = space_free(s, &avail, &reserved)) < 0; i++)
		usleep(10000);
	ok(known == 0 && avail > (64u << 20), "the volume's free space is measured (%llu)",
	   (unsigned long long)avail);

	/* Leave 10 MiB unreserved. */
	space_begin_pass(s, avail - (10u << 20));
	gate = space_gate(s, &inner);
	req.group = 1;
	req.disk = 20u << 20;
	ok(!gate.allow(gate.arg, &host, 0, &req), "20 MiB does not fit in 10 MiB");
	is_int(inner_allows, 0, "the inner gate was not asked");
	gate.blocked(gate.arg, &host, 1, &req);
	is_int(inner_blocked, 0, "waiting for space is not passed on as blocked");
	req.group = 2;
	req.disk = 6u << 20;
	ok(gate.allow(gate.arg, &host, 0, &req), "6 MiB fits");
	is_int(inner_allows, 1, "and the inner gate was asked");
	gate.placed(gate.arg, &host, 0, &req);
	req.group = 3;
	ok(!gate.allow(gate.arg, &host, 0, &req), "a second 6 MiB does not: the first counts");
	req.group = 4;
	req.disk = 0;
	ok(gate.allow(gate.arg, &host, 0, &req), "a stage without disk always fits");
	gate.blocked(gate.arg, &host, 1, &req);
	is_int(inner_blocked, 1, "its blocks are passed on");
	space_destroy(s);
	backend_destroy(b);
	rmdir(dir);
	return done_testing();
}
