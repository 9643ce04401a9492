/* The subcommands that talk about jobs and hosts: submit, check, status,
 * cancel, ctl, wait, why, events, hosts. Each is a thin edge over client.c:
 * parse the command line, make one or a few API calls, print the answer, and
 * turn a failure into one line on stderr and an exit code. */
#include "api_answers.h"
#include "api_paths.h"
#include "api_requests.h"
#include "cli.h"
#include "client.h"
#include "spec.h"
#include "units.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A request that answers at once (submit: CLIENT_SUBMIT_*, client.h). */
#define CALL_TIMEOUT_MS 10000L
/* parsa wait long-polls in slices so that a restarted scheduler is noticed. */
#define WAIT_SLICE_MS 10000L
/* ...and keeps retrying an unreachable scheduler this long (a restart). */
#define WAIT_RECONNECT_MS 20000L

enum {
	OPT_SCHED = 1 << 0,
	OPT_JSON = 1 << 1,
	OPT_STAGE = 1 << 2,
	OPT_TIMEOUT = 1 << 3,
	OPT_NAME = 1 << 4,
	OPT_OPERANDS_END = 1 << 5, /* stop at the first operand (ctl: "priority -5") */
};

struct opts {
	const char *sched;
	const char *stage;
	const char *timeout;
	const char *name;
	int json;
};

/* Parse the options a subcommand accepts (a mask of OPT_*). Returns the index
 * of the first operand, or -1 with *rc set: CLI_OK after --help, CLI_USAGE. */
static int parse_opts(const struct cli_cmd *self, int argc, char **argv, unsigned accept,
		      struct opts *o, int *rc)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "sched", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "stage", required_argument, NULL, 's' },
		{ "timeout", required_argument, NULL, 't' },
		{ "name", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	const char *shortopts = (accept & OPT_OPERANDS_END) ? "+h" : "h";
	int c;

	memset(o, 0, sizeof *o);
	optind = 1;
	opterr = 0; /* we print our own message with the usage line */
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		unsigned need = 0;

		switch (c) {
		case 'h':
			cli_help(self, stdout);
			*rc = CLI_OK;
			return -1;
		case 'S': need = OPT_SCHED; o->sched = optarg; break;
		case 'j': need = OPT_JSON; o->json = 1; break;
		case 's': need = OPT_STAGE; o->stage = optarg; break;
		case 't': need = OPT_TIMEOUT; o->timeout = optarg; break;
		case 'n': need = OPT_NAME; o->name = optarg; break;
		default:
			if (optopt && optopt != '?')
				*rc = cli_usage_error(self, "option needs a value or is unknown: '%s'", argv[optind - 1]);
			else
				*rc = cli_usage_error(self, "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
		if (!(accept & need)) {
			*rc = cli_usage_error(self, "unknown option '%s'", argv[optind - 1]);
			return -1;
		}
	}
	return optind;
}

/* Print a text answer as it came, ending with exactly the newline it needs. */
static void print_body(const struct api_reply *reply)
{
	if (reply->len == 0)
		return;
	fwrite(reply->body, 1, reply->len, stdout);
	if (reply->body[reply->len - 1] != '\n')
		fputc('\n', stdout);
}

/* Read a spec from path ("-" for stdin), refusing more than SPEC_MAX_BYTES. */
static char *read_spec(const char *path, size_t *len, char **err)
{
	char *text = NULL;

	if (strcmp(path, "-") == 0) {
		size_t cap = 8192, used = 0;

		text = xmalloc(cap);
		for (;;) {
			ssize_t n;

			if (used + 1 >= cap) {
				cap *= 2;
				text = xrealloc(text, cap);
			}
			n = read(STDIN_FILENO, text + used, cap - used - 1);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				errprintf(err, "cannot read the spec from standard input: %s", strerror(errno));
				goto fail;
			}
			if (n == 0)
				break;
			used += (size_t)n;
			if (used > SPEC_MAX_BYTES) {
				errno = EFBIG;
				goto too_big;
			}
		}
		text[used] = '\0';
		*len = used;
		return text;
	}
	text = read_file(path, SPEC_MAX_BYTES, len);
	if (text)
		return text;
	if (errno == EFBIG)
		goto too_big;
	if (errno == ENOENT)
		errprintf(err, "%s: no such file", path);
	else if (errno == EISDIR)
		errprintf(err, "%s: is a folder, not a spec file", path);
	else
		errprintf(err, "cannot read %s: %s", path, strerror(errno));
	return NULL;
too_big:
	errprintf(err, "%s: larger than the %d MiB limit for a spec: a spec is text a person writes; keep data in files its stages read",
		  strcmp(path, "-") == 0 ? "standard input" : path, SPEC_MAX_BYTES / (1024 * 1024));
fail:
	free(text);
	return NULL;
}

