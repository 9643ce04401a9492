/* The Slurm executor without a Slurm: its pure pieces (path map, exit file,
 * wrapper text), then start, tick, signal and reattach against fake sbatch,
 * squeue and scancel scripts first in PATH, with the wrapper itself run by sh
 * as a compute node would. */
#include "executor_slurm.h"
#include "proto.h"
#include "slurm_run.h"
#include "slurm_wrapper.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

static char tmp[256];

struct seen {
	int calls;
	struct exec_status last;
	void *owner;
};

static void changed(void *arg, void *owner, const struct exec_status *st, int64_t now_ms)
{
	struct seen *s = arg;

	(void)now_ms;
	s->calls++;
	exec_status_clear(&s->last);
	s->last = *st;
	s->last.reason = st->reason ? xstrdup(st->reason) : NULL;
	s->owner = owner;
}

static void write_script(const char *name, const char *body)
{
	char *path = xasprintf("%s/bin/%s", tmp, name);
	FILE *f = fopen(path, "w");

	fprintf(f, "#!/bin/sh\n%s", body);
	fclose(f);
	chmod(path, 0755);
	free(path);
}

static void set_squeue(const char *text)
{
	char *path = xasprintf("%s/squeue.txt", tmp);
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
	free(path);
}

static char *slurp(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name);
	char *text = read_file(path, 1 << 20, NULL);

	free(path);
	return text ? text : xstrdup("");
}

static void rm_slurm_job(const char *dir)
{
	char *path = xasprintf("%s/slurm_job", dir);

	unlink(path);
	free(path);
}

static void write_file_in(const char *dir, const char *name, const char *text)
{
	char *path = xasprintf("%s/%s", dir, name);
	FILE *f = fopen(path, "w");

	fputs(text, f);
	fclose(f);
	free(path);
}

static void test_pure(void)
{
	struct assignment a = { .id = 5, .attempt = 2, .job = 7, .stage = "st", .index = 3, .item = "warm/x y",
				.run = "echo 'it''s' \"$PARSA_INDEX\"", .cpus = 1 };
	char *env[] = { "FOO=a'b", "PARSA_INDEX=99" };
	char *p, *w;
	int64_t t0, t1;
	int code = -1;

	a.env = env;
	a.nenv = 2;
	p = slurm_map_path("/parsa/jobs/7", "/parsa", "/mnt/parsa");
	is_str(p, "/mnt/parsa/jobs/7", "a path under FROM is mapped");
	free(p);
	p = slurm_map_path("/parsafs/jobs", "/parsa", "/mnt/parsa");
	is_str(p, "/parsafs/jobs", "only whole components are mapped");
	free(p);
	p = slurm_map_path("/parsa", NULL, NULL);
	is_str(p, "/parsa", "no map: the same path");
	free(p);
	p = slurm_exit_path("/parsa", &a);
	is_str(p, "/parsa/jobs/7/out/st/.parsa-exit.3.2", "the exit file is in the stage's out folder, per attempt");
	free(p);
	p = slurm_progress_path("/parsa", &a);
	is_str(p, "/parsa/jobs/7/out/st/.parsa-progress.3.2", "the progress file is beside it, per attempt");
	free(p);
	ok(slurm_exit_parse("0\n", &code, &t0, &t1) == 0 && code == 0 && t0 == 0 && t1 == 0, "exit file 0");
	ok(slurm_exit_parse("137 1700000000000 1700000001500\n", &code, &t0, &t1) == 0 && code == 137 &&
	   t0 == 1700000000000 && t1 == 1700000001500, "exit file 137 with the node's start and end");
	ok(slurm_exit_parse("3 %3N x\n", &code, &t0, &t1) == 0 && code == 3 && t0 == 0 && t1 == 0,
	   "times a date could not write are left out");
	ok(slurm_exit_parse("13", &code, &t0, &t1) < 0, "a file without its newline is not complete");
	ok(slurm_exit_parse("", &code, &t0, &t1) < 0 && slurm_exit_parse("x\n", &code, &t0, &t1) < 0 &&
	   slurm_exit_parse("300\n", &code, &t0, &t1) < 0, "garbage is refused");
	w = slurm_wrapper_text(&a, "/mnt/parsa");
	ok(strstr(w, "export FOO='a'\\''b'\n") != NULL, "the stage's variables, quoted");
	ok(strstr(w, "export PARSA_INDEX='3'\n") != NULL &&
	   strstr(w, "export PARSA_INDEX='3'\n") > strstr(w, "PARSA_INDEX='99'"),
	   "PARSA_ variables after the stage's own");
	ok(strstr(w, "export PARSA_OUT='/mnt/parsa/jobs/7/out/st'\n") != NULL, "PARSA_OUT as the nodes see it");
	ok(strstr(w, "export PARSA_ITEM='/mnt/parsa/jobs/7/out/warm/x y'\n") != NULL, "PARSA_ITEM");
	ok(strstr(w, "export PARSA_JOBDIR='/mnt/parsa/jobs/7'\n") != NULL, "PARSA_JOBDIR");
	ok(strstr(w, "log='/mnt/parsa/jobs/7/stages/st/instances/3/log'") != NULL, "the instance's log");
	ok(strstr(w, "exit_file='/mnt/parsa/jobs/7/out/st/.parsa-exit.3.2'") != NULL, "the exit file");
	ok(strstr(w, "export PARSA_PROGRESS='/mnt/parsa/jobs/7/out/st/.parsa-progress.3.2'\n") != NULL,
	   "PARSA_PROGRESS on the volume as the nodes see it");
	ok(strstr(w, "true >\"$PARSA_PROGRESS\"\n") != NULL &&
	   strstr(w, "true >\"$PARSA_PROGRESS\"\n") < strstr(w, "/bin/sh -c \"$run\""),
	   "the progress file is made before the stage runs");
	free(w);
}

