/* Slurm's text: the batched squeue and scontrol answers of a real Slurm 22.05
 * (tests/fixtures/slurm/, made by capture.sh there), every state's meaning for
 * an instance, arrays split under MaxArraySize and MaxSubmitJobs, and the
 * sbatch argument vector. */
#include "slurm_text.h"
#include "slurm_fixture.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TAP_STATE;

/* The record of a job by name (and array task, -2 for any) in jobs. */
static const struct slurm_job *by_name(const struct slurm_job *jobs, size_t n, const char *name,
				       long task)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(jobs[i].name, name) == 0 && (task == -2 || jobs[i].task_lo == task))
			return &jobs[i];
	return NULL;
}

/* scontrol names no pending range's job by name alone: find by task list. */
static const struct slurm_job *by_tasks(const struct slurm_job *jobs, size_t n, const char *name,
					const char *tasks)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(jobs[i].name, name) == 0 && strcmp(jobs[i].tasks, tasks) == 0)
			return &jobs[i];
	return NULL;
}

static enum slurm_outcome outcome(const struct slurm_job *j, char *why, size_t len)
{
	struct slurm_verdict v;

	if (!j || slurm_job_verdict(j, &v) < 0)
		return (enum slurm_outcome)-1;
	snprintf(why, len, "%s", v.why);
	return v.outcome;
}

static void test_squeue(void)
{
	char *text = fixture("squeue-live.txt"), *err = NULL, why[512];
	struct slurm_job *jobs;
	const struct slurm_job *j;
	size_t n;

	is_int(slurm_parse_jobs(text, false, &jobs, &n, &err), 0, "squeue-live parses");
	is_int(n, 21, "21 records");
	j = by_name(jobs, n, "parsa-fx-ok", -2);
	ok(j && j->job_id == 1 && j->array_job_id == 0 && j->task_lo == -1, "a plain job: id 1, no array");
	is_str(j ? j->state : NULL, "COMPLETED", "COMPLETED");
	is_int(outcome(j, why, sizeof(why)), SLURM_SUCCEEDED, "COMPLETED succeeded");
	ok(j && !j->has_exit, "squeue carries no exit code");
	is_str(j ? j->nodes : NULL, "n1", "its node");
	ok(j && strcmp(j->partition, "debug") == 0 && strcmp(j->user, "parsa-fx") == 0 && j->cpus == 1,
	   "its partition, user and CPUs");
	j = by_name(jobs, n, "parsa-fx-full", -2);
	ok(j && j->cpus == 4, "a job of 4 CPUs");
	/* Running: full 4, array task 1, walltime, suspend, nodefail, requeue
	 * 1 each; pending and ended ones hold none. */
	is_int(slurm_outside_cpus(jobs, n, "parsa-runner", "debug"), 9, "others' running CPUs in debug");
	is_int(slurm_outside_cpus(jobs, n, "parsa-fx-full", "debug"), 5, "not those of the runner's own name");
	is_int(slurm_outside_cpus(jobs, n, "parsa-runner", "long"), 0, "none in another partition");

	j = by_name(jobs, n, "parsa-fx-mixed", 2);
	ok(j && j->array_job_id == 4 && j->job_id == 7 && j->task_hi == 2, "array task 4_2 has its own id 7");
	is_int(outcome(j, why, sizeof(why)), SLURM_FAILED, "a failed array task failed");
	is_str(why, "failed in Slurm (NonZeroExitCode)", "with squeue's reason (no exit code there)");

	j = by_name(jobs, n, "parsa-fx-array", 0);
	ok(j && j->job_id != 9 && j->array_job_id == 9, "the running task 9_0");
	is_int(outcome(j, why, sizeof(why)), SLURM_RUNNING, "RUNNING runs");
	j = by_name(jobs, n, "parsa-fx-array", 1);
	ok(j && j->job_id == 9 && j->task_lo == 1 && j->task_hi == 9 && j->task_throttle == 1,
	   "the pending range 9_[1-9%%1]: tasks 1-9, throttle 1, the array's own id");
	is_str(j ? j->tasks : NULL, "1-9", "its task list without the throttle");
	ok(j && slurm_job_has_task(j, 1) && slurm_job_has_task(j, 9) && !slurm_job_has_task(j, 0) &&
		   !slurm_job_has_task(j, 10), "covers tasks 1..9 only");
	is_int(outcome(j, why, sizeof(why)), SLURM_QUEUED, "pending tasks are queued");
	is_str(why, "waiting in Slurm: JobArrayTaskLimit", "waiting on the throttle");

	j = by_name(jobs, n, "parsa-fx-resources", -2);
	is_int(outcome(j, why, sizeof(why)), SLURM_QUEUED, "PENDING is queued");
	is_str(why, "waiting in Slurm: Resources", "Slurm's reason: Resources");
	j = by_name(jobs, n, "parsa-fx-notavail", -2);
	outcome(j, why, sizeof(why));
	is_str(why, "waiting in Slurm: Priority", "Slurm's reason: Priority");
	j = by_name(jobs, n, "parsa-fx-held", -2);
	outcome(j, why, sizeof(why));
	is_str(why, "waiting in Slurm: JobHeldUser", "held");
	j = by_name(jobs, n, "parsa-fx-begin", -2);
	outcome(j, why, sizeof(why));
	is_str(why, "waiting in Slurm: BeginTime", "a begin time");
	j = by_name(jobs, n, "parsa-fx-dependency", -2);
	outcome(j, why, sizeof(why));
	is_str(why, "waiting in Slurm: Dependency", "a dependency");
	ok(j && j->nodes[0] == '\0', "a pending job has no node");
	free(jobs);
	free(text);

	text = fixture("squeue-final.txt");
	is_int(slurm_parse_jobs(text, false, &jobs, &n, &err), 0, "squeue-final parses");
	j = by_name(jobs, n, "parsa-fx-walltime", -2);
	is_str(j ? j->state : NULL, "TIMEOUT", "the 1-minute job timed out");
	is_int(outcome(j, why, sizeof(why)), SLURM_FAILED, "TIMEOUT failed");
	is_str(why, "walltime exceeded in Slurm (TIMEOUT)", "walltime exceeded");
	j = by_name(jobs, n, "parsa-fx-nodefail", -2);
	is_str(j ? j->state : NULL, "NODE_FAIL", "n3 went down under it");
	is_int(outcome(j, why, sizeof(why)), SLURM_LOST, "NODE_FAIL is lost: retry");
	j = by_name(jobs, n, "parsa-fx-deadline", -2);
	is_int(outcome(j, why, sizeof(why)), SLURM_FAILED, "DEADLINE failed");
	j = by_name(jobs, n, "parsa-fx-priority", -2);
	is_int(outcome(j, why, sizeof(why)), SLURM_FAILED, "a pending job cancelled by its user failed");
	is_str(why, "cancelled in Slurm outside parsa", "cancelled (squeue does not say by whom)");
	free(jobs);
	free(text);
}

