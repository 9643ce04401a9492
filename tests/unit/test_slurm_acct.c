/* Slurm's accounting (slurm_acct.h): whether a cluster keeps it, sacct's
 * durations and sizes, and the batched `sacct -P` answer of a real Slurm
 * 22.05 with slurmdbd (tests/fixtures/slurm/sacct-ended.txt: jobs that
 * completed, failed, ran a step, were cancelled by their user and by root,
 * were killed over their memory, timed out, and an array; each with its
 * .batch and .extern steps); then the poll
 * cycle with it: one sacct for the jobs that ended in a cycle, its facts in
 * their ends, none at all without accounting, against fake squeue,
 * scontrol and sacct scripts first in PATH. */
#include "executor_slurm.h"
#include "proto.h"
#include "slurm_acct.h"
#include "slurm_fake.h"
#include "slurm_fixture.h"
#include "tap.h"
#include "util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

static void test_pure(void)
{
	char *text = fixture("scontrol-config.txt");
	int64_t v;

	is_int(slurm_config_accounting(text), 0, "a Slurm without slurmdbd keeps no accounting");
	free(text);
	text = fixture("scontrol-config-acct.txt");
	is_int(slurm_config_accounting(text), 1, "accounting_storage/slurmdbd: it does");
	free(text);
	is_int(slurm_config_accounting("MaxArraySize = 1001\n"), -1, "no such line: not known");
	text = fixture("sacct-disabled.txt");
	ok(slurm_acct_disabled(text), "sacct's own refusal without slurmdbd");
	free(text);
	ok(slurm_acct_duration("00:00.454", 9, &v) == 0 && v == 454, "TotalCPU MM:SS.mmm");
	ok(slurm_acct_duration("01:02:03", 8, &v) == 0 && v == 3723000, "HH:MM:SS");
	ok(slurm_acct_duration("1-02:03:04", 10, &v) == 0 && v == 93784000, "D-HH:MM:SS");
	ok(slurm_acct_duration("12:03.5", 7, &v) == 0 && v == 723500, "tenths");
	ok(slurm_acct_duration("1-02:03", 7, &v) < 0 && slurm_acct_duration("x", 1, &v) < 0 &&
	   slurm_acct_duration("1:", 2, &v) < 0 && slurm_acct_duration("1:2:3:4", 7, &v) < 0,
	   "garbage durations are refused");
	ok(slurm_acct_size("91468K", 6, &v) == 0 && v == 91468LL * 1024, "MaxRSS in KiB");
	ok(slurm_acct_size("3M", 2, &v) == 0 && v == 3LL << 20, "in MiB");
	ok(slurm_acct_size("1.50G", 5, &v) == 0 && v == 3LL << 29, "a fraction of GiB");
	ok(slurm_acct_size("0", 1, &v) == 0 && v == 0, "nothing");
	ok(slurm_acct_size("", 0, &v) == 0 && v == -1, "empty: unknown");
	ok(slurm_acct_size("12Q", 3, &v) < 0 && slurm_acct_size("K", 1, &v) < 0, "garbage sizes are refused");
}

static void test_fixture(void)
{
	char *text = fixture("sacct-ended.txt"), *err = NULL;
	struct slurm_acct *recs = NULL;
	const struct slurm_acct *a;
	size_t n = 0;

	is_int(slurm_acct_parse(text, &recs, &n, &err), 0, "sacct-ended parses: %s", err ? err : "");
	is_int(n, 11, "one record per job and array task, steps folded in");
	a = slurm_acct_find(recs, n, "1");
	ok(a && strcmp(a->state, "COMPLETED") == 0 && a->has_exit && a->exit_code == 0 && slurm_acct_final(a),
	   "job 1 completed");
	a = slurm_acct_find(recs, n, "2");
	ok(a && strcmp(a->state, "FAILED") == 0 && a->exit_code == 3, "job 2 failed with 3");
	a = slurm_acct_find(recs, n, "3");
	ok(a && a->cpu_ms > 0 && a->max_rss >= 80LL << 20,
	   "job 3's CPU time and its batch step's peak of 80 MiB and more (%lld ms, %lld bytes)",
	   a ? (long long)a->cpu_ms : -1LL, a ? (long long)a->max_rss : -1LL);
	a = slurm_acct_find(recs, n, "4");
	ok(a && a->cpu_ms > 0 && a->max_rss >= 80LL << 20,
	   "job 4: TotalCPU of every step, the peak of its srun step (.0), not its .batch");
	a = slurm_acct_find(recs, n, "6");
	ok(a && strcmp(a->state, "CANCELLED") == 0 && a->cancel_uid > 0, "job 6 cancelled by its user's uid (%ld)",
	   a ? a->cancel_uid : -2L);
	a = slurm_acct_find(recs, n, "7");
	ok(a && strcmp(a->state, "CANCELLED") == 0 && a->cancel_uid == 0, "job 7 cancelled by root");
	a = slurm_acct_find(recs, n, "8");
	ok(a && strcmp(a->state, "FAILED") == 0 && a->exit_signal == 9 && a->max_rss >= 300LL << 20,
	   "job 8, over its --mem, killed (OverMemoryKill) with its peak");
	a = slurm_acct_find(recs, n, "9");
	ok(a && strcmp(a->state, "TIMEOUT") == 0 && slurm_acct_final(a), "job 9 timed out");
	a = slurm_acct_find(recs, n, "5_1");
	ok(a && strcmp(a->state, "FAILED") == 0 && a->exit_code == 1, "array task 5_1 failed with 1");
	ok(slurm_acct_find(recs, n, "5") == NULL, "an array is found by its tasks");
	free(recs);
	free(text);

	/* Not provoked by the test Slurm (OUT_OF_MEMORY needs cgroup memory
	 * enforcement): Slurm's documented spelling. A job sacct still has
	 * running is not final. */
	is_int(slurm_acct_parse("12|OUT_OF_MEMORY|0:125|00:01.250|\n12.batch|OUT_OF_MEMORY|0:125|00:01.250|2G\n"
				"13|RUNNING|0:0|00:00:00|\n", &recs, &n, &err), 0, "OUT_OF_MEMORY and RUNNING parse");
	ok(n == 2 && strcmp(recs[0].state, "OUT_OF_MEMORY") == 0 && recs[0].max_rss == 2LL << 30 &&
	   recs[0].cpu_ms == 1250 && slurm_acct_final(&recs[0]) && !slurm_acct_final(&recs[1]),
	   "out of memory ended, running not");
	free(recs);
	is_int(slurm_acct_parse("12|COMPLETED|0:0\n", &recs, &n, &err), -1, "a short line is refused");
	ok(err && strstr(err, "line 1"), "naming the line: %s", err ? err : "");
	free(err);
}

