/* The helpers every subcommand of parsa uses to speak to its user (cli.h):
 * the help of a command, a usage error, a failure in one line. */
#include "cli.h"

#include <ctype.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>

void cli_help(const struct cli_cmd *cmd, FILE *out)
{
	/* The summary is a lower-case phrase in the overview; here it opens a sentence. */
	fprintf(out, "usage: parsa %s%s%s\n\n%c%s.\n", cmd->name, *cmd->args ? " " : "", cmd->args,
		toupper((unsigned char)cmd->summary[0]), cmd->summary + 1);
	if (cmd->help)
		fprintf(out, "\n%s", cmd->help);
}

int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "parsa %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: parsa %s%s%s (see parsa %s --help)\n", cmd->name,
		*cmd->args ? " " : "", cmd->args, cmd->name);
	return CLI_USAGE;
}

int cli_fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "parsa: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CLI_FAIL;
}

int cli_next_option(const struct cli_cmd *cmd, int argc, char **argv,
		    const struct option *longopts, int *rc)
{
	int c;

	c = getopt_long(argc, argv, "h", longopts, NULL);
	switch (c) {
	case -1:
		return 0;
	case 'h':
		cli_help(cmd, stdout);
		*rc = CLI_OK;
		return -1;
	case '?':
	case ':':
		*rc = cli_usage_error(cmd, "unknown option or missing value: '%s'", argv[optind - 1]);
		return -1;
	default:
		return c;
	}
}