/* The name a spec is submitted or checked under: --name, else the file's base name. */
static const char *spec_name(const char *path, const char *flag)
{
	const char *slash;

	if (flag)
		return flag;
	if (strcmp(path, "-") == 0)
		return "stdin";
	slash = strrchr(path, '/');
	return slash && slash[1] ? slash + 1 : path;
}

/* Print multi-line error text from the parser or the scheduler as it is. */
static void print_lines(FILE *out, const char *text)
{
	size_t n = strlen(text);

	fputs(text, out);
	if (n == 0 || text[n - 1] != '\n')
		fputc('\n', out);
}

int cmd_submit(const struct cli_cmd *self, int argc, char **argv)
{
	struct client c = { 0 };
	struct api_reply reply = { 0 };
	struct opts o;
	json_t *body = NULL;
	bool bad_spec = false;
	char *text = NULL, *payload = NULL, *err = NULL, *post = NULL, token[API_TOKEN_SIZE];
	char cwd[PATH_MAX];
	size_t len = 0;
	int64_t id;
	const char *path;
	int rc = CLI_FAIL, i;

	i = parse_opts(self, argc, argv, OPT_SCHED | OPT_NAME, &o, &rc);
	if (i < 0)
		return rc;
	if (argc - i != 1)
		return cli_usage_error(self, argc - i < 1 ? "missing FILE" : "one FILE at a time");
	path = argv[i];
	text = read_spec(path, &len, &err);
	if (!text) {
		rc = cli_fail("%s", err);
		goto out;
	}
	/* One token per submission: a retry after a lost answer finds its job. */
	if (api_new_token(token) < 0) {
		rc = cli_fail("cannot make a submission token: %s", strerror(errno));
		goto out;
	}
	/* Its instances run where it was submitted from (lib/spec.h, workdir). */
	if (!getcwd(cwd, sizeof cwd) || cwd[0] != '/')
		cwd[0] = '\0';
	body = api_submission_json(spec_name(path, o.name), text, len, token, cwd[0] ? cwd : NULL,
				   &bad_spec);
	if (!body && bad_spec) {
		/* JSON carries text only: refuse bytes that are not, here, with
		 * `parsa check`'s file:line: message. */
		struct spec *spec = spec_parse(text, len, path, &err);

		spec_destroy(spec);
		if (err)
			print_lines(stderr, err);
		else
			cli_fail("%s: not a text file (a spec is UTF-8 INI text; see docs/spec.md)", path);
		rc = CLI_FAIL;
		goto out;
	}
	if (!body) {
		rc = cli_fail("%s: the name is not UTF-8 text: give another with --name", path);
		goto out;
	}
	payload = json_dumps(body, JSON_COMPACT);
	if (client_open(&c, o.sched, &err) < 0) {
		rc = cli_fail("%s", err);
		goto out;
	}
	post = api_path(API_JOBS_SUBMIT, NULL);
	if (client_submit(&c, post, payload, strlen(payload), &reply, &err) < 0) {
		if (reply.status == 400)
			print_lines(stderr, err); /* every file:line: message, as the scheduler wrote them */
		else
			cli_fail("cannot submit %s: %s", path, err);
		rc = CLI_FAIL;
		goto out;
	}
	if (api_read_id(reply.body, reply.len, &id, NULL) < 0) {
		rc = cli_fail("the scheduler at %s accepted %s but answered without a job id: see its log",
			      c.endpoint, path);
		goto out;
	}
	printf("%lld\n", (long long)id);
	rc = CLI_OK;
out:
	json_decref(body);
	free(post);
	api_reply_clear(&reply);
	client_close(&c);
	free(payload);
	free(text);
	free(err);
	return rc;
}

int cmd_check(const struct cli_cmd *self, int argc, char **argv)
{
	struct opts o;
	int rc = CLI_OK, i;

	i = parse_opts(self, argc, argv, OPT_NAME, &o, &rc);
	if (i < 0)
		return rc;
	if (i >= argc)
		return cli_usage_error(self, "missing FILE");
	for (; i < argc; i++) {
		/* Offline, messages name the file as typed, so an editor can jump to it. */
		const char *path = argv[i];
		const char *name = o.name ? o.name : strcmp(path, "-") == 0 ? "stdin" : path;
		struct spec *spec = NULL;
		char *text, *err = NULL;
		size_t len = 0;

		text = read_spec(path, &len, &err);
		if (text)
			spec = spec_parse(text, len, name, &err);
		if (!spec) {
			if (!text)
				cli_fail("%s", err ? err : strerror(errno));
			else
				print_lines(stderr, err ? err : "invalid spec");
			rc = CLI_FAIL;
		} else {
			printf("%s: ok, %zu stage%s (", name, spec->nstages, spec->nstages == 1 ? "" : "s");
			for (size_t s = 0; s < spec->nstages; s++)
				printf("%s%s", s ? ", " : "", spec->stages[s].name);
			printf(")\n");
		}
		spec_destroy(spec);
		free(text);
		free(err);
	}
	return rc;
}

