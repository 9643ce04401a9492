#include "slurm_text.h"

#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copy at most len-1 bytes of [s, s+n) into dst. */
static void copy_span(char *dst, size_t len, const char *s, size_t n)
{
	if (n >= len)
		n = len - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* A whole unsigned decimal number in [s, s+n). */
static int parse_u64(const char *s, size_t n, uint64_t *v)
{
	uint64_t x = 0;
	size_t i;

	if (n == 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)s[i]) || x > (UINT64_MAX - 9) / 10)
			return -1;
		x = x * 10 + (uint64_t)(s[i] - '0');
	}
	*v = x;
	return 0;
}

static int parse_long(const char *s, size_t n, long *v)
{
	uint64_t x;

	if (parse_u64(s, n, &x) < 0 || x > LONG_MAX)
		return -1;
	*v = (long)x;
	return 0;
}

static void job_init(struct slurm_job *job)
{
	memset(job, 0, sizeof(*job));
	job->task_lo = job->task_hi = -1;
	job->cancel_uid = -1;
	job->cpus = -1;
}

/* Read a task list ("5", "4-9", "2,4,7-9", each optionally ending in "%N")
 * into job: tasks without the throttle, lo/hi its extremes. */
static int parse_tasks(const char *s, size_t n, struct slurm_job *job)
{
	const char *pct = memchr(s, '%', n), *p, *end;
	long lo = LONG_MAX, hi = -1, a, b;

	if (pct) {
		long t;

		if (parse_long(pct + 1, (size_t)(s + n - pct - 1), &t) < 0 || t > INT_MAX)
			return -1;
		job->task_throttle = (int)t;
		n = (size_t)(pct - s);
	}
	end = s + n;
	for (p = s; p < end;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *item_end = comma ? comma : end;
		const char *dash = memchr(p, '-', (size_t)(item_end - p));

		if (dash) {
			if (parse_long(p, (size_t)(dash - p), &a) < 0 ||
			    parse_long(dash + 1, (size_t)(item_end - dash - 1), &b) < 0 || b < a)
				return -1;
		} else {
			if (parse_long(p, (size_t)(item_end - p), &a) < 0)
				return -1;
			b = a;
		}
		if (a < lo)
			lo = a;
		if (b > hi)
			hi = b;
		if (!comma)
			break;
		p = comma + 1;
		if (p == end)
			return -1;
	}
	if (hi < 0)
		return -1;
	copy_span(job->tasks, sizeof(job->tasks), s, n);
	job->task_lo = lo;
	job->task_hi = hi;
	return 0;
}

/* squeue writes "N/A" for a field that does not apply, scontrol "(null)". */
static bool not_applicable(const char *s, size_t n)
{
	return (n == 3 && memcmp(s, "N/A", 3) == 0) || (n == 6 && memcmp(s, "(null)", 6) == 0) ||
	       n == 0;
}

int slurm_squeue_parse_line(const char *line, struct slurm_job *job, char **err)
{
	enum { NFIELDS = 11 };
	const char *f[NFIELDS], *p = line;
	size_t len[NFIELDS], n;
	uint64_t v;
	int i;

	job_init(job);
	n = strcspn(line, "\n");
	/* Ten '|' split the eleven fields; the name, last, keeps any others. */
	for (i = 0; i < NFIELDS - 1; i++) {
		const char *bar = memchr(p, '|', (size_t)(line + n - p));

		if (!bar) {
			errno = EINVAL;
			return errprintf(err, "%d fields, want %d (%s)", i + 1, NFIELDS, SLURM_SQUEUE_FORMAT);
		}
		f[i] = p;
		len[i] = (size_t)(bar - p);
		p = bar + 1;
	}
	f[NFIELDS - 1] = p;
	len[NFIELDS - 1] = (size_t)(line + n - p);

	if (parse_u64(f[1], len[1], &job->job_id) < 0) {
		errno = EINVAL;
		return errprintf(err, "job id '%.*s' is not a number", (int)len[1], f[1]);
	}
	/* %F is the job's own id for a job that is not an array, and %K "N/A". */
	if (!not_applicable(f[3], len[3])) {
		if (parse_u64(f[2], len[2], &v) < 0 || parse_tasks(f[3], len[3], job) < 0) {
			errno = EINVAL;
			return errprintf(err, "array '%.*s' task '%.*s' unreadable", (int)len[2], f[2],
					 (int)len[3], f[3]);
		}
		job->array_job_id = v;
	}
	copy_span(job->state, sizeof(job->state), f[4], len[4]);
	if (len[4] == 0 || len[4] >= sizeof(job->state)) {
		errno = EINVAL;
		return errprintf(err, "state '%.*s' unreadable", (int)len[4], f[4]);
	}
	copy_span(job->reason, sizeof(job->reason), f[5], len[5]);
	if (!not_applicable(f[6], len[6]))
		copy_span(job->nodes, sizeof(job->nodes), f[6], len[6]);
	copy_span(job->partition, sizeof(job->partition), f[7], len[7]);
	copy_span(job->user, sizeof(job->user), f[8], len[8]);
	if (parse_long(f[9], len[9], &job->cpus) < 0) {
		errno = EINVAL;
		return errprintf(err, "CPUs '%.*s' are not a number", (int)len[9], f[9]);
	}
	copy_span(job->name, sizeof(job->name), f[10], len[10]);
	return 0;
}

