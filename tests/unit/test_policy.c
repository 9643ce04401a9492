/* [teams] and [limits] of parsa.conf (lib/config.c) as the scheduler's
 * checks (sched/policy/policy.h): which teams a user may name, which limit applies
 * to whom, and that a refusal names the limit and where it is set. */
#include "config.h"
#include "ident.h"
#include "policy.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

static char *dir;

static int load(const char *text, struct parsa_conf *c, char **err)
{
	char *path = xasprintf("%s/parsa.conf", dir);
	FILE *f = fopen(path, "w");
	int rc;

	fputs(text, f);
	fclose(f);
	chmod(path, 0644);
	rc = parsa_conf_load(path, 0, c, err);
	free(path);
	return rc;
}

static void test_config_errors(void)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "[limits]\nqueued_job = 5\n", "parsa.conf:2: [limits] unknown limit 'queued_job'" },
		{ "[limits]\nqueued_jobs = 0\n", "queued_jobs = 0: expected a number from 1" },
		{ "[limits]\nqueued_jobs = lots\n", "expected a number" },
		{ "[limits]\nuser.queued_jobs = 3\n", "want user.NAME.KIND" },
		{ "[limits]\nteam.a b.queued_jobs = 3\n", "want team.NAME.KIND" },
		{ "[teams]\nalice =\n", "give the teams it may use" },
		{ "[teams]\nal!ce = arch\n", "want a user name, or @ and a group name" },
		{ "[teams]\nalice = ar ch\n", "'ar ch' is not a name" },
	};
	struct parsa_conf c;

	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		char *err = NULL;

		is_int(load(bad[i].text, &c, &err), -1, "refused: %s", bad[i].want);
		ok(err && strstr(err, bad[i].want), "says: %s", err ? err : "(null)");
		free(err);
	}
}

static void test_teams(void)
{
	char *mine = ident_group_name(getgid()), *text, *err = NULL;
	struct caller who = { .uid = 4242, .gid = getgid() };
	struct parsa_conf c;
	struct policy *p;

	text = xasprintf("[teams]\nalice = arch, vlsi\n@%s = teaching\nbob = other\n", mine);
	is_int(load(text, &c, &err), 0, "[teams] loads");
	is_int(c.ngrants, 3, "three grants");
	p = policy_create(&c);
	parsa_conf_free(&c);
	is_int(policy_check_team(p, &who, "alice", false, mine, "s.conf", 2, &err), 0,
	       "one's own group is always allowed");
	is_int(policy_check_team(p, &who, "alice", false, "vlsi", "s.conf", 2, &err), 0,
	       "a team [teams] maps the user to");
	is_int(policy_check_team(p, &who, "alice", false, "teaching", "s.conf", 2, &err), 0,
	       "a team mapped to a group of theirs (@group)");
	is_int(policy_check_team(p, &who, "carol", false, "teaching", "s.conf", 2, &err), 0,
	       "@group applies to any member");
	errno = 0;
	is_int(policy_check_team(p, &who, "carol", false, "arch", "s.conf", 2, &err), -1,
	       "another user's team is refused");
	is_int(errno, EACCES, "EACCES");
	ok(err && strstr(err, "s.conf:2: team = arch: carol may use the teams "), "the spec's line: %s",
	   err ? err : "(null)");
	ok(err && strstr(err, mine) && strstr(err, "teaching") && !strstr(err, "vlsi") &&
	   !strstr(err, "other"), "lists exactly the teams carol may use");
	free(err);
	err = NULL;
	is_int(policy_check_team(p, &who, "carol", true, "root", "s.conf", 2, &err), 0,
	       "root and the admin group may use any team");
	policy_destroy(p);

	p = policy_create(NULL);
	is_int(policy_check_team(p, &who, "alice", false, "vlsi", "s.conf", 3, &err), -1,
	       "without [teams] only one's groups");
	ok(err && strstr(err, "[teams] of " PARSA_CONF_DEFAULT), "says where to grant more: %s",
	   err ? err : "(null)");
	free(err);
	policy_destroy(p);
	free(text);
	free(mine);
}