/* --slurm-path-map to the storage volume itself (a kernel NFS mount of the
 * export): no jobs/ID/stages/ there, so the wrapper appends to the log where
 * the volume keeps it, jobs/ID/log/S/I.log, making its folder. */
static void test_volume_wrapper(void)
{
	struct assignment a = { .id = 5, .attempt = 2, .job = 7, .stage = "st", .index = 3, .item = "",
				.run = "echo ran in \"$PARSA_OUT\"; exit 4", .cpus = 1 };
	char *vol = xasprintf("%s/vol", tmp), *w = slurm_wrapper_text(&a, vol), *cmd, *text, *want;
	FILE *f;

	cmd = xasprintf("mkdir -p %s/jobs/7/out/st", vol);
	ok(system(cmd) == 0, "a volume with the job's out folder");
	free(cmd);
	cmd = xasprintf("%s/wrapper-vol.sh", tmp);
	f = fopen(cmd, "w");
	ok(f && fputs(w, f) >= 0 && fclose(f) == 0, "wrapper written");
	free(cmd);
	cmd = xasprintf("SLURM_JOB_ID=55 TMPDIR=%s sh %s/wrapper-vol.sh", tmp, tmp);
	is_int(WEXITSTATUS(system(cmd)), 4, "the wrapper ran the stage on the volume");
	free(cmd);
	text = slurp(vol, "jobs/7/log/st/3.log");
	want = xasprintf("ran in %s/jobs/7/out/st\n", vol);
	is_str(text, want, "its log is the volume's jobs/7/log/st/3.log");
	free(text);
	free(want);
	text = slurp(vol, "jobs/7/out/st/.parsa-exit.3.2");
	ok(text && strncmp(text, "4 ", 2) == 0, "the exit file in the stage's out folder");
	free(text);
	free(w);
	free(vol);
}

static json_t *identity(void);

/* What sbatch gets from the stage: walltime as --time in whole minutes, gpus,
 * and slurm.partition/account/qos over the runner's own; --requeue only when
 * the operator allowed it. And the walltime backstop behind Slurm's limit. */
