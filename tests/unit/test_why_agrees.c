/* why agrees with the pass (issue 37): a few hundred random clusters and
 * queues on a real engine (sqlite and a storage volume in a temporary folder),
 * each placed by the engine's own pass, which the test runs itself under the
 * engine's lock with the scheduling thread stopped, so that nothing moves in
 * between. For every queued instance:
 *   - placed on host H: why, read on the snapshot just before that pass,
 *     says H fits;
 *   - not placed: why, read just after the pass, gives its stage a reason
 *     (max_running, held, start time, window, ...) or gives every host a
 *     reason, none of them "fits" unless a backfill reservation holds it.
 * (Before the pass an instance may fit a host that others take first, so the
 * second claim is read after it.) Random hosts: cpus, memory, scratch, GPUs,
 * features, live use outside parsa and its limits, windows, draining, down,
 * storage unreachable, work already there with walltimes; random jobs:
 * priority, start time, window, hold, one or two stages of random cpus, mem,
 * gpus, scratch, walltime, instances, max_running, hosts = and feature:; one
 * scenario in three on one or two hosts with a big job first in line, so that
 * backfill reservations come up. The engine's clock (a clock file) jumps days
 * between scenarios and lands on a random time of day. The seed is printed;
 * PARSA_SEED=N replays one run, PARSA_SCENARIOS=N changes how many.
 * It found two drifts: why dropped a reservation whose time had come (the
 * gate still held the host), and did not hold another stage of the held job
 * off the host (the gate did). */
#include "clock.h"
#include "engine.h"
#include "engine_internal.h" /* engine_pass() and the lock: the test runs the pass */
#include "log.h"
#include "sched_world.h"
#include "tap.h"
#include "util.h"
#include "views.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

TAP_STATE;

#define MAX_HOSTS 5
#define MAX_JOBS 8
#define MAX_FILLERS 4
#define MAX_SEEN 256
#define DEFAULT_SEED 37
#define DEFAULT_SCENARIOS 200
#define CLOCK_BASE 1893456000 /* 2030-01-01 */

struct world {
	struct sched_world sw;  /* sqlite, volume, engine (and an API this test does not use) */
	struct engine *engine;  /* sw's */
	struct model *model;
	char clock_file[64];
	struct clock *clock;
	struct caller me;
	uint64_t rng;
	int nhosts_ever;        /* h0..h<n-1> exist in the model */
};

/* What the checks counted, to show that each kind of case came up. */
struct tally {
	long placed, by_stage, by_hosts, held, instances;
};

