/* The words other schedulers use for parsa's keys (Slurm's sbatch options,
 * Airflow's operator arguments, Snakemake, GitHub Actions): an unknown key
 * that is one of them is answered with the parsa key it means and how to
 * write it, not only with the list of keys. */
#include "spec_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

struct foreign_word {
	const char *word;       /* lower case, '_' for '-' */
	const char *key;        /* parsa's key */
	bool in_job;            /* the key belongs in [job], not in a stage */
	const char *how;        /* how to write it */
};

static const struct foreign_word words[] = {
	{ "memory", "mem", false, "mem = 4G, the whole instance's memory" },
	{ "mem_per_cpu", "mem", false, "mem = 4G, the whole instance's memory (there is no per-cpu form)" },
	{ "mem_per_task", "mem", false, "mem = 4G, the whole instance's memory" },
	{ "ram", "mem", false, "mem = 4G" },
	{ "cpus_per_task", "cpus", false, "cpus = 8, the cores of one instance" },
	{ "ncpus", "cpus", false, "cpus = 8" },
	{ "cores", "cpus", false, "cpus = 8" },
	{ "threads", "cpus", false, "cpus = 8" },
	{ "ntasks", "instances", false, "instances = N runs N copies, $PARSA_INDEX = 0..N-1; cpus = N gives one copy N cores" },
	{ "tasks", "instances", false, "instances = N runs N copies, $PARSA_INDEX = 0..N-1" },
	{ "array", "instances", false, "instances = N ($PARSA_INDEX = 0..N-1), or foreach = STAGE/GLOB for one instance per file" },
	{ "time", "walltime", false, "walltime = 4h, after which the instance is stopped" },
	{ "time_limit", "walltime", false, "walltime = 4h" },
	{ "timelimit", "walltime", false, "walltime = 4h" },
	{ "timeout", "walltime", false, "walltime = 4h" },
	{ "execution_timeout", "walltime", false, "walltime = 4h" },
	{ "gres", "gpus", false, "gpus = 1" },
	{ "gpus_per_task", "gpus", false, "gpus = 1" },
	{ "gpus_per_node", "gpus", false, "gpus = 1" },
	{ "gpu", "gpus", false, "gpus = 1" },
	{ "tmp", "scratch", false, "scratch = 20G, free local disk on the host" },
	{ "tmp_disk", "scratch", false, "scratch = 20G" },
	{ "dependency", "after", false, "after = STAGE in a stage; after = JOB-ID in [job] for other jobs" },
	{ "depends_on", "after", false, "after = STAGE in a stage; after = JOB-ID in [job] for other jobs" },
	{ "upstream", "after", false, "after = STAGE" },
	{ "needs", "after", false, "after = STAGE" },
	{ "retry", "retries", false, "retries = 2, further attempts of a failed instance" },
	{ "max_retries", "retries", false, "retries = 2" },
	{ "attempts", "retries", false, "retries = 2 (the attempts after the first)" },
	{ "nodelist", "hosts", false, "hosts = h1, h2 or hosts = feature:NAME" },
	{ "nodes", "hosts", false, "hosts = h1, h2 (one instance runs on one host; instances = N for more)" },
	{ "node", "hosts", false, "hosts = h1" },
	{ "host", "hosts", false, "hosts = h1, h2" },
	{ "constraint", "hosts", false, "hosts = feature:NAME" },
	{ "command", "run", false, "run = ./sim.sh \"$PARSA_ITEM\"" },
	{ "cmd", "run", false, "run = ./sim.sh" },
	{ "script", "run", false, "run = ./sim.sh" },
	{ "shell", "run", false, "run = ./sim.sh" },
	{ "bash_command", "run", false, "run = ./sim.sh" },
	{ "max_parallel", "max_running", false, "max_running = 10" },
	{ "concurrency", "max_running", false, "max_running = 10" },
	{ "parallelism", "max_running", false, "max_running = 10" },
	{ "fail_fast", "on_failure", false, "on_failure = stop" },
	{ "job_name", "name", true, "name = my-run" },
	{ "begin", "start", true, "start = 2030-01-07T22:00 or start = +2h" },
	{ "start_date", "start", true, "start = 2030-01-07T22:00" },
	{ "schedule", "every", true, "every = day 02:00, or a cron line" },
	{ "schedule_interval", "every", true, "every = day 02:00" },
	{ "cron", "every", true, "every = 0 2 * * *" },
	{ "mail_user", "notify", true, "notify = mail:you@lab" },
	{ "mail", "notify", true, "notify = mail:you@lab" },
	{ "email", "notify", true, "notify = mail:you@lab" },
	{ "nice", "priority", true, "priority = 10 (higher starts first)" },
	{ "chdir", "workdir", true, "workdir = /home/you/lab (default: where you submitted from)" },
	{ "cwd", "workdir", true, "workdir = /home/you/lab (default: where you submitted from)" },
	{ "working_dir", "workdir", true, "workdir = /home/you/lab (default: where you submitted from)" },
	{ "working_directory", "workdir", true, "workdir = /home/you/lab (default: where you submitted from)" },
};

bool spec_foreign_word(const char *key, bool in_stage, char *out, size_t len)
{
	char norm[32];
	size_t i = 0;

	while (*key == '-')
		key++;
	for (; key[i] && i + 1 < sizeof norm; i++)
		norm[i] = key[i] == '-' ? '_' : (char)tolower((unsigned char)key[i]);
	if (key[i])
		return false;
	norm[i] = '\0';
	for (size_t k = 0; k < sizeof words / sizeof words[0]; k++) {
		const struct foreign_word *w = &words[k];

		if (strcmp(norm, w->word) != 0)
			continue;
		if (w->in_job && in_stage)
			snprintf(out, len, "parsa calls it '%s', a key of [job]: %s", w->key, w->how);
		else if (!w->in_job && !in_stage)
			snprintf(out, len, "parsa calls it '%s', a key of a [stage NAME]: %s", w->key, w->how);
		else
			snprintf(out, len, "parsa calls it '%s': %s", w->key, w->how);
		return true;
	}
	return false;
}
