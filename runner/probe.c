#include "probe.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

/* Fewer clock ticks than this (over all CPUs) between two samples say more
 * about tick granularity than about load: 1% resolution at least. */
#define MIN_TICKS 100
/* The first figure is measured over this interval when the probe is created. */
#define FIRST_INTERVAL_NS 200000000L

struct probe {
	char *proc_root;
	char *scratch_dir;
	struct probe_cpu_times last; /* the sample the next busy % is measured from */
	double last_pct;             /* the latest busy % */
	int64_t last_parsa_ms;       /* parsa's CPU time at the sample last was taken */
	double last_parsa_pct;       /* parsa's share over the latest interval */
	char *stat_buf;              /* /proc/stat's cpu lines: room for every core's */
	size_t stat_size;
	/* Per core: the lines of the latest read, those of last, their busy share. */
	size_t ncores, ncores_last, ncores_busy;
	int *core_ids, *core_ids_last, *core_ids_busy;
	struct probe_cpu_times *core_now, *core_last;
	double *core_busy;
};

/* The value of "Key:   1234 kB" in meminfo text, in bytes. */
static int meminfo_field(const char *text, const char *key, uint64_t *bytes)
{
	const char *p = line_value(text, key, ':');
	unsigned long long v;
	char *end;

	if (!p)
		goto bad;
	errno = 0;
	v = strtoull(p, &end, 10);
	if (errno || end == p)
		goto bad;
	while (*end == ' ' || *end == '\t')
		end++;
	/* Every memory line of meminfo is in kB; a bare number is pages or a
	 * count, which we never ask for. */
	if (strncmp(end, "kB", 2) != 0 || v > UINT64_MAX / 1024)
		goto bad;
	*bytes = (uint64_t)v * 1024;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int probe_parse_meminfo(const char *text, uint64_t *total, uint64_t *available)
{
	uint64_t t, a, free_, buffers, cached;

	if (meminfo_field(text, "MemTotal", &t) < 0 || t == 0) {
		errno = EINVAL;
		return -1;
	}
	/* Kernels before 3.14 lack MemAvailable: approximate it the old way. */
	if (meminfo_field(text, "MemAvailable", &a) < 0) {
		if (meminfo_field(text, "MemFree", &free_) < 0)
			return -1;
		buffers = cached = 0;
		meminfo_field(text, "Buffers", &buffers);
		meminfo_field(text, "Cached", &cached);
		a = free_ + buffers + cached;
	}
	if (a > t)
		a = t;
	*total = t;
	*available = a;
	return 0;
}

/* The numbers of one cpu line after its label. */
static int parse_times(const char *p, struct probe_cpu_times *times)
{
	/* user nice system idle iowait irq softirq steal; guest time is already
	 * counted in user and nice, so it is left out of the total. */
	unsigned long long f[8] = { 0 };
	char *end;
	int n;

	for (n = 0; n < 8; n++) {
		while (*p == ' ')
			p++;
		if (*p == '\n' || *p == '\0')
			break;
		errno = 0;
		f[n] = strtoull(p, &end, 10);
		if (errno || end == p)
			goto bad;
		p = end;
	}
	/* Linux has had at least user..idle (4 fields) forever. */
	if (n < 4)
		goto bad;
	times->total = 0;
	for (int i = 0; i < 8; i++)
		times->total += f[i];
	times->busy = times->total - f[3] - f[4];
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int probe_parse_stat(const char *text, struct probe_cpu_times *times)
{
	if (strncmp(text, "cpu ", 4) != 0) {
		errno = EINVAL;
		return -1;
	}
	return parse_times(text + 4, times);
}

size_t probe_parse_percpu(const char *text, int *ids, struct probe_cpu_times *times, size_t max)
{
	const char *p = text;
	size_t n = 0;

	/* The cpuN lines follow the aggregate one, one per online core. */
	while (p && n < max) {
		char *end;
		long id;

		p = strchr(p, '\n');
		if (!p || strncmp(++p, "cpu", 3) != 0 || p[3] < '0' || p[3] > '9')
			break;
		errno = 0;
		id = strtol(p + 3, &end, 10);
		if (errno || id < 0 || id > INT32_MAX || *end != ' ' || parse_times(end, &times[n]) < 0)
			break;
		ids[n++] = (int)id;
	}
	return n;
}

int probe_parse_loadavg(const char *text, double *load1)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (errno || end == text || v < 0 || (*end != ' ' && *end != '\n' && *end != '\0')) {
		errno = EINVAL;
		return -1;
	}
	*load1 = v;
	return 0;
}

double probe_cpu_pct(const struct probe_cpu_times *before, const struct probe_cpu_times *after)
{
	uint64_t dt, db;
	double pct;

	/* Counters only grow, but a CPU going offline can make the sum step back. */
	if (after->total <= before->total || after->busy < before->busy)
		return 0.0;
	dt = after->total - before->total;
	db = after->busy - before->busy;
	pct = 100.0 * (double)db / (double)dt;
	return pct > 100.0 ? 100.0 : pct;
}

/* Read the beginning of a /proc file (its first size - 1 bytes) as a string:
 * the fields we need are on the first lines, and /proc/stat's interrupt line
 * can be very long on big machines. */
static int read_head(const struct probe *probe, const char *name, char *buf, size_t size, char **err)
{
	char *path = xasprintf("%s/%s", probe->proc_root, name);
	ssize_t n;
	int fd, rc = -1;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		errprintf(err, "cannot open %s: %s", path, strerror(errno));
		goto out;
	}
	n = read_all(fd, buf, size - 1);
	if (n < 0) {
		errprintf(err, "cannot read %s: %s", path, strerror(errno));
		goto out;
	}
	buf[n] = '\0';
	rc = 0;
out:
	if (fd >= 0) {
		int saved = errno;

		close(fd);
		errno = saved;
	}
	free(path);
	return rc;
}