/* GET one path and print the text answer: the shared body of status, why, events, hosts NAME. */
static int show(const char *sched, const char *path)
{
	struct client c = { 0 };
	struct api_reply reply = { 0 };
	char *err = NULL;
	int rc = CLI_FAIL;

	if (client_open(&c, sched, &err) < 0 ||
	    client_call(&c, "GET", path, NULL, 0, CALL_TIMEOUT_MS, &reply, &err) < 0) {
		cli_fail("%s", err);
		goto out;
	}
	print_body(&reply);
	rc = CLI_OK;
out:
	api_reply_clear(&reply);
	client_close(&c);
	free(err);
	return rc;
}

/* Resolve the ID operand (a number or "last") into *id. Returns an exit
 * code: CLI_USAGE for an operand that is no job id. */
static int job_id(const struct cli_cmd *self, const char *sched, const char *id_text, long long *id)
{
	struct client c = { 0 };
	char *err = NULL;
	int rc = CLI_FAIL;

	if (strcmp(id_text, "last") != 0 && parse_job_id(id_text, id) < 0)
		return cli_usage_error(self, "'%s' is not a job id (a positive number, or 'last' for your newest job)",
				       id_text);
	/* Only "last" needs the scheduler; a number is checked offline. */
	if (strcmp(id_text, "last") == 0 && client_open(&c, sched, &err) < 0) {
		cli_fail("%s", err);
		goto out;
	}
	if (client_job_id(&c, id_text, id, &err) < 0) {
		cli_fail("%s", err);
		goto out;
	}
	rc = CLI_OK;
out:
	client_close(&c);
	free(err);
	return rc;
}

/* The path of route for the job of the ID operand (and stage, when not NULL). */
static int job_path(const struct cli_cmd *self, const char *sched, const char *id_text,
		    enum api_route route, const char *stage, char **path)
{
	long long id;
	int rc = job_id(self, sched, id_text, &id);

	if (rc == CLI_OK)
		*path = api_path(route, &(struct api_ref){ .id = id, .name = stage });
	return rc;
}

int cmd_status(const struct cli_cmd *self, int argc, char **argv)
{
	struct opts o;
	char *path = NULL;
	int rc = CLI_FAIL, i;

	i = parse_opts(self, argc, argv, OPT_SCHED | OPT_JSON | OPT_STAGE, &o, &rc);
	if (i < 0)
		return rc;
	if (argc - i > 1)
		return cli_usage_error(self, "one job at a time");
	if (argc - i == 0) {
		if (o.stage)
			return cli_usage_error(self, "--stage needs a job ID");
		path = api_path(o.json ? API_JOBS_LIST : API_STATUS, NULL);
		rc = show(o.sched, path);
		free(path);
		return rc;
	}
	if (o.stage && o.json)
		return cli_usage_error(self, "--json shows the whole job; drop --stage");
	rc = job_path(self, o.sched, argv[i],
		      o.stage ? API_STAGE_STATUS : o.json ? API_JOB : API_JOB_STATUS, o.stage, &path);
	if (rc == CLI_OK)
		rc = show(o.sched, path);
	free(path);
	return rc;
}

/* GET the text of a job's route: why and events. */
static int job_text(const struct cli_cmd *self, int argc, char **argv, enum api_route route)
{
	struct opts o;
	char *path = NULL;
	int rc = CLI_FAIL, i;

	i = parse_opts(self, argc, argv, OPT_SCHED, &o, &rc);
	if (i < 0)
		return rc;
	if (argc - i != 1)
		return cli_usage_error(self, argc - i < 1 ? "missing job ID" : "one job at a time");
	rc = job_path(self, o.sched, argv[i], route, NULL, &path);
	if (rc == CLI_OK)
		rc = show(o.sched, path);
	free(path);
	return rc;
}

int cmd_why(const struct cli_cmd *self, int argc, char **argv)
{
	return job_text(self, argc, argv, API_JOB_WHY);
}

