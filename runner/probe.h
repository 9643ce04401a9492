/* What this host has and how busy it is: capacity (cores, memory, the scratch
 * folder's size and free space) and live usage (CPU busy %, memory used %,
 * load, each core's busy share) read from /proc, and that use split into what
 * parsa's instances use and what the rest of the machine does. The parsers
 * take text so tests feed them fixed /proc content; the probe itself reads
 * from a /proc root given at creation. */
#ifndef PARSA_RUNNER_PROBE_H
#define PARSA_RUNNER_PROBE_H

#include <stddef.h>
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
	uint64_t mem_total;     /* MemTotal, bytes */
	uint64_t mem_used;      /* MemTotal - MemAvailable, bytes */
	double parsa_cpu_pct;   /* parsa's instances over the same interval as cpu_pct */
	int online_cpus;        /* the cores /proc/stat has a line for */
};

/* The live use split in two (the heartbeat's fields, lib/proto.h). */
struct probe_split {
	double parsa_cpu_pct, outside_cpu_pct;  /* of the whole machine's CPU */
	double parsa_mem_pct, outside_mem_pct;  /* of its memory */
	double outside_cores;                   /* cores kept busy outside parsa */
	int64_t outside_mem;                    /* bytes used outside parsa */
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
/* The per-core "cpuN" lines: up to max of them into ids and times. Returns
 * how many (0 when there are none). */
size_t probe_parse_percpu(const char *text, int *ids, struct probe_cpu_times *times, size_t max);
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
 * clock ticks after the last repeats the last CPU figures). parsa_cpu_ms is
 * the CPU time parsa's instances have used in all, measured just before
 * (runner/usage.h): its growth over the same interval as the machine's is
 * parsa's share. 0, or -1 with errno and *err. */
int probe_sample(struct probe *probe, int64_t parsa_cpu_ms, struct probe_live *live, char **err);

/* Each core's busy share (0..1) over the last sample's interval: up to max
 * cores into ids and busy. Returns how many (0 before two samples). */
size_t probe_core_busy(const struct probe *probe, int *ids, double *busy, size_t max);

/* Split a live sample: parsa's share of the CPU as measured, of the memory
 * parsa_rss (the instances' resident bytes) of MemTotal; the outside share is
 * the rest of the machine's use, never below 0; outside cores are the
 * outside share of the online cores. */
void probe_split(const struct probe_live *live, uint64_t parsa_rss, struct probe_split *out);

#endif
