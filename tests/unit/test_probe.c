/* The runner's /proc parsers on fixed text, the probe on a fake /proc (the
 * machine's use, each core's, parsa's share over the same interval) and the
 * split of the live use into parsa's and the outside's. */
#include "probe.h"
#include "tap.h"
#include "textfile.h"
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TAP_STATE;

static const char meminfo[] =
	"MemTotal:       16315520 kB\n"
	"MemFree:         1032044 kB\n"
	"MemAvailable:    8157760 kB\n"
	"Buffers:          402416 kB\n"
	"Cached:          6512460 kB\n"
	"SwapCached:            0 kB\n"
	"HugePages_Total:       0\n";

static const char meminfo_old[] =
	"MemTotal:        1000000 kB\n"
	"MemFree:          100000 kB\n"
	"Buffers:           50000 kB\n"
	"Cached:           250000 kB\n";

static const char stat1[] =
	"cpu  100 10 50 800 40 0 0 0 0 0\n"
	"cpu0 50 5 25 400 20 0 0 0 0 0\n"
	"intr 12345 1 2 3\n";

static const char stat2[] =
	"cpu  200 10 100 950 40 0 0 0 0 0\n"
	"cpu0 100 5 50 425 20 0 0 0 0 0\n";

static void test_meminfo(void)
{
	uint64_t total = 0, avail = 0;

	is_int(probe_parse_meminfo(meminfo, &total, &avail), 0, "meminfo parses");
	is_int(total, 16315520ULL * 1024, "MemTotal in bytes");
	is_int(avail, 8157760ULL * 1024, "MemAvailable in bytes");
	is_int(probe_parse_meminfo(meminfo_old, &total, &avail), 0, "meminfo without MemAvailable parses");
	is_int(avail, 400000ULL * 1024, "old kernels: MemFree + Buffers + Cached");
	errno = 0;
	is_int(probe_parse_meminfo("MemFree: 10 kB\n", &total, &avail), -1, "no MemTotal is an error");
	is_int(errno, EINVAL, "with EINVAL");
	is_int(probe_parse_meminfo("MemTotal: lots kB\nMemAvailable: 1 kB\n", &total, &avail), -1,
	       "a MemTotal that is not a number is an error");
	is_int(probe_parse_meminfo("", &total, &avail), -1, "empty text is an error");
	/* A key that only starts like another must not match. */
	is_int(probe_parse_meminfo("MemTotalX: 5 kB\nMemTotal: 10 kB\nMemAvailable: 20 kB\n", &total, &avail), 0,
	       "keys match whole");
	is_int(total, 10240, "MemTotal, not MemTotalX");
	is_int(avail, 10240, "available is clamped to total");
}

static void test_stat(void)
{
	struct probe_cpu_times a, b;

	is_int(probe_parse_stat(stat1, &a), 0, "stat parses");
	is_int(a.total, 1000, "total of the first 8 fields");
	is_int(a.busy, 160, "busy = total - idle - iowait");
	is_int(probe_parse_stat(stat2, &b), 0, "second sample parses");
	ok(fabs(probe_cpu_pct(&a, &b) - 50.0) < 1e-9, "busy 150 of 300 jiffies is 50%%");
	ok(probe_cpu_pct(&a, &a) == 0.0, "no time passed: 0%%");
	ok(probe_cpu_pct(&b, &a) == 0.0, "counters going back: 0%%, not negative");
	is_int(probe_parse_stat("cpu  1 2 3 4\n", &a), 0, "old kernels with four fields parse");
	is_int(a.total, 10, "their total");
	is_int(probe_parse_stat("cpu0 1 2 3 4 5\n", &a), -1, "no aggregate cpu line is an error");
	is_int(probe_parse_stat("cpu  1 2\n", &a), -1, "too few fields is an error");
	is_int(probe_parse_stat("cpu  1 x 3 4\n", &a), -1, "junk is an error");
	is_int(probe_parse_stat("", &a), -1, "empty text is an error");
}

