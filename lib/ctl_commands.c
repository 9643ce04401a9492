/* The ctl files' command tables and their parser (see ctl_commands.h). */
#include "ctl_commands.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct ctl_command job_commands[] = {
	[CTL_JOB_CANCEL] = { "cancel", NULL },
	[CTL_JOB_HOLD] = { "hold", NULL },
	[CTL_JOB_RELEASE] = { "release", NULL },
	[CTL_JOB_RETRY] = { "retry", NULL },
	[CTL_JOB_PRIORITY] = { "priority", "N" },
	[CTL_JOB_PURGE] = { "purge", NULL },
	[CTL_JOB_KEEP] = { "keep", NULL },
	[CTL_JOB_UNKEEP] = { "unkeep", NULL },
};
static const struct ctl_command host_commands[] = {
	[CTL_HOST_DRAIN] = { "drain", NULL },
	[CTL_HOST_RESUME] = { "resume", NULL },
	[CTL_HOST_REMOVE] = { "remove", NULL },
};
static const struct ctl_command schedule_commands[] = {
	[CTL_SCHEDULE_PAUSE] = { "pause", NULL },
	[CTL_SCHEDULE_RESUME] = { "resume", NULL },
	[CTL_SCHEDULE_RUN_NOW] = { "run-now", NULL },
};

/* A command added to an enum but not to its table (or the reverse) fails here. */
_Static_assert(ARRAY_LEN(job_commands) == CTL_JOB_COMMANDS, "job commands");
_Static_assert(ARRAY_LEN(host_commands) == CTL_HOST_COMMANDS, "host commands");
_Static_assert(ARRAY_LEN(schedule_commands) == CTL_SCHEDULE_COMMANDS, "schedule commands");

const struct ctl_table ctl_job_table = { job_commands, ARRAY_LEN(job_commands) };
const struct ctl_table ctl_host_table = { host_commands, ARRAY_LEN(host_commands) };
const struct ctl_table ctl_schedule_table = { schedule_commands, ARRAY_LEN(schedule_commands) };

void ctl_split(const char *command, struct ctl_line *line)
{
	char extra[8] = "";
	int n;

	memset(line, 0, sizeof *line);
	n = sscanf(command, "%31s %63s %7s", line->word, line->arg, extra);
	line->nwords = n > 0 ? n : 0;
}

int ctl_find(const struct ctl_table *t, const char *word)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(t->entries[i].name, word) == 0)
			return (int)i;
	return -1;
}

int ctl_arity_ok(const struct ctl_command *cmd, const struct ctl_line *line)
{
	return line->nwords == (cmd->arg ? 2 : 1);
}

/* The commands of t, each as "name" or "name ARG", after prefix, joined by
 * sep and the last by last_sep, then suffix. Malloc'ed. */
static char *join(const struct ctl_table *t, const char *prefix, const char *sep,
		  const char *last_sep, const char *suffix)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		abort();
	fputs(prefix, f);
	for (size_t i = 0; i < t->n; i++) {
		const struct ctl_command *cmd = &t->entries[i];

		fprintf(f, "%s%s%s%s", i == 0 ? "" : i + 1 == t->n ? last_sep : sep, cmd->name,
			cmd->arg ? " " : "", cmd->arg ? cmd->arg : "");
	}
	fputs(suffix, f);
	fclose(f);
	return text;
}

char *ctl_list(const struct ctl_table *t, const char *last_sep)
{
	return join(t, "", ", ", last_sep, "");
}

char *ctl_help(const struct ctl_table *t)
{
	return join(t, "commands: ", " | ", " | ", "\n");
}
