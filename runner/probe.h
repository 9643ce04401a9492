/* What this host has and how busy it is: capacity (cores, memory, the scratch
 * folder's size and free space) and live usage (CPU busy %, memory used %,
 * load) read from /proc. The parsers take text so tests feed them fixed /proc
 * content; the probe itself reads from a /proc root given at creation. */
#ifndef PARSA_RUNNER_PROBE_H
#define PARSA_RUNNER_PROBE_H

#include <stdint.h>

struct probe;

struct probe_capacity {
	int cpus;               /* cores this process may run on */
	uint64_t mem;           /* MemTotal in bytes */
	uint64_t scratch_total; /* bytes of the scratch folder's filesystem */
	uint64_t scratch_free;  /* bytes available to unprivileged users there */
};

struct probe_live {
	double cpu_pct;         /* whole machine, since the previous sample (at least ~100 ticks) */
	double mem_pct;         /* 100 * (1 - MemAvailable / MemTotal) */
	double load1;           /* 1-minute load average */
	uint64_t scratch_free;
};

/* Cumulative CPU time of the whole machine: the "cpu" line of /proc/stat. */
struct probe_cpu_times {
	uint64_t busy;
	uint64_t total;
};

/* Parsers of /proc text. Each returns 0, or -1 with errno EINVAL when a field
 * it needs is missing or malformed. */
int probe_parse_meminfo(const char *text, uint64_t *total, uint64_t *available);
int probe_parse_stat(const char *text, struct probe_cpu_times *times);
int probe_parse_loadavg(const char *text, double *load1);

/* CPU busy % between two samples (0 when no time passed), clamped to 0..100. */
double probe_cpu_pct(const struct probe_cpu_times *before, const struct probe_cpu_times *after);

/* proc_root is "/proc" except in tests; scratch_dir must exist. Takes 0.2 s:
 * it measures a first CPU busy % so the first heartbeat is already right. */
struct probe *probe_create(const char *proc_root, const char *scratch_dir, char **err);
void probe_destroy(struct probe *probe);

/* Detect capacity. 0, or -1 with errno and *err. */
int probe_capacity(struct probe *probe, struct probe_capacity *cap, char **err);

/* Take a live sample (call about once a second; a call sooner than about 100
 * clock ticks after the last repeats the last CPU figure). 0, or -1 with errno
 * and *err. */
int probe_sample(struct probe *probe, struct probe_live *live, char **err);

#endif
