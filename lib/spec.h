/* The job spec: an INI file (parsed with inih) that names a pipeline of stages,
 * each a shell command with its resource needs. spec_parse() checks everything
 * that can be checked without the cluster (keys, values, the stage DAG) and
 * reports every problem as "file:line: message (fix)". */
#ifndef PARSA_SPEC_H
#define PARSA_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Specs larger than this are refused (a spec is text a person wrote). */
#define SPEC_MAX_BYTES (1024 * 1024)
#define SPEC_MAX_STAGES 256
#define SPEC_MAX_INSTANCES 1000000
#define SPEC_MAX_PROGRESS 1000000000
#define SPEC_MAX_GPUS 64

struct timewin;

/* What a stage does once more of its instances failed (retries used up) than
 * it tolerates (max_failed). */
enum spec_on_failure {
	ON_FAILURE_FINISH,   /* the others run to the end, then the stage fails (default) */
	ON_FAILURE_STOP,     /* the others are cancelled at once and the job fails */
	ON_FAILURE_IGNORE,   /* failures are counted; by default every one is tolerated */
};

/* A stage's Slurm settings (slurm.partition, slurm.account, slurm.qos): each
 * NULL for the runner's own. Only a runner with --executor slurm reads them. */
struct spec_slurm {
	char *partition, *account, *qos;
};

/* One parameter of a sweep: matrix.NAME = v1, v2, ... (spec_matrix.c). */
struct spec_axis {
	char *name;
	char **values;
	size_t nvalues;
};
#define SPEC_MATRIX_AXES_MAX 8
#define SPEC_MATRIX_VALUES_MAX 1000
#define SPEC_MATRIX_VALUE_MAX 64

struct spec_stage {
	char *name;
	int line;            /* line of its [stage NAME] header */
	char *run;           /* shell command, ${vars} expanded */
	int cpus;            /* default 1 */
	uint64_t mem;        /* bytes reserved on the host; default 0 */
	uint64_t disk;       /* bytes of free space needed where the stage writes */
	uint64_t scratch;    /* bytes of free local scratch needed on the host */
	int gpus;            /* GPUs of its own on the host; default 0 */
	int instances;       /* default 1; with foreach, ignored (one per entry) */
	char **after;        /* names of stages this one waits for */
	size_t nafter;
	char *foreach_stage; /* "warm" for foreach = warm/<glob>, else NULL */
	char *foreach_glob;  /* "*" by default */
	uint64_t walltime;   /* seconds; 0 = no limit */
	int retries;         /* extra attempts after a failure; default 0 */
	char **hosts;        /* host names or fnmatch globs; empty = any */
	size_t nhosts;
	char **env;          /* "NAME=value" */
	size_t nenv;
	char *window;        /* window = WHEN: instances start only inside; NULL = the job's */
	struct timewin *win; /* window, parsed (NULL when none) */
	uint64_t progress_files; /* progress = files:N: N entries in the output folder; 0 = none */
	enum spec_on_failure on_failure;
	long long max_failed;    /* failed instances tolerated; -1 = on_failure's default */
	bool max_failed_pct;     /* max_failed is a percentage of the stage's instances */
	int max_running;         /* at most this many instances at once; 0 = no limit */
	struct spec_slurm slurm;
	struct spec_axis *matrix; /* matrix.NAME keys, in file order; points = product */
	size_t nmatrix;
};

struct spec {
	char *name;          /* [job] name, or the file name without extension */
	char *team;          /* NULL when not given: the submitter's primary group */
	int team_line;       /* its line, for the error when it is not the submitter's */
	int priority;        /* default 0; higher runs first */
	int64_t *after_jobs; /* ids of jobs this one waits for */
	size_t nafter_jobs;
	struct spec_stage *stages; /* in a topological order of the DAG */
	size_t nstages;
	int64_t start_at_s;  /* start = local time: nothing starts before (epoch s); 0 = none */
	int64_t start_in_s;  /* start = +DURATION: seconds after submission; 0 = none */
	char *window;        /* the default window of its stages; NULL = always */
	struct timewin *win; /* window, parsed */
	char *every;         /* every = cron line or period (schedules/ only); NULL = none */
	/* Where instances start: workdir = /abs/folder or "out" (each stage's
	 * output folder); else the folder it was submitted from, which the
	 * scheduler sets (workdir_submitted) and which is used where it exists
	 * on the host, the output folder elsewhere. NULL: the output folder. */
	char *workdir;
	bool workdir_submitted;
	int every_line;      /* its line, for the error when a queue/ spec has one */
	char **notify;       /* "exec:/path" or "mail:user@host" */
	size_t nnotify;
};

