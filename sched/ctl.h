/* The commands of a ctl file (jobs/<id>/ctl, hosts/<h>/ctl, schedules/<s>/ctl):
 * a word and at most one argument, looked up in a module's static table of
 * {struct ctl_command, handler}. One parser for the three tables, and every
 * list of valid commands a user reads (the engine's, the schedules' and the
 * API's messages) made from the table itself, so that what is accepted and
 * what is listed cannot drift apart. */
#ifndef PARSA_CTL_H
#define PARSA_CTL_H

#include "util.h"

#include <stddef.h>

/* The first member of each entry of a command table. */
struct ctl_command {
	const char *name;
	const char *arg;          /* its argument as the list shows it ("N"); NULL: none */
};

/* A module's table: n entries of size bytes, each starting with a struct
 * ctl_command. CTL_TABLE(array) describes a static array of them. */
struct ctl_table {
	const void *entries;
	size_t n, size;
};
#define CTL_TABLE(array) { (array), ARRAY_LEN(array), sizeof (array)[0] }

/* A command line split into its words. */
struct ctl_line {
	char word[32];
	char arg[64];
	int nwords;               /* 0 to 3 (a third word only counts as too many) */
};

void ctl_split(const char *command, struct ctl_line *line);
/* The entry named word (cast it to the table's entry type), or NULL. */
const struct ctl_command *ctl_find(const struct ctl_table *t, const char *word);
/* Whether line has the words cmd takes: its name, and its argument if any. */
int ctl_arity_ok(const struct ctl_command *cmd, const struct ctl_line *line);
/* The commands, with their arguments, as "cancel, hold, priority N" joined
 * by ", " and the last by last_sep (", " or " or "). Malloc'ed. */
char *ctl_list(const struct ctl_table *t, const char *last_sep);

#endif
