#include "options.h"
#include "config.h"
#include "defaults.h"
#include "proto.h"
#include "timewin.h"
#include "units.h"
#include "util.h"
#include "version.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
	"usage: parsa-runner [options]\n"
	"Run the stage instances the scheduler assigns to this host.\n"
	"  --config FILE       cluster and host settings (default " PARSA_CONF_DEFAULT " if it\n"
	"                      exists); the flags below override it\n"
	"  --sched ENDPOINT    scheduler: HOST:PORT (TCP, munge), unix:/path or http://host:port\n"
	"                      (default: $PARSA_SCHED, else [cluster] sched of the config,\n"
	"                      else unix:/var/lib/parsa/sched.sock as root,\n"
	"                      unix:$XDG_STATE_HOME/parsa/sched.sock otherwise)\n"
	"  --name NAME         this host's name (default: the host name)\n"
	"  --mount DIR         where parsafs is mounted on this host (default /parsa; ~/parsa for a user)\n"
	"  --scratch DIR       local scratch folder (default /var/tmp/parsa-scratch[-UID])\n"
	"  --state DIR         the runner's own state (default /var/lib/parsa/runner;\n"
	"                      $XDG_STATE_HOME/parsa/runner for a user)\n"
	"  --cpus N            cores to offer (default: detected); fewer than the host has:\n"
	"                      the first N this runner may run on. Each instance is pinned to\n"
	"                      cpus of them ($PARSA_CPU_LIST), not shared while free ones exist\n"
	"  --gpus N            GPUs to hand out, indices 0..N-1 (default: nvidia-smi -L, else\n"
	"                      the /dev/nvidiaN files); 0: none. An instance gets distinct ones\n"
	"                      in $CUDA_VISIBLE_DEVICES and $PARSA_GPUS\n"
	"  --mem SIZE          memory to offer, e.g. 64G (default: detected). Every instance's\n"
	"                      process tree is measured (CPU time, resident memory) 2.5 times\n"
	"                      a second, through its cgroup where the runner has a delegated\n"
	"                      cgroup v2 subtree (systemd Delegate=yes), else through /proc;\n"
	"                      one past its stage's mem is killed (out of memory)\n"
	"  --scratch-size SIZE scratch space to offer (default: the folder's filesystem)\n"
	"  --cpu-limit PCT     no new instances while CPU use is at or above PCT (default 90)\n"
	"  --mem-limit PCT     the same for memory use (default 90); 100 or more turns\n"
	"                      admission by outside load off (what runs outside parsa\n"
	"                      then neither holds work back nor takes cores or memory)\n"
	"  --features A,B      features stages can ask for (hosts = feature:A)\n"
	"  --grace SECONDS     between SIGTERM and SIGKILL when stopping an instance (default 10)\n"
	"  --munge-socket PATH munged's socket for TCP (default /run/munge/munge.socket.2)\n"
	"  --window WHEN       take work only then, e.g. \"mon-fri 20:00-08:00; sat,sun 00:00-24:00\"\n"
	"  --drain-at-window-end yes|no  at the window's end let running work finish (yes)\n"
	"                      or stop it to be requeued (no, the default)\n"
	"  --executor local|slurm  where instances run: on this host (default), or as Slurm\n"
	"                      jobs submitted with sbatch as the instance's user (docs/operators.md)\n"
	"  --slurm-partition P, --slurm-account A, --slurm-qos Q  sbatch's -p, -A, --qos\n"
	"  --slurm-max-jobs N  offer at most N CPUs (the host offers what sinfo shows for\n"
	"                      the partition, allocated + idle, capped by N)\n"
	"  --slurm-path-map FROM=TO  the mount (or the storage volume) is at TO on the compute\n"
	"                      nodes (default: same path)\n"
	"  --slurm-lost-after SECONDS  a job gone from squeue without its exit file is lost\n"
	"                      after this (default 60)\n"
	"  --slurm-requeue     let Slurm requeue a job after a node failure or preemption\n"
	"                      (default: --no-requeue, and parsa retries it by the stage's retries)\n"
	"  --slurm-max-array N  at most N instances to one sbatch --array (default: Slurm's\n"
	"                      MaxArraySize)\n"
	"  --clock-file PATH   a test facility: take the time from PATH (see parsa-sched)\n"
	"  --log-file PATH     append the log to PATH (default: stderr; parsa up:\n"
	"                      STATE/logs/runner.log; the systemd unit: the journal)\n"
	"  -v, --verbose       log debug messages\n"
	"  -h, --help          this text\n"
	"  --version           the release and the protocol it speaks with the scheduler\n";