static void test_loadavg(void)
{
	double load = -1;

	is_int(probe_parse_loadavg("0.52 0.58 0.59 1/467 12345\n", &load), 0, "loadavg parses");
	ok(fabs(load - 0.52) < 1e-9, "load1 is the first field");
	is_int(probe_parse_loadavg("abc", &load), -1, "junk is an error");
	is_int(probe_parse_loadavg("", &load), -1, "empty is an error");
	is_int(probe_parse_loadavg("1.5x 2 3", &load), -1, "trailing junk in the field is an error");
}

static void test_probe_fake_proc(void)
{
	char tmpl[] = "/tmp/parsa-test-probe.XXXXXX";
	char *dir = mkdtemp(tmpl), *err = NULL;
	struct probe_capacity cap;
	struct probe_live live;
	struct probe *p;
	double busy[8];
	int ids[8];
	long hz;

	if (!dir) {
		ok(0, "mkdtemp");
		return;
	}
	write_text(dir, "stat", stat1);
	write_text(dir, "meminfo", meminfo);
	write_text(dir, "loadavg", "2.25 1.00 0.50 3/100 999\n");
	p = probe_create(dir, dir, &err);
	ok(p != NULL, "probe on a fake /proc: %s", err ? err : "ok");
	if (!p)
		goto out;
	is_int(probe_capacity(p, &cap, &err), 0, "capacity");
	ok(cap.cpus >= 1, "at least one core (%d)", cap.cpus);
	is_int(cap.mem, 16315520ULL * 1024, "memory from the fake meminfo");
	ok(cap.scratch_total > 0 && cap.scratch_free <= cap.scratch_total,
	   "scratch size from statvfs (%llu free of %llu)", (unsigned long long)cap.scratch_free,
	   (unsigned long long)cap.scratch_total);
	write_text(dir, "stat", stat2);
	/* 300 ticks of the whole machine passed; parsa's instances used a
	 * quarter of them. */
	hz = sysconf(_SC_CLK_TCK);
	is_int(probe_sample(p, 300 * 1000 / hz / 4, &live, &err), 0, "a live sample");
	ok(fabs(live.cpu_pct - 50.0) < 1e-9, "CPU busy between the two fake samples: %.1f%%", live.cpu_pct);
	ok(fabs(live.parsa_cpu_pct - 25.0) < 0.5, "parsa's share over the same interval: %.2f%%", live.parsa_cpu_pct);
	is_int(live.online_cpus, 1, "one core line: one online core");
	is_int(live.mem_total, 16315520ULL * 1024, "MemTotal in bytes");
	is_int(live.mem_used, (16315520ULL - 8157760ULL) * 1024, "used = MemTotal - MemAvailable");
	is_int(probe_core_busy(p, ids, busy, 8), 1, "one core's busy share");
	ok(ids[0] == 0 && fabs(busy[0] - 0.75) < 1e-9, "cpu0 was busy 75 of 100 ticks: %.2f", busy[0]);
	ok(fabs(live.mem_pct - 100.0 * (1.0 - 8157760.0 / 16315520.0)) < 1e-9, "memory used %%: %.2f", live.mem_pct);
	ok(fabs(live.load1 - 2.25) < 1e-9, "load1");
	is_int(probe_sample(p, 300 * 1000 / hz, &live, &err), 0, "a sample with no time passed");
	ok(fabs(live.cpu_pct - 50.0) < 1e-9, "repeats the last figure, not 0%% or 100%%");
	ok(fabs(live.parsa_cpu_pct - 25.0) < 0.5, "and parsa's last share too");
	write_text(dir, "meminfo", "garbage\n");
	is_int(probe_sample(p, 0, &live, &err), -1, "a broken meminfo fails the sample");
	ok(err && strstr(err, "meminfo"), "and says which file: %s", err ? err : "(null)");
	probe_destroy(p);
	free(err);
	err = NULL;
	p = probe_create("/nonexistent-proc", dir, &err);
	ok(p == NULL && err && strstr(err, "/nonexistent-proc/stat"), "a missing /proc is an error naming the file: %s",
	   err ? err : "(null)");
	probe_destroy(p);
out:
	free(err);
	{
		char *cmd = xasprintf("rm -rf '%s'", dir);

		if (system(cmd) != 0)
			diag("cannot remove %s", dir);
		free(cmd);
	}
}