static void test_scontrol(void)
{
	char *text = fixture("scontrol-final.txt"), *err = NULL, why[512];
	struct slurm_job *jobs;
	const struct slurm_job *j;
	size_t n;

	is_int(slurm_parse_jobs(text, true, &jobs, &n, &err), 0, "scontrol-final parses");
	ok(n >= 20, "every job (%zu records)", n);
	j = by_name(jobs, n, "parsa-fx-ok", -2);
	ok(j && j->has_exit && j->exit_code == 0 && j->exit_signal == 0, "ExitCode=0:0");
	ok(j && strcmp(j->user, "parsa-fx") == 0 && strcmp(j->partition, "debug") == 0 && j->cpus == 1,
	   "UserId's name, Partition, NumCPUs");
	j = by_name(jobs, n, "parsa-fx-exit3", -2);
	ok(j && j->exit_code == 3 && j->exit_signal == 0, "ExitCode=3:0");
	is_int(outcome(j, why, sizeof(why)), SLURM_FAILED, "exit 3 failed");
	is_str(why, "exit code 3 in Slurm", "with its code");
	j = by_name(jobs, n, "parsa-fx-signal", -2);
	ok(j && j->exit_signal == 9, "ExitCode=0:9");
	outcome(j, why, sizeof(why));
	is_str(why, "killed by signal 9 in Slurm (JobLaunchFailure)", "killed by its signal");
	is_str(j ? j->nodes : NULL, "n1", "an ended job's node from NodeList, not ReqNodeList");
	j = by_name(jobs, n, "parsa-fx-mixed", 2);
	ok(j && j->array_job_id == 4 && j->exit_code == 7, "array task 4_2 exit 7");
	j = by_tasks(jobs, n, "parsa-fx-array", "2-9");
	ok(j && j->task_throttle == 1 && j->task_lo == 2, "the pending range ArrayTaskId=2-9%%1");
	j = by_name(jobs, n, "parsa-fx-array", 0);
	is_str(j ? j->state : NULL, "CANCELLED", "task 0 cancelled by root");
	ok(j && j->exit_signal == 15, "ExitCode=0:15");
	j = by_name(jobs, n, "parsa-fx-priority", -2);
	is_str(j ? j->reason : NULL, "Resources", "a cancelled pending job keeps its reason");
	j = by_name(jobs, n, "parsa-fx-requeue", -2);
	ok(j != NULL, "the requeued job is there");
	diag("requeue: %s %s", j ? j->state : "-", j ? j->reason : "-");
	free(jobs);
	free(text);

	text = fixture("scontrol-changed.txt");
	is_int(slurm_parse_jobs(text, true, &jobs, &n, &err), 0, "scontrol-changed parses");
	j = by_name(jobs, n, "parsa-fx-suspend", -2);
	is_str(j ? j->state : NULL, "SUSPENDED", "scontrol suspend");
	is_int(outcome(j, why, sizeof(why)), SLURM_RUNNING, "SUSPENDED still holds its place");
	is_str(why, "suspended in Slurm", "suspended");
	free(jobs);
	free(text);

	text = fixture("scontrol-nodefail.txt");
	is_int(slurm_parse_jobs(text, true, &jobs, &n, &err), 0, "scontrol-nodefail parses");
	j = by_name(jobs, n, "parsa-fx-nodefail", -2);
	is_str(j ? j->state : NULL, "NODE_FAIL", "NODE_FAIL");
	is_str(j ? j->reason : NULL, "NodeDown", "reason NodeDown");
	free(jobs);
	free(text);

	is_int(slurm_parse_jobs("No jobs in the system\n", true, &jobs, &n, &err), 0,
	       "scontrol's empty answer");
	ok(n == 0 && jobs == NULL, "is no job");
	is_int(slurm_parse_jobs("", false, &jobs, &n, &err), 0, "squeue's empty answer");
	is_int(slurm_parse_jobs("1|1|1|N/A|RUNNING|None|n1|debug|u|1|a\nbroken\n", false, &jobs, &n, &err), -1,
	       "a broken line is refused");
	ok(err && strstr(err, "line 2"), "naming the line: %s", err ? err : "(none)");
	free(err);
	err = NULL;
	is_int(slurm_parse_jobs("JobName=x JobState=RUNNING\n", true, &jobs, &n, &err), -1,
	       "a record without JobId is refused");
	free(err);
	err = NULL;
}