int cmd_events(const struct cli_cmd *self, int argc, char **argv)
{
	return job_text(self, argc, argv, API_JOB_EVENTS);
}

/* POST {"command": command} to the job's ctl. */
static int send_ctl(const struct cli_cmd *self, const char *sched, const char *id_text,
		    const char *command)
{
	struct client c = { 0 };
	json_t *body = NULL, *answer = NULL;
	char *path = NULL, *err = NULL;
	int rc;

	rc = job_path(self, sched, id_text, API_JOB_CTL, NULL, &path);
	if (rc != CLI_OK)
		goto out;
	rc = CLI_FAIL;
	if (client_open(&c, sched, &err) < 0) {
		cli_fail("%s", err);
		goto out;
	}
	body = api_command_json(command, strlen(command));
	if (client_call_json(&c, "POST", path, body, CALL_TIMEOUT_MS, &answer, &err) < 0) {
		cli_fail("%s", err); /* the scheduler's answer names the job or the command */
		goto out;
	}
	rc = CLI_OK;
out:
	json_decref(body);
	json_decref(answer);
	client_close(&c);
	free(path);
	free(err);
	return rc;
}

int cmd_cancel(const struct cli_cmd *self, int argc, char **argv)
{
	struct opts o;
	int rc = CLI_FAIL, i;

	i = parse_opts(self, argc, argv, OPT_SCHED, &o, &rc);
	if (i < 0)
		return rc;
	if (argc - i != 1)
		return cli_usage_error(self, argc - i < 1 ? "missing job ID" : "one job at a time");
	return send_ctl(self, o.sched, argv[i], "cancel");
}

int cmd_ctl(const struct cli_cmd *self, int argc, char **argv)
{
	struct opts o;
	char *command;
	size_t len = 0;
	int rc = CLI_FAIL, i;

	i = parse_opts(self, argc, argv, OPT_SCHED | OPT_OPERANDS_END, &o, &rc);
	if (i < 0)
		return rc;
	if (argc - i < 2)
		return cli_usage_error(self, argc - i < 1 ? "missing job ID and COMMAND" : "missing COMMAND");
	/* The words after the id form one command line, as written into the ctl file. */
	for (int j = i + 1; j < argc; j++)
		len += strlen(argv[j]) + 1;
	command = xcalloc(1, len + 1);
	for (int j = i + 1; j < argc; j++) {
		if (j > i + 1)
			strcat(command, " ");
		strcat(command, argv[j]);
	}
	rc = send_ctl(self, o.sched, argv[i], command);
	free(command);
	return rc;
}

/* The outcome of one long-poll slice: 1 done, 0 not yet, -1 failed (errno, *err). */
static int wait_slice(struct client *c, int64_t id, const char *stage, int64_t slice_ms,
		      char **state, char **err)
{
	struct api_reply reply = { 0 };
	char *path = api_path_wait(id, stage, (long)slice_ms);
	bool done = false;
	int rc;

	/* The scheduler holds the request up to slice_ms; give it time to answer after. */
	rc = client_call(c, "GET", path, NULL, 0, (long)slice_ms + CALL_TIMEOUT_MS, &reply, err);
	free(path);
	if (rc == 0) {
		free(*state);
		*state = NULL;
		rc = api_read_wait(reply.body, reply.len, &done, state, err);
	}
	api_reply_clear(&reply);
	if (rc < 0)
		return -1;
	return done ? 1 : 0;
}

