/* Parsing ctl commands against a table (see ctl.h). */
#include "ctl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct ctl_command *entry_at(const struct ctl_table *t, size_t i)
{
	return (const struct ctl_command *)((const char *)t->entries + i * t->size);
}

void ctl_split(const char *command, struct ctl_line *line)
{
	char extra[8] = "";
	int n;

	memset(line, 0, sizeof *line);
	n = sscanf(command, "%31s %63s %7s", line->word, line->arg, extra);
	line->nwords = n > 0 ? n : 0;
}

const struct ctl_command *ctl_find(const struct ctl_table *t, const char *word)
{
	for (size_t i = 0; i < t->n; i++)
		if (strcmp(entry_at(t, i)->name, word) == 0)
			return entry_at(t, i);
	return NULL;
}

int ctl_arity_ok(const struct ctl_command *cmd, const struct ctl_line *line)
{
	return line->nwords == (cmd->arg ? 2 : 1);
}

char *ctl_list(const struct ctl_table *t, const char *last_sep)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		abort();
	for (size_t i = 0; i < t->n; i++) {
		const struct ctl_command *cmd = entry_at(t, i);

		fprintf(f, "%s%s%s%s", i == 0 ? "" : i + 1 == t->n ? last_sep : ", ", cmd->name,
			cmd->arg ? " " : "", cmd->arg ? cmd->arg : "");
	}
	fclose(f);
	return text;
}