/* The value of KEY= in an scontrol -o record: the word after it (values are
 * single words in -o, spaces turned to '_'), found only at a word's start so
 * that ReqNodeList= is not NodeList=. */
static const char *record_value(const char *line, const char *key, size_t *n)
{
	size_t klen = strlen(key);
	const char *p = line;

	while (*p && *p != '\n') {
		const char *end = p + strcspn(p, " \n");

		if ((size_t)(end - p) > klen && memcmp(p, key, klen) == 0 && p[klen] == '=') {
			*n = (size_t)(end - p - klen - 1);
			return p + klen + 1;
		}
		p = end;
		while (*p == ' ')
			p++;
	}
	return NULL;
}

int slurm_scontrol_parse_line(const char *line, struct slurm_job *job, char **err)
{
	const char *v, *colon;
	size_t n;
	uint64_t u;

	job_init(job);
	v = record_value(line, "JobId", &n);
	if (!v || parse_u64(v, n, &job->job_id) < 0) {
		errno = EINVAL;
		return errprintf(err, "no JobId=N in the record");
	}
	v = record_value(line, "JobState", &n);
	if (!v || n == 0 || n >= sizeof(job->state)) {
		errno = EINVAL;
		return errprintf(err, "job %" PRIu64 ": no JobState=", job->job_id);
	}
	copy_span(job->state, sizeof(job->state), v, n);
	v = record_value(line, "ArrayJobId", &n);
	if (v) {
		size_t tn;
		const char *t = record_value(line, "ArrayTaskId", &tn);

		if (parse_u64(v, n, &u) < 0 || !t || parse_tasks(t, tn, job) < 0) {
			errno = EINVAL;
			return errprintf(err, "job %" PRIu64 ": ArrayJobId/ArrayTaskId unreadable",
					 job->job_id);
		}
		job->array_job_id = u;
	}
	v = record_value(line, "Reason", &n);
	if (v)
		copy_span(job->reason, sizeof(job->reason), v, n);
	/* A pending job's NodeList is "(null)", and so is an ended one's after
	 * its nodes were given back: BatchHost then still names the node. */
	v = record_value(line, "NodeList", &n);
	if (!v || not_applicable(v, n))
		v = record_value(line, "BatchHost", &n);
	if (v && !not_applicable(v, n))
		copy_span(job->nodes, sizeof(job->nodes), v, n);
	v = record_value(line, "JobName", &n);
	if (v)
		copy_span(job->name, sizeof(job->name), v, n);
	v = record_value(line, "Partition", &n);
	if (v && !not_applicable(v, n))
		copy_span(job->partition, sizeof(job->partition), v, n);
	/* UserId=alice(1001) */
	v = record_value(line, "UserId", &n);
	if (v)
		copy_span(job->user, sizeof(job->user), v, strcspn(v, "(") < n ? strcspn(v, "(") : n);
	v = record_value(line, "NumCPUs", &n);
	if (v && parse_long(v, n, &job->cpus) < 0)
		job->cpus = -1;
	v = record_value(line, "ExitCode", &n);
	if (v) {
		long code, sig;

		colon = memchr(v, ':', n);
		if (!colon || parse_long(v, (size_t)(colon - v), &code) < 0 ||
		    parse_long(colon + 1, (size_t)(v + n - colon - 1), &sig) < 0 || code > 255 ||
		    sig > 255) {
			errno = EINVAL;
			return errprintf(err, "job %" PRIu64 ": ExitCode '%.*s' unreadable",
					 job->job_id, (int)n, v);
		}
		job->has_exit = true;
		job->exit_code = (int)code;
		job->exit_signal = (int)sig;
	}
	return 0;
}