static void test_limits(void)
{
	struct policy_usage none = { 0 }, nine = { .jobs = 9, .instances = 90 };
	struct parsa_conf c;
	struct policy *p;
	char *err = NULL;

	p = policy_create(NULL);
	is_int(policy_check_limits(p, "alice", false, "arch", POLICY_DEFAULT_INSTANCES_PER_JOB,
				   POLICY_DEFAULT_INSTANCES_PER_JOB, true, &none, &none, "s.conf", &err), 0,
	       "the built-in instances_per_job is allowed");
	errno = 0;
	is_int(policy_check_limits(p, "alice", false, "arch", POLICY_DEFAULT_INSTANCES_PER_JOB + 1,
				   POLICY_DEFAULT_INSTANCES_PER_JOB + 1, true, &none, &none, "s.conf", &err),
	       -1, "one more is refused");
	is_int(errno, EDQUOT, "EDQUOT");
	ok(err && strstr(err, "instances_per_job = 100000 (the built-in default; set instances_per_job "
			 "or user.alice.instances_per_job in [limits] of"), "names the default: %s",
	   err ? err : "(null)");
	free(err);
	err = NULL;
	is_int(policy_check_limits(p, "root", true, "arch", POLICY_DEFAULT_INSTANCES_PER_JOB + 1,
				   POLICY_DEFAULT_INSTANCES_PER_JOB + 1, true, &none, &none, "s.conf", &err),
	       0, "root has no default limits");
	policy_destroy(p);

	is_int(load("[limits]\nqueued_jobs = 10\ninstances_per_job = 50\nuser.alice.queued_jobs = 20\n"
		    "team.arch.queued_instances = 100\nuser.bob.instances_per_job = 5\n"
		    "user.root.queued_jobs = 3\n", &c, &err), 0,
	       "[limits] loads");
	is_int(c.nlimits, 6, "six limits");
	p = policy_create(&c);
	parsa_conf_free(&c);
	is_int(policy_check_limits(p, "carol", false, "x", 1, 1, true, &nine, &none, "s.conf", &err), 0,
	       "the tenth job of a user is allowed");
	nine.jobs = 10;
	is_int(policy_check_limits(p, "carol", false, "x", 1, 1, true, &nine, &none, "s.conf", &err), -1,
	       "the eleventh is refused by the default");
	ok(err && strstr(err, "user carol has 10 unfinished jobs, and queued_jobs = 10 (queued_jobs in "
			 "[limits] of ") && strstr(err, "parsa.conf:2)"), "with the line: %s",
	   err ? err : "(null)");
	free(err);
	err = NULL;
	is_int(policy_check_limits(p, "carol", false, "x", 1, 0, false, &nine, &none, "s.conf", &err), 0,
	       "a foreach expansion is no new job");
	is_int(policy_check_limits(p, "alice", false, "x", 1, 1, true, &nine, &none, "s.conf", &err), 0,
	       "user.alice.queued_jobs overrides the default");
	is_int(policy_check_limits(p, "bob", false, "x", 6, 6, true, &none, &none, "s.conf", &err), -1,
	       "user.bob.instances_per_job = 5 refuses 6");
	ok(err && strstr(err, "user.bob.instances_per_job in [limits] of ") && strstr(err, "parsa.conf:6"),
	   "where it is set: %s", err ? err : "(null)");
	free(err);
	err = NULL;
	is_int(policy_check_limits(p, "carol", false, "arch", 50, 50, true, &none,
				   &(struct policy_usage){ .jobs = 1, .instances = 60 }, "s.conf", &err), -1,
	       "a team's queued_instances counts all its users");
	ok(err && strstr(err, "team arch 110 unfinished, more than queued_instances = 100 "
			 "(team.arch.queued_instances"), "names the team's line: %s", err ? err : "(null)");
	free(err);
	err = NULL;
	is_int(policy_check_limits(p, "carol", false, "other", 50, 50, true, &none,
				   &(struct policy_usage){ .jobs = 500, .instances = 5000000 }, "s.conf", &err),
	       0, "a team without lines of its own has no limit");
	nine.jobs = 3;
	is_int(policy_check_limits(p, "root", true, "x", 1, 1, true, &nine, &none, "s.conf", &err), -1,
	       "a user.root. line applies to root");
	ok(err && strstr(err, "user.root.queued_jobs"), "and is named: %s", err ? err : "(null)");
	free(err);
	err = NULL;
	is_int(policy_check_limits(p, "root", true, "x", 60, 60, true, &none, &none, "s.conf", &err), 0,
	       "but root has no default instances_per_job");
	is_int(policy_check_limits(p, "root", true, "arch", 150, 150, true, &none, &none, "s.conf", &err), -1,
	       "its team's lines still apply");
	free(err);
	policy_destroy(p);
}

int main(void)
{
	char tmpl[] = "/tmp/test_policy.XXXXXX";

	dir = mkdtemp(tmpl);
	test_config_errors();
	test_teams();
	test_limits();
	{
		char *cmd = xasprintf("rm -rf %s", dir);

		if (system(cmd) != 0)
			diag("cannot remove %s", dir);
		free(cmd);
	}
	return done_testing();
}