static void test_overrides(void)
{
	struct executor_slurm_config cfg = { .runner = "t3", .partition = "debug", .account = "runners",
					     .qos = "normal", .allow_requeue = true };
	struct assignment a = { .id = 30, .attempt = 1, .job = 7, .stage = "st", .index = 1, .item = "",
				.run = "true", .cpus = 1, .user = "me", .walltime_s = 70, .gpus = 2,
				.slurm = { .partition = "long", .qos = "high" } };
	struct executor *e = executor_slurm_create(&cfg, NULL);
	struct seen seen = { 0 };
	struct executor_job *j;
	struct executor_start req;
	char *err = NULL, *dir = xasprintf("%s/state/30.1", tmp), *mount = xasprintf("%s/mnt", tmp), *text;
	json_t *json = assignment_to_json(&a);
	int owner;

	executor_set_callback(e, changed, &seen);
	req = (struct executor_start){ .dir = dir, .assignment = json, .mount = mount, .scratch = tmp,
				       .identity = identity() };
	j = executor_start(e, &req, &owner, &err);
	ok(j != NULL, "started: %s", j ? "" : err);
	executor_tick(e, time_mono_ms() + 1000);
	text = slurp(tmp, "sbatch.args");
	ok(text && strstr(text, "--time=0-00:02:00\n"), "walltime 70 s: --time of 2 minutes");
	ok(text && strstr(text, "--gres=gpu:2\n"), "gpus: --gres=gpu:2");
	ok(text && strstr(text, "--partition=long\n") && !strstr(text, "--partition=debug"),
	   "the stage's partition over the runner's");
	ok(text && strstr(text, "--qos=high\n") && !strstr(text, "--qos=normal"), "the stage's QOS over the runner's");
	ok(text && strstr(text, "--account=runners\n"), "the runner's account where the stage names none");
	ok(text && strstr(text, "--requeue\n") && !strstr(text, "--no-requeue"), "--requeue when allowed");
	free(text);
	is_int(executor_walltime_ms(e, 70), 120000 + 90000, "parsa's own kill: Slurm's 2 minutes, and 90 s more");
	if (j) {
		executor_forget(e, j);
		executor_release(e, j);
	}
	executor_destroy(e);
	json_decref(json);
	free(err);
	free(dir);
	free(mount);
	/* The next tests count job ids from the fake sbatch's first. */
	text = xasprintf("%s/sbatch.n", tmp);
	unlink(text);
	free(text);
}

static json_t *identity(void)
{
	return json_pack("{s:b, s:i, s:i, s:[], s:s, s:s, s:s}", "change", 0, "uid", (int)getuid(), "gid",
			 (int)getgid(), "groups", "user", "me", "home", tmp, "shell", "/bin/sh");
}