void options_free(struct runner_options *cfg)
{
	free(cfg->config_path);
	free(cfg->munge_socket);
	free(cfg->log_file);
	free(cfg->sched);
	free(cfg->name);
	free(cfg->mount);
	free(cfg->scratch);
	free(cfg->state);
	for (size_t i = 0; i < cfg->nfeatures; i++)
		free(cfg->features[i]);
	free(cfg->features);
	free(cfg->window);
	free(cfg->clock_file);
	free(cfg->slurm_partition);
	free(cfg->slurm_account);
	free(cfg->slurm_qos);
	free(cfg->slurm_map_from);
	free(cfg->slurm_map_to);
}

static void config_defaults(struct runner_options *cfg)
{
	int root = geteuid() == 0;
	const char *env = getenv("PARSA_SCHED"), *home = getenv("HOME");
	char host[HOST_NAME_MAX + 1] = "";
	char *state = default_state_dir(geteuid(), home, getenv("XDG_STATE_HOME"));

	if (!cfg->sched)
		cfg->sched = env && env[0] ? xstrdup(env) : xasprintf("unix:%s/sched.sock", state);
	if (!cfg->name) {
		gethostname(host, sizeof host - 1);
		cfg->name = xstrdup(host[0] ? host : "localhost");
	}
	if (!cfg->mount)
		cfg->mount = root || !home || !home[0] ? xstrdup("/parsa") : xasprintf("%s/parsa", home);
	if (!cfg->scratch)
		cfg->scratch = root ? xstrdup("/var/tmp/parsa-scratch")
				    : xasprintf("/var/tmp/parsa-scratch-%u", (unsigned)geteuid());
	if (!cfg->state)
		cfg->state = xasprintf("%s/runner", state);
	free(state);
}

static int parse_pct(const char *flag, const char *text, double *out, char **err)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (errno || end == text || *end != '\0' || !(v > 0) || v > 1000)
		return errprintf(err, "%s '%s': expected a percentage such as 90", flag, text);
	*out = v;
	return 0;
}

static int parse_features(struct runner_options *cfg, const char *text, char **err)
{
	char *copy = xstrdup(text), *save = NULL, *tok;
	int rc = 0;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		if (!*tok)
			continue;
		if (!proto_safe_name(tok)) {
			rc = errprintf(err, "--features: '%s' is not a feature name (letters, digits, '.', '_', '-')", tok);
			break;
		}
		cfg->features = xrealloc(cfg->features, (cfg->nfeatures + 1) * sizeof *cfg->features);
		cfg->features[cfg->nfeatures++] = xstrdup(tok);
	}
	free(copy);
	return rc;
}

static void take(char **dst, const char *value)
{
	if (!*dst && value)
		*dst = xstrdup(value);
}

