/* The learnt spin before sleeping on a reply: when it spins (while most
 * recent replies came within the limit and a CPU is free) and when not,
 * that spin 0 never spins, and that the poll answers like poll(2) for a
 * ready and an idle descriptor. */
#include "reply_spin.h"
#include "tap.h"

#include <stdint.h>
#include <sys/socket.h>
#include <sys/sysinfo.h>
#include <unistd.h>

TAP_STATE;

static void test_budget(void)
{
	struct reply_spin *s = reply_spin_create(100);
	int i;

	reply_spin_learn_load(s, 0);
	is_int(reply_spin_budget(s), 100, "a new mount on an idle host spins the whole limit");
	reply_spin_learn(s, 5000);
	reply_spin_learn(s, 5000);
	is_int(reply_spin_budget(s), 100, "a few slow replies among quick ones do not stop it");
	for (i = 0; i < 4; i++)
		reply_spin_learn(s, 5000);
	is_int(reply_spin_budget(s), 0, "mostly slow replies stop it");
	reply_spin_learn(s, INT64_MAX);
	is_int(reply_spin_budget(s), 0, "and it stays stopped while they are slow");
	reply_spin_learn(s, 30);
	is_int(reply_spin_budget(s), 0, "one quick reply is not enough");
	for (i = 0; i < 8; i++)
		reply_spin_learn(s, 30);
	is_int(reply_spin_budget(s), 100, "mostly quick replies start it again");
	for (i = 0; i < 100; i++)
		reply_spin_learn(s, i % 3 ? 40 : 400);
	is_int(reply_spin_budget(s), 100, "two quick replies in three: it spins");
	for (i = 0; i < 100; i++)
		reply_spin_learn(s, i % 3 ? 400 : 40);
	is_int(reply_spin_budget(s), 0, "one in three: it does not");
	reply_spin_destroy(s);
}

static void test_load(void)
{
	struct reply_spin *s = reply_spin_create(100);
	int cpus = get_nprocs(), i;

	is_int(reply_spin_budget(s), 0, "not before the runnable tasks were counted");
	reply_spin_learn_load(s, 0);
	is_int(reply_spin_budget(s), 100, "counted, on an idle host: it spins");
	for (i = 0; i < 60; i++)
		reply_spin_learn_load(s, cpus);
	is_int(reply_spin_budget(s), 0, "every CPU taken by other tasks: nobody spins");
	for (i = 0; i < 60; i++)
		reply_spin_learn_load(s, cpus + 1);
	reply_spin_learn_load(s, 0);
	is_int(reply_spin_budget(s), 0, "tasks waiting for a CPU: one idle moment is not enough");
	for (i = 0; i < 60; i++)
		reply_spin_learn_load(s, cpus - 1);
	is_int(reply_spin_budget(s), 100, "one CPU left free: it spins again");
	reply_spin_learn_load(s, -1);
	is_int(reply_spin_budget(s), 100, "a count that makes no sense is ignored");
	reply_spin_destroy(s);
}

static void test_off(void)
{
	struct reply_spin *s = reply_spin_create(0);

	is_int(reply_spin_budget(s), 0, "spin 0: no budget");
	reply_spin_learn(s, 5);
	is_int(reply_spin_budget(s), 0, "spin 0: nothing is learnt");
	reply_spin_destroy(s);
	is_int(reply_spin_budget(NULL), 0, "no spin at all: no budget");
}

static void test_poll(void)
{
	struct reply_spin *s = reply_spin_create(100);
	struct pollfd p;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
		ok(0, "socketpair");
		reply_spin_destroy(s);
		return;
	}
	p = (struct pollfd){ .fd = sv[0], .events = POLLIN };
	is_int(reply_spin_poll(s, &p, 0), 0, "nothing to read, no time: 0 as poll(2)");
	ok(write(sv[1], "x", 1) == 1, "the reply is written");
	p = (struct pollfd){ .fd = sv[0], .events = POLLIN };
	is_int(reply_spin_poll(s, &p, 1000), 1, "a waiting reply is seen");
	ok(p.revents & POLLIN, "as readable");
	p = (struct pollfd){ .fd = sv[0], .events = POLLIN };
	is_int(reply_spin_poll(NULL, &p, 0), 1, "without a spin it is plain poll(2)");
	close(sv[0]);
	close(sv[1]);
	reply_spin_destroy(s);
}

int main(void)
{
	test_budget();
	test_load();
	test_off();
	test_poll();
	return done_testing();
}