static void test_probe_real_proc(void)
{
	struct probe_capacity cap;
	struct probe_live live;
	char *err = NULL;
	struct probe *p = probe_create("/proc", "/tmp", &err);

	ok(p != NULL, "probe on the real /proc: %s", err ? err : "ok");
	if (!p) {
		free(err);
		return;
	}
	is_int(probe_capacity(p, &cap, &err), 0, "real capacity");
	ok(cap.cpus >= 1 && cap.mem > 0, "real: %d cores, %llu bytes", cap.cpus, (unsigned long long)cap.mem);
	usleep(20000);
	is_int(probe_sample(p, 0, &live, &err), 0, "real sample");
	ok(live.cpu_pct >= 0 && live.cpu_pct <= 100 && live.mem_pct > 0 && live.mem_pct < 100 && live.load1 >= 0,
	   "real usage is sane: cpu %.1f%% mem %.1f%% load %.2f", live.cpu_pct, live.mem_pct, live.load1);
	probe_destroy(p);
	free(err);
}

static void test_percpu(void)
{
	static const char text[] =
		"cpu  10 0 10 80 0 0 0 0 0 0\n"
		"cpu0 5 0 5 40 0 0 0 0 0 0\n"
		"cpu2 5 0 5 40 0 0 0 0 0 0\n"
		"intr 1 2 3\n";
	struct probe_cpu_times t[4];
	int ids[4];

	is_int(probe_parse_percpu(text, ids, t, 4), 2, "two core lines");
	ok(ids[0] == 0 && ids[1] == 2, "with their numbers (an offline cpu1 has no line)");
	is_int(t[1].total, 50, "and their times");
	is_int(probe_parse_percpu(text, ids, t, 1), 1, "no more than asked for");
	is_int(probe_parse_percpu("cpu  1 2 3 4\n", ids, t, 4), 0, "none: 0");
}

static void test_split(void)
{
	struct probe_live live = { .cpu_pct = 60, .mem_pct = 50, .mem_total = 1000, .mem_used = 500,
				   .parsa_cpu_pct = 20, .online_cpus = 4 };
	struct probe_split s;

	probe_split(&live, 100, &s);
	ok(fabs(s.parsa_cpu_pct - 20) < 1e-9 && fabs(s.outside_cpu_pct - 40) < 1e-9, "CPU: parsa 20%%, outside 40%%");
	ok(fabs(s.parsa_mem_pct - 10) < 1e-9 && fabs(s.outside_mem_pct - 40) < 1e-9,
	   "memory: parsa 10%% (100 of 1000 bytes), outside 40%%");
	ok(fabs(s.outside_cores - 1.6) < 1e-9, "outside cores: 40%% of 4 cores is 1.6 (%.2f)", s.outside_cores);
	is_int(s.outside_mem, 400, "outside memory: 500 used - 100 of parsa's");
	live.parsa_cpu_pct = 70;
	probe_split(&live, 600, &s);
	ok(s.outside_cpu_pct == 0 && s.outside_cores == 0, "parsa measured above the machine: outside 0, not negative");
	ok(s.outside_mem == 0 && s.outside_mem_pct == 0, "the same for memory");
}

int main(void)
{
	test_meminfo();
	test_stat();
	test_percpu();
	test_split();
	test_loadavg();
	test_probe_fake_proc();
	test_probe_real_proc();
	return done_testing();
}