/* The machine's CPU times, and each core's into probe->core_now. */
static int sample_cpu(struct probe *probe, struct probe_cpu_times *times, char **err)
{
	if (read_head(probe, "stat", probe->stat_buf, probe->stat_size, err) < 0)
		return -1;
	if (probe_parse_stat(probe->stat_buf, times) < 0)
		return errprintf(err, "%s/stat: no 'cpu' line that parses", probe->proc_root);
	probe->ncores = probe_parse_percpu(probe->stat_buf, probe->core_ids, probe->core_now, CPU_SETSIZE);
	return 0;
}

/* The interval from last to now is over: each core's busy share in it. */
static void advance_cores(struct probe *probe)
{
	size_t n = 0;

	if (probe->ncores_last == probe->ncores &&
	    memcmp(probe->core_ids, probe->core_ids_last, probe->ncores * sizeof *probe->core_ids) == 0) {
		for (n = 0; n < probe->ncores; n++) {
			probe->core_busy[n] = probe_cpu_pct(&probe->core_last[n], &probe->core_now[n]) / 100.0;
			probe->core_ids_busy[n] = probe->core_ids[n];
		}
	}
	/* A core that went on- or offline: no figures for one interval. */
	probe->ncores_busy = n;
	memcpy(probe->core_last, probe->core_now, probe->ncores * sizeof *probe->core_now);
	memcpy(probe->core_ids_last, probe->core_ids, probe->ncores * sizeof *probe->core_ids);
	probe->ncores_last = probe->ncores;
}

static int sample_mem(struct probe *probe, uint64_t *total, uint64_t *available, char **err)
{
	char buf[8192];

	if (read_head(probe, "meminfo", buf, sizeof buf, err) < 0)
		return -1;
	if (probe_parse_meminfo(buf, total, available) < 0)
		return errprintf(err, "%s/meminfo: no MemTotal/MemAvailable that parse", probe->proc_root);
	return 0;
}

static int scratch_space(struct probe *probe, uint64_t *total, uint64_t *avail, char **err)
{
	struct statvfs st;

	if (statvfs(probe->scratch_dir, &st) < 0)
		return errprintf(err, "cannot statvfs %s: %s", probe->scratch_dir, strerror(errno));
	*total = (uint64_t)st.f_blocks * st.f_frsize;
	*avail = (uint64_t)st.f_bavail * st.f_frsize;
	return 0;
}

struct probe *probe_create(const char *proc_root, const char *scratch_dir, char **err)
{
	struct probe *probe = xcalloc(1, sizeof *probe);
	struct probe_cpu_times second;
	struct timespec pause = { 0, FIRST_INTERVAL_NS };
	uint64_t t, a;

	probe->proc_root = xstrdup(proc_root ? proc_root : "/proc");
	probe->scratch_dir = xstrdup(scratch_dir);
	/* About 60 bytes a core line: the aggregate line, every core's, and
	 * the start of what follows. */
	probe->stat_size = 4096 + 128 * (size_t)CPU_SETSIZE;
	probe->stat_buf = xmalloc(probe->stat_size);
	probe->core_ids = xcalloc(CPU_SETSIZE, sizeof *probe->core_ids);
	probe->core_ids_last = xcalloc(CPU_SETSIZE, sizeof *probe->core_ids_last);
	probe->core_ids_busy = xcalloc(CPU_SETSIZE, sizeof *probe->core_ids_busy);
	probe->core_now = xcalloc(CPU_SETSIZE, sizeof *probe->core_now);
	probe->core_last = xcalloc(CPU_SETSIZE, sizeof *probe->core_last);
	probe->core_busy = xcalloc(CPU_SETSIZE, sizeof *probe->core_busy);
	/* Fail early, with the reason, if anything we will read every second is
	 * unreadable. */
	if (sample_cpu(probe, &probe->last, err) < 0 ||
	    sample_mem(probe, &t, &a, err) < 0 ||
	    scratch_space(probe, &t, &a, err) < 0) {
		int saved = errno ? errno : EINVAL;

		probe_destroy(probe);
		errno = saved;
		return NULL;
	}
	advance_cores(probe);
	/* Two samples a moment apart, so the very first heartbeat already says
	 * how busy the machine is (a hog started by hand must hold work back). */
	while (nanosleep(&pause, &pause) < 0 && errno == EINTR)
		;
	if (sample_cpu(probe, &second, NULL) == 0) {
		probe->last_pct = probe_cpu_pct(&probe->last, &second);
		if (second.total > probe->last.total) {
			probe->last = second;
			advance_cores(probe);
		}
	}
	return probe;
}

