/* The ctl files' command tables and their parser (lib/ctl_commands.h): a
 * line split into words; each command found at its enum's index and taking
 * the argument its table says; the lists the scheduler's errors show and the
 * help a read of a ctl file shows, for the three tables; and the scheduler's
 * checks (jobs, hosts, schedules) accepting exactly their table's commands, so
 * that what the mount shows is what the scheduler takes. */
#include "ctl_commands.h"
#include "engine.h"
#include "schedules.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

TAP_STATE;

static void split(void)
{
	struct ctl_line line;

	ctl_split("  priority   10 \n", &line);
	ok(line.nwords == 2 && strcmp(line.word, "priority") == 0 && strcmp(line.arg, "10") == 0,
	   "blanks around and between the words do not count");
	ctl_split("", &line);
	is_int(line.nwords, 0, "an empty line has no word");
	ctl_split("cancel now please", &line);
	is_int(line.nwords, 3, "a third word counts (as too many)");
	ctl_split("averyveryveryveryveryverylongwordindeed", &line);
	is_int((int)strlen(line.word), 31, "a word is cut at 31 bytes, not overflowed");
}

static void find_and_arity(void)
{
	struct ctl_line line;

	is_int(ctl_find(&ctl_job_table, "cancel"), CTL_JOB_CANCEL, "cancel at its index");
	is_int(ctl_find(&ctl_job_table, "priority"), CTL_JOB_PRIORITY, "priority at its index");
	is_int(ctl_find(&ctl_job_table, "unkeep"), CTL_JOB_UNKEEP, "unkeep at its index");
	is_int(ctl_find(&ctl_host_table, "remove"), CTL_HOST_REMOVE, "remove at its index");
	is_int(ctl_find(&ctl_schedule_table, "run-now"), CTL_SCHEDULE_RUN_NOW, "run-now at its index");
	is_int(ctl_find(&ctl_job_table, "drain"), -1, "a host's command is not a job's");
	is_int(ctl_find(&ctl_job_table, "Cancel"), -1, "names are case-sensitive");
	is_int(ctl_find(&ctl_job_table, ""), -1, "no empty name");
	ctl_split("priority 5", &line);
	ok(ctl_arity_ok(&ctl_job_table.entries[CTL_JOB_PRIORITY], &line), "priority takes N");
	ctl_split("priority", &line);
	ok(!ctl_arity_ok(&ctl_job_table.entries[CTL_JOB_PRIORITY], &line), "and needs it");
	ctl_split("hold 5", &line);
	ok(!ctl_arity_ok(&ctl_job_table.entries[CTL_JOB_HOLD], &line), "hold takes nothing");
}

static void texts(void)
{
	char *s;

	s = ctl_help(&ctl_job_table);
	is_str(s, "commands: cancel | hold | release | retry | priority N | purge | keep | unkeep\n",
	       "a job's ctl shows its commands (as docs/filesystem.md does)");
	free(s);
	s = ctl_help(&ctl_host_table);
	is_str(s, "commands: drain | resume | remove\n", "a host's");
	free(s);
	s = ctl_help(&ctl_schedule_table);
	is_str(s, "commands: pause | resume | run-now\n", "a schedule's");
	free(s);
	s = ctl_list(&ctl_job_table, ", ");
	is_str(s, "cancel, hold, release, retry, priority N, purge, keep, unkeep", "the errors' list");
	free(s);
	s = ctl_list(&ctl_schedule_table, " or ");
	is_str(s, "pause, resume or run-now", "with its own last separator");
	free(s);
}

/* check accepts every command of t (with an argument where it takes one) and
 * nothing else that is near. */
static void scheduler_takes(const char *what, const struct ctl_table *t,
			    int (*check)(const char *command, char **err))
{
	char line[96], *err = NULL;

	for (size_t i = 0; i < t->n; i++) {
		snprintf(line, sizeof line, "%s%s", t->entries[i].name, t->entries[i].arg ? " 7" : "");
		is_int(check(line, &err), 0, "the scheduler takes %s's '%s'", what, line);
		free(err);
		err = NULL;
	}
	ok(check("dance", &err) < 0 && err && strstr(err, t->entries[t->n - 1].name),
	   "and refuses another, listing the table (%s)", err ? err : "no error text");
	free(err);
}

int main(void)
{
	split();
	find_and_arity();
	texts();
	scheduler_takes("a job", &ctl_job_table, engine_ctl_check);
	scheduler_takes("a host", &ctl_host_table, engine_host_ctl_check);
	scheduler_takes("a schedule", &ctl_schedule_table, schedules_ctl_check);
	return done_testing();
}