static void test_cycle(void)
{
	struct executor_slurm_config cfg = { .runner = "t1", .partition = "debug", .lost_grace_ms = 1000 };
	struct assignment a = { .id = 5, .attempt = 2, .job = 7, .stage = "st", .index = 3, .item = "",
				.run = "echo ran; exit 3", .cpus = 2, .mem = 100 << 20, .user = "me" };
	struct seen seen = { 0 };
	struct executor *e;
	struct executor_job *j, *j2, *j3;
	struct executor_facts facts;
	struct executor_start req;
	struct slurm_rpc_counts c;
	struct exec_status st;
	char *err = NULL, *dir = xasprintf("%s/state/5.2", tmp), *mount = xasprintf("%s/mnt", tmp);
	char *text, *cmd, *batch;
	json_t *json = assignment_to_json(&a), *back = NULL;
	int64_t now = time_mono_ms(), next;
	int owner1, owner2, owner3;

	e = executor_slurm_create(&cfg, &err);
	ok(e != NULL, "created");
	executor_set_callback(e, changed, &seen);
	req = (struct executor_start){ .dir = dir, .assignment = json, .mount = mount, .scratch = tmp,
				       .identity = identity() };
	j = executor_start(e, &req, &owner1, &err);
	ok(j != NULL, "started: %s", j ? "" : err);
	if (!j)
		return;
	is_str(executor_job_id(e, j), "", "queued for the cycle's sbatch calls");
	text = slurp(dir, "slurm_batch");
	ok(*text == '\0' && access(dir, F_OK) == 0, "DIR says it was never handed to Slurm yet");
	free(text);
	next = executor_tick(e, now);
	ok(next > now && next <= now + 1000, "submitted within the gather time, not at once");
	executor_tick(e, now + 1000);
	is_str(executor_job_id(e, j), "101", "the job id sbatch said");
	text = slurp(dir, "slurm_job");
	is_str(text, "101\n", "recorded in DIR");
	free(text);
	batch = slurp(dir, "slurm_batch");
	ok(strncmp(batch, "parsa:t1:", 9) == 0 && strstr(batch, " -1\n"), "its tag was recorded before (%s)", batch);
	text = slurp(tmp, "sbatch.args");
	*strchr(batch, ' ') = '\0';
	cmd = xasprintf("--comment=%s\n", batch);
	ok(strstr(text, "--parsable") && strstr(text, "--job-name=parsa-t1") && strstr(text, "--partition=debug") &&
	   strstr(text, "--cpus-per-task=2") && strstr(text, "--no-requeue") && strstr(text, "--export=NONE") &&
	   strstr(text, cmd) && !strstr(text, "--array"), "a plain job's arguments, the batch's tag last");
	free(cmd);
	free(text);
	free(batch);
	text = slurp(tmp, "sbatch.script");
	ok(strstr(text, "export PARSA_INDEX='3'") != NULL, "the wrapper went to sbatch on stdin");
	free(text);
	is_int(executor_tick(e, now + 1000) > 0, 1, "a deadline while a job is watched");

	ok(executor_facts(e, &facts) && facts.pending == 1 && facts.running == 0 && facts.last_poll_ms == 0 &&
	   facts.partition && strcmp(facts.partition, "debug") == 0, "facts: one pending, no poll yet");
	set_squeue("101|101|101|N/A|PENDING|Priority||debug|me|2|parsa-t1\n");
	executor_tick(e, now + 2000);
	ok(seen.calls == 1 && seen.last.state == EXEC_STARTING && seen.last.reason &&
	   strcmp(seen.last.reason, "Priority") == 0, "queued: still starting, with Slurm's reason");
	executor_facts(e, &facts);
	ok(facts.last_poll_ms > 0 && facts.last_poll_ms <= time_now_ms() && !facts.poll_error,
	   "facts: the poll's time, no error");
	seen.calls = 0;
	set_squeue("101|101|101|N/A|RUNNING|None|n1|debug|me|2|parsa-t1\n");
	executor_tick(e, now + 4000);
	ok(seen.calls == 1 && seen.last.state == EXEC_RUNNING && seen.owner == &owner1, "running");
	executor_facts(e, &facts);
	ok(facts.pending == 0 && facts.running == 1, "facts: one running");
	/* squeue fails once: the facts say why, and keep the last good poll. */
	text = xasprintf("%s/squeue.txt", tmp);
	unlink(text);
	free(text);
	executor_tick(e, now + 5000);
	executor_facts(e, &facts);
	ok(facts.poll_error && strstr(facts.poll_error, "squeue (status 1)") && facts.last_poll_ms > 0 &&
	   facts.poll_error[strlen(facts.poll_error) - 1] != '\n', "facts: the poll error (%s)",
	   facts.poll_error ? facts.poll_error : "none");
	set_squeue("101|101|101|N/A|RUNNING|None|n1|debug|me|2|parsa-t1\n");
	/* The node runs the wrapper; it ends with 3. */
	cmd = xasprintf("SLURM_JOB_ID=101 TMPDIR=%s sh %s/wrapper.sh", tmp, dir);
	is_int(WEXITSTATUS(system(cmd)), 3, "the wrapper exits with the stage's code");
	free(cmd);
	text = slurp(mount, "jobs/7/stages/st/instances/3/log");
	is_str(text, "ran\n", "the stage wrote to its log");
	free(text);
	set_squeue("101|101|101|N/A|FAILED|NonZeroExitCode|n1|debug|me|2|parsa-t1\n");
	executor_tick(e, now + 6000);
	ok(seen.calls == 2 && seen.last.state == EXEC_EXITED && seen.last.exit_code == 3 && seen.last.signal == 0,
	   "ended: the exit code from the wrapper's file (%d)", seen.last.exit_code);
	ok(seen.last.started_ms > 0 && seen.last.ended_ms >= seen.last.started_ms &&
	   seen.last.ended_ms <= time_now_ms(), "with the node's start and end times");
	executor_forget(e, j);
	ok(access(dir, F_OK) < 0, "forget removes DIR");
	text = slurp(mount, "jobs/7/out/st/.parsa-exit.3.2");
	is_str(text, "", "and the exit file");
	free(text);
	executor_release(e, j);

	/* A cancelled one, and one lost. */
	json_decref(json);
	a.index = 4;
	a.id = 6;
	json = assignment_to_json(&a);
	free(dir);
	dir = xasprintf("%s/state/6.2", tmp);
	req.dir = dir;
	req.assignment = json;
	req.identity = identity();
	j2 = executor_start(e, &req, &owner2, &err);
	a.index = 5;
	a.id = 8;
	json_decref(json);
	json = assignment_to_json(&a);
	req.dir = xasprintf("%s/state/8.2", tmp);
	req.assignment = json;
	req.identity = identity();
	j3 = executor_start(e, &req, &owner3, &err);
	ok(j2 && j3, "two more started");
	if (!j2 || !j3)
		return;
	set_squeue("");
	executor_tick(e, time_mono_ms() + 1000);
	ok(strcmp(executor_job_id(e, j2), "102_0") == 0 && strcmp(executor_job_id(e, j3), "102_1") == 0,
	   "two of a kind: one array, a task each (%s, %s)", executor_job_id(e, j2), executor_job_id(e, j3));
	text = slurp(tmp, "sbatch.args");
	ok(strstr(text, "--array=0-1\n") != NULL, "sbatch --array=0-1");
	free(text);
	text = slurp(tmp, "sbatch.script");
	ok(strstr(text, "case \"$SLURM_ARRAY_TASK_ID\" in") && strstr(text, "PARSA_INDEX='4'") &&
	   strstr(text, "PARSA_INDEX='5'"), "the array's script holds both wrappers");
	free(text);
	text = slurp(req.dir, "slurm_job");
	is_str(text, "102_1\n", "each DIR records its task");
	free(text);
	ok(executor_signal(e, j2, SIGTERM) == 0, "signal asks for a scancel");
	set_squeue("102_0|103|102|0|CANCELLED|None|n1|debug|me|2|parsa-t1\n");
	seen.calls = 0;
	executor_tick(e, now + 8000);
	text = slurp(tmp, "scancel.args");
	is_str(text, "102_0\n", "one scancel with the task's id");
	free(text);
	ok(seen.calls == 1 && seen.owner == &owner2 && seen.last.signal == SIGTERM && seen.last.reason &&
	   strstr(seen.last.reason, "slurm job 102_0"), "cancelled: ended by a signal, Slurm's reason: %s",
	   seen.last.reason ? seen.last.reason : "");
	ok(executor_signal(e, j2, SIGKILL) < 0 && errno == ESRCH, "an ended job: ESRCH");
	executor_tick(e, now + 10000);
	ok(seen.calls == 2 && seen.owner == &owner3 && seen.last.signal == SIGKILL && seen.last.reason &&
	   strstr(seen.last.reason, "lost"), "gone from squeue without an exit file: lost after the grace time");
	executor_slurm_counts(e, &c);
	ok(c.sbatch == 2 && c.scancel == 1 && c.squeue >= 4 && c.squeue <= 7 && c.scontrol == 1,
	   "calls counted: %lu sbatch %lu squeue %lu scancel %lu scontrol", (unsigned long)c.sbatch,
	   (unsigned long)c.squeue, (unsigned long)c.scancel, (unsigned long)c.scontrol);
	executor_release(e, j2);

	/* A new runner finds 8.2's job by its recorded id. */
	executor_release(e, j3);
	executor_destroy(e);
	e = executor_slurm_create(&cfg, &err);
	executor_set_callback(e, changed, &seen);
	j3 = executor_reattach(e, req.dir, &owner3, &back, &st, &err);
	ok(j3 && st.state == EXEC_STARTING, "reattached");
	if (j3) {
		is_str(executor_job_id(e, j3), "102_1", "with its array task");
		ok(json_equal(back, json), "and its assignment");
		set_squeue("102_1|104|102|1|RUNNING|None|n1|debug|me|2|parsa-t1\n");
		executor_tick(e, time_mono_ms() + 1000);
		ok(seen.calls == 3 && seen.last.state == EXEC_RUNNING, "the next squeue says it runs");
		executor_release(e, j3);
	}
	exec_status_clear(&st);
	exec_status_clear(&seen.last);
	json_decref(back);
	executor_destroy(e);
	e = executor_slurm_create(&cfg, &err);
	free(err);
	err = NULL;
	ok(executor_reattach(e, tmp, NULL, &back, &st, &err) == NULL, "a folder without a job id is refused");
	/* Killed between sbatch and recording the id: found by its batch's tag. */
	cmd = xasprintf("mkdir %s/state/9.1 && cp %s/state/8.2/assignment.json %s/state/8.2/mount %s/state/9.1/",
			tmp, tmp, tmp, tmp);
	is_int(system(cmd), 0, "a folder without slurm_batch nor slurm_job");
	free(cmd);
	cmd = xasprintf("%s/state/9.1", tmp);
	free(err);
	err = NULL;
	j3 = executor_reattach(e, cmd, &owner3, &back, &st, &err);
	ok(j3 == NULL && err && strstr(err, "never handed"),
	   "a start still queued when the runner stopped: nothing in Slurm, refused (%s)", err ? err : "");
	free(err);
	err = NULL;
	write_file_in(cmd, "slurm_batch", "parsa:t1:9.9.9 3\n");
	set_squeue("102|parsa:t1:1.1.1\n105|parsa:t1:9.9.9\n");
	j3 = executor_reattach(e, cmd, &owner3, &back, &st, &err);
	ok(j3 && strcmp(executor_job_id(e, j3), "105_3") == 0,
	   "an array sbatch took but DIR lacks is found by its comment: task 3 of 105");
	text = slurp(cmd, "slurm_job");
	is_str(text, "105_3\n", "and recorded");
	free(text);
	executor_release(e, j3);
	json_decref(back);
	executor_destroy(e);
	e = executor_slurm_create(&cfg, &err);
	set_squeue("102|parsa:t1:1.1.1\n");
	rm_slurm_job(cmd);
	ok(executor_reattach(e, cmd, &owner3, &back, &st, &err) == NULL, "its tag not in squeue: refused");
	free(cmd);
	executor_destroy(e);
	free((char *)req.dir);
	json_decref(json);
	free(dir);
	free(mount);
	free(err);
}