static struct {
	int calls;
	struct exec_status last[4];
	void *owner[4];
} seen;

static void changed(void *arg, void *owner, const struct exec_status *st, int64_t now_ms)
{
	(void)arg;
	(void)now_ms;
	if (st->state != EXEC_EXITED || seen.calls >= 4)
		return;
	seen.last[seen.calls] = *st;
	seen.last[seen.calls].reason = st->reason ? xstrdup(st->reason) : NULL;
	seen.last[seen.calls].batch_state = st->batch_state ? xstrdup(st->batch_state) : NULL;
	seen.owner[seen.calls++] = owner;
}

static void seen_clear(void)
{
	for (int i = 0; i < seen.calls; i++)
		exec_status_clear(&seen.last[i]);
	seen.calls = 0;
}

/* A folder a runner left for Slurm job ref. */
static struct executor_job *reattach(struct executor *e, const char *ref, int index, void *owner)
{
	struct assignment a = { .id = index, .attempt = 1, .job = 7, .stage = "st", .index = index, .item = "",
				.run = "true", .cpus = 1, .user = "me" };
	char *dir = xasprintf("%s/state/%d.1", fake_tmp, index), *cmd = xasprintf("mkdir -p %s", dir), *err = NULL;
	json_t *json = assignment_to_json(&a), *back = NULL;
	struct executor_job *j;
	struct exec_status st;

	if (system(cmd) != 0)
		diag("cannot make %s", dir);
	free(cmd);
	cmd = xasprintf("%s/assignment.json", dir);
	json_dump_file(json, cmd, 0);
	free(cmd);
	cmd = xasprintf("state/%d.1/slurm_job", index);
	fake_write(cmd, ref, 0644);
	free(cmd);
	cmd = xasprintf("state/%d.1/mount", index);
	fake_write(cmd, fake_tmp, 0644);
	free(cmd);
	j = executor_reattach(e, dir, owner, &back, &st, &err);
	exec_status_clear(&st);
	json_decref(back);
	json_decref(json);
	free(err);
	free(dir);
	return j;
}

static void use_config(const char *name)
{
	char *cmd = xasprintf("cat %s/slurm/%s\n", PARSA_FIXTURES, name);

	fake_command("scontrol", cmd);
	free(cmd);
}