int slurm_parse_jobs(const char *text, bool scontrol, struct slurm_job **jobs, size_t *n,
		     char **err)
{
	struct slurm_job *out = NULL;
	size_t count = 0, cap = 0;
	const char *p = text;
	int lineno = 0;
	char *why = NULL;

	*jobs = NULL;
	*n = 0;
	while (*p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);

		lineno++;
		if (len == 0 || strspn(p, " \t") == len ||
		    (scontrol && len >= 21 && strncmp(p, "No jobs in the system", 21) == 0)) {
			p += len + (eol ? 1 : 0);
			continue;
		}
		if (count == cap) {
			cap = cap ? cap * 2 : 16;
			out = xrealloc(out, cap * sizeof(*out));
		}
		if ((scontrol ? slurm_scontrol_parse_line(p, &out[count], &why)
			      : slurm_squeue_parse_line(p, &out[count], &why)) < 0) {
			errprintf(err, "%s line %d: %s", scontrol ? "scontrol" : "squeue", lineno,
				  why ? why : "unreadable");
			free(why);
			free(out);
			errno = EINVAL;
			return -1;
		}
		count++;
		p += len + (eol ? 1 : 0);
	}
	*jobs = out;
	*n = count;
	return 0;
}

long slurm_outside_cpus(const struct slurm_job *jobs, size_t n, const char *own_name, const char *partition)
{
	long sum = 0;

	for (size_t i = 0; i < n; i++) {
		const struct slurm_job *j = &jobs[i];

		if (j->cpus <= 0 || strcmp(j->name, own_name) == 0 || strcmp(j->partition, partition) != 0)
			continue;
		if (strcmp(j->state, "RUNNING") == 0 || strcmp(j->state, "SUSPENDED") == 0 ||
		    strcmp(j->state, "COMPLETING") == 0)
			sum += j->cpus;
	}
	return sum;
}

bool slurm_job_has_task(const struct slurm_job *job, long task)
{
	const char *p = job->tasks;

	if (job->array_job_id == 0 || task < job->task_lo || task > job->task_hi)
		return false;
	/* The list again, item by item; it parsed once, so it is well formed. */
	while (*p) {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		if (task >= a && task <= b)
			return true;
		if (*end != ',')
			break;
		p = end + 1;
	}
	return false;
}

/* Every state squeue's %T, scontrol's JobState and sacct's State can say in
 * 22.05 (base states and the flags squeue prints in their place), with what
 * it means and the words parsa shows. why NULL: the caller composes it. */