static void test_states(void)
{
	static const struct {
		const char *state;
		enum slurm_outcome want;
	} cases[] = {
		{ "PENDING", SLURM_QUEUED },	     { "CONFIGURING", SLURM_QUEUED },
		{ "REQUEUED", SLURM_QUEUED },	     { "REQUEUE_HOLD", SLURM_QUEUED },
		{ "RUNNING", SLURM_RUNNING },	     { "COMPLETING", SLURM_RUNNING },
		{ "SUSPENDED", SLURM_RUNNING },	     { "STOPPED", SLURM_RUNNING },
		{ "COMPLETED", SLURM_SUCCEEDED },    { "FAILED", SLURM_FAILED },
		{ "CANCELLED", SLURM_FAILED },	     { "CANCELLED by 1001", SLURM_FAILED },
		{ "TIMEOUT", SLURM_FAILED },	     { "OUT_OF_MEMORY", SLURM_FAILED },
		{ "DEADLINE", SLURM_FAILED },	     { "NODE_FAIL", SLURM_LOST },
		{ "PREEMPTED", SLURM_LOST },	     { "BOOT_FAIL", SLURM_LOST },
		{ "REQUEUE_FED", SLURM_QUEUED },     { "RESV_DEL_HOLD", SLURM_QUEUED },
		{ "POWER_UP_NODE", SLURM_QUEUED },   { "SIGNALING", SLURM_RUNNING },
		{ "RESIZING", SLURM_RUNNING },	     { "STAGE_OUT", SLURM_RUNNING },
		{ "UPDATE_DB", SLURM_RUNNING },	     { "SPECIAL_EXIT", SLURM_FAILED },
		{ "REVOKED", SLURM_LOST },
	};
	struct slurm_job j;
	struct slurm_verdict v;
	enum slurm_outcome o;
	size_t i;

	for (i = 0; i < ARRAY_LEN(cases); i++) {
		o = (enum slurm_outcome)-1;
		is_int(slurm_state_outcome(cases[i].state, &o), 0, "%s is known", cases[i].state);
		is_int(o, cases[i].want, "%s maps to %d", cases[i].state, cases[i].want);
	}
	errno = 0;
	is_int(slurm_state_outcome("EXPLODED", &o), -1, "an unknown state is refused");
	is_int(errno, EINVAL, "with EINVAL");
	is_int(slurm_state_outcome("RUN", &o), -1, "a prefix of a state is not the state");

	memset(&j, 0, sizeof(j));
	j.cancel_uid = -1;
	snprintf(j.state, sizeof(j.state), "CANCELLED by 1001");
	slurm_job_verdict(&j, &v);
	is_str(v.why, "cancelled in Slurm by uid 1001", "sacct's 'CANCELLED by UID' names who");
	snprintf(j.state, sizeof(j.state), "OUT_OF_MEMORY");
	slurm_job_verdict(&j, &v);
	is_str(v.why, "out of memory in Slurm (OUT_OF_MEMORY)", "out of memory");
	snprintf(j.state, sizeof(j.state), "PREEMPTED");
	slurm_job_verdict(&j, &v);
	is_str(v.why, "preempted in Slurm (PREEMPTED)", "preempted");
	snprintf(j.state, sizeof(j.state), "REQUEUED");
	snprintf(j.reason, sizeof(j.reason), "BeginTime");
	slurm_job_verdict(&j, &v);
	is_str(v.why, "requeued by Slurm: BeginTime", "requeued, with the reason");
	snprintf(j.state, sizeof(j.state), "COMPLETED");
	j.has_exit = true;
	j.exit_code = 2;
	slurm_job_verdict(&j, &v);
	is_int(v.outcome, SLURM_FAILED, "COMPLETED with a non-zero code believes the code");
	snprintf(j.state, sizeof(j.state), "WEIRD");
	is_int(slurm_job_verdict(&j, &v), -1, "an unknown state has no verdict");
	is_str(v.why, "unknown Slurm state 'WEIRD'", "but says which");
}

