#include "slurm_host.h"
#include "executor.h"
#include "log.h"
#include "proto.h"
#include "slurm_run.h"
#include "slurm_text.h"
#include "util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct slurm_host {
	char *partition;
	int cap;
	int offered;               /* what the last registration offered */
	struct slurm_partition_use use; /* the last sinfo that answered; usable -1: none */
	long parsa_cpus;           /* parsa's running CPUs when it was taken */
	int64_t next_sinfo_ms;     /* monotonic */
	bool failing;              /* to log a failing sinfo once */
};

int slurm_partition_use_parse(const char *sinfo_text, const char *partition, struct slurm_partition_use *u)
{
	char *text = xstrdup(sinfo_text), *save = NULL, *why = NULL;
	struct slurm_partition_line p;
	bool found = false;

	*u = (struct slurm_partition_use){ 0 };
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (slurm_sinfo_parse_line(line, &p, &why) < 0) {
			free(why);
			why = NULL;
			continue;
		}
		if (partition ? strcmp(p.name, partition) != 0 : !p.is_default)
			continue;
		if (!found)
			snprintf(u->name, sizeof u->name, "%s", p.name);
		found = true;
		if (!p.up)
			continue;
		u->usable += p.cpus_alloc + p.cpus_idle;
		u->alloc += p.cpus_alloc;
	}
	free(text);
	return found ? 0 : -1;
}

void slurm_cpu_split(long usable, long outside, long offered, struct slurm_cpu_split *s)
{
	long spare = usable > offered ? usable - offered : 0;

	s->outside = outside > 0 ? outside : 0;
	s->outside_eff = s->outside > spare ? s->outside - spare : 0;
	if (s->outside_eff > offered)
		s->outside_eff = offered > 0 ? offered : 0;
}

struct slurm_host *slurm_host_create(const char *partition, int cap)
{
	struct slurm_host *sh = xcalloc(1, sizeof *sh);

	sh->partition = partition ? xstrdup(partition) : NULL;
	sh->cap = cap;
	sh->use.usable = -1;
	return sh;
}

void slurm_host_destroy(struct slurm_host *sh)
{
	if (!sh)
		return;
	free(sh->partition);
	free(sh);
}

/* One sinfo; 0, or -1 (logged once while it keeps failing). */
static int ask(struct slurm_host *sh, long parsa_cpus, int64_t now_ms)
{
	char *argv[] = { "sinfo", "--noheader", "-o", SLURM_SINFO_FORMAT, NULL };
	struct slurm_run_result res = { 0 };
	struct slurm_partition_use u;
	char *err = NULL;
	int rc = -1;

	sh->next_sinfo_ms = now_ms + SLURM_HOST_SINFO_MS;
	if (slurm_run(argv, NULL, NULL, 30000, &res, &err) < 0)
		goto out;
	if (res.status != 0) {
		err = xasprintf("sinfo (status %d): %s", res.status, res.err);
		goto out;
	}
	if (slurm_partition_use_parse(res.out, sh->partition, &u) < 0) {
		err = xasprintf("sinfo shows no partition %s", sh->partition ? sh->partition : "marked default");
		goto out;
	}
	sh->use = u;
	sh->parsa_cpus = parsa_cpus;
	rc = 0;
out:
	if (rc < 0 && !sh->failing)
		log_warnx("cannot ask Slurm for its CPUs: %s", err);
	else if (rc == 0 && sh->failing)
		log_info("sinfo answers again");
	sh->failing = rc < 0;
	slurm_run_result_clear(&res);
	free(err);
	return rc;
}

/* What the host offers from the last sinfo: the cap where it is lower. */
static int offer_of(const struct slurm_host *sh, int fallback)
{
	long usable = sh->use.usable > INT_MAX ? INT_MAX : sh->use.usable;

	if (usable <= 0)
		return sh->cap ? sh->cap : fallback;
	return sh->cap && sh->cap < usable ? sh->cap : (int)usable;
}

int slurm_host_offer(struct slurm_host *sh, int fallback, int64_t now_ms)
{
	if (ask(sh, sh->parsa_cpus, now_ms) == 0)
		log_info("Slurm partition %s: %ld CPUs up; offering %d", sh->partition ? sh->partition :
			 "(default)", sh->use.usable, offer_of(sh, fallback));
	else
		log_warnx("offering %d CPUs", offer_of(sh, fallback));
	sh->offered = offer_of(sh, fallback);
	return sh->offered;
}

const char *slurm_host_partition(const struct slurm_host *sh)
{
	return sh->use.usable >= 0 && sh->use.name[0] ? sh->use.name : NULL;
}

bool slurm_host_refresh(struct slurm_host *sh, long parsa_cpus, int64_t now_ms)
{
	if (now_ms < sh->next_sinfo_ms || ask(sh, parsa_cpus, now_ms) < 0)
		return false;
	/* Nodes down or drained leave nothing to offer: the scheduler keeps the
	 * registered CPUs (a host has at least one), and the outside load of
	 * slurm_host_heartbeat holds new work back meanwhile. */
	if (sh->use.usable <= 0 || offer_of(sh, sh->offered) == sh->offered)
		return false;
	log_info("Slurm partition %s: %ld CPUs up now; offering %d instead of %d", sh->partition ?
		 sh->partition : "(default)", sh->use.usable, offer_of(sh, sh->offered), sh->offered);
	return true;
}

void slurm_host_heartbeat(const struct slurm_host *sh, const struct executor *ex, long parsa_cpus,
			  struct heartbeat *hb)
{
	struct executor_facts f = { 0 };
	struct slurm_cpu_split s;

	if (!executor_facts(ex, &f))
		return;
	hb->executor = (struct heartbeat_executor){
		.kind = executor_name(ex), .partition = f.partition ? f.partition : "",
		.pending = f.pending, .running = f.running, .last_poll_ms = f.last_poll_ms,
		.poll_error = f.poll_error, .cpus_up = sh->use.usable, .cpus_outside = -1,
		.accounting = f.accounting,
	};
	if (sh->use.usable < 0 || sh->offered <= 0)
		return;
	slurm_cpu_split(sh->use.usable, f.cpus_outside >= 0 ? f.cpus_outside : sh->use.alloc - sh->parsa_cpus,
			sh->offered, &s);
	if (sh->use.usable == 0)
		s.outside_eff = sh->offered;
	hb->executor.cpus_outside = s.outside;
	hb->outside_cores = (double)s.outside_eff;
	hb->outside_cpu_pct = 100.0 * (double)s.outside_eff / sh->offered;
	hb->parsa_cpu_pct = 100.0 * (double)(parsa_cpus < sh->offered ? parsa_cpus : sh->offered) /
			    sh->offered;
	hb->cpu_pct = hb->outside_cpu_pct + hb->parsa_cpu_pct;
	if (hb->cpu_pct > 100)
		hb->cpu_pct = 100;
}