static const struct state_entry {
	const char *name;
	enum slurm_outcome outcome;
	const char *why;
} state_table[] = {
	{ "PENDING", SLURM_QUEUED, NULL },
	/* Requeued (by an operator, or Slurm after a node failure when requeue is
	 * allowed): back in the queue, the same job id. */
	{ "REQUEUED", SLURM_QUEUED, "requeued by Slurm" },
	{ "REQUEUE_HOLD", SLURM_QUEUED, "requeued and held in Slurm" },
	{ "REQUEUE_FED", SLURM_QUEUED, "requeued by Slurm's federation" },
	{ "RESV_DEL_HOLD", SLURM_QUEUED, "held: its reservation was deleted" },
	/* Allocated, its nodes booting: the script has not started. */
	{ "CONFIGURING", SLURM_QUEUED, "nodes booting in Slurm (CONFIGURING)" },
	{ "POWER_UP_NODE", SLURM_QUEUED, "nodes powering up in Slurm" },
	{ "RUNNING", SLURM_RUNNING, NULL },
	{ "SUSPENDED", SLURM_RUNNING, "suspended in Slurm" },
	{ "STOPPED", SLURM_RUNNING, "stopped in Slurm (SIGSTOP)" },
	{ "SIGNALING", SLURM_RUNNING, NULL },
	{ "RESIZING", SLURM_RUNNING, NULL },
	{ "STAGE_OUT", SLURM_RUNNING, "staging out" },
	/* The script ended; Slurm is still cleaning up. The exit code decides
	 * once it is COMPLETED or FAILED. */
	{ "COMPLETING", SLURM_RUNNING, "finishing in Slurm (COMPLETING)" },
	{ "UPDATE_DB", SLURM_RUNNING, NULL },
	{ "COMPLETED", SLURM_SUCCEEDED, NULL },
	{ "FAILED", SLURM_FAILED, NULL },
	{ "CANCELLED", SLURM_FAILED, NULL },
	{ "TIMEOUT", SLURM_FAILED, "walltime exceeded in Slurm (TIMEOUT)" },
	{ "OUT_OF_MEMORY", SLURM_FAILED, "out of memory in Slurm (OUT_OF_MEMORY)" },
	{ "DEADLINE", SLURM_FAILED, "its deadline passed in Slurm (DEADLINE)" },
	{ "SPECIAL_EXIT", SLURM_FAILED, "special exit in Slurm (SPECIAL_EXIT)" },
	/* Ended by the machinery, not by the instance: another attempt. */
	{ "NODE_FAIL", SLURM_LOST, "its Slurm node failed (NODE_FAIL)" },
	{ "PREEMPTED", SLURM_LOST, "preempted in Slurm (PREEMPTED)" },
	{ "BOOT_FAIL", SLURM_LOST, "its Slurm node failed to boot (BOOT_FAIL)" },
	{ "REVOKED", SLURM_LOST, "revoked by Slurm's federation (REVOKED)" },
};

static const struct state_entry *state_lookup(const char *state, long *cancel_uid)
{
	size_t i, n = strcspn(state, " ");

	/* sacct writes "CANCELLED by 1001"; squeue and scontrol just the state. */
	if (cancel_uid && strncmp(state + n, " by ", 4) == 0) {
		char *end;
		long uid = strtol(state + n + 4, &end, 10);

		if (end != state + n + 4 && *end == '\0')
			*cancel_uid = uid;
	}
	for (i = 0; i < ARRAY_LEN(state_table); i++)
		if (strlen(state_table[i].name) == n && memcmp(state_table[i].name, state, n) == 0)
			return &state_table[i];
	return NULL;
}

int slurm_state_outcome(const char *state, enum slurm_outcome *outcome)
{
	const struct state_entry *e = state_lookup(state, NULL);

	if (!e) {
		errno = EINVAL;
		return -1;
	}
	*outcome = e->outcome;
	return 0;
}

/* Whether Slurm's reason says anything ("None" and "" do not). */
static bool says(const char *reason)
{
	return reason[0] && strcmp(reason, "None") != 0;
}

