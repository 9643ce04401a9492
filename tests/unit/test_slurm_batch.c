/* Queued starts into sbatch calls (slurm_batch.h): grouping by key and cutting
 * into arrays under MaxArraySize, a submit room and a script size; the array
 * script run by sh as a node would, each task its instance's own wrapper;
 * "123_4" ids; an instance found in a real Slurm 22.05's squeue answer of
 * arrays, and scontrol's MaxArraySize (tests/fixtures/slurm/, made by
 * capture-arrays.sh there). */
#include "slurm_batch.h"
#include "slurm_wrapper.h"
#include "slurm_fixture.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

TAP_STATE;

/* The members of batch b in batch_of, as "i,j,k". */
static char *members(const long *batch_of, size_t n, long b)
{
	char *s = xstrdup("");

	for (size_t i = 0; i < n; i++) {
		if (batch_of[i] == b) {
			char *t = xasprintf("%s%s%zu", s, *s ? "," : "", i);

			free(s);
			s = t;
		}
	}
	return s;
}

static void test_plan(void)
{
	struct slurm_plan_item items[1000];
	struct slurm_plan_batch batches[32];
	long batch_of[1000];
	struct slurm_limits lim = { .max_array_size = 100, .submit_room = -1 };
	char *m;
	int nb;
	long placed = 0;

	/* Two shapes interleaved, one alone. */
	const char *keys[] = { "c1", "c2", "c1", "c1", "c2", "c4" };
	for (size_t i = 0; i < 6; i++)
		items[i] = (struct slurm_plan_item){ .key = keys[i], .script_len = 100 };
	nb = slurm_plan(items, 6, &lim, 1 << 20, batches, 32, batch_of);
	is_int(nb, 3, "three shapes, three sbatch calls");
	m = members(batch_of, 6, 0);
	is_str(m, "0,2,3", "the first shape's starts in arrival order (task k is the k-th)");
	free(m);
	ok(batches[0].count == 3 && strcmp(batches[0].spec, "0-2") == 0, "as an array 0-2 (%s)", batches[0].spec);
	m = members(batch_of, 6, 1);
	is_str(m, "1,4", "the second shape");
	free(m);
	m = members(batch_of, 6, 2);
	ok(strcmp(m, "5") == 0 && batches[2].count == 1 && batches[2].spec[0] == '\0',
	   "a start alone is a plain job (no --array)");
	free(m);

	/* 1,000 of one shape under MaxArraySize 100: ten arrays 0-99. */
	for (size_t i = 0; i < 1000; i++)
		items[i] = (struct slurm_plan_item){ .key = "same", .script_len = 1500 };
	nb = slurm_plan(items, 1000, &lim, 1 << 20, batches, 32, batch_of);
	is_int(nb, 10, "1,000 starts, MaxArraySize 100: ten sbatch calls");
	for (int b = 0; b < nb; b++)
		placed += batches[b].count;
	ok(placed == 1000 && strcmp(batches[9].spec, "0-99") == 0 && batch_of[999] == 9 && batch_of[100] == 1,
	   "every start in one array, task ids from 0 in each");

	/* The script size: 1 MiB of 20 KB wrappers is 52 tasks at most. */
	for (size_t i = 0; i < 200; i++)
		items[i].script_len = 20000;
	lim.max_array_size = 1001;
	nb = slurm_plan(items, 200, &lim, 1 << 20, batches, 32, batch_of);
	ok(nb == 4 && batches[0].count == 52 && batches[3].count == 200 - 3 * 52,
	   "big wrappers: arrays cut to the script size (%d of %ld)", nb, batches[0].count);

	/* A submit room (after a limit) and too few batches: the rest waits. */
	lim = (struct slurm_limits){ .max_array_size = 100, .submit_room = 150 };
	for (size_t i = 0; i < 1000; i++)
		items[i].script_len = 100;
	nb = slurm_plan(items, 1000, &lim, 1 << 20, batches, 32, batch_of);
	ok(nb == 2 && batches[1].count == 50 && batch_of[149] == 1 && batch_of[150] == -1 && batch_of[999] == -1,
	   "room for 150: 100 + 50 submitted, the rest waits (batch_of -1)");
	lim.submit_room = -1;
	nb = slurm_plan(items, 1000, &lim, 1 << 20, batches, 3, batch_of);
	ok(nb == 3 && batch_of[299] == 2 && batch_of[300] == -1, "at most max_batches, the rest waits");
	nb = slurm_plan(items, 0, &lim, 1 << 20, batches, 0, batch_of);
	is_int(nb, 0, "nothing queued: no batch");
	items[0].key = NULL;
	ok(slurm_plan(items, 1, &lim, 1 << 20, batches, 3, batch_of) < 0 && errno == EINVAL, "a NULL key: EINVAL");
}

