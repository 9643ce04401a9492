/* slurm_wrapper.h: the wrapper's text, built with every value in single
 * quotes (a stage's command or item may hold anything sh reads specially). */
#include "slurm_wrapper.h"
#include "util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *slurm_map_path(const char *path, const char *from, const char *to)
{
	size_t n = from ? strlen(from) : 0;

	if (!from || !to || strncmp(path, from, n) != 0 || (path[n] != '/' && path[n] != '\0'))
		return xstrdup(path);
	return xasprintf("%s%s", to, path + n);
}

/* A file of the wrapper's beside the stage's outputs: a dot file, which
 * neither a files:N count nor a foreach sees. */
static char *dot_file(const char *mount, const struct assignment *a, const char *what)
{
	return xasprintf("%s/jobs/%" PRId64 "/out/%s/.parsa-%s.%" PRId64 ".%" PRId64, mount, a->job,
			 a->stage, what, a->index, a->attempt);
}

char *slurm_exit_path(const char *mount, const struct assignment *a)
{
	return dot_file(mount, a, "exit");
}

char *slurm_progress_path(const char *mount, const struct assignment *a)
{
	return dot_file(mount, a, "progress");
}

/* s in single quotes for sh. */
static void put_quoted(char **buf, size_t *len, const char *s)
{
	size_t need = strlen(s) * 4 + 3;
	char *p;

	*buf = xrealloc(*buf, *len + need + 1);
	p = *buf + *len;
	*p++ = '\'';
	for (; *s; s++) {
		if (*s == '\'') {
			memcpy(p, "'\\''", 4);
			p += 4;
		} else {
			*p++ = *s;
		}
	}
	*p++ = '\'';
	*p = '\0';
	*len = (size_t)(p - *buf);
}

static void put(char **buf, size_t *len, const char *s)
{
	size_t n = strlen(s);

	*buf = xrealloc(*buf, *len + n + 1);
	memcpy(*buf + *len, s, n + 1);
	*len += n;
}

static void put_export(char **buf, size_t *len, const char *name, const char *value)
{
	put(buf, len, "export ");
	put(buf, len, name);
	put(buf, len, "=");
	put_quoted(buf, len, value);
	put(buf, len, "\n");
}