int slurm_job_verdict(const struct slurm_job *job, struct slurm_verdict *v)
{
	long uid = job->cancel_uid;
	const struct state_entry *e = state_lookup(job->state, &uid);

	v->why[0] = '\0';
	if (!e) {
		snprintf(v->why, sizeof(v->why), "unknown Slurm state '%s'", job->state);
		errno = EINVAL;
		return -1;
	}
	v->outcome = e->outcome;
	v->ended_by_slurm = e->outcome == SLURM_LOST ||
			    (e->outcome == SLURM_FAILED && strcmp(e->name, "FAILED") != 0);
	if (strcmp(e->name, "PENDING") == 0) {
		snprintf(v->why, sizeof(v->why), "waiting in Slurm: %s",
			 says(job->reason) ? job->reason : "queued");
	} else if (strcmp(e->name, "FAILED") == 0) {
		if (job->has_exit && job->exit_signal)
			snprintf(v->why, sizeof(v->why), "killed by signal %d in Slurm%s%s%s",
				 job->exit_signal, says(job->reason) ? " (" : "",
				 says(job->reason) ? job->reason : "", says(job->reason) ? ")" : "");
		else if (job->has_exit)
			snprintf(v->why, sizeof(v->why), "exit code %d in Slurm", job->exit_code);
		else
			snprintf(v->why, sizeof(v->why), "failed in Slurm%s%s%s",
				 says(job->reason) ? " (" : "", says(job->reason) ? job->reason : "",
				 says(job->reason) ? ")" : "");
	} else if (strcmp(e->name, "CANCELLED") == 0) {
		if (uid >= 0)
			snprintf(v->why, sizeof(v->why), "cancelled in Slurm by uid %ld", uid);
		else
			/* squeue and scontrol do not say by whom; parsa's own
			 * scancel carries parsa's reason (the instance table's). */
			snprintf(v->why, sizeof(v->why), "cancelled in Slurm outside parsa");
	} else if (strcmp(e->name, "COMPLETED") == 0 && job->has_exit &&
		   (job->exit_code || job->exit_signal)) {
		/* Slurm says COMPLETED only for 0:0; believe the code if not. */
		v->outcome = SLURM_FAILED;
		snprintf(v->why, sizeof(v->why), "exit code %d in Slurm", job->exit_code);
	} else if (e->why) {
		if (e->outcome == SLURM_QUEUED && says(job->reason))
			snprintf(v->why, sizeof(v->why), "%s: %s", e->why, job->reason);
		else
			snprintf(v->why, sizeof(v->why), "%s", e->why);
	}
	return 0;
}

void slurm_end_status(const char *id, const struct slurm_verdict *v, bool have_exit, int code,
		      int *exit_code, int *signal, char **reason)
{
	*exit_code = 0;
	*signal = 0;
	*reason = NULL;
	if (have_exit && (code == 0 || !v || !v->ended_by_slurm)) {
		*exit_code = code;
	} else if (v && v->outcome == SLURM_FAILED) {
		/* Timed out, out of memory, cancelled: killed before (or while)
		 * the wrapper could say. */
		*signal = SIGTERM;
		/* "out of memory" first: the scheduler reads it as such. */
		*reason = strncmp(v->why, "out of memory", 13) == 0 ?
			  xasprintf("%s, slurm job %s", v->why, id) : xasprintf("slurm job %s: %s", id, v->why);
	} else {
		*signal = SIGKILL;
		if (v && v->why[0])
			*reason = xasprintf("lost: slurm job %s: %s%s", id, v->why,
					    have_exit ? "" : ", and no exit code");
		else if (v)
			*reason = xasprintf("lost: slurm job %s ended in Slurm and left no exit code", id);
		else
			*reason = xasprintf("lost: slurm job %s is gone from squeue and left no exit code", id);
	}
}

const char *slurm_field(const char **pp, const char *end, size_t *n)
{
	const char *p = *pp, *bar;

	if (!p || p > end)
		return NULL;
	bar = memchr(p, '|', (size_t)(end - p));
	*n = bar ? (size_t)(bar - p) : (size_t)(end - p);
	*pp = bar ? bar + 1 : end + 1;
	return p;
}

