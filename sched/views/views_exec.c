#include "views_exec.h"
#include "escape.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* How many (host, reason) groups `why` lists before "and N more". */
#define WAIT_GROUPS 6

/* s escaped (escape.h): a runner's or Slurm's words cannot forge a line. */
static void put(FILE *f, const char *s)
{
	char *e;

	if (!s)
		return;
	if (!escape_needed(s)) {
		fputs(s, f);
		return;
	}
	e = escape_text(s);
	fputs(e, f);
	free(e);
}

void views_host_exec_text(FILE *f, const struct host *h, int64_t now_ms)
{
	const struct host_executor *x = h->exec;
	const char *kind;

	if (!x)
		return;
	kind = x->kind ? x->kind : "?";
	fputs("executor: ", f);
	put(f, kind);
	fprintf(f, "\n%s partition: ", kind);
	put(f, x->partition && *x->partition ? x->partition : "(the default one)");
	fprintf(f, "\n%s jobs: ", kind);
	if (x->pending >= 0 && x->running >= 0)
		fprintf(f, "%lld pending, %lld running\n", (long long)x->pending, (long long)x->running);
	else
		fputs("not known\n", f);
	if (x->cpus_up >= 0) {
		fprintf(f, "%s cpus: %lld up", kind, (long long)x->cpus_up);
		if (x->cpus_outside >= 0)
			fprintf(f, ", %lld held by other users' jobs", (long long)x->cpus_outside);
		fputs("\n", f);
	}
	if (x->last_poll_ms > 0)
		fprintf(f, "%s last poll: %.1f s ago\n", kind,
			(double)(now_ms > x->last_poll_ms ? now_ms - x->last_poll_ms : 0) / 1000.0);
	else
		fprintf(f, "%s last poll: none yet\n", kind);
	if (x->poll_error) {
		fprintf(f, "%s poll error: ", kind);
		put(f, x->poll_error);
		fputs("\n", f);
	}
	if (x->accounting)
		fprintf(f, "%s accounting: %s\n", kind, strcmp(x->accounting, "on") == 0 ?
			"on (ended jobs' CPU time, memory and who cancelled from sacct)" : "off (no sacct)");
}

json_t *views_host_exec_json(const struct host *h)
{
	const struct host_executor *x = h->exec;

	if (!x)
		return json_null();
	return json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:o,s:o}", "kind", x->kind ? x->kind : "",
			 "partition", x->partition ? x->partition : "",
			 "pending", (json_int_t)x->pending, "running", (json_int_t)x->running,
			 "last_poll_ms", (json_int_t)x->last_poll_ms, "cpus_up", (json_int_t)x->cpus_up,
			 "cpus_outside", (json_int_t)x->cpus_outside,
			 "poll_error", x->poll_error ? json_string(x->poll_error) : json_null(),
			 "accounting", x->accounting ? json_string(x->accounting) : json_null());
}

void views_instance_exec_text(FILE *f, const struct instance *inst)
{
	if (inst->slurm_job) {
		fputs("slurm job: ", f);
		put(f, inst->slurm_job);
		fputs("\n", f);
	}
	if (inst->slurm_state) {
		fputs("slurm state: ", f);
		put(f, inst->slurm_state);
		fputs("\n", f);
	}
	if (inst->slurm_reason && inst->state == INST_ASSIGNED) {
		fputs("slurm reason: ", f);
		put(f, inst->slurm_reason);
		fputs("\n", f);
	}
}

struct wait_group {
	const char *host, *reason;
	int n;
};

void views_why_exec(FILE *f, const struct stage *stage)
{
	struct wait_group groups[WAIT_GROUPS];
	size_t ngroups = 0;
	int others = 0;

	for (size_t i = 0; i < stage->ninst; i++) {
		const struct instance *inst = stage->inst[i];
		size_t g;

		if (inst->state != INST_ASSIGNED || !inst->slurm_reason)
			continue;
		for (g = 0; g < ngroups; g++)
			if (strcmp(groups[g].host, inst->host_name) == 0 &&
			    strcmp(groups[g].reason, inst->slurm_reason) == 0)
				break;
		if (g < ngroups) {
			groups[g].n++;
		} else if (ngroups < WAIT_GROUPS) {
			groups[ngroups++] = (struct wait_group){ inst->host_name, inst->slurm_reason, 1 };
		} else {
			others++;
		}
	}
	for (size_t g = 0; g < ngroups; g++) {
		fprintf(f, "  %d instance%s wait%s in Slurm on ", groups[g].n, groups[g].n == 1 ? "" : "s",
			groups[g].n == 1 ? "s" : "");
		put(f, groups[g].host);
		fputs(": ", f);
		put(f, groups[g].reason);
		fputs(" (Slurm's reason)\n", f);
	}
	if (others > 0)
		fprintf(f, "  and %d more instance%s in Slurm for other reasons\n", others,
			others == 1 ? " waits" : "s wait");
}