void probe_destroy(struct probe *probe)
{
	if (!probe)
		return;
	free(probe->proc_root);
	free(probe->scratch_dir);
	free(probe->stat_buf);
	free(probe->core_ids);
	free(probe->core_ids_last);
	free(probe->core_ids_busy);
	free(probe->core_now);
	free(probe->core_last);
	free(probe->core_busy);
	free(probe);
}

int probe_capacity(struct probe *probe, struct probe_capacity *cap, char **err)
{
	cpu_set_t set;
	uint64_t avail;
	long n;

	/* The affinity mask is what this runner (and so its instances) may use,
	 * which under a container's or taskset's restriction is fewer than the
	 * machine's cores. */
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
		cap->cpus = CPU_COUNT(&set);
	} else {
		n = sysconf(_SC_NPROCESSORS_ONLN);
		cap->cpus = n > 0 ? (int)n : 1;
	}
	if (sample_mem(probe, &cap->mem, &avail, err) < 0)
		return -1;
	return scratch_space(probe, &cap->scratch_total, &cap->scratch_free, err);
}

/* parsa's share of the machine's CPU time from before to now. */
static double parsa_pct(const struct probe_cpu_times *before, const struct probe_cpu_times *now,
			int64_t parsa_ms)
{
	long hz = sysconf(_SC_CLK_TCK);
	double machine_ms, pct;

	if (now->total <= before->total || parsa_ms <= 0)
		return 0.0;
	machine_ms = (double)(now->total - before->total) * 1000.0 / (double)(hz > 0 ? hz : 100);
	pct = 100.0 * (double)parsa_ms / machine_ms;
	return pct > 100.0 ? 100.0 : pct;
}

int probe_sample(struct probe *probe, int64_t parsa_cpu_ms, struct probe_live *live, char **err)
{
	struct probe_cpu_times now;
	uint64_t total, avail, scratch_total;
	char buf[256];

	if (sample_cpu(probe, &now, err) < 0)
		return -1;
	/* Too short an interval (an extra heartbeat right after registering)
	 * keeps the latest figures and the older starting point. */
	if (now.total >= probe->last.total + MIN_TICKS || now.total < probe->last.total) {
		probe->last_pct = probe_cpu_pct(&probe->last, &now);
		probe->last_parsa_pct = parsa_pct(&probe->last, &now, parsa_cpu_ms - probe->last_parsa_ms);
		probe->last = now;
		probe->last_parsa_ms = parsa_cpu_ms;
		advance_cores(probe);
	}
	live->cpu_pct = probe->last_pct;
	live->parsa_cpu_pct = probe->last_parsa_pct;
	live->online_cpus = probe->ncores > 0 ? (int)probe->ncores : (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (live->online_cpus < 1)
		live->online_cpus = 1;
	if (sample_mem(probe, &total, &avail, err) < 0)
		return -1;
	live->mem_pct = 100.0 * (1.0 - (double)avail / (double)total);
	live->mem_total = total;
	live->mem_used = total - avail;
	if (read_head(probe, "loadavg", buf, sizeof buf, err) < 0)
		return -1;
	if (probe_parse_loadavg(buf, &live->load1) < 0)
		return errprintf(err, "%s/loadavg does not parse", probe->proc_root);
	return scratch_space(probe, &scratch_total, &live->scratch_free, err);
}

size_t probe_core_busy(const struct probe *probe, int *ids, double *busy, size_t max)
{
	size_t n = probe->ncores_busy < max ? probe->ncores_busy : max;

	memcpy(ids, probe->core_ids_busy, n * sizeof *ids);
	memcpy(busy, probe->core_busy, n * sizeof *busy);
	return n;
}

void probe_split(const struct probe_live *live, uint64_t parsa_rss, struct probe_split *out)
{
	double parsa_mem = live->mem_total ? 100.0 * (double)parsa_rss / (double)live->mem_total : 0.0;
	double parsa_cpu = live->parsa_cpu_pct < 0 ? 0.0 : live->parsa_cpu_pct;

	/* Both are measured (the machine from /proc/stat, parsa from its
	 * trees), so parsa's can come out a little above the machine's. */
	if (parsa_cpu > 100.0)
		parsa_cpu = 100.0;
	if (parsa_mem > 100.0)
		parsa_mem = 100.0;
	out->parsa_cpu_pct = parsa_cpu;
	out->outside_cpu_pct = live->cpu_pct > parsa_cpu ? live->cpu_pct - parsa_cpu : 0.0;
	out->parsa_mem_pct = parsa_mem;
	out->outside_mem_pct = live->mem_pct > parsa_mem ? live->mem_pct - parsa_mem : 0.0;
	out->outside_cores = out->outside_cpu_pct / 100.0 * (double)(live->online_cpus > 0 ? live->online_cpus : 1);
	out->outside_mem = live->mem_used > parsa_rss ? (int64_t)(live->mem_used - parsa_rss) : 0;
}