static void refuse(const char *text)
{
	char *path = xasprintf("%s/sbatch.refuse", tmp);
	FILE *f;

	if (text) {
		f = fopen(path, "w");
		fputs(text, f);
		fclose(f);
	} else {
		unlink(path);
	}
	free(path);
}

/* sbatch refusals: busy or at a limit, the start waits and is tried again;
 * wrong for good, it fails; a waiting start that is stopped is dropped. */
static void test_refused(void)
{
	struct executor_slurm_config cfg = { .runner = "t2" };
	struct assignment a = { .id = 20, .attempt = 1, .job = 7, .stage = "st", .index = 9, .item = "",
				.run = "true", .cpus = 1, .user = "me" };
	struct seen seen = { 0 };
	struct executor *e = executor_slurm_create(&cfg, NULL);
	struct executor_job *j, *j2;
	struct executor_start req;
	char *err = NULL, *dir = xasprintf("%s/state/20.1", tmp), *mount = xasprintf("%s/mnt", tmp), *text;
	char *dir2 = xasprintf("%s/state/21.1", tmp);
	struct executor_start req2;
	struct executor_job *jb;
	struct slurm_rpc_counts c0, c1;
	json_t *json = assignment_to_json(&a), *json2;
	int64_t now = time_mono_ms(), next;
	int owner;

	executor_set_callback(e, changed, &seen);
	req = (struct executor_start){ .dir = dir, .assignment = json, .mount = mount, .scratch = tmp,
				       .identity = identity() };
	refuse("sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)\n");
	j = executor_start(e, &req, &owner, &err);
	ok(j != NULL, "a start Slurm cannot take now waits");
	if (!j)
		return;
	next = executor_tick(e, now + 1000);
	is_str(executor_job_id(e, j), "", "with no job id yet");
	ok(access(dir, F_OK) == 0, "its folder is there");
	ok(next > now + 4000, "tried again in a few seconds, not at once");
	ok(seen.calls == 1 && seen.last.state == EXEC_STARTING && seen.last.reason &&
	   strstr(seen.last.reason, "waiting for Slurm") && strstr(seen.last.reason, "Unable to contact"),
	   "a wait with Slurm's reason, not a failure: %s", seen.last.reason ? seen.last.reason : "");
	/* A start that comes during the wait waits with it, without an sbatch
	 * of its own: the next would be refused the same way. */
	executor_slurm_counts(e, &c0);
	a.id = 21;
	a.index = 10;
	json2 = assignment_to_json(&a);
	req2 = (struct executor_start){ .dir = dir2, .assignment = json2, .mount = mount, .scratch = tmp,
					.identity = identity() };
	jb = executor_start(e, &req2, &owner, &err);
	executor_tick(e, now + 3000);
	executor_slurm_counts(e, &c1);
	ok(jb && c1.sbatch == c0.sbatch && *executor_job_id(e, jb) == '\0',
	   "a start queued meanwhile waits out the refusal (sbatch calls %lu, then %lu)",
	   (unsigned long)c0.sbatch, (unsigned long)c1.sbatch);
	refuse(NULL);
	set_squeue("");
	executor_tick(e, now + 7000);
	executor_slurm_counts(e, &c1);
	ok(jb && c1.sbatch == c0.sbatch + 1 && *executor_job_id(e, jb) != '\0',
	   "then both go in one sbatch (%s)", jb ? executor_job_id(e, jb) : "");
	if (jb) {
		executor_forget(e, jb);
		executor_release(e, jb);
	}
	json_decref(json2);
	text = slurp(dir, "slurm_job");
	ok(strcmp(executor_job_id(e, j), "") != 0 && strcmp(text, "") != 0, "submitted on the next try, recorded (%s)",
	   executor_job_id(e, j));
	free(text);
	is_int(seen.calls, 1, "nothing more reported");
	executor_forget(e, j);
	executor_release(e, j);

	refuse("sbatch: error: invalid partition specified: nosuch\n"
	       "sbatch: error: Batch job submission failed: Invalid partition name specified\n");
	req.identity = identity();
	j2 = executor_start(e, &req, &owner, &err);
	executor_tick(e, now + 8000);
	ok(j2 && seen.calls == 2 && seen.last.state == EXEC_FAILED && seen.last.reason &&
	   strstr(seen.last.reason, "Invalid partition name"), "a refusal for good fails the start: %s",
	   seen.last.reason ? seen.last.reason : "");
	executor_forget(e, j2);
	executor_release(e, j2);
	ok(access(dir, F_OK) < 0, "and leaves no folder behind");

	refuse("sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying\n");
	req.identity = identity();
	j2 = executor_start(e, &req, &owner, &err);
	ok(j2 != NULL, "waiting again");
	if (j2) {
		ok(executor_signal(e, j2, SIGTERM) == 0, "stopped while it waits");
		executor_tick(e, now + 9000);
		ok(seen.calls == 3 && seen.last.state == EXEC_EXITED && seen.last.signal == SIGTERM && seen.last.reason &&
		   strstr(seen.last.reason, "before Slurm took it"), "dropped, reported ended");
		executor_forget(e, j2);
		executor_release(e, j2);
	}
	req.identity = identity();
	j2 = executor_start(e, &req, &owner, &err);
	refuse("sbatch: error: Batch job submission failed: Invalid account or account/partition combination\n");
	executor_tick(e, now + 10000);
	ok(j2 && seen.calls == 4 && seen.last.state == EXEC_FAILED && seen.last.reason &&
	   strstr(seen.last.reason, "Invalid account"), "a retry refused for good: failed");
	executor_release(e, j2);
	refuse(NULL);
	exec_status_clear(&seen.last);
	executor_destroy(e);
	json_decref(json);
	free(dir);
	free(dir2);
	free(mount);
	free(err);
}

