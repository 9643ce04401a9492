/* The runner's view of its Slurm partition (slurm_host.h) and the poll
 * cycle's outside load: sinfo's lines of a real Slurm 22.05, the split of
 * other users' CPUs against what the host offers, and the executor's one
 * squeue per cycle, which asks for the runner's partitions, keeps its own
 * jobs and sums everyone else's running CPUs, against fake sinfo, squeue and
 * scontrol scripts first in PATH. */
#include "executor_slurm.h"
#include "proto.h"
#include "slurm_fake.h"
#include "slurm_fixture.h"
#include "slurm_host.h"
#include "tap.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

TAP_STATE;

static void test_sinfo(void)
{
	char *w = fixture("sinfo-part-live.txt");
	struct slurm_partition_use use;
	struct slurm_cpu_split split;

	is_int(slurm_partition_use_parse(w, NULL, &use), 0, "the default partition");
	ok(use.usable == 12 && use.alloc == 9, "its CPUs up: allocated + idle, every line (%ld, %ld allocated)",
	   use.usable, use.alloc);
	is_str(use.name, "debug", "its name, without sinfo's '*'");
	is_int(slurm_partition_use_parse(w, "debug", &use), 0, "named");
	is_int(use.usable, 12, "the same");
	is_int(slurm_partition_use_parse(w, "gpu", &use), -1, "a partition sinfo does not show");
	is_int(slurm_partition_use_parse("debug*|up|0/4/4/8|100|2|mixed|n[1-2]\nlong|down|0/8/0/8|100|2|idle|n[3-4]\n",
					 "long", &use), 0, "a partition that is down");
	ok(use.usable == 0 && use.alloc == 0, "has none");
	/* 8 up, others hold 4. */
	slurm_cpu_split(8, 4, 8, &split);
	ok(split.outside == 4 && split.outside_eff == 4, "uncapped: all of the others' CPUs are outside load");
	slurm_cpu_split(8, 4, 6, &split);
	ok(split.outside == 4 && split.outside_eff == 2, "capped at 6: the 2 above the cap go to the others first");
	slurm_cpu_split(8, 4, 2, &split);
	ok(split.outside == 4 && split.outside_eff == 0, "capped at 2: the others leave it whole");
	slurm_cpu_split(8, 8, 4, &split);
	ok(split.outside == 8 && split.outside_eff == 4, "a full partition leaves nothing");
	slurm_cpu_split(8, -2, 8, &split);
	ok(split.outside == 0 && split.outside_eff == 0, "never negative");
	free(w);
}

/* What it offers, when it asks sinfo again, what the heartbeat says: the
 * outside load from the executor's squeue once it has one. */
