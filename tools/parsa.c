/* parsa: the command line of the parsa scheduler. main() looks the subcommand
 * up in a static table and hands it the rest of the command line; each handler
 * returns the exit code (cli.h). Everything it does can also be done through
 * the mount's files; this is a convenience. */
#include "cli.h"
#include "log.h"
#include "util.h"
#include "version.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmd_version(const struct cli_cmd *self, int argc, char **argv);
static int cmd_help(const struct cli_cmd *self, int argc, char **argv);

#define SCHED_HELP \
	"  --sched ENDPOINT    the scheduler: HOST:PORT (TCP, munge), unix:/path or\n" \
	"                      http://host:port (default: $PARSA_SCHED, else [cluster] sched\n" \
	"                      of parsa.conf, else the local socket)\n"

static const struct cli_cmd commands[] = {
	{ "up", cmd_up,
	  "[--mount DIR] [--state DIR] [--storage DIR|URL] [--detach] [--cpus N] [--mem SIZE] [--scratch-size SIZE] [--cpu-limit PCT] [--mem-limit PCT] [--name HOST] [--web HOST:PORT|off]",
	  "start the scheduler, the mount and the runner on this machine",
	  "  --mount DIR         where the file system appears (default /parsa as root, ~/parsa otherwise)\n"
	  "  --state DIR         the scheduler's database, sockets and logs (default /var/lib/parsa\n"
	  "                      as root, ${XDG_STATE_HOME:-~/.local/state}/parsa otherwise)\n"
	  "  --storage DIR|URL   the job folders: a folder (default STATE/storage) or\n"
	  "                      nfs://server/export[/folder] (shared NFS storage)\n"
	  "  --detach            return once the mount is ready; stop it later with `parsa down`\n"
	  "  --cpus N, --mem SIZE, --scratch-size SIZE\n"
	  "                      what the runner offers (default: detected)\n"
	  "  --cpu-limit PCT, --mem-limit PCT\n"
	  "                      no new instances while live use is at or above PCT (default 90;\n"
	  "                      100 disables)\n"
	  "  --name HOST         the host's name (default: the host name)\n"
	  "  --web HOST:PORT     the read-only web page and /metrics (default 127.0.0.1:0: this\n"
	  "                      machine only, a free port; the banner and STATE/up.json say\n"
	  "                      which); off: none\n"
	  "\nIn the foreground, Ctrl-C (or SIGTERM) stops everything and unmounts.\n"
	  "Logs: STATE/logs/{sched,fs,runner}.log (and up.log with --detach).\n" },
	{ "down", cmd_down, "[--mount DIR] [--state DIR]",
	  "stop what `parsa up` started on a mount",
	  "  --mount DIR         the mount to stop (default /parsa as root, ~/parsa otherwise)\n"
	  "  --state DIR         find it by its state folder instead\n" },
	{ "submit", cmd_submit, "[--sched ENDPOINT] [--name NAME] FILE",
	  "submit a job spec (FILE, or - for standard input); prints the job id",
	  SCHED_HELP
	  "  --name NAME         the spec's file name as the scheduler sees it (default: FILE's)\n" },
	{ "check", cmd_check, "[--name NAME] FILE...",
	  "check specs offline with the scheduler's parser",
	  "  --name NAME         the name used in messages (default: FILE's)\n" },
	{ "status", cmd_status, "[--sched ENDPOINT] [--json] [--stage S] [ID]",
	  "the cluster at a glance, or one job's status",
	  SCHED_HELP
	  "  --json              status.json of job ID (without ID: the list of jobs)\n"
	  "  --stage S           the status of stage S of job ID\n"
	  "\nID is a job number, or 'last' for your newest job.\n" },
	{ "cancel", cmd_cancel, "[--sched ENDPOINT] ID",
	  "cancel a job (its running instances get SIGTERM, then SIGKILL)",
	  SCHED_HELP },
	{ "ctl", cmd_ctl, "[--sched ENDPOINT] ID COMMAND...",
	  "send a control command: cancel, hold, release, retry, priority N, purge, keep, unkeep",
	  SCHED_HELP },
	{ "wait", cmd_wait, "[--sched ENDPOINT] [--stage S] [--timeout DURATION] ID",
	  "wait until a job (or one stage) ends and print its final state",
	  SCHED_HELP
	  "  --stage S           wait for stage S only\n"
	  "  --timeout DURATION  give up after DURATION (30, 90s, 5m, 1h): exit 124\n"
	  "\nExit status: 0 succeeded, 1 failed or cancelled (or an error), 124 timed out.\n" },
	{ "why", cmd_why, "[--sched ENDPOINT] ID",
	  "why a job is not running yet, host by host",
	  SCHED_HELP },
	{ "events", cmd_events, "[--sched ENDPOINT] ID",
	  "the timestamped history of a job",
	  SCHED_HELP },
	{ "hosts", cmd_hosts, "[--sched ENDPOINT] [--json] [NAME]",
	  "the hosts: capacity, reserved, live use; or one host's status",
	  SCHED_HELP
	  "  --json              the hosts as JSON\n" },
	{ "jobs", cmd_jobs, "[--sched ENDPOINT] [--all | --user U] [--team T] [--state S] [--since D] [--json]",
	  "list jobs like squeue (default: your unfinished ones and those ended in the last day)",
	  SCHED_HELP
	  "  --all               everybody's jobs (default: yours)\n"
	  "  --user U, --team T  only U's jobs, only team T's\n"
	  "  --state S           queued, running, succeeded, failed or cancelled\n"
	  "  --since D           submitted since D: a duration back from now (1d, 12h) or a\n"
	  "                      date (2026-12-01, 2026-12-01T08:00)\n"
	  "  --json              the scheduler's answer as JSON\n" },
	{ "list", cmd_jobs, "[--sched ENDPOINT] [--all | --user U] [--team T] [--state S] [--since D] [--json]",
	  "the same as parsa jobs", "  See parsa jobs --help.\n" },
	{ "history", cmd_history,
	  "[--sched ENDPOINT] [--all | --user U] [--team T] [--since D] [--until D] [--state S] [--json | --csv]",
	  "finished jobs like sacct: waits, run times, cpu-hours, peak memory",
	  SCHED_HELP
	  "  --all               everybody's jobs (default: yours)\n"
	  "  --user U, --team T  only U's jobs, only team T's\n"
	  "  --since D, --until D  submitted in [D, D): durations back from now (30d) or dates\n"
	  "  --state S           succeeded, failed or cancelled\n"
	  "  --json, --csv       machine-readable output\n"
	  "\ncpu-hours are the CPU time the runners measured for each instance's processes;\n"
	  "peak memory is the largest instance's peak resident size.\n" },
	{ "usage", cmd_usage, "[--sched ENDPOINT] [--by team|user] [--since D] [--csv | --json]",
	  "cpu-hours, jobs and waits per team or user (as the web page's /usage)",
	  SCHED_HELP
	  "  --by team|user      group by team (default) or by user\n"
	  "  --since D           since D: a duration back from now (default 30d) or a date\n"
	  "  --csv, --json       machine-readable output\n" },
	{ "admin", cmd_admin, "[--state DIR] backup|restore FILE",
	  "an operator's backup or restore of a scheduler's database",
	  "  backup FILE         copy the database of the (running) scheduler to FILE: sqlite's\n"
	  "                      online backup, one snapshot with every job acknowledged before it\n"
	  "  restore FILE        put the copy FILE in place of STATE/parsa.db; the scheduler must\n"
	  "                      be stopped; the replaced database is kept as parsa.db.before-restore\n"
	  "  --state DIR         the scheduler's state folder (default /var/lib/parsa as root,\n"
	  "                      ${XDG_STATE_HOME:-~/.local/state}/parsa otherwise)\n"
	  "\nBoth need read and write access to the state folder (root, or the scheduler's user).\n" },
	{ "version", cmd_version, "", "print parsa's version", NULL },
	{ "help", cmd_help, "[COMMAND]", "help on a command", NULL },
};