/* What the flags left unset comes from the config file ([cluster], [host]). */
static int apply_file(struct runner_options *cfg, const int *seen, char **err)
{
	struct parsa_conf c;

	if (parsa_conf_load(cfg->config_path ? cfg->config_path : PARSA_CONF_DEFAULT,
			    !cfg->config_path, &c, err) < 0)
		return -1;
	/* The order every program keeps: --sched, $PARSA_SCHED, [cluster] sched,
	 * the local socket (config_defaults). */
	if (c.sched && !cfg->sched && !(getenv("PARSA_SCHED") && *getenv("PARSA_SCHED")))
		cfg->sched = parsa_endpoint(c.sched);
	take(&cfg->munge_socket, c.munge_socket);
	if (!cfg->name && c.name && !proto_safe_name(c.name)) {
		errprintf(err, "%s: [host] name = %s: use letters, digits, '.', '_' and '-'", c.path, c.name);
		parsa_conf_free(&c);
		return -1;
	}
	take(&cfg->name, c.name);
	take(&cfg->mount, c.mount);
	take(&cfg->scratch, c.scratch);
	take(&cfg->state, c.runner_state);
	if (!cfg->cpus)
		cfg->cpus = c.cpus;
	if (cfg->gpus < 0)
		cfg->gpus = c.gpus;
	if (!cfg->mem)
		cfg->mem = c.mem;
	if (!cfg->scratch_size)
		cfg->scratch_size = c.scratch_size;
	if (!seen[0] && c.cpu_limit > 0)
		cfg->cpu_limit = c.cpu_limit;
	if (!seen[1] && c.mem_limit > 0)
		cfg->mem_limit = c.mem_limit;
	if (!seen[2] && c.grace_ms > 0)
		cfg->grace_ms = c.grace_ms;
	if (!cfg->nfeatures && c.nfeatures) {
		cfg->features = c.features;
		cfg->nfeatures = c.nfeatures;
		c.features = NULL;
		c.nfeatures = 0;
	}
	/* The munge key of a host that takes work from the network: nobody else
	 * may read it. */
	if (cfg->sched && strncmp(cfg->sched, "http", 4) == 0 &&
	    parsa_conf_check_key(c.munge_key ? c.munge_key : PARSA_MUNGE_KEY_DEFAULT, !c.munge_key, err) < 0) {
		parsa_conf_free(&c);
		return -1;
	}
	parsa_conf_free(&c);
	return 0;
}