/* splitmix64: the same sequence from a seed on every libc. */
static uint64_t next(struct world *w)
{
	uint64_t z = (w->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* 0..n-1 */
static int pick(struct world *w, int n)
{
	return (int)(next(w) % (uint64_t)n);
}

/* True with percent % chance. */
static int chance(struct world *w, int percent)
{
	return pick(w, 100) < percent;
}

/* The engine's clock at epoch second at (flowing on from now), the same
 * time of day on every run of a seed. A new file (a new inode) each time, so
 * that the clock sees the change at once. */
static void set_clock(struct world *w, int64_t at)
{
	char *tmp = xasprintf("%s.new", w->clock_file);
	FILE *f = fopen(tmp, "w");

	if (!f || fprintf(f, "@%" PRId64 "\n", at) < 0 || fclose(f) != 0 ||
	    rename(tmp, w->clock_file) < 0)
		diag("cannot write the clock file %s", w->clock_file);
	free(tmp);
}

static int world_start(struct world *w)
{
	struct engine_config cfg = { .host_timeout_ms = 600000, .timer_ms = 100,
				     .sendmail = "/nonexistent/sendmail", .start_bursts_at_once = true };
	int fd;

	snprintf(w->clock_file, sizeof w->clock_file, "/tmp/parsa-test-why-clock.XXXXXX");
	fd = mkstemp(w->clock_file);
	if (fd < 0)
		return -1;
	close(fd);
	w->clock = clock_create(w->clock_file);
	cfg.clock = w->clock;
	if (sched_world_start_with(&w->sw, 0, &cfg) < 0) {
		unlink(w->clock_file);
		return -1;
	}
	w->engine = w->sw.engine;
	w->model = w->sw.model;
	/* Only the scheduling thread stops: submissions, folders and hosts go
	 * on, and every pass from here on is the test's. */
	engine_stop(w->engine);
	return 0;
}

static void world_stop(struct world *w)
{
	if (sched_world_stop(&w->sw) != 0)
		diag("cannot remove %s", w->sw.dir);
	clock_destroy(w->clock);
	unlink(w->clock_file);
}

static void lock(struct world *w) { pthread_mutex_lock(&w->engine->lock); }
static void unlock(struct world *w) { pthread_mutex_unlock(&w->engine->lock); }

/* "09:00-17:00" and the like: open at a random time of day for some hours. */
static void random_window(struct world *w, char *buf, size_t len)
{
	int from = pick(w, 24);

	snprintf(buf, len, "%02d:00-%02d:00", from, (from + 2 + pick(w, 20)) % 24);
}

static const char *const features[] = { "ssd", "big" };

/* Host h<i>: registered with random capacity, its heartbeat's random live
 * use; down and draining come after the first pass (scenario). Shaped: room
 * for a big job (random_job) once its work ends. */
static void random_host(struct world *w, int i, int shaped)
{
	char name[16], window[32];
	const char *feats[2];
	size_t nfeats = 0;
	int cpus = shaped ? 8 + pick(w, 9) : 1 + pick(w, 16);
	uint64_t mem = (uint64_t)(1 + pick(w, 64)) << 30;
	struct host_info info = { .name = name, .cpus = cpus, .mem = mem,
				  .scratch_total = (uint64_t)(10 + pick(w, 90)) << 30,
				  .cpu_limit = chance(w, 50) ? 90 : 100,
				  .mem_limit = chance(w, 50) ? 90 : 100, .mount = "/parsa",
				  .gpus = chance(w, 40) ? 1 + pick(w, 4) : 0 };
	struct heartbeat hb = { .scratch_free = -1, .parsa_cpu_pct = -1, .parsa_mem_pct = -1 };
	char *err = NULL;

	snprintf(name, sizeof name, "h%d", i);
	info.scratch_free = info.scratch_total / (uint64_t)(1 + pick(w, 3));
	for (size_t f = 0; f < 2; f++)
		if (chance(w, 40))
			feats[nfeats++] = features[f];
	info.features = feats;
	info.nfeatures = nfeats;
	if (chance(w, 25)) {
		random_window(w, window, sizeof window);
		info.window = window;
		info.window_drain = chance(w, 50);
	}
	hb.outside_cpu_pct = chance(w, 80) ? pick(w, 20) : pick(w, 101);
	hb.cpu_pct = hb.outside_cpu_pct + pick(w, 10);
	hb.outside_mem_pct = chance(w, 80) ? pick(w, 20) : pick(w, 101);
	hb.mem_pct = hb.outside_mem_pct;
	hb.outside_cores = hb.outside_cpu_pct / 100.0 * cpus;
	hb.outside_mem = (int64_t)(hb.outside_mem_pct / 100.0 * (double)mem);
	if (chance(w, 5)) {
		hb.storage_down_since = 1700000000;
		hb.storage_reason = "stale file handle";
	}
	if (engine_register_host(w->engine, &info, &err) < 0 ||
	    engine_heartbeat(w->engine, name, &hb, &err) < 0)
		diag("host %s: %s", name, err ? err : "?");
	free(err);
	if (i >= w->nhosts_ever)
		w->nhosts_ever = i + 1;
}

/* A stage's hosts =: names, globs or features. */
static void random_hosts_line(struct world *w, char *buf, size_t len)
{
	switch (pick(w, 4)) {
	case 0:
		snprintf(buf, len, "hosts = h%d\n", pick(w, MAX_HOSTS));
		break;
	case 1:
		snprintf(buf, len, "hosts = h[0-%d]\n", pick(w, MAX_HOSTS));
		break;
	case 2:
		snprintf(buf, len, "hosts = feature:%s\n", features[pick(w, 2)]);
		break;
	default:
		snprintf(buf, len, "hosts = h*, feature:%s\n", features[pick(w, 2)]);
		break;
	}
}

static const char *const walltimes[] = { "0", "20m", "1h", "4h" };

static void random_stage(struct world *w, FILE *f, int s)
{
	char line[64];

	fprintf(f, "\n[stage s%d]\nrun = true\ncpus = %d\ninstances = %d\nwalltime = %s\n", s,
		1 + pick(w, 8), 1 + pick(w, 4), walltimes[pick(w, 4)]);
	if (chance(w, 60))
		fprintf(f, "mem = %dG\n", 1 + pick(w, 24));
	if (chance(w, 25))
		fprintf(f, "gpus = %d\n", 1 + pick(w, 2));
	if (chance(w, 20))
		fprintf(f, "scratch = %dG\n", 1 + pick(w, 80));
	if (chance(w, 20))
		fprintf(f, "max_running = %d\n", 1 + pick(w, 2));
	if (chance(w, 30)) {
		random_hosts_line(w, line, sizeof line);
		fputs(line, f);
	}
	if (chance(w, 10)) {
		random_window(w, line, sizeof line);
		fprintf(f, "window = %s\n", line);
	}
	if (s > 0 && chance(w, 30))
		fprintf(f, "after = s0\n");
}

/* A job: queued work (start = +1h, which the scenario's clock passes; now
 * and then +5h, which it does not), or with filler set, work that the first
 * pass places at once on host h<filler-1> so that hosts hold work with and
 * without walltimes. With big set, queued work first in line and too big for
 * what is left of a host: a backfill reservation for it, which the rest
 * meets. Returns its id, or -1. */
static int64_t random_job(struct world *w, int filler, int big)
{
	char *text = NULL, *err = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int64_t id = -1;
	char window[32];

	if (!f)
		abort();
	fprintf(f, "[job]\npriority = %d\n", big ? 5 : pick(w, 5));
	if (big) {
		fprintf(f, "start = +1h\n\n[stage s0]\nrun = true\ncpus = %d\nwalltime = 2h\n",
			6 + pick(w, 3));
		/* A stage of its own beside it, which its reservation holds off too. */
		if (chance(w, 50))
			fprintf(f, "\n[stage s1]\nrun = true\ninstances = 2\nwalltime = %s\n",
				walltimes[pick(w, 4)]);
	} else if (filler) {
		fprintf(f, "\n[stage s0]\nrun = true\ncpus = %d\ninstances = %d\nwalltime = %s\n"
			"hosts = h%d\n", 1 + pick(w, 8), 1 + pick(w, 3),
			(const char *[]){ "0", "10m", "3h", "6h" }[pick(w, 4)], filler - 1);
	} else {
		fprintf(f, "start = %s\n", chance(w, 90) ? "+1h" : "+5h");
		if (chance(w, 15)) {
			random_window(w, window, sizeof window);
			fprintf(f, "window = %s\n", window);
		}
		for (int s = 0, n = 1 + pick(w, 2); s < n; s++)
			random_stage(w, f, s);
	}
	fclose(f);
	if (engine_submit(w->engine, &w->me, filler ? "filler.conf" : "work.conf", NULL, text, len,
			  &id, NULL, &err) < 0) {
		diag("submit: %s\n%s", err ? err : "?", text);
		id = -1;
	}
	free(text);
	free(err);
	return id;
}

/* Until every job's folders are made (the storage thread's work). */
static void wait_folders(struct world *w, const int64_t *ids, int n)
{
	for (int tries = 0; tries < 5000; tries++) {
		int pending = 0;

		lock(w);
		for (int j = 0; j < n; j++) {
			const struct job *job = model_job(w->model, ids[j]);

			pending += job && job->folders_pending;
		}
		unlock(w);
		if (!pending)
			return;
		usleep(1000);
	}
	diag("folders not made in 5 s");
}

/* The block of why's text for stage name (up to the next stage's), a copy. */
static char *stage_block(const char *why, const char *name)
{
	char *head = xasprintf("\nstage %s: ", name), *end, *block;
	const char *at = why ? strstr(why, head) : NULL;

	free(head);
	if (!at)
		return xstrdup("");
	end = strstr(at + 1, "\nstage ");
	block = end ? strndup(at, (size_t)(end - at) + 1) : xstrdup(at);
	if (!block)
		abort();
	return block;
}

/* What why's line for host name says ("fits (starts ...", "needs 8 cpus, ...").
 * Points into block; NULL when the block has no line for it. */
static const char *host_line(const char *block, const char *name)
{
	char *head = xasprintf("\n  %s: ", name);
	const char *at = strstr(block, head);
	size_t n = strlen(head);

	free(head);
	return at ? at + n : NULL;
}

/* Reasons why gives a whole stage, with no line per host. */
static int stage_reason(const char *block)
{
	static const char *const reasons[] = {
		"max_running = ", "  held: ", "  starts at ", "  outside its window",
		"before its folders are made", "the job is ending", "waiting for",
	};

	for (size_t i = 0; i < sizeof reasons / sizeof *reasons; i++)
		if (strstr(block, reasons[i]))
			return 1;
	return 0;
}

struct seen {
	int64_t job;
	int stage, index;
};

static char *why_of(struct world *w, int64_t id, int64_t now)
{
	struct placement_host *hosts = NULL;
	size_t n = engine_placement_hosts(w->engine, &hosts);
	const struct job *job = model_job(w->model, id);
	char *text = job ? views_job_why(w->model, job, hosts, n, now) : xstrdup("");

	free(hosts);
	return text;
}

/* Check one instance against the whys before and after the pass: 0 when
 * they agree, else -1 after a diag with both texts. */
static int check_one(struct world *w, const struct seen *s, const char *before, const char *after,
		     struct tally *t)
{
	const struct job *job = model_job(w->model, s->job);
	const struct instance *inst;
	const char *name, *line;
	char *b_block, *a_block, host[16];
	int ret = 0, lines = 0;

	if (!job)
		return 0;
	inst = job->stages[s->stage].inst[s->index];
	name = job->stages[s->stage].spec->name;
	b_block = stage_block(before, name);
	a_block = stage_block(after, name);
	t->instances++;
	if (inst->state == INST_ASSIGNED) {
		line = host_line(b_block, inst->host_name);
		t->placed++;
		if (!line || strncmp(line, "fits", 4) != 0) {
			diag("job %" PRId64 " stage %s instance %d: the pass placed it on %s, but why "
			     "said of %s: %.*s", s->job, name, s->index, inst->host_name,
			     inst->host_name, line ? (int)strcspn(line, "\n") : 6, line ? line : "(none)");
			ret = -1;
		}
		goto out;
	}
	for (int h = 0; h < w->nhosts_ever; h++) {
		snprintf(host, sizeof host, "h%d", h);
		line = host_line(a_block, host);
		if (!line)
			continue;
		lines++;
		if (strncmp(line, "fits, but is held", 17) == 0)
			t->held++;
		else if (strncmp(line, "fits", 4) == 0) {
			diag("job %" PRId64 " stage %s instance %d: the pass left it queued, but why "
			     "says %s fits", s->job, name, s->index, host);
			ret = -1;
		}
	}
	if (lines == 0 && stage_reason(a_block)) {
		t->by_stage++;
	} else if (lines != w->nhosts_ever) {
		diag("job %" PRId64 " stage %s instance %d: left queued; why has %d host lines of %d "
		     "and no reason for the stage", s->job, name, s->index, lines, w->nhosts_ever);
		ret = -1;
	} else {
		t->by_hosts++;
	}
out:
	if (ret < 0)
		diag("why before the pass:\n%s\nwhy after it:\n%s", before, after);
	free(b_block);
	free(a_block);
	return ret;
}

/* Down, draining or back in service, after the first pass placed the fillers. */
static void random_service(struct world *w, int nhosts)
{
	char name[16];

	for (int i = 0; i < nhosts; i++) {
		snprintf(name, sizeof name, "h%d", i);
		if (chance(w, 7))
			engine_host_leave(w->engine, name, NULL);
		else
			engine_host_ctl(w->engine, &w->me, name, chance(w, 10) ? "drain" : "resume", NULL);
	}
}

static void scenario(struct world *w, int k, struct tally *t)
{
	/* Three days apart, at a random time of day. */
	int64_t at = CLOCK_BASE + (int64_t)k * 3 * 86400 + pick(w, 86400), now;
	int64_t ids[MAX_JOBS + MAX_FILLERS];
	int shaped = chance(w, 33), nhosts = 1 + pick(w, MAX_HOSTS), njobs = 0, nseen = 0, bad = 0;
	char *before[MAX_JOBS + MAX_FILLERS] = { 0 }, *after[MAX_JOBS + MAX_FILLERS] = { 0 };
	struct seen seen[MAX_SEEN];
	char name[16];

	set_clock(w, at);
	/* One in three on one or two hosts with a big job first in line. */
	if (shaped)
		nhosts = 1 + pick(w, 2);
	for (int i = 0; i < nhosts; i++)
		random_host(w, i, shaped);
	for (int i = 0, n = 1 + pick(w, MAX_FILLERS); i < n; i++)
		ids[njobs++] = random_job(w, 1 + pick(w, nhosts), 0);
	for (int i = 0, n = 1 + pick(w, MAX_JOBS); i < n; i++)
		ids[njobs++] = random_job(w, 0, shaped && i == 0);
	wait_folders(w, ids, njobs);
	/* The first pass: the fillers go to their hosts, the rest are rolled
	 * up (queued, or waiting for their first stage). */
	lock(w);
	engine_pass(w->engine);
	unlock(w);
	random_service(w, nhosts);
	lock(w);
	/* Past the start of +1h jobs, and a random way into the fillers' walltimes. */
	set_clock(w, at + 3600 + 1 + pick(w, 3 * 3600));
	now = engine_now_ms(w->engine);
	for (int j = 0; j < njobs; j++) {
		const struct job *job = ids[j] > 0 ? model_job(w->model, ids[j]) : NULL;

		before[j] = why_of(w, ids[j], now);
		for (size_t s = 0; job && s < job->nstages; s++)
			for (size_t i = 0; i < job->stages[s].ninst && nseen < MAX_SEEN; i++)
				if (job->stages[s].inst[i]->state == INST_QUEUED)
					seen[nseen++] = (struct seen){ ids[j], (int)s, (int)i };
	}
	engine_pass(w->engine);
	for (int j = 0; j < njobs; j++)
		after[j] = why_of(w, ids[j], now);
	for (int n = 0; n < nseen; n++) {
		int j = 0;

		while (ids[j] != seen[n].job)
			j++;
		if (check_one(w, &seen[n], before[j], after[j], t) < 0 && ++bad >= 3)
			break;
	}
	unlock(w);
	ok(bad == 0, "scenario %d: %d hosts, %d jobs, %d queued instances: why agrees with the pass",
	   k, nhosts, njobs, nseen);
	/* Clear the stage for the next: every job cancelled, every host gone
	 * (its assignments, never started, end with their jobs). */
	for (int j = 0; j < njobs; j++) {
		if (ids[j] > 0)
			engine_ctl(w->engine, &w->me, ids[j], "cancel", NULL);
		free(before[j]);
		free(after[j]);
	}
	for (int i = 0; i < w->nhosts_ever; i++) {
		snprintf(name, sizeof name, "h%d", i);
		engine_host_leave(w->engine, name, NULL);
	}
}

int main(void)
{
	struct world w = { 0 };
	struct tally t = { 0 };
	const char *env = getenv("PARSA_SEED"), *count = getenv("PARSA_SCENARIOS");
	uint64_t seed = env && *env ? strtoull(env, NULL, 10) : DEFAULT_SEED;
	int scenarios = count && *count ? atoi(count) : DEFAULT_SCENARIOS;

	diag("seed %" PRIu64 " (replay with PARSA_SEED=%" PRIu64 "), %d scenarios", seed, seed,
	     scenarios);
	w.rng = seed;
	/* Warnings only: a scenario logs every host and job otherwise. */
	log_init("test_why_agrees", 1, LOG_LEVEL_WARN);
	if (world_start(&w) < 0) {
		ok(0, "a real engine in a temporary folder");
		return done_testing();
	}
	for (int k = 0; k < scenarios; k++)
		scenario(&w, k, &t);
	diag("%ld queued instances: %ld placed (why said fits), %ld left with a reason for their stage, "
	     "%ld with a reason for every host (%ld host lines held by backfill)", t.instances, t.placed,
	     t.by_stage, t.by_hosts, t.held);
	/* The checks above must have met every kind of case to mean anything. */
	ok(t.placed > 0 && t.by_stage > 0 && t.by_hosts > 0 && t.held > 0, "placed, held by their "
	   "stage, by every host and by a backfill reservation all came up");
	world_stop(&w);
	return done_testing();
}
