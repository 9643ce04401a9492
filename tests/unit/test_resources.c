/* What instances hold: cores of the runner's affinity (the first --cpus of
 * them), distinct GPUs or a clear refusal, the holding written into
 * assignment.json and held again by a runner that reattaches. */
#include "assign.h"
#include "cpulist.h"
#include "resources.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TAP_STATE;

static struct assignment *assignment(int64_t id, int cpus, int gpus)
{
	json_t *j = json_pack("{s:I,s:I,s:I,s:s,s:i,s:s,s:i,s:i,s:i,s:i,s:s}", "id", (json_int_t)id,
			      "attempt", (json_int_t)1, "job", (json_int_t)1, "stage", "s", "index", 0,
			      "run", "true", "cpus", cpus, "gpus", gpus, "uid", 0, "gid", 0, "user", "root");
	struct assignment *a = assignment_from_json(j, NULL);

	json_decref(j);
	return a;
}

static void test_cpus(void)
{
	struct resources_config cfg = { .cpus = 1 };
	struct resources *r = resources_create(&cfg);
	struct assignment *a = assignment(1, 1, 0);
	struct holding h;
	cpu_set_t set;
	char first[16] = "";
	char *err = NULL;

	CPU_ZERO(&set);
	sched_getaffinity(0, sizeof set, &set);
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &set)) {
			snprintf(first, sizeof first, "%d", i);
			break;
		}
	is_int(resources_cpus(r), 1, "--cpus 1: one core handed out");
	is_int(resources_take(r, a, "1.1", &h, &err), 0, "an instance takes it");
	is_str(h.cpu_list, first, "the first core the runner may run on");
	ok(h.gpu_list == NULL && h.cgroup == NULL, "no GPUs here, no cgroup");
	resources_release(r, &h);
	assignment_destroy(a);
	resources_destroy(r);
	free(err);
}

static void test_gpus(void)
{
	struct resources_config cfg = { .gpus = 2 };
	struct resources *r = resources_create(&cfg);
	struct assignment *g1 = assignment(1, 1, 1), *g2 = assignment(2, 1, 1), *g3 = assignment(3, 1, 1);
	struct assignment *none = assignment(4, 1, 0), *two = assignment(5, 1, 2);
	struct holding h1, h2, h3, h4, back;
	json_t *json = json_object();
	char *err = NULL;

	is_int(resources_gpus(r), 2, "two GPUs");
	is_int(resources_take(r, g1, "1.1", &h1, &err), 0, "one GPU for the first");
	is_int(resources_take(r, g2, "2.1", &h2, &err), 0, "one for the second");
	ok(h1.gpu_list && h2.gpu_list && strcmp(h1.gpu_list, h2.gpu_list) != 0, "distinct: %s and %s",
	   h1.gpu_list, h2.gpu_list);
	errno = 0;
	is_int(resources_take(r, g3, "3.1", &h3, &err), -1, "a third finds none free");
	ok(errno == EBUSY && err && strcmp(err, "cannot start: 1 GPU asked for, 0 of this host's 2 free") == 0,
	   "and says so: %s", err ? err : "");
	ok(h3.cpu_list == NULL && h3.gpu_list == NULL, "holding nothing");
	is_int(resources_take(r, none, "4.1", &h4, &err), 0, "an instance without GPUs");
	is_str(h4.gpu_list, "", "gets an empty list: it must not use its neighbours'");
	resources_release(r, &h4);

	/* A runner restarted: what the first held is held again. */
	resources_describe(&h1, json);
	ok(json_string_value(json_object_get(json, "runner_gpu_list")) &&
	   json_string_value(json_object_get(json, "runner_cpu_list")), "the holding goes into assignment.json");
	resources_release(r, &h1);
	resources_release(r, &h2);
	resources_destroy(r);
	r = resources_create(&cfg);
	resources_reclaim(r, json, &back);
	is_str(back.gpu_list, json_string_value(json_object_get(json, "runner_gpu_list")), "reattached: its GPU");
	free(err);
	err = NULL;
	is_int(resources_take(r, two, "5.1", &h3, &err), -1, "so two are not free");
	is_int(resources_take(r, g3, "3.1", &h3, &err), 0, "one is");
	ok(strcmp(h3.gpu_list, back.gpu_list) != 0, "the other one (%s, held %s)", h3.gpu_list, back.gpu_list);
	resources_release(r, &h3);
	resources_release(r, &back);
	resources_destroy(r);
	cfg.gpus = 0;
	r = resources_create(&cfg);
	free(err);
	err = NULL;
	is_int(resources_take(r, g1, "1.2", &h1, &err), -1, "GPUs asked of a host without any");
	ok(err && strstr(err, "this host has none"), "says so: %s", err ? err : "");
	resources_destroy(r);
	json_decref(json);
	free(err);
	assignment_destroy(g1);
	assignment_destroy(g2);
	assignment_destroy(g3);
	assignment_destroy(none);
	assignment_destroy(two);
}

int main(void)
{
	test_cpus();
	test_gpus();
	return done_testing();
}