/* Every end state to what parsa records: the exit file decides unless Slurm
 * ended the job; else Slurm's words, and "lost" (retried) for the machinery. */
static void test_end_status(void)
{
	static const struct {
		const char *state;
		bool have_exit;
		int code;
		int want_code, want_signal;
		const char *want_reason; /* NULL: none */
	} cases[] = {
		{ "COMPLETED", true, 0, 0, 0, NULL },
		{ "FAILED", true, 7, 7, 0, NULL },
		{ "FAILED", false, 0, 0, SIGTERM, "slurm job 12: failed in Slurm" },
		{ "TIMEOUT", false, 0, 0, SIGTERM, "slurm job 12: walltime exceeded in Slurm (TIMEOUT)" },
		/* The wrapper wrote 143 as Slurm's SIGTERM reached the command. */
		{ "TIMEOUT", true, 143, 0, SIGTERM, "slurm job 12: walltime exceeded in Slurm (TIMEOUT)" },
		{ "TIMEOUT", true, 0, 0, 0, NULL },
		{ "OUT_OF_MEMORY", false, 0, 0, SIGTERM,
		  "out of memory in Slurm (OUT_OF_MEMORY), slurm job 12" },
		{ "CANCELLED", false, 0, 0, SIGTERM, "slurm job 12: cancelled in Slurm outside parsa" },
		{ "DEADLINE", false, 0, 0, SIGTERM, "slurm job 12: its deadline passed in Slurm (DEADLINE)" },
		{ "NODE_FAIL", false, 0, 0, SIGKILL,
		  "lost: slurm job 12: its Slurm node failed (NODE_FAIL), and no exit code" },
		{ "NODE_FAIL", true, 1, 0, SIGKILL, "lost: slurm job 12: its Slurm node failed (NODE_FAIL)" },
		{ "NODE_FAIL", true, 0, 0, 0, NULL },
		{ "PREEMPTED", false, 0, 0, SIGKILL,
		  "lost: slurm job 12: preempted in Slurm (PREEMPTED), and no exit code" },
		{ "BOOT_FAIL", false, 0, 0, SIGKILL,
		  "lost: slurm job 12: its Slurm node failed to boot (BOOT_FAIL), and no exit code" },
		/* COMPLETED with no exit file: the grace passed (slurm_poll.c). */
		{ "COMPLETED", false, 0, 0, SIGKILL, "lost: slurm job 12 ended in Slurm and left no exit code" },
	};
	struct slurm_job j;
	struct slurm_verdict v;
	int code, sig;
	char *reason;

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		memset(&j, 0, sizeof(j));
		j.cancel_uid = -1;
		snprintf(j.state, sizeof(j.state), "%s", cases[i].state);
		is_int(slurm_job_verdict(&j, &v), 0, "%s has a verdict", cases[i].state);
		slurm_end_status("12", &v, cases[i].have_exit, cases[i].code, &code, &sig, &reason);
		ok(code == cases[i].want_code && sig == cases[i].want_signal,
		   "%s%s %d: exit %d signal %d", cases[i].state, cases[i].have_exit ? " with exit file" : "",
		   cases[i].code, code, sig);
		if (cases[i].want_reason)
			is_str(reason, cases[i].want_reason, "%s: the reason", cases[i].state);
		else
			ok(reason == NULL, "%s: no reason beyond the code (%s)", cases[i].state,
			   reason ? reason : "");
		free(reason);
	}
	slurm_end_status("12", NULL, false, 0, &code, &sig, &reason);
	ok(sig == SIGKILL, "gone from squeue without an exit file: lost");
	is_str(reason, "lost: slurm job 12 is gone from squeue and left no exit code", "saying so");
	free(reason);
	slurm_end_status("12", NULL, true, 3, &code, &sig, &reason);
	ok(code == 3 && sig == 0 && !reason, "gone from squeue with an exit file: its code");
	free(reason);
}