/* Parse and validate a spec. filename is used in messages and for the default
 * job name. On failure returns NULL, sets errno to EINVAL (EFBIG past
 * SPEC_MAX_BYTES) and, if err is not NULL, sets *err to every error found, one
 * "filename:line: message" per line (the caller frees it). */
struct spec *spec_parse(const char *text, size_t len, const char *filename, char **err);
void spec_destroy(struct spec *spec);

/* The name a spec's file gives: its base name without the folder and
 * without .conf, .ini or .spec ("lab/train.conf": "train"). Returns a pointer
 * into filename and sets *len to the name's length (0 for ".conf"). The one
 * rule behind a job's default name (spec_parse, which then makes "" into
 * "spec" and cuts it to JOB_NAME_MAX) and a schedule's name (sched/engine/schedules.c,
 * which refuses a bad one instead). */
const char *spec_file_stem(const char *filename, size_t *len);

/* "finish", "stop" or "ignore"; and back (-1 when name is none of them). */
const char *spec_on_failure_name(enum spec_on_failure how);
int spec_on_failure_parse(const char *name);

/* How many failed instances a stage of ninst instances tolerates and still
 * counts as succeeded: its max_failed (N, or P% of ninst rounded down), or
 * by default none with finish and stop and all of them with ignore. */
size_t spec_stage_max_failed(const struct spec_stage *st, size_t ninst);

/* Index of the stage with this name, or -1. */
int spec_stage_index(const struct spec *spec, const char *name);

/* One Slurm name (a partition, account or QOS): 1 to 64 letters, digits,
 * '.', '_' or '-', not starting with '-' (sbatch reads it as one name). */
bool spec_slurm_value_ok(const char *s);
bool spec_slurm_any(const struct spec_slurm *s);
void spec_slurm_clear(struct spec_slurm *s);
/* {"partition": ..., "account": ..., "qos": ...} with the keys set, NULL
 * when none is; and back (obj NULL or null: none), checking every value;
 * -1 with *err ("WHERE.slurm.KEY: ..."). */
json_t *spec_slurm_to_json(const struct spec_slurm *s);
int spec_slurm_from_json(const json_t *obj, struct spec_slurm *s, const char *where, char **err);

/* A sweep's points (1 without matrix keys). An instance's point is its
 * index % points, the last axis varying fastest: the value of axis for it,
 * and "cache=2M quantum=1000" with sep between the pairs (malloc'ed; "" without
 * matrix keys). Its instances: points times instances (times the foreach
 * entries, each entry going through every point). */
size_t spec_stage_points(const struct spec_stage *st);
const char *spec_point_value(const struct spec_stage *st, int64_t index, size_t axis);
char *spec_point_text(const struct spec_stage *st, int64_t index, const char *sep);
void spec_matrix_clear(struct spec_stage *st);
/* A sweep instance's environment: each axis as NAME=value, PARSA_POINT
 * ("cache=2M quantum=1000"), then the stage's env.* with ${NAME} of the
 * axes replaced: nmatrix + 1 + nenv malloc'ed strings in a malloc'ed array. */
char **spec_point_env(const struct spec_stage *st, int64_t index);
/* [{"name": ..., "values": [...]}, ...] and back (list NULL or null: none). */
json_t *spec_matrix_to_json(const struct spec_stage *st);
int spec_matrix_from_json(const json_t *list, struct spec_stage *st, const char *where, char **err);

/* A stable JSON form (what the scheduler stores and status.json shows) and back. */
json_t *spec_to_json(const struct spec *spec);
struct spec *spec_from_json(const json_t *json, char **err);

#endif