int options_parse(int argc, char **argv, struct runner_options *cfg, char **err)
{
	enum { O_LOG_FILE = 200, O_SCHED = 256, O_NAME, O_MOUNT, O_SCRATCH, O_STATE, O_CPUS, O_MEM, O_SCRATCH_SIZE,
	       O_CPU_LIMIT, O_MEM_LIMIT, O_FEATURES, O_GRACE, O_CONFIG, O_MUNGE, O_WINDOW, O_DRAIN,
	       O_CLOCK, O_GPUS, O_VERSION, O_EXECUTOR, O_S_PART, O_S_ACCT, O_S_QOS, O_S_MAX, O_S_MAP,
	       O_S_LOST, O_S_REQUEUE, O_S_ARRAY };
	static const struct option opts[] = {
		{ "sched", required_argument, NULL, O_SCHED },
		{ "name", required_argument, NULL, O_NAME },
		{ "mount", required_argument, NULL, O_MOUNT },
		{ "scratch", required_argument, NULL, O_SCRATCH },
		{ "state", required_argument, NULL, O_STATE },
		{ "cpus", required_argument, NULL, O_CPUS },
		{ "gpus", required_argument, NULL, O_GPUS },
		{ "mem", required_argument, NULL, O_MEM },
		{ "scratch-size", required_argument, NULL, O_SCRATCH_SIZE },
		{ "cpu-limit", required_argument, NULL, O_CPU_LIMIT },
		{ "mem-limit", required_argument, NULL, O_MEM_LIMIT },
		{ "features", required_argument, NULL, O_FEATURES },
		{ "grace", required_argument, NULL, O_GRACE },
		{ "config", required_argument, NULL, O_CONFIG },
		{ "munge-socket", required_argument, NULL, O_MUNGE },
		{ "window", required_argument, NULL, O_WINDOW },
		{ "drain-at-window-end", required_argument, NULL, O_DRAIN },
		{ "clock-file", required_argument, NULL, O_CLOCK },
		{ "executor", required_argument, NULL, O_EXECUTOR },
		{ "slurm-partition", required_argument, NULL, O_S_PART },
		{ "slurm-account", required_argument, NULL, O_S_ACCT },
		{ "slurm-qos", required_argument, NULL, O_S_QOS },
		{ "slurm-max-jobs", required_argument, NULL, O_S_MAX },
		{ "slurm-path-map", required_argument, NULL, O_S_MAP },
		{ "slurm-lost-after", required_argument, NULL, O_S_LOST },
		{ "slurm-requeue", no_argument, NULL, O_S_REQUEUE },
		{ "slurm-max-array", required_argument, NULL, O_S_ARRAY },
		{ "log-file", required_argument, NULL, O_LOG_FILE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, O_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	int seen[3] = { 0 };  /* --cpu-limit, --mem-limit, --grace given */
	uint64_t u;
	char *end;
	long n;
	int c;

	cfg->cpu_limit = 90;
	cfg->mem_limit = 90;
	cfg->gpus = -1;
	cfg->grace_ms = 10000;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case O_SCHED:
			free(cfg->sched);
			cfg->sched = parsa_endpoint(optarg);
			break;
		case O_CONFIG:
			free(cfg->config_path);
			cfg->config_path = xstrdup(optarg);
			break;
		case O_MUNGE:
			free(cfg->munge_socket);
			cfg->munge_socket = xstrdup(optarg);
			break;
		case O_NAME:
			if (!proto_safe_name(optarg))
				return errprintf(err, "--name '%s': use letters, digits, '.', '_' and '-'", optarg);
			free(cfg->name);
			cfg->name = xstrdup(optarg);
			break;
		case O_MOUNT:
		case O_SCRATCH:
		case O_STATE: {
			char **dst = c == O_MOUNT ? &cfg->mount : c == O_SCRATCH ? &cfg->scratch : &cfg->state;

			if (optarg[0] != '/')
				return errprintf(err, "--%s '%s': give an absolute path",
						 c == O_MOUNT ? "mount" : c == O_SCRATCH ? "scratch" : "state", optarg);
			free(*dst);
			*dst = xstrdup(optarg);
			break;
		}
		case O_CPUS:
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || n < 1 || n > 1 << 20)
				return errprintf(err, "--cpus '%s': expected a number of cores such as 8", optarg);
			cfg->cpus = (int)n;
			break;
		case O_GPUS:
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || n < 0 || n > 1024)
				return errprintf(err, "--gpus '%s': expected a number of GPUs from 0 to 1024", optarg);
			cfg->gpus = (int)n;
			break;
		case O_MEM:
		case O_SCRATCH_SIZE:
			if (parse_size(optarg, &u) < 0 || u == 0)
				return errprintf(err, "--%s '%s': expected a size such as 64G",
						 c == O_MEM ? "mem" : "scratch-size", optarg);
			if (c == O_MEM)
				cfg->mem = u;
			else
				cfg->scratch_size = u;
			break;
		case O_CPU_LIMIT:
			if (parse_pct("--cpu-limit", optarg, &cfg->cpu_limit, err) < 0)
				return -1;
			seen[0] = 1;
			break;
		case O_MEM_LIMIT:
			if (parse_pct("--mem-limit", optarg, &cfg->mem_limit, err) < 0)
				return -1;
			seen[1] = 1;
			break;
		case O_FEATURES:
			if (parse_features(cfg, optarg, err) < 0)
				return -1;
			break;
		case O_GRACE:
			if (parse_duration(optarg, &u) < 0 || u > 24 * 3600)
				return errprintf(err, "--grace '%s': expected seconds such as 10 (or 30s, 2m)", optarg);
			cfg->grace_ms = (int64_t)u * 1000;
			seen[2] = 1;
			break;
		case O_WINDOW: {
			char *why = NULL;
			struct timewin *w = timewin_parse(optarg, &why);

			/* Checked here, so that a typo stops the runner before it starts. */
			if (!w) {
				errprintf(err, "--window '%s': %s", optarg, why ? why : "not a window");
				free(why);
				return -1;
			}
			timewin_destroy(w);
			free(cfg->window);
			cfg->window = xstrdup(optarg);
			break;
		}
		case O_DRAIN:
			if (strcmp(optarg, "yes") != 0 && strcmp(optarg, "no") != 0)
				return errprintf(err, "--drain-at-window-end '%s': expected yes or no", optarg);
			cfg->window_drain = strcmp(optarg, "yes") == 0;
			break;
		case O_CLOCK:
			free(cfg->clock_file);
			cfg->clock_file = xstrdup(optarg);
			break;
		case O_EXECUTOR:
			if (strcmp(optarg, "local") != 0 && strcmp(optarg, "slurm") != 0)
				return errprintf(err, "--executor '%s': expected local or slurm", optarg);
			cfg->slurm = strcmp(optarg, "slurm") == 0;
			break;
		case O_S_PART:
		case O_S_ACCT:
		case O_S_QOS: {
			char **dst = c == O_S_PART ? &cfg->slurm_partition :
				     c == O_S_ACCT ? &cfg->slurm_account : &cfg->slurm_qos;

			if (!proto_safe_name(optarg))
				return errprintf(err, "--%s '%s': use letters, digits, '.', '_' and '-'",
						 c == O_S_PART ? "slurm-partition" :
						 c == O_S_ACCT ? "slurm-account" : "slurm-qos", optarg);
			free(*dst);
			*dst = xstrdup(optarg);
			break;
		}
		case O_S_MAX:
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || n < 1 || n > 1 << 20)
				return errprintf(err, "--slurm-max-jobs '%s': expected a number of CPUs such as 64",
						 optarg);
			cfg->slurm_max_jobs = (int)n;
			break;
		case O_S_MAP: {
			const char *eq = strchr(optarg, '=');

			if (!eq || optarg[0] != '/' || eq[1] != '/')
				return errprintf(err, "--slurm-path-map '%s': expected FROM=TO, two absolute paths",
						 optarg);
			free(cfg->slurm_map_from);
			free(cfg->slurm_map_to);
			cfg->slurm_map_from = xasprintf("%.*s", (int)(eq - optarg), optarg);
			cfg->slurm_map_to = xstrdup(eq + 1);
			break;
		}
		case O_S_ARRAY:
			errno = 0;
			n = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || n < 1 || n > 1 << 22)
				return errprintf(err, "--slurm-max-array '%s': expected a number of tasks such as 1000",
						 optarg);
			cfg->slurm_max_array = n;
			break;
		case O_S_LOST:
			if (parse_duration(optarg, &u) < 0 || u < 1 || u > 24 * 3600)
				return errprintf(err, "--slurm-lost-after '%s': expected seconds such as 60", optarg);
			cfg->slurm_lost_ms = (int64_t)u * 1000;
			break;
		case O_S_REQUEUE:
			cfg->slurm_requeue = 1;
			break;
		case O_LOG_FILE:
			free(cfg->log_file);
			cfg->log_file = xstrdup(optarg);
			break;
		case 'v':
			cfg->verbose++;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 1;
		case O_VERSION:
			printf("parsa-runner %s (protocol %d)\n", PARSA_VERSION, PARSA_PROTOCOL);
			return 1;
		default:
			return errprintf(err, "unknown or incomplete option '%s' (see parsa-runner --help)",
					 argv[optind - 1]);
		}
	}
	if (optind < argc)
		return errprintf(err, "unexpected argument '%s' (see parsa-runner --help)", argv[optind]);
	if (apply_file(cfg, seen, err) < 0)
		return -1;
	/* A Slurm host's CPU figures are its partition's (slurm_host.h): other
	 * users' jobs there hold parsa's back, as outside load does on any
	 * host, and only a partition they fill stops it (100 would turn the
	 * check off). Its memory figures are still this host's, which say
	 * nothing of the cluster's. */
	if (cfg->slurm && !seen[0])
		cfg->cpu_limit = 99;
	if (cfg->slurm && !seen[1])
		cfg->mem_limit = 100;
	config_defaults(cfg);
	return 0;
}