int slurm_sinfo_parse_line(const char *line, struct slurm_partition_line *pl, char **err)
{
	const char *end = line + strcspn(line, "\n"), *p = line, *f[7];
	size_t n[7];
	long cpus[4];
	int i;

	memset(pl, 0, sizeof(*pl));
	for (i = 0; i < 7; i++) {
		f[i] = slurm_field(&p, end, &n[i]);
		if (!f[i]) {
			errno = EINVAL;
			return errprintf(err, "%d fields, want 7 (%s)", i, SLURM_SINFO_FORMAT);
		}
	}
	if (n[0] == 0 || n[0] >= sizeof(pl->name)) {
		errno = EINVAL;
		return errprintf(err, "partition name '%.*s' unreadable", (int)n[0], f[0]);
	}
	pl->is_default = f[0][n[0] - 1] == '*';
	copy_span(pl->name, sizeof(pl->name), f[0], n[0] - (pl->is_default ? 1 : 0));
	pl->up = n[1] == 2 && memcmp(f[1], "up", 2) == 0;
	/* "A/I/O/T" */
	{
		const char *q = f[1 + 1], *qend = f[2] + n[2];

		for (i = 0; i < 4; i++) {
			const char *slash = memchr(q, '/', (size_t)(qend - q));
			const char *iend = slash && i < 3 ? slash : qend;

			if ((i < 3 && !slash) || parse_long(q, (size_t)(iend - q), &cpus[i]) < 0) {
				errno = EINVAL;
				return errprintf(err, "CPUs '%.*s' are not A/I/O/T", (int)n[2], f[2]);
			}
			q = iend + 1;
		}
	}
	pl->cpus_alloc = cpus[0];
	pl->cpus_idle = cpus[1];
	pl->cpus_other = cpus[2];
	pl->cpus_total = cpus[3];
	/* sinfo writes "4000+" when the nodes of a line differ: the smallest. */
	if (parse_long(f[3], n[3] - (n[3] && f[3][n[3] - 1] == '+' ? 1 : 0), &pl->mem_mb) < 0 ||
	    parse_long(f[4], n[4], &pl->nodes) < 0) {
		errno = EINVAL;
		return errprintf(err, "memory '%.*s' or nodes '%.*s' unreadable", (int)n[3], f[3],
				 (int)n[4], f[4]);
	}
	copy_span(pl->state, sizeof(pl->state), f[5], n[5]);
	copy_span(pl->node_list, sizeof(pl->node_list), f[6], n[6]);
	return 0;
}

int slurm_split(long first, long count, const struct slurm_limits *lim, long throttle,
		struct slurm_chunk *chunks, size_t max_chunks, long *left)
{
	long size = lim && lim->max_array_size > 0 ? lim->max_array_size : 1001;
	long room = lim && lim->submit_room >= 0 ? lim->submit_room : LONG_MAX;
	long done = 0;
	size_t k = 0;

	*left = count;
	if (first < 0 || count < 0 || throttle < 0 || (count > 0 && max_chunks == 0)) {
		errno = EINVAL;
		return -1;
	}
	while (done < count && k < max_chunks && room > 0) {
		long c = count - done;
		struct slurm_chunk *ch = &chunks[k];
		int len;

		if (c > size)
			c = size;
		if (c > room)
			c = room;
		ch->first = first + done;
		ch->count = c;
		len = c == 1 ? snprintf(ch->spec, sizeof(ch->spec), "0")
			     : snprintf(ch->spec, sizeof(ch->spec), "0-%ld", c - 1);
		if (throttle > 0)
			snprintf(ch->spec + len, sizeof(ch->spec) - (size_t)len, "%%%ld", throttle);
		done += c;
		room -= c;
		k++;
	}
	*left = count - done;
	return (int)k;
}

/* Values sbatch reads from its arguments: a newline would end the script's
 * #SBATCH parsing, and an empty string means something else. */
static bool plain_value(const char *s)
{
	return s && *s && !strpbrk(s, "\n\r");
}

static void push(char ***argv, size_t *n, char *s)
{
	*argv = xrealloc(*argv, (*n + 2) * sizeof(**argv));
	(*argv)[(*n)++] = s;
	(*argv)[*n] = NULL;
}