static void test_sinfo(void)
{
	char *text = fixture("sinfo-part-live.txt"), *line, *save = NULL, *err = NULL;
	struct slurm_partition_line p;
	long total = 0, idle = 0;
	int lines = 0;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (slurm_sinfo_parse_line(line, &p, &err) < 0) {
			ok(0, "sinfo line '%s': %s", line, err);
			continue;
		}
		lines++;
		total += p.cpus_total;
		idle += p.cpus_idle;
		ok(strcmp(p.name, "debug") == 0 && p.is_default && p.up, "partition debug, default, up");
	}
	ok(lines >= 1, "%d lines", lines);
	is_int(total, 12, "three nodes of 4 CPUs");
	ok(idle >= 0 && idle < 12, "some CPUs busy (%ld idle)", idle);
	free(text);
	is_int(slurm_sinfo_parse_line("debug*|up|1/3/0/4|4000+|2|mixed|n[1-2]", &p, &err), 0,
	       "memory that differs between nodes");
	is_int(p.mem_mb, 4000, "the smallest");
	is_int(slurm_sinfo_parse_line("debug|up|1/3/4|4000|2|mixed|n1", &p, &err), -1,
	       "three CPU counts are refused");
	free(err);
}

static void test_split(void)
{
	struct slurm_chunk ch[8];
	struct slurm_limits lim = { .max_array_size = 1001, .submit_room = -1 };
	long left = -1;

	is_int(slurm_split(0, 2500, &lim, 0, ch, 8, &left), 3, "2500 instances: 3 arrays of <= 1001");
	ok(ch[0].first == 0 && ch[0].count == 1001 && strcmp(ch[0].spec, "0-1000") == 0, "0-1000 from 0");
	ok(ch[1].first == 1001 && ch[1].count == 1001, "the second from 1001");
	ok(ch[2].first == 2002 && ch[2].count == 498 && strcmp(ch[2].spec, "0-497") == 0,
	   "the rest: 0-497 from 2002");
	is_int(left, 0, "nothing left");

	lim.max_array_size = 10;
	is_int(slurm_split(100, 25, &lim, 4, ch, 8, &left), 3, "MaxArraySize 10: 3 arrays");
	is_str(ch[0].spec, "0-9%4", "with the throttle");
	ok(ch[2].first == 120 && ch[2].count == 5, "offsets past the first instance");

	lim.submit_room = 12;
	is_int(slurm_split(0, 25, &lim, 0, ch, 8, &left), 2, "room for 12 jobs: 2 arrays");
	ok(ch[1].count == 2, "the second only 2 tasks");
	is_int(left, 13, "13 wait for room (a limit, not a failure)");

	lim.submit_room = 0;
	is_int(slurm_split(0, 5, &lim, 0, ch, 8, &left), 0, "no room: nothing now");
	is_int(left, 5, "all 5 wait");

	lim.submit_room = -1;
	lim.max_array_size = 1;
	is_int(slurm_split(7, 3, &lim, 0, ch, 2, &left), 2, "room for 2 chunks of 1");
	ok(strcmp(ch[0].spec, "0") == 0 && ch[1].first == 8, "single tasks: spec 0");
	is_int(left, 1, "one left for the next call");

	lim.max_array_size = 0;
	is_int(slurm_split(0, 1001, &lim, 0, ch, 8, &left), 1, "MaxArraySize 0 is Slurm's default 1001");
	is_int(slurm_split(0, 1002, NULL, 0, ch, 8, &left), 2, "and so are no limits");
	is_int(slurm_split(0, 0, &lim, 0, ch, 8, &left), 0, "no instances, no arrays");
	errno = 0;
	is_int(slurm_split(-1, 3, &lim, 0, ch, 8, &left), -1, "a negative first is refused");
	is_int(errno, EINVAL, "with EINVAL");
	is_int(slurm_split(0, 3, &lim, 0, ch, 0, &left), -1, "no room for a chunk is refused");
}

