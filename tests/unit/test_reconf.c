/* sched/reconf.c: what `parsa-sched -n` finds wrong, naming the file's line
 * or the flag, and what a reload on SIGHUP reports and hands the engine:
 * live changes, changes that need a restart, flags that win over the file. */
#include "reconf.h"
#include "tap.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

static char *dir;

static void parse(const char *text, struct parsa_conf *c)
{
	char *err = NULL;

	if (parsa_conf_parse(text, strlen(text), "x.conf", c, &err) < 0) {
		diag("cannot parse: %s", err);
		abort();
	}
}

/* The report of -n on text with flags; its number of problems in *n. */
static char *check_text(const char *text, const struct sched_flags *flags, int *n)
{
	struct parsa_conf c;
	struct sched_settings s;
	char *report = NULL;

	parse(text, &c);
	reconf_settings(flags, &c, &s);
	*n = reconf_check(&s, &report);
	reconf_settings_clear(&s);
	parsa_conf_free(&c);
	return report;
}

static void test_check(void)
{
	char *state = xasprintf("%s/state", dir), *file = xasprintf("%s/file", dir);
	struct sched_flags flags = { .state_dir = state };
	char *text, *report;
	FILE *f;
	int n;

	report = check_text("[web]\nlisten = 127.0.0.1:0\n", &flags, &n);
	is_int(n, 0, "a good file and a folder to be made: no problem (%s)", report);
	free(report);

	text = xasprintf("[cluster]\nadmin_group = parsa-no-such-group\nstorage = http://nas/x\n"
			 "[sched]\nlisten = 127.0.0.1\n[web]\nlisten = 127.0.0.1:www\n");
	report = check_text(text, &flags, &n);
	is_int(n, 4, "four problems, each reported");
	ok(strstr(report, "x.conf:5: [sched] listen = 127.0.0.1: expected HOST:PORT"),
	   "listen without a port: file, line, the fix");
	ok(strstr(report, "x.conf:7: [web] listen = 127.0.0.1:www: ") &&
	   strstr(report, "or off for no web page"), "a web port that is not a number");
	ok(strstr(report, "x.conf:3: [cluster] storage = http://nas/x: not a volume"), "a volume of another kind");
	ok(strstr(report, "x.conf:2: [cluster] admin_group = parsa-no-such-group: admin group "
		  "'parsa-no-such-group' does not exist on this host (groupadd parsa-no-such-group)"),
	   "an admin group that does not exist");
	free(report);
	free(text);

	/* The state folder under a file: the flag is named, not the file. */
	f = fopen(file, "w");
	fclose(f);
	free(state);
	flags.state_dir = state = xasprintf("%s/state", file);
	flags.storage_url = dir;
	report = check_text("[sched]\nstate = /elsewhere\n", &flags, &n);
	is_int(n, 1, "one problem");
	ok(report && strncmp(report, "--state ", 8) == 0 && strstr(report, "Not a directory"),
	   "a state folder that cannot be made names the flag: %s", report);
	free(report);

	/* A database that is not a file. */
	free(state);
	flags.state_dir = state = xasprintf("%s/state2", dir);
	mkdir(state, 0755);
	text = xasprintf("%s/parsa.db", state);
	mkdir(text, 0755);
	report = check_text("", &flags, &n);
	ok(n == 1 && strstr(report, "parsa.db is not a file"), "a database that is a folder: %s", report);
	rmdir(text);
	rmdir(state);
	free(text);
	free(report);
	free(state);
	free(file);
}

/* The log lines of a reload from old_text to new_text, and what it hands
 * the engine. */
static char *diff_text(const char *old_text, const char *new_text, const struct sched_flags *flags,
		       struct engine_live *live, int *limit_of_bob)
{
	struct parsa_conf a, b;
	struct sched_settings old, fresh;
	char *lines, *err = NULL;