static void test_host(void)
{
	struct executor_slurm_config cfg = { .runner = "t9", .lost_grace_ms = 1000 };
	struct heartbeat hb = { .outside_cores = -1, .outside_cpu_pct = -1 };
	struct slurm_host *sh = slurm_host_create(NULL, 6);
	struct executor *e = executor_slurm_create(&cfg, NULL);
	int64_t now = time_mono_ms();
	char *text;

	fake_write("sinfo.txt", "debug*|up|0/8/0/8|1000|2|idle|n[1-2]\n", 0644);
	is_int(slurm_host_offer(sh, 2, 0), 6, "host: 8 CPUs up, the cap of 6 offered");
	is_str(slurm_host_partition(sh), "debug", "host: the default partition's name");
	slurm_host_heartbeat(sh, e, 0, &hb);
	ok(hb.executor.kind && strcmp(hb.executor.kind, "slurm") == 0 && strcmp(hb.executor.partition, "") == 0 &&
	   hb.executor.pending == 0 && hb.executor.running == 0 && hb.executor.cpus_up == 8 &&
	   hb.executor.cpus_outside == 0 && hb.outside_cores == 0 && hb.outside_cpu_pct == 0,
	   "host: the heartbeat's facts, nothing outside");
	ok(hb.executor.accounting == NULL, "host: accounting not known before the first tick");

	/* Without a job of its own the executor still looks at the partition:
	 * other users' running jobs there, not elsewhere, not pending, not
	 * parsa's own. */
	executor_slurm_default_partition(e, slurm_host_partition(sh));
	fake_write("squeue.txt",
		 "7|7|7|N/A|RUNNING|None|n1|debug|alice|3|sim\n"
		 "8_1|9|8|1|RUNNING|None|n2|debug|bob|1|sweep\n"
		 "8_[2-5]|8|8|2-5|PENDING|Resources||debug|bob|1|sweep\n"
		 "10|10|10|N/A|RUNNING|None|n1|debug|carol|2|parsa-t9\n"
		 "11|11|11|N/A|RUNNING|None|n3|long|dave|16|big\n"
		 "12|12|12|N/A|COMPLETED|None|n1|debug|erin|4|done\n", 0644);
	ok(executor_tick(e, now) > now, "tick: a deadline for the next look");
	text = fake_read("squeue.args");
	ok(strstr(text, "--partition=debug\n") && strstr(text, "-t\nall\n") && !strstr(text, "--name"),
	   "one squeue for the default partition by name, everyone's jobs");
	free(text);
	slurm_host_heartbeat(sh, e, 2, &hb);
	ok(hb.executor.cpus_outside == 4 && hb.outside_cores == 2 && hb.outside_cpu_pct > 33.3 &&
	   hb.outside_cpu_pct < 33.4 && hb.parsa_cpu_pct > 33.3 && hb.parsa_cpu_pct < 33.4,
	   "host: 4 CPUs are other users' (not parsa's 2), 2 of them eat into the 6 offered (%ld, %.1f%%)",
	   (long)hb.executor.cpus_outside, hb.outside_cpu_pct);
	ok(hb.executor.accounting && strcmp(hb.executor.accounting, "off") == 0,
	   "host: accounting off (scontrol show config of a Slurm without slurmdbd)");
	fake_write("squeue.txt", "", 0644);
	executor_tick(e, now + 29000);
	slurm_host_heartbeat(sh, e, 0, &hb);
	is_int(hb.executor.cpus_outside, 4, "idle: not asked again before 30 s");
	executor_tick(e, now + 30000);
	slurm_host_heartbeat(sh, e, 0, &hb);
	is_int(hb.executor.cpus_outside, 0, "idle: asked after 30 s, the others are gone");

	fake_write("sinfo.txt", "debug*|up|5/3/0/8|1000|2|mixed|n[1-2]\n", 0644);
	ok(!slurm_host_refresh(sh, 1, 60000), "host: sinfo not asked again within 10 minutes");
	fake_write("sinfo.txt", "debug*|up|0/4/4/8|1000|2|mixed|n[1-2]\n", 0644);
	ok(slurm_host_refresh(sh, 0, SLURM_HOST_SINFO_MS), "host: after 10 minutes a node drained: register again");
	is_int(slurm_host_offer(sh, 2, SLURM_HOST_SINFO_MS + 1), 4, "host: with the 4 CPUs left");
	text = xasprintf("%s/sinfo.txt", fake_tmp);
	unlink(text);
	free(text);
	ok(!slurm_host_refresh(sh, 0, 3 * SLURM_HOST_SINFO_MS), "host: sinfo failing changes nothing");
	slurm_host_heartbeat(sh, e, 0, &hb);
	is_int(hb.executor.cpus_up, 4, "host: the last answer is kept");
	fake_write("sinfo.txt", "debug*|down|0/8/0/8|1000|2|idle|n[1-2]\n", 0644);
	ok(!slurm_host_refresh(sh, 0, 5 * SLURM_HOST_SINFO_MS), "host: a partition down keeps the registered CPUs");
	slurm_host_heartbeat(sh, e, 0, &hb);
	ok(hb.executor.cpus_up == 0 && hb.outside_cores == 4 && hb.outside_cpu_pct == 100,
	   "host: and all of them are outside load meanwhile");
	slurm_host_destroy(sh);
	executor_destroy(e);
}

int main(void)
{
	char *cmd;

	if (fake_setup("/tmp/test_slurm_host") < 0) {
		printf("Bail out! cannot make the test's folder\n");
		return 1;
	}
	cmd = xasprintf("cat %s/sinfo.txt\n", fake_tmp);
	fake_command("sinfo", cmd);
	free(cmd);
	cmd = xasprintf("printf '%%s\\n' \"$@\" >%s/squeue.args\ncat %s/squeue.txt\n", fake_tmp, fake_tmp);
	fake_command("squeue", cmd);
	free(cmd);
	cmd = xasprintf("cat %s/slurm/scontrol-config.txt\n", PARSA_FIXTURES);
	fake_command("scontrol", cmd);
	free(cmd);
	test_sinfo();
	test_host();
	fake_cleanup();
	return done_testing();
}