static const char *find_arg(char **argv, const char *prefix)
{
	size_t i;

	for (i = 0; argv && argv[i]; i++)
		if (strncmp(argv[i], prefix, strlen(prefix)) == 0)
			return argv[i];
	return NULL;
}

static void test_argv(void)
{
	struct slurm_submit s = {
		.script = "/var/lib/parsa/wrap.sh", .job_name = "parsa-r1-j12-align",
		.cpus = 4, .mem_mb = 2048, .walltime_s = 3601, .gpus = 1,
		.partition = "gpu", .account = "lab", .qos = "",
		.log_path = "/vol/logs/align.%a.log", .array_spec = "0-999%50",
	};
	char **argv, *err = NULL;
	size_t n;

	argv = slurm_sbatch_argv(&s, &err);
	ok(argv != NULL, "an array's argv");
	is_str(argv[0], "sbatch", "sbatch");
	is_str(argv[1], "--parsable", "--parsable");
	is_str(find_arg(argv, "--job-name="), "--job-name=parsa-r1-j12-align", "the name");
	is_str(find_arg(argv, "--array="), "--array=0-999%50", "the array");
	is_str(find_arg(argv, "--cpus-per-task="), "--cpus-per-task=4", "cpus");
	is_str(find_arg(argv, "--mem="), "--mem=2048M", "mem in MB");
	is_str(find_arg(argv, "--time="), "--time=0-01:01:00", "3601 s rounds up to 61 minutes");
	is_str(find_arg(argv, "--gres="), "--gres=gpu:1", "gpus");
	is_str(find_arg(argv, "--partition="), "--partition=gpu", "partition");
	is_str(find_arg(argv, "--account="), "--account=lab", "account");
	ok(find_arg(argv, "--qos") == NULL, "an empty QOS is not passed");
	is_str(find_arg(argv, "--output="), "--output=/vol/logs/align.%a.log", "the log");
	is_str(find_arg(argv, "--error="), "--error=/vol/logs/align.%a.log", "stderr to the same log");
	ok(find_arg(argv, "--no-requeue") != NULL, "--no-requeue by default");
	is_str(find_arg(argv, "--export="), "--export=NONE", "--export=NONE by default");
	for (n = 0; argv[n]; n++)
		;
	is_str(argv[n - 1], "/var/lib/parsa/wrap.sh", "the script last");
	slurm_argv_free(argv);

	memset(&s, 0, sizeof(s));
	s.script = "w.sh";
	s.allow_requeue = true;
	s.export_vars = "ALL,PARSA_JOB=12";
	s.walltime_s = 2 * 86400;
	argv = slurm_sbatch_argv(&s, &err);
	ok(argv && find_arg(argv, "--requeue") && !find_arg(argv, "--no-requeue"),
	   "--requeue when the operator allows it");
	ok(argv && !find_arg(argv, "--array") && !find_arg(argv, "--cpus") && !find_arg(argv, "--mem") &&
		   !find_arg(argv, "--gres") && !find_arg(argv, "--partition") && !find_arg(argv, "--output"),
	   "a single job with Slurm's defaults");
	is_str(argv ? find_arg(argv, "--export=") : NULL, "--export=ALL,PARSA_JOB=12", "--export as given");
	is_str(argv ? find_arg(argv, "--time=") : NULL, "--time=2-00:00:00", "two days");
	slurm_argv_free(argv);

	s.job_name = "a\nb";
	errno = 0;
	ok(slurm_sbatch_argv(&s, &err) == NULL && errno == EINVAL, "a newline in the name is refused");
	ok(err && strstr(err, "job name"), "saying which: %s", err ? err : "(none)");
	s.job_name = NULL;
	s.cpus = -1;
	ok(slurm_sbatch_argv(&s, &err) == NULL, "negative cpus are refused");
	s.cpus = 0;
	s.script = NULL;
	ok(slurm_sbatch_argv(&s, &err) == NULL, "no script is refused");
	s.script = "w.sh";
	s.partition = "a b";
	ok(slurm_sbatch_argv(&s, &err) == NULL, "a blank in the partition is refused");
	free(err);
}