char *slurm_wrapper_text(const struct assignment *a, const char *node_mount)
{
	char *buf = NULL, *v, num[32];
	size_t len = 0;

	put(&buf, &len, "#!/bin/sh\n# parsa: job ");
	snprintf(num, sizeof num, "%" PRId64, a->job);
	put(&buf, &len, num);
	put(&buf, &len, ", its stage's instance on Slurm (runner/executor_slurm.c).\n");
	/* The stage's own variables first: the PARSA_ ones below say where
	 * the instance really is, as for a local instance (launch.c). */
	for (size_t i = 0; i < a->nenv; i++) {
		size_t n = strcspn(a->env[i], "=");
		char *name = xasprintf("%.*s", (int)n, a->env[i]);

		put_export(&buf, &len, name, a->env[i][n] ? a->env[i] + n + 1 : "");
		free(name);
	}
	put_export(&buf, &len, "PARSA_JOB", num);
	put_export(&buf, &len, "PARSA_STAGE", a->stage);
	snprintf(num, sizeof num, "%" PRId64, a->index);
	put_export(&buf, &len, "PARSA_INDEX", num);
	v = a->item[0] ? xasprintf("%s/jobs/%" PRId64 "/out/%s", node_mount, a->job, a->item) : xstrdup("");
	put_export(&buf, &len, "PARSA_ITEM", v);
	free(v);
	v = assignment_out_dir(node_mount, a);
	put_export(&buf, &len, "PARSA_OUT", v);
	free(v);
	v = xasprintf("%s/jobs/%" PRId64, node_mount, a->job);
	put_export(&buf, &len, "PARSA_JOBDIR", v);
	free(v);
	snprintf(num, sizeof num, "%" PRId64, a->cpus);
	put_export(&buf, &len, "PARSA_CPUS", num);
	/* The node sees either the parsa mount (it has jobs/ID/stages/) or
	 * the storage volume itself (--slurm-path-map to a kernel NFS mount of
	 * the export), where the same log is jobs/ID/log/S/I.log (filesystem.md). */
	v = xasprintf("%s/jobs/%" PRId64 "/stages/%s/instances/%" PRId64 "/log", node_mount, a->job, a->stage,
		      a->index);
	put(&buf, &len, "log=");
	put_quoted(&buf, &len, v);
	free(v);
	v = xasprintf("%s/jobs/%" PRId64 "/log/%s/%" PRId64 ".log", node_mount, a->job, a->stage, a->index);
	put(&buf, &len, "\n[ -d \"$PARSA_JOBDIR/stages\" ] || {\n\tlog=");
	put_quoted(&buf, &len, v);
	put(&buf, &len, "\n\tmkdir -p \"${log%/*}\" 2>/dev/null\n}");
	free(v);
	v = slurm_exit_path(node_mount, a);
	put(&buf, &len, "\nexit_file=");
	put_quoted(&buf, &len, v);
	free(v);
	v = slurm_progress_path(node_mount, a);
	put(&buf, &len, "\nexport PARSA_PROGRESS=");
	put_quoted(&buf, &len, v);
	free(v);
	put(&buf, &len, "\nworkdir=");
	put_quoted(&buf, &len, a->workdir ? a->workdir : "");
	put(&buf, &len, "\nrun=");
	put_quoted(&buf, &len, a->run);
	/* The scratch folder is the node's: the runner's is on another host. */
	put(&buf, &len,
	    "\nexport PARSA_SCRATCH=\"${TMPDIR:-/tmp}/parsa-slurm.$SLURM_JOB_ID\"\n"
	    "mkdir -m 700 -p \"$PARSA_SCRATCH\"\n"
	    "exec >>\"$log\" 2>&1 </dev/null || exit 125\n"
	    /* Made empty, as the runner makes a local instance's; true, not
	     * the special builtin ':', whose failed redirection ends sh. */
	    "true >\"$PARSA_PROGRESS\"\n"
	    "mkdir -p \"$PARSA_OUT\" 2>/dev/null\n"
	    /* As a local instance: where it was submitted from if the node has
	     * it, else the output folder. */
	    "{ [ -n \"$workdir\" ] && cd \"$workdir\" 2>/dev/null; } || cd \"$PARSA_OUT\" 2>/dev/null || "
	    "cd \"$PARSA_SCRATCH\"\n"
	    "start=$(date +%s%3N)\n"
	    "/bin/sh -c \"$run\"\n"
	    "rc=$?\n"
	    "end=$(date +%s%3N)\n"
	    "rm -rf \"$PARSA_SCRATCH\"\n"
	    /* One write of one line: a reader that sees it cut short sees
	     * no newline and waits (slurm_exit_parse), so no rename is needed
	     * (a process and a volume round trip less per instance). */
	    "printf '%d %s %s\\n' \"$rc\" \"$start\" \"$end\" >\"$exit_file\"\n"
	    "exit \"$rc\"\n");
	return buf;
}

char *slurm_array_script(const char *const *wrappers, size_t n)
{
	char *buf = NULL, num[32];
	size_t len = 0;

	put(&buf, &len, "#!/bin/sh\n# parsa: a job array, one stage instance per task (runner/slurm_submit.c).\n"
		       "case \"$SLURM_ARRAY_TASK_ID\" in\n");
	for (size_t k = 0; k < n; k++) {
		/* Each wrapper ends with its own exit: no branch falls through.
		 * Its "#!" line is a comment here. */
		snprintf(num, sizeof num, "%zu)\n", k);
		put(&buf, &len, num);
		put(&buf, &len, wrappers[k]);
		put(&buf, &len, ";;\n");
	}
	put(&buf, &len, "*) echo \"parsa: no instance for array task $SLURM_ARRAY_TASK_ID\" >&2; exit 125 ;;\nesac\n");
	return buf;
}

int slurm_exit_parse(const char *text, int *code, int64_t *started_ms, int64_t *ended_ms)
{
	long long t0 = 0, t1 = 0;
	char *end;
	long v;

	if (!text || !*text || text[strlen(text) - 1] != '\n')
		return -1;
	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || end == text || (*end != '\n' && *end != ' ') || v < 0 || v > 255)
		return -1;
	/* The node's clock at the stage's start and end; a node whose date
	 * cannot say milliseconds leaves them out (or writes garbage). */
	if (*end == ' ' && sscanf(end, " %lld %lld", &t0, &t1) != 2)
		t0 = t1 = 0;
	*code = (int)v;
	*started_ms = t0 > 0 && t1 >= t0 ? t0 : 0;
	*ended_ms = t0 > 0 && t1 >= t0 ? t1 : 0;
	return 0;
}