int cmd_wait(const struct cli_cmd *self, int argc, char **argv)
{
	struct client c = { 0 };
	struct opts o;
	char *state = NULL, *err = NULL, took[32];
	uint64_t limit_s = 0;
	int64_t deadline = INT64_MAX, unreachable_since = -1;
	long long id = 0;
	int rc = CLI_FAIL, reached = 0, i;

	i = parse_opts(self, argc, argv, OPT_SCHED | OPT_STAGE | OPT_TIMEOUT, &o, &rc);
	if (i < 0)
		return rc;
	if (argc - i != 1)
		return cli_usage_error(self, argc - i < 1 ? "missing job ID" : "one job at a time");
	if (o.timeout && parse_duration(o.timeout, &limit_s) < 0)
		return cli_usage_error(self, "--timeout '%s' is not a duration (e.g. 30, 90s, 5m, 1h)", o.timeout);
	if (o.timeout)
		deadline = time_mono_ms() + (int64_t)limit_s * 1000;
	rc = job_id(self, o.sched, argv[i], &id);
	if (rc != CLI_OK)
		return rc;
	rc = CLI_FAIL;
	if (client_open(&c, o.sched, &err) < 0) {
		cli_fail("%s", err);
		goto out;
	}
	for (;;) {
		int64_t now = time_mono_ms();
		int64_t slice = deadline - now < WAIT_SLICE_MS ? deadline - now : WAIT_SLICE_MS;
		int done;

		/* The first call answers at once, so that a scheduler that is not
		 * there fails now while one that goes away later is waited for. */
		if (!reached)
			slice = 0;
		done = wait_slice(&c, id, o.stage, slice > 0 ? slice : 0, &state, &err);

		if (done > 0) {
			printf("%s\n", state);
			rc = strcmp(state, "succeeded") == 0 ? CLI_OK : CLI_FAIL;
			goto out;
		}
		if (done < 0) {
			/* A scheduler being restarted is unreachable for a moment: once it has
			 * answered, keep trying a while. One that never answered is not there. */
			if (errno != ENOTCONN || !reached) {
				cli_fail("%s", err);
				goto out;
			}
			if (unreachable_since < 0)
				unreachable_since = now;
			if (now - unreachable_since > WAIT_RECONNECT_MS) {
				cli_fail("%s", err);
				goto out;
			}
			usleep(250 * 1000);
		} else {
			unreachable_since = -1;
			reached = 1;
		}
		if (time_mono_ms() >= deadline)
			break;
	}
	format_duration(limit_s, took, sizeof took);
	if (unreachable_since >= 0)
		fprintf(stderr, "parsa: gave up on job %s after %s: %s\n", argv[i], took, err);
	else
		fprintf(stderr, "parsa: job %s%s%s is still %s after %s; wait longer with --timeout, or drop it\n",
			argv[i], o.stage ? " stage " : "", o.stage ? o.stage : "",
			state ? state : "not done", took);
	rc = CLI_TIMEOUT;
out:
	client_close(&c);
	free(state);
	free(err);
	return rc;
}

/* One row of `parsa hosts`. */
static void print_host(const struct api_host *h)
{
	char mem[16], rmem[16], scratch[16], cpus[48], memcol[40];

	format_size((uint64_t)h->mem, mem, sizeof mem);
	format_size((uint64_t)h->reserved_mem, rmem, sizeof rmem);
	format_size((uint64_t)h->scratch_free, scratch, sizeof scratch);
	snprintf(cpus, sizeof cpus, "%lld/%lld", (long long)h->reserved_cpus, (long long)h->cpus);
	snprintf(memcol, sizeof memcol, "%s/%s", rmem, mem);
	printf("%-20s %-8s %9s %15s %9s %5.0f%% %5.0f%% %6.2f %7lld\n", h->name, h->state, cpus,
	       memcol, scratch, h->cpu_pct, h->mem_pct, h->load1, (long long)h->running);
}

int cmd_hosts(const struct cli_cmd *self, int argc, char **argv)
{
	struct client c = { 0 };
	struct api_reply reply = { 0 };
	struct opts o;
	struct api_host *hosts = NULL;
	char *err = NULL, *path = NULL;
	size_t n = 0;
	int rc = CLI_FAIL, i;

	i = parse_opts(self, argc, argv, OPT_SCHED | OPT_JSON, &o, &rc);
	if (i < 0)
		return rc;
	if (argc - i > 1)
		return cli_usage_error(self, "one host at a time");
	if (argc - i == 1) {
		if (o.json)
			return cli_usage_error(self, "--json lists every host; drop NAME");
		path = api_path_name(API_HOST_STATUS, argv[i]);
		rc = show(o.sched, path);
		goto out;
	}
	path = api_path(API_HOSTS_LIST, NULL);
	if (o.json) {
		rc = show(o.sched, path);
		goto out;
	}
	if (client_open(&c, o.sched, &err) < 0 ||
	    client_call(&c, "GET", path, NULL, 0, CALL_TIMEOUT_MS, &reply, &err) < 0 ||
	    api_read_hosts(reply.body, reply.len, &hosts, &n, &err) < 0) {
		cli_fail("%s", err);
		goto out;
	}
	if (n == 0) {
		printf("no hosts yet: a runner registers its host when it starts (`parsa up` starts one)\n");
		rc = CLI_OK;
		goto out;
	}
	printf("%-20s %-8s %9s %15s %9s %6s %6s %6s %7s\n", "HOST", "STATE", "CPUS", "MEM",
	       "SCRATCH", "CPU", "MEM", "LOAD", "RUNNING");
	for (size_t k = 0; k < n; k++)
		print_host(&hosts[k]);
	rc = CLI_OK;
out:
	api_hosts_free(hosts, n);
	api_reply_clear(&reply);
	client_close(&c);
	free(path);
	free(err);
	return rc;
}