static void test_sbatch_answers(void)
{
	char *text = fixture("sbatch-parsable.txt");
	uint64_t id = 0;

	is_str(text, "JOBID\n", "the fixture keeps the answer's shape");
	free(text);
	is_int(slurm_parse_sbatch_id("123\n", &id), 0, "123");
	is_int(id, 123, "is job 123");
	is_int(slurm_parse_sbatch_id("77;cluster2\n", &id), 0, "a cluster after ';'");
	is_int(id, 77, "is job 77");
	is_int(slurm_parse_sbatch_id("sbatch: error: Batch job submission failed\n", &id), -1,
	       "an error is no id");
	is_int(slurm_parse_sbatch_id("", &id), -1, "nothing is no id");
	text = fixture("sacct-disabled.txt");
	ok(strstr(text, "accounting storage is disabled") != NULL,
	   "sacct without slurmdbd says accounting is disabled");
	free(text);
	text = fixture("sbatch-array-too-big.txt");
	is_int(slurm_sbatch_refusal(text), SLURM_REFUSED_ARRAY, "an array past MaxArraySize: split smaller");
	free(text);
	text = fixture("sbatch-max-job-count.txt");
	is_int(slurm_sbatch_refusal(text), SLURM_REFUSED_BUSY, "slurmctld at MaxJobCount: retry later");
	free(text);
	text = fixture("sbatch-bad-partition.txt");
	is_int(slurm_sbatch_refusal(text), SLURM_REFUSED_ERROR, "a partition that does not exist: an error");
	free(text);
	is_int(slurm_sbatch_refusal("sbatch: error: Batch job submission failed: Job violates "
				    "accounting/QOS policy (job submit limit, user's size and/or time limits)\n"),
	       SLURM_REFUSED_LIMIT, "MaxSubmitJobs: wait for room");
	is_int(slurm_sbatch_refusal("sbatch: error: QOSMaxSubmitJobPerUserLimit\n"), SLURM_REFUSED_LIMIT,
	       "a QOS's submit limit: wait");
}

int main(void)
{
	test_squeue();
	test_scontrol();
	test_states();
	test_end_status();
	test_sinfo();
	test_split();
	test_argv();
	test_sbatch_answers();
	return done_testing();
}