/* The cycle: ended jobs' facts from one sacct, where accounting exists. */
static void test_cycle(void)
{
	struct executor_slurm_config cfg = { .runner = "t5", .partition = "debug", .lost_grace_ms = 1000 };
	struct executor *e = executor_slurm_create(&cfg, NULL);
	struct executor_job *j1, *j2, *j3;
	struct executor_facts f;
	struct slurm_rpc_counts c;
	int o1, o2, o3;
	int64_t now;
	char *text;
	struct slurm_acct *recs = NULL, job7 = { .max_rss = -2 };
	size_t n = 0;

	use_config("scontrol-config-acct.txt");
	executor_set_callback(e, changed, NULL);
	j1 = reattach(e, "7\n", 1, &o1);
	j2 = reattach(e, "5_1\n", 2, &o2);
	j3 = reattach(e, "9\n", 3, &o3);
	ok(j1 && j2 && j3, "three jobs found again");
	now = time_mono_ms() + 10;
	fake_write("squeue.txt",
		 "7|7|7|N/A|CANCELLED|None|n1|debug|parsa-fx|1|parsa-t5\n"
		 "5_1|11|5|1|FAILED|NonZeroExitCode|n2|debug|parsa-fx|1|parsa-t5\n"
		 "9|9|9|N/A|RUNNING|None|n2|debug|parsa-fx|1|parsa-t5\n", 0644);
	text = fixture("sacct-ended.txt");
	fake_write("sacct.txt", text, 0644);
	if (slurm_acct_parse(text, &recs, &n, NULL) == 0 && slurm_acct_find(recs, n, "7"))
		job7 = *slurm_acct_find(recs, n, "7");
	free(recs);
	free(text);
	executor_tick(e, now);
	ok(executor_facts(e, &f) && f.accounting && strcmp(f.accounting, "on") == 0, "accounting on (scontrol)");
	text = fake_read("sacct.args");
	ok(strstr(text, "--jobs=5_1,7\n") || strstr(text, "--jobs=7,5_1\n"),
	   "one sacct for the two that ended, not the running one");
	ok(strstr(text, "--parsable2\n") && strstr(text, "--format=JobID,State,ExitCode,TotalCPU,MaxRSS\n"),
	   "sacct -P with the runner's columns");
	free(text);
	is_int(seen.calls, 2, "both ends reported");
	for (int i = 0; i < seen.calls; i++) {
		const struct exec_status *st = &seen.last[i];

		if (seen.owner[i] == &o1) {
			ok(st->signal == SIGTERM && st->reason &&
			   strcmp(st->reason, "slurm job 7: cancelled in Slurm by root (uid 0)") == 0,
			   "who cancelled, by name: %s", st->reason ? st->reason : "");
			is_str(st->batch_state, "CANCELLED by root", "accounting's end state, with the name");
			ok(st->max_rss == job7.max_rss && st->cpu_ms == job7.cpu_ms && st->max_rss > 0,
			   "its CPU time and peak memory from sacct (%lld ms, %lld bytes)", (long long)st->cpu_ms,
			   (long long)st->max_rss);
		} else {
			ok(st->reason && strstr(st->reason, "exit code 1 in Slurm"), "5_1: sacct's exit code in words");
		}
	}
	seen_clear();

	/* sacct does not know 9 as ended yet: its end waits for it, then
	 * goes without. */
	fake_write("squeue.txt", "9|9|9|N/A|COMPLETED|None|n2|debug|parsa-fx|1|parsa-t5\n", 0644);
	fake_write("sacct.txt", "9|RUNNING|0:0|00:00:00|\n", 0644);
	executor_tick(e, now + 20000);
	executor_tick(e, now + 25000);
	is_int(seen.calls, 0, "no exit file for a while, then sacct still has it running: the end waits");
	executor_tick(e, now + 31000);
	is_int(seen.calls, 0, "a while");
	executor_tick(e, now + 36000);
	ok(seen.calls == 1 && seen.owner[0] == &o3 && seen.last[0].cpu_ms == -1 && !seen.last[0].batch_state,
	   "then is reported without accounting's facts");
	seen_clear();
	executor_slurm_counts(e, &c);
	is_int((long)c.sacct, 4, "one sacct a cycle");
	executor_release(e, j1);
	executor_release(e, j2);
	executor_release(e, j3);
	executor_destroy(e);

	/* Without accounting: never a sacct. */
	text = xasprintf("%s/sacct.args", fake_tmp);
	unlink(text);
	free(text);
	use_config("scontrol-config.txt");
	e = executor_slurm_create(&cfg, NULL);
	executor_set_callback(e, changed, NULL);
	j1 = reattach(e, "7\n", 1, &o1);
	fake_write("squeue.txt", "7|7|7|N/A|CANCELLED|None|n1|debug|parsa-fx|1|parsa-t5\n", 0644);
	executor_tick(e, time_mono_ms() + 10);
	ok(seen.calls == 1 && seen.last[0].reason && strstr(seen.last[0].reason, "outside parsa") &&
	   seen.last[0].cpu_ms == -1, "accounting off: the end at once, from squeue alone");
	text = fake_read("sacct.args");
	is_str(text, "", "and no sacct");
	free(text);
	ok(executor_facts(e, &f) && f.accounting && strcmp(f.accounting, "off") == 0, "accounting off");
	seen_clear();
	executor_release(e, j1);
	executor_destroy(e);
}

int main(void)
{
	char *cmd;

	if (fake_setup("/tmp/test_slurm_acct") < 0) {
		printf("Bail out! cannot make the test's folder\n");
		return 1;
	}
	cmd = xasprintf("cat %s/squeue.txt\n", fake_tmp);
	fake_command("squeue", cmd);
	free(cmd);
	cmd = xasprintf("printf '%%s\\n' \"$@\" >>%s/sacct.args\ncat %s/sacct.txt\n", fake_tmp, fake_tmp);
	fake_command("sacct", cmd);
	free(cmd);
	test_pure();
	test_fixture();
	test_cycle();
	fake_cleanup();
	return done_testing();
}
