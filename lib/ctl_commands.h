/* The commands of the mount's ctl files (jobs/<id>/ctl, hosts/<h>/ctl,
 * schedules/<name>/ctl), one table each, for both sides of the API: the
 * scheduler parses a command against its table and dispatches on the entry's
 * index (enum ctl_*_command) to handlers of its own, and lists the table in its
 * errors; the mount shows the same table when a ctl file is read. What is
 * accepted, what an error lists and what a user reads cannot drift apart. */
#ifndef PARSA_CTL_COMMANDS_H
#define PARSA_CTL_COMMANDS_H

#include <stddef.h>

struct ctl_command {
	const char *name;
	const char *arg;          /* its argument as the lists show it ("N"); NULL: none */
};

struct ctl_table {
	const struct ctl_command *entries;
	size_t n;
};

/* The index of each command in its table: a dispatcher's array of handlers
 * is indexed by these, sized by the last. */
enum ctl_job_command {
	CTL_JOB_CANCEL, CTL_JOB_HOLD, CTL_JOB_RELEASE, CTL_JOB_RETRY, CTL_JOB_PRIORITY,
	CTL_JOB_PURGE, CTL_JOB_KEEP, CTL_JOB_UNKEEP, CTL_JOB_COMMANDS
};
enum ctl_host_command { CTL_HOST_DRAIN, CTL_HOST_RESUME, CTL_HOST_REMOVE, CTL_HOST_COMMANDS };
enum ctl_schedule_command {
	CTL_SCHEDULE_PAUSE, CTL_SCHEDULE_RESUME, CTL_SCHEDULE_RUN_NOW, CTL_SCHEDULE_COMMANDS
};

extern const struct ctl_table ctl_job_table, ctl_host_table, ctl_schedule_table;

/* A command line split into its words. */
struct ctl_line {
	char word[32];
	char arg[64];
	int nwords;               /* 0 to 3 (a third word only counts as too many) */
};

void ctl_split(const char *command, struct ctl_line *line);
/* The index in t of the command named word, or -1. */
int ctl_find(const struct ctl_table *t, const char *word);
/* Whether line has the words cmd takes: its name, and its argument if any. */
int ctl_arity_ok(const struct ctl_command *cmd, const struct ctl_line *line);
/* The commands, with their arguments, as "cancel, hold, priority N" joined
 * by ", " and the last by last_sep (", " or " or "). Malloc'ed. */
char *ctl_list(const struct ctl_table *t, const char *last_sep);
/* What reading a ctl file shows: "commands: cancel | hold | priority N\n".
 * Malloc'ed. */
char *ctl_help(const struct ctl_table *t);

#endif