char **slurm_sbatch_argv(const struct slurm_submit *s, char **err)
{
	char **argv = NULL;
	size_t n = 0;
	const char *bad = NULL;

	if (!plain_value(s->script))
		bad = "the script";
	else if (s->job_name && !plain_value(s->job_name))
		bad = "the job name";
	else if (s->log_path && !plain_value(s->log_path))
		bad = "the log path";
	else if (s->chdir && !plain_value(s->chdir))
		bad = "the working folder";
	else if (s->array_spec && !plain_value(s->array_spec))
		bad = "the array";
	else if (s->export_vars && !plain_value(s->export_vars))
		bad = "--export";
	else if (s->cpus < 0 || s->walltime_s < 0 || s->gpus < 0)
		bad = "cpus, walltime or gpus (negative)";
	else if ((s->partition && strpbrk(s->partition, "\n\r ")) ||
		 (s->account && strpbrk(s->account, "\n\r ")) || (s->qos && strpbrk(s->qos, "\n\r ")))
		bad = "the partition, account or QOS (a blank in it)";
	if (bad) {
		errno = EINVAL;
		errprintf(err, "sbatch: %s is not a value Slurm can take", bad);
		return NULL;
	}
	push(&argv, &n, xstrdup("sbatch"));
	push(&argv, &n, xstrdup("--parsable"));
	if (s->job_name)
		push(&argv, &n, xasprintf("--job-name=%s", s->job_name));
	if (s->array_spec)
		push(&argv, &n, xasprintf("--array=%s", s->array_spec));
	if (s->cpus > 0)
		push(&argv, &n, xasprintf("--cpus-per-task=%d", s->cpus));
	if (s->mem_mb > 0)
		push(&argv, &n, xasprintf("--mem=%" PRIu64 "M", s->mem_mb));
	if (s->walltime_s > 0) {
		/* Slurm keeps limits in minutes and rounds up; say so ourselves so
		 * that the argument reads as what Slurm will enforce. */
		int64_t min = (s->walltime_s + 59) / 60;

		push(&argv, &n, xasprintf("--time=%" PRId64 "-%02" PRId64 ":%02" PRId64 ":00",
					  min / 1440, min / 60 % 24, min % 60));
	}
	if (s->gpus > 0)
		push(&argv, &n, xasprintf("--gres=gpu:%d", s->gpus));
	if (s->partition && *s->partition)
		push(&argv, &n, xasprintf("--partition=%s", s->partition));
	if (s->account && *s->account)
		push(&argv, &n, xasprintf("--account=%s", s->account));
	if (s->qos && *s->qos)
		push(&argv, &n, xasprintf("--qos=%s", s->qos));
	if (s->log_path) {
		push(&argv, &n, xasprintf("--output=%s", s->log_path));
		push(&argv, &n, xasprintf("--error=%s", s->log_path));
	}
	if (s->chdir)
		push(&argv, &n, xasprintf("--chdir=%s", s->chdir));
	/* Nextflow's lesson (nextflow#234): a requeue looks like a kill to whoever
	 * watches the job; parsa retries itself unless the operator allows it. */
	push(&argv, &n, xstrdup(s->allow_requeue ? "--requeue" : "--no-requeue"));
	push(&argv, &n, xasprintf("--export=%s", s->export_vars ? s->export_vars : "NONE"));
	push(&argv, &n, xstrdup(s->script));
	return argv;
}

void slurm_argv_free(char **argv)
{
	size_t i;

	if (!argv)
		return;
	for (i = 0; argv[i]; i++)
		free(argv[i]);
	free(argv);
}

int slurm_parse_sbatch_id(const char *text, uint64_t *job_id)
{
	size_t n = strspn(text, "0123456789");

	if (n == 0 || (text[n] != '\0' && text[n] != '\n' && text[n] != ';') ||
	    parse_u64(text, n, job_id) < 0 || *job_id == 0) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* Texts of sbatch's refusals, in the order they are tried. */
static const struct {
	const char *text;
	enum slurm_refusal what;
} refusals[] = {
	/* MaxJobCount reached, or the controller busy: sbatch itself retries
	 * ("sleeping and retrying") until the runner's timeout stops it. */
	{ "temporarily unable to accept job", SLURM_REFUSED_BUSY },
	{ "Unable to contact slurm controller", SLURM_REFUSED_BUSY },
	{ "Socket timed out", SLURM_REFUSED_BUSY },
	{ "Resource temporarily unavailable", SLURM_REFUSED_BUSY },
	/* MaxSubmitJobs of an association or QOS (ESLURM_ACCOUNTING_POLICY and
	 * the reasons squeue names). */
	{ "job submit limit", SLURM_REFUSED_LIMIT },
	{ "MaxSubmitJob", SLURM_REFUSED_LIMIT },
	{ "Invalid job array specification", SLURM_REFUSED_ARRAY },
};

enum slurm_refusal slurm_sbatch_refusal(const char *text)
{
	size_t i;

	for (i = 0; i < ARRAY_LEN(refusals); i++)
		if (strstr(text, refusals[i].text))
			return refusals[i].what;
	return SLURM_REFUSED_ERROR;
}