/* A submit limit (MaxSubmitJobs): the array waits, then goes in halves. */
static void test_limit(void)
{
	struct executor_slurm_config cfg = { .runner = "t4" };
	struct assignment a = { .id = 40, .attempt = 1, .job = 7, .stage = "st", .index = 0, .item = "",
				.run = "true", .cpus = 1, .user = "me" };
	struct seen seen = { 0 };
	struct executor *e = executor_slurm_create(&cfg, NULL);
	struct executor_job *j[8];
	struct slurm_rpc_counts c;
	char *err = NULL, *mount = xasprintf("%s/mnt", tmp), *text;
	int64_t now = time_mono_ms();
	int waiting = 0, have = 0;

	executor_set_callback(e, changed, &seen);
	for (int i = 0; i < 8; i++) {
		struct executor_start req = { .mount = mount, .scratch = tmp, .identity = identity() };
		json_t *json;

		a.id = 40 + i;
		a.index = i;
		json = assignment_to_json(&a);
		req.assignment = json;
		req.dir = xasprintf("%s/state/%d.1", tmp, 40 + i);
		j[i] = executor_start(e, &req, &seen, &err);
		free((char *)req.dir);
		json_decref(json);
		if (!j[i])
			return;
	}
	refuse("sbatch: error: Batch job submission failed: Job violates accounting/QOS policy "
	       "(job submit limit, user's size and/or time limits)\n");
	executor_tick(e, now + 1000);
	executor_slurm_counts(e, &c);
	is_int(c.sbatch, 1, "the eight as one array, one sbatch");
	for (int i = 0; i < 8; i++)
		waiting += *executor_job_id(e, j[i]) == '\0';
	ok(waiting == 8 && seen.calls == 8 && seen.last.state == EXEC_STARTING, "refused for a limit: all wait");
	refuse(NULL);
	executor_tick(e, now + 7000);
	text = slurp(tmp, "sbatch.args");
	ok(strstr(text, "--array=0-3\n") != NULL, "then half of them go in one sbatch");
	free(text);
	for (int i = 0; i < 8; i++)
		have += *executor_job_id(e, j[i]) != '\0';
	is_int(have, 4, "four submitted");
	executor_tick(e, now + 7001);
	have = 0;
	for (int i = 0; i < 8; i++)
		have += *executor_job_id(e, j[i]) != '\0';
	executor_slurm_counts(e, &c);
	ok(have == 8 && c.sbatch == 3, "the other four at the next tick: %d, %lu sbatch calls in all", have,
	   (unsigned long)c.sbatch);
	ok(seen.last.state == EXEC_STARTING, "none failed");
	for (int i = 0; i < 8; i++) {
		executor_forget(e, j[i]);
		executor_release(e, j[i]);
	}
	exec_status_clear(&seen.last);
	executor_destroy(e);
	free(mount);
	free(err);
}

