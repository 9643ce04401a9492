/* parsa-runner's settings: the command line (--help lists it) over the
 * [cluster] and [host] sections of the config file, over defaults that depend
 * on whether it runs as root. Checked whole before the runner starts. */
#ifndef PARSA_RUNNER_OPTIONS_H
#define PARSA_RUNNER_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

struct runner_options {
	char *config_path;
	char *munge_socket;
	char *log_file;         /* --log-file, or NULL: stderr */
	char *sched;
	char *name;
	char *mount;
	char *scratch;
	char *state;
	int cpus;               /* 0: detect */
	int gpus;               /* -1: detect (nvidia-smi, /dev/nvidiaN); 0: none */
	uint64_t mem;           /* 0: detect */
	uint64_t scratch_size;  /* 0: detect */
	double cpu_limit;
	double mem_limit;
	char **features;
	size_t nfeatures;
	int64_t grace_ms;
	int verbose;
	char *window;           /* --window: when this host takes work; NULL: always */
	int window_drain;       /* --drain-at-window-end yes */
	char *clock_file;       /* --clock-file (a test facility, lib/clock.h) */
	/* --executor slurm (runner/executor_slurm.h): instances become Slurm jobs. */
	int slurm;
	char *slurm_partition, *slurm_account, *slurm_qos;
	char *slurm_map_from, *slurm_map_to; /* --slurm-path-map FROM=TO */
	int slurm_max_jobs;     /* --slurm-max-jobs: the CPUs offered; 0: --cpus or detected */
	int64_t slurm_lost_ms;  /* --slurm-lost-after: gone from squeue, no exit file */
	int slurm_requeue;      /* --slurm-requeue: sbatch --requeue, else --no-requeue */
	long slurm_max_array;   /* --slurm-max-array: tasks per sbatch --array; 0: MaxArraySize */
};

/* Fill opts from argv, then the config file, then the defaults. 0; 1 when
 * --help or --version was printed; -1 with *err (opts is then freed by options_free()
 * all the same). */
int options_parse(int argc, char **argv, struct runner_options *opts, char **err);
void options_free(struct runner_options *opts);

#endif
