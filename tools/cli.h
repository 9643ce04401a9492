/* The parsa command's shared pieces: the subcommand table entry, the exit codes
 * every subcommand uses, and the helpers that turn an internal error into the
 * one line a user reads on stderr. Only handlers (the CLI edge) print. */
#ifndef PARSA_CLI_H
#define PARSA_CLI_H

#include <stdio.h>

enum {
	CLI_OK = 0,        /* did what was asked */
	CLI_FAIL = 1,      /* could not: one line on stderr says why and what to do */
	CLI_USAGE = 2,     /* the command line was wrong */
	CLI_TIMEOUT = 124, /* `parsa wait --timeout` ran out (as timeout(1) does) */
};

struct cli_cmd;

/* argv[0] is "parsa NAME" (so getopt's own messages read well); returns an exit code. */
typedef int (*cli_handler)(const struct cli_cmd *self, int argc, char **argv);

struct cli_cmd {
	const char *name;
	cli_handler run;
	const char *args;    /* what follows the name in a usage line */
	const char *summary; /* one line for `parsa --help` */
	const char *help;    /* option lines for `parsa NAME --help` (may be NULL) */
};

/* Full help for one subcommand on out. */
void cli_help(const struct cli_cmd *cmd, FILE *out);

/* "parsa NAME: <message>" and the usage line on stderr; returns CLI_USAGE. */
int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

struct option;

/* The next option of a subcommand's command line (getopt_long over longopts,
 * which should hold "help" as 'h'; set optind = 1 and opterr = 0 first): the
 * option's value, 0 after the last one, or -1 with *rc the exit code once
 * --help was printed (CLI_OK) or an option was unknown or lacked its value
 * (CLI_USAGE, the message printed). */
int cli_next_option(const struct cli_cmd *cmd, int argc, char **argv,
		    const struct option *longopts, int *rc);

/* "parsa: <message>" on stderr; returns CLI_FAIL. */
int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Subcommand handlers, one file per family. */
int cmd_up(const struct cli_cmd *self, int argc, char **argv);       /* up.c */
int cmd_down(const struct cli_cmd *self, int argc, char **argv);     /* up.c */
int cmd_submit(const struct cli_cmd *self, int argc, char **argv);   /* jobs.c */
int cmd_check(const struct cli_cmd *self, int argc, char **argv);    /* jobs.c */
int cmd_status(const struct cli_cmd *self, int argc, char **argv);   /* jobs.c */
int cmd_cancel(const struct cli_cmd *self, int argc, char **argv);   /* jobs.c */
int cmd_ctl(const struct cli_cmd *self, int argc, char **argv);      /* jobs.c */
int cmd_wait(const struct cli_cmd *self, int argc, char **argv);     /* jobs.c */
int cmd_why(const struct cli_cmd *self, int argc, char **argv);      /* jobs.c */
int cmd_events(const struct cli_cmd *self, int argc, char **argv);   /* jobs.c */
int cmd_hosts(const struct cli_cmd *self, int argc, char **argv);    /* jobs.c */
int cmd_admin(const struct cli_cmd *self, int argc, char **argv);    /* admin.c */

#endif