static void test_refs(void)
{
	char buf[48];
	uint64_t id = 0;
	long task = 0;

	slurm_format_ref(123, 4, buf, sizeof buf);
	is_str(buf, "123_4", "an array task's id");
	slurm_format_ref(123, -1, buf, sizeof buf);
	is_str(buf, "123", "a plain job's");
	ok(slurm_parse_ref("123_4\n", &id, &task) == 0 && id == 123 && task == 4, "read back");
	ok(slurm_parse_ref("77\n", &id, &task) == 0 && id == 77 && task == -1, "a plain job (slurm_job of old)");
	ok(slurm_parse_ref("", &id, &task) < 0 && slurm_parse_ref("12_", &id, &task) < 0 &&
	   slurm_parse_ref("12_x", &id, &task) < 0 && slurm_parse_ref("0", &id, &task) < 0 &&
	   slurm_parse_ref("12 3", &id, &task) < 0, "garbage refused");
}

static void test_find(void)
{
	char *text = fixture("squeue-arrays.txt"), *why = NULL;
	struct slurm_job *jobs = NULL;
	const struct slurm_job *r;
	size_t n = 0;

	ok(slurm_parse_jobs(text, false, &jobs, &n, &why) == 0 && n == 4, "squeue of arrays parsed (%zu)", n);
	/* 1: held array 0-4; 2: task 0 running (its own job 4), 1-2 pending; 3: plain. */
	r = slurm_find_ref(jobs, n, 2, 0);
	ok(r && strcmp(r->state, "RUNNING") == 0 && r->job_id == 4, "a running task: its own record");
	r = slurm_find_ref(jobs, n, 2, 2);
	ok(r && strcmp(r->state, "PENDING") == 0 && strcmp(r->reason, "Resources") == 0,
	   "a pending task: its array's range, with Slurm's reason");
	r = slurm_find_ref(jobs, n, 1, 4);
	ok(r && strcmp(r->reason, "JobHeldUser") == 0, "the held array's last task");
	ok(slurm_find_ref(jobs, n, 1, 5) == NULL, "a task the array does not have: gone");
	r = slurm_find_ref(jobs, n, 3, -1);
	ok(r && r->job_id == 3 && strcmp(r->reason, "Priority") == 0, "a plain job by its id");
	ok(slurm_find_ref(jobs, n, 2, -1) == NULL, "an array's id is no plain job");
	ok(slurm_find_ref(jobs, n, 4, 0) == NULL, "a task's own job id is not its array's");
	free(jobs);
	free(text);
	free(why);
}

static void test_config(void)
{
	char *text = fixture("scontrol-config.txt");
	long v = 0;

	ok(slurm_config_long(text, "MaxArraySize", &v) == 0 && v == 20, "MaxArraySize from scontrol show config (%ld)",
	   v);
	ok(slurm_config_long(text, "MaxJobCount", &v) == 0 && v == 10000, "MaxJobCount");
	ok(slurm_config_long(text, "MaxArray", &v) < 0 && errno == ENOENT, "only whole keys");
	ok(slurm_config_long(text, "ClusterName", &v) < 0 && errno == EINVAL, "a word is no number");
	free(text);
}

/* The array script run by sh with each task id, as the node runs it. */
static void test_script(void)
{
	const char *bodies[] = { "echo zero; exit 3\n", "echo 'one'\nexit 0\n", "echo two; exit 5\n" };
	char *script = slurm_array_script(bodies, 3);
	char tmp[] = "/tmp/test_slurm_batch.XXXXXX";
	int fd = mkstemp(tmp);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	ok(f != NULL, "a temporary file");
	if (!f)
		return;
	fputs(script, f);
	fclose(f);
	for (int task = 0; task < 4; task++) {
		char *cmd = xasprintf("SLURM_ARRAY_TASK_ID=%d sh %s > %s.out 2>&1", task, tmp, tmp);
		int st = system(cmd);
		char *out = xasprintf("%s.out", tmp), *text = read_file(out, 4096, NULL);
		static const char *const want[] = { "zero\n", "one\n", "two\n" };
		static const int codes[] = { 3, 0, 5, 125 };

		ok(WIFEXITED(st) && WEXITSTATUS(st) == codes[task], "task %d exits %d", task, codes[task]);
		if (task < 3)
			is_str(text ? text : "", want[task], "task %d runs its own instance's wrapper", task);
		else
			ok(text && strstr(text, "no instance for array task 3"), "an unknown task says so");
		unlink(out);
		free(out);
		free(text);
		free(cmd);
	}
	unlink(tmp);
	free(script);
}

int main(void)
{
	test_plan();
	test_refs();
	test_find();
	test_config();
	test_script();
	return done_testing();
}