/* A slow sbatch: after about a second of them between two ticks, further
 * starts wait for the next tick (the runner's loop must go on). */
static void test_budget(void)
{
	struct executor_slurm_config cfg = { .runner = "t3" };
	struct assignment a = { .id = 30, .attempt = 1, .job = 7, .stage = "st", .index = 0, .item = "",
				.run = "true", .cpus = 1, .user = "me" };
	struct seen seen = { 0 };
	struct executor *e = executor_slurm_create(&cfg, NULL);
	struct executor_job *j[3];
	struct executor_start req;
	char *err = NULL, *mount = xasprintf("%s/mnt", tmp), *path = xasprintf("%s/sbatch.slow", tmp);
	FILE *f = fopen(path, "w");

	fclose(f);
	executor_set_callback(e, changed, &seen);
	for (int i = 0; i < 3; i++) {
		json_t *json;

		a.id = 30 + i;
		a.cpus = 1 + i; /* three shapes: three sbatch calls */
		json = assignment_to_json(&a);
		req = (struct executor_start){ .assignment = json, .mount = mount, .scratch = tmp, .identity = identity() };
		req.dir = xasprintf("%s/state/%d.1", tmp, 30 + i);
		j[i] = executor_start(e, &req, &seen, &err);
		free((char *)req.dir);
		json_decref(json);
	}
	ok(j[0] && j[1] && j[2], "three started");
	if (!j[0] || !j[1] || !j[2])
		return;
	executor_tick(e, time_mono_ms() + 1000);
	ok(*executor_job_id(e, j[0]) && *executor_job_id(e, j[1]), "the first two submitted at the tick");
	is_str(executor_job_id(e, j[2]), "", "the third waits for the next tick");
	ok(executor_tick(e, time_mono_ms() + 1000) >= 0, "tick");
	ok(*executor_job_id(e, j[2]) != '\0', "and is submitted there (%s)", executor_job_id(e, j[2]));
	is_int(seen.calls, 0, "nothing reported");
	unlink(path);
	for (int i = 0; i < 3; i++) {
		executor_forget(e, j[i]);
		executor_release(e, j[i]);
	}
	executor_destroy(e);
	free(path);
	free(mount);
	free(err);
}