static void overview(FILE *out)
{
	fprintf(out, "usage: parsa COMMAND [OPTIONS] [ARGS]\n\n"
		     "A cluster job scheduler with a file system interface.\n\n");
	for (size_t i = 0; i < ARRAY_LEN(commands); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out, "\nparsa COMMAND --help tells more. Exit status: 0 ok, 1 failure, 2 usage.\n");
}

static const struct cli_cmd *find_command(const char *name)
{
	for (size_t i = 0; i < ARRAY_LEN(commands); i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static int cmd_version(const struct cli_cmd *self, int argc, char **argv)
{
	(void)argv;
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		cli_help(self, stdout);
		return CLI_OK;
	}
	if (argc > 1)
		return cli_usage_error(self, "takes no arguments");
	printf("parsa %s\n", PARSA_VERSION);
	return CLI_OK;
}

static int cmd_help(const struct cli_cmd *self, int argc, char **argv)
{
	const struct cli_cmd *cmd;

	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		overview(stdout);
		return CLI_OK;
	}
	if (argc > 2)
		return cli_usage_error(self, "one command at a time");
	cmd = find_command(argv[1]);
	if (!cmd)
		return cli_usage_error(self, "no command '%s'", argv[1]);
	cli_help(cmd, stdout);
	return CLI_OK;
}

int main(int argc, char **argv)
{
	const struct cli_cmd *cmd;
	char *argv0;
	int rc;

	log_init("parsa", 1, LOG_LEVEL_INFO);
	if (argc < 2) {
		overview(stderr);
		return CLI_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		overview(stdout);
		return CLI_OK;
	}
	if (strcmp(argv[1], "--version") == 0)
		return cmd_version(find_command("version"), 1, argv + 1);
	cmd = find_command(argv[1]);
	if (!cmd) {
		fprintf(stderr, "parsa: no command '%s' (parsa --help lists them)\n", argv[1]);
		return CLI_USAGE;
	}
	/* Handlers see argv[0] = "parsa NAME" so that getopt-style messages read well. */
	argv0 = xasprintf("parsa %s", cmd->name);
	argv[1] = argv0;
	rc = cmd->run(cmd, argc - 1, argv + 1);
	free(argv0);
	return rc;
}
