/* The views' lines for a host that fronts Slurm (sched/views/views_exec.c): its
 * facts in hosts/<h>/status and its JSON, an instance's Slurm job id and
 * reason, and `why`'s lines grouped by host and Slurm's reason; a local host
 * and an instance that never was a Slurm job get none of them. */
#include "tap.h"
#include "util.h"
#include "views_exec.h"

#include <stdlib.h>
#include <string.h>

TAP_STATE;

static char *host_text(const struct host *h, int64_t now)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	views_host_exec_text(f, h, now);
	fclose(f);
	return out;
}

static void test_host(void)
{
	struct host_executor x = { .kind = "slurm", .partition = "debug", .pending = 2, .running = 3,
				   .last_poll_ms = 1000, .cpus_up = 8, .cpus_outside = 1 };
	struct host h = { .name = "slurm1" };
	char *text;
	json_t *json;

	text = host_text(&h, 5000);
	is_str(text, "", "a local host: no lines");
	free(text);
	json = views_host_exec_json(&h);
	ok(json_is_null(json), "and its executor is null");
	json_decref(json);

	h.exec = &x;
	text = host_text(&h, 3500);
	is_str(text, "executor: slurm\nslurm partition: debug\nslurm jobs: 2 pending, 3 running\n"
		     "slurm cpus: 8 up, 1 held by other users' jobs\nslurm last poll: 2.5 s ago\n",
	       "a Slurm host's facts");
	free(text);
	x.accounting = "off";
	text = host_text(&h, 3500);
	ok(strstr(text, "slurm accounting: off (no sacct)\n") != NULL, "accounting off, once the runner says");
	free(text);
	x.accounting = "on";
	text = host_text(&h, 3500);
	ok(strstr(text, "slurm accounting: on (") != NULL, "or on");
	free(text);
	x.poll_error = "squeue (status 1): line one\nline two";
	x.partition = "";
	x.last_poll_ms = 0;
	x.cpus_up = -1;
	text = host_text(&h, 3500);
	ok(strstr(text, "slurm partition: (the default one)\n") && strstr(text, "slurm last poll: none yet\n") &&
	   !strstr(text, "slurm cpus") &&
	   strstr(text, "slurm poll error: squeue (status 1): line one\\nline two\n"),
	   "the default partition, no poll yet, the error escaped onto one line");
	free(text);
	json = views_host_exec_json(&h);
	ok(strcmp(json_string_value(json_object_get(json, "kind")), "slurm") == 0 &&
	   json_integer_value(json_object_get(json, "pending")) == 2 &&
	   json_is_string(json_object_get(json, "poll_error")) &&
	   strcmp(json_string_value(json_object_get(json, "accounting")), "on") == 0, "its JSON");
	json_decref(json);
}

static char *why_text(const struct stage *st)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	views_why_exec(f, st);
	fclose(f);
	return out;
}

static void test_instances_and_why(void)
{
	struct instance in[10];
	struct instance *list[10];
	struct stage st = { .inst = list, .ninst = 10 };
	static const char *const reasons[] = { "Priority", "Priority", "Resources", NULL, "Priority",
		"A", "B", "C", "D", "E" };
	char *text = NULL, *out = NULL;
	size_t len = 0;
	FILE *f;

	memset(in, 0, sizeof in);
	for (int i = 0; i < 10; i++) {
		in[i].state = INST_ASSIGNED;
		in[i].host_name = i == 4 ? "slurm2" : "slurm1";
		in[i].slurm_reason = (char *)reasons[i];
		in[i].slurm_job = (char *)"1234_7";
		list[i] = &in[i];
	}
	in[3].state = INST_RUNNING;
	f = open_memstream(&out, &len);
	views_instance_exec_text(f, &in[0]);
	views_instance_exec_text(f, &in[3]);
	in[3].slurm_state = (char *)"CANCELLED by alice";
	views_instance_exec_text(f, &in[3]);
	in[3].slurm_state = NULL;
	in[3].slurm_job = NULL;
	views_instance_exec_text(f, &in[3]);
	fclose(f);
	is_str(out, "slurm job: 1234_7\nslurm reason: Priority\nslurm job: 1234_7\n"
		    "slurm job: 1234_7\nslurm state: CANCELLED by alice\n",
	       "an instance's job id, its reason only while it waits, Slurm's end state where accounting "
	       "said it; none when not a Slurm job");
	free(out);

	text = why_text(&st);
	is_str(text, "  2 instances wait in Slurm on slurm1: Priority (Slurm's reason)\n"
		     "  1 instance waits in Slurm on slurm1: Resources (Slurm's reason)\n"
		     "  1 instance waits in Slurm on slurm2: Priority (Slurm's reason)\n"
		     "  1 instance waits in Slurm on slurm1: A (Slurm's reason)\n"
		     "  1 instance waits in Slurm on slurm1: B (Slurm's reason)\n"
		     "  1 instance waits in Slurm on slurm1: C (Slurm's reason)\n"
		     "  and 2 more instances wait in Slurm for other reasons\n",
	       "why: grouped by host and reason, the first six groups");
	free(text);
	for (int i = 0; i < 10; i++)
		in[i].slurm_reason = NULL;
	text = why_text(&st);
	is_str(text, "", "why: nothing when none waits in Slurm");
	free(text);
}

int main(void)
{
	test_host();
	test_instances_and_why();
	return done_testing();
}