int main(void)
{
	char *path, *cmd;

	/* As parsa-runner's main: a fake sbatch that refuses exits without
	 * reading the script on its stdin. */
	signal(SIGPIPE, SIG_IGN);
	snprintf(tmp, sizeof tmp, "/tmp/test_executor_slurm.XXXXXX");
	if (!mkdtemp(tmp)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	cmd = xasprintf("mkdir -p %s/bin %s/state %s/mnt/jobs/7/out/st %s/mnt/jobs/7/stages/st/instances/3",
			tmp, tmp, tmp, tmp);
	if (system(cmd) != 0)
		return 1;
	free(cmd);
	cmd = xasprintf("if [ -e %s/sbatch.slow ]; then sleep 0.6; fi\n"
			"if [ -e %s/sbatch.refuse ]; then cat %s/sbatch.refuse >&2; exit 1; fi\n"
			"n=$(cat %s/sbatch.n 2>/dev/null || echo 100); n=$((n + 1)); echo $n >%s/sbatch.n\n"
			"printf '%%s\\n' \"$@\" >%s/sbatch.args; cat >%s/sbatch.script; echo $n\n",
			tmp, tmp, tmp, tmp, tmp, tmp, tmp);
	write_script("sbatch", cmd);
	free(cmd);
	cmd = xasprintf("cat %s/squeue.txt\n", tmp);
	write_script("squeue", cmd);
	free(cmd);
	cmd = xasprintf("printf '%%s\\n' \"$@\" >%s/scancel.args\n", tmp);
	write_script("scancel", cmd);
	free(cmd);
	cmd = xasprintf("cat %s/slurm/scontrol-config.txt\n", PARSA_FIXTURES);
	write_script("scontrol", cmd);
	free(cmd);
	path = xasprintf("%s/bin:%s", tmp, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	setenv("PATH", path, 1);
	free(path);
	test_pure();
	test_volume_wrapper();
	test_overrides();
	test_cycle();
	test_refused();
	test_budget();
	test_limit();
	cmd = xasprintf("rm -rf %s", tmp);
	if (system(cmd) != 0)
		diag("cannot remove %s", tmp);
	free(cmd);
	return done_testing();
}