	parse(old_text, &a);
	parse(new_text, &b);
	reconf_settings(flags, &a, &old);
	reconf_settings(flags, &b, &fresh);
	lines = reconf_diff(&old, &fresh, live, &err);
	ok(lines != NULL, "compared (%s)", err ? err : "");
	ok(live->conf == &b, "the engine gets the new file's [teams] and [limits]");
	*limit_of_bob = 0;
	for (size_t i = 0; i < b.nlimits; i++)
		if (b.limits[i].name && strcmp(b.limits[i].name, "bob") == 0)
			*limit_of_bob = (int)b.limits[i].value;
	live->conf = NULL;
	reconf_settings_clear(&old);
	reconf_settings_clear(&fresh);
	parsa_conf_free(&a);
	parsa_conf_free(&b);
	free(err);
	return lines;
}

static void test_diff(void)
{
	static const char before[] =
		"[sched]\nlisten = :7070\nhost_timeout = 10s\nlease = 30s\n"
		"[teams]\nalice = arch\ncarol = x\n"
		"[limits]\nqueued_jobs = 10\nuser.bob.queued_jobs = 3\nteam.arch.queued_instances = 5\n";
	static const char after[] =
		"[sched]\nlisten = :7071\nhost_timeout = 20s\nlease = 1m\ndefer_bursts = no\n"
		"[teams]\nalice = arch, vlsi\n@staff = ops\n"
		"[limits]\nqueued_jobs = 10\nuser.bob.queued_jobs = 4\ninstances_per_job = 50\n";
	struct sched_flags flags = { .state_dir = dir };
	struct engine_live live;
	char *lines;
	int bob;

	lines = diff_text(before, after, &flags, &live, &bob);
	ok(strstr(lines, "[sched] listen: :7070 -> :7071 needs a restart (the scheduler goes on with :7070)\n"),
	   "listen needs a restart");
	ok(strstr(lines, "[sched] host_timeout: 10s -> 20s\n"), "host_timeout changes live");
	ok(strstr(lines, "[sched] lease: 30s -> 1m needs a restart"), "lease needs a restart");
	ok(strstr(lines, "[sched] defer_bursts: yes -> no\n"), "defer_bursts");
	ok(strstr(lines, "[teams] alice: arch -> arch, vlsi\n"), "a grant that changed");
	ok(strstr(lines, "[teams] @staff = ops (new)\n"), "a new group grant");
	ok(strstr(lines, "[teams] carol removed\n"), "a grant removed");
	ok(strstr(lines, "[limits] user.bob.queued_jobs: 3 -> 4\n"), "a limit that changed");
	ok(strstr(lines, "[limits] instances_per_job = 50 (new)\n"), "a new limit");
	ok(strstr(lines, "[limits] team.arch.queued_instances = 5 removed\n"), "a limit removed");
	ok(!strstr(lines, "queued_jobs: 10"), "an unchanged limit is not named");
	is_int(live.host_timeout_ms, 20000, "the engine gets the new host_timeout");
	ok(live.start_bursts_at_once, "and defer_bursts = no");
	is_int(bob, 4, "and bob's new limit");
	free(lines);

	lines = diff_text(before, before, &flags, &live, &bob);
	is_str(lines, "", "the same file: nothing changed");
	free(lines);

	/* A flag wins: the file's new host_timeout is not applied nor reported. */
	flags.durations.host_timeout_ms = 5000;
	lines = diff_text(before, after, &flags, &live, &bob);
	ok(!strstr(lines, "host_timeout"), "a value given as a flag stays");
	is_int(live.host_timeout_ms, 5000, "the engine keeps the flag's host_timeout");
	free(lines);
}

static void test_lines(void)
{
	struct parsa_conf c;

	parse("# comment\n[sched]\n\nlisten = :1\n[web]\nlisten = off\n", &c);
	is_int(parsa_conf_line(&c, "sched", "listen"), 4, "[sched] listen's line");
	is_int(parsa_conf_line(&c, "web", "listen"), 6, "[web] listen's line");
	is_int(parsa_conf_line(&c, "sched", "state"), 0, "a key not set: 0");
	parsa_conf_free(&c);
}

int main(void)
{
	char tmpl[] = "/tmp/parsa-test-reconf.XXXXXX";
	char *cmd;

	dir = mkdtemp(tmpl);
	if (!dir)
		return 1;
	test_lines();
	test_check();
	test_diff();
	cmd = xasprintf("rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("cannot remove %s", dir);
	free(cmd);
	return done_testing();
}
