#include "schedules.h"
#include "escape.h"

#include "cron.h"
#include "ctl_commands.h"
#include "ident.h"
#include "log.h"
#include "spec.h"
#include "timing.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCHEDULE_NAME_MAX 64
/* Missed runs of a cron line are counted up to this many, under the engine's
 * lock (the count is only for the note). */
#define MISSED_COUNT_MAX 10000

struct run {
	int64_t job;
	int64_t ms;
	char *note;
};

struct schedule {
	int64_t id;
	char *name;
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	size_t ngroups;
	char *user;
	char *spec_file;
	char *spec;               /* the text, byte for byte */
	size_t spec_len;
	struct every *every;
	bool paused;
	int64_t anchor_ms, next_ms, created_ms;
	struct run runs[SCHEDULE_RUNS_KEPT]; /* a ring, oldest at runs_head */
	size_t runs_head, nruns;
	int64_t total_runs;
	char *last_error;         /* why the last run could not be submitted; "" if none */
};

struct schedules {
	struct schedules_ops ops;
	struct store *store;
	struct schedule **v;      /* by id */
	size_t n, cap;
	int64_t next_id;
	char *load_error;         /* while loading */
};

static void schedule_free(struct schedule *sc)
{
	if (!sc)
		return;
	for (size_t i = 0; i < sc->nruns; i++)
		free(sc->runs[(sc->runs_head + i) % SCHEDULE_RUNS_KEPT].note);
	every_destroy(sc->every);
	free(sc->name);
	free(sc->groups);
	free(sc->user);
	free(sc->spec_file);
	free(sc->spec);
	free(sc->last_error);
	free(sc);
}

static struct schedule *find(struct schedules *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i]->name, name) == 0)
			return s->v[i];
	return NULL;
}

static void remember_run(struct schedule *sc, int64_t job, int64_t ms, const char *note)
{
	struct run *r;

	if (sc->nruns == SCHEDULE_RUNS_KEPT) {
		free(sc->runs[sc->runs_head].note);
		sc->runs_head = (sc->runs_head + 1) % SCHEDULE_RUNS_KEPT;
		sc->nruns--;
	}
	r = &sc->runs[(sc->runs_head + sc->nruns) % SCHEDULE_RUNS_KEPT];
	r->job = job;
	r->ms = ms;
	r->note = xstrdup(note ? note : "");
	sc->nruns++;
	sc->total_runs++;
}

/* The row of sc, pointing into it; the caller frees *groups. */
static void to_row(const struct schedule *sc, struct store_schedule *row, char **groups)
{
	*groups = ident_groups_text(sc->groups, sc->ngroups);
	*row = (struct store_schedule){
		.id = sc->id, .name = sc->name, .uid = sc->uid, .gid = sc->gid, .groups = *groups,
		.user = sc->user, .spec_file = sc->spec_file, .spec = sc->spec, .spec_len = sc->spec_len,
		.paused = sc->paused, .anchor_ms = sc->anchor_ms, .next_ms = sc->next_ms,
		.created_ms = sc->created_ms,
	};
}

static void add(struct schedules *s, struct schedule *sc)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 8;
		s->v = xrealloc(s->v, s->cap * sizeof *s->v);
	}
	s->v[s->n++] = sc;
	if (sc->id >= s->next_id)
		s->next_id = sc->id + 1;
}

static void on_load(void *arg, const struct store_schedule *row)
{
	struct schedules *s = arg;
	struct schedule *sc = xcalloc(1, sizeof *sc);
	char *why = NULL;

	sc->id = row->id;
	sc->name = xstrdup(row->name);
	sc->uid = row->uid;
	sc->gid = row->gid;
	sc->groups = ident_groups_parse(row->groups, &sc->ngroups);
	sc->user = xstrdup(row->user);
	sc->spec_file = xstrdup(row->spec_file);
	sc->spec = xmalloc(row->spec_len + 1);
	memcpy(sc->spec, row->spec, row->spec_len);
	sc->spec[row->spec_len] = '\0';
	sc->spec_len = row->spec_len;
	sc->paused = row->paused;
	sc->anchor_ms = row->anchor_ms;
	sc->next_ms = row->next_ms;
	sc->created_ms = row->created_ms;
	sc->last_error = xstrdup("");
	/* The spec was checked when it was written; keep the schedule even if
	 * this version reads it differently, and say why it does not run. */
	{
		struct spec *spec = spec_parse(sc->spec, sc->spec_len, sc->spec_file, &why);

		if (spec && spec->every)
			sc->every = every_parse(spec->every, &why);
		spec_destroy(spec);
	}
	if (!sc->every) {
		free(sc->last_error);
		sc->last_error = xasprintf("the stored spec does not load: %s", why ? why : "no every");
		log_warnx("schedule %s: %s", sc->name, sc->last_error);
	}
	free(why);
	add(s, sc);
}

static void on_load_run(void *arg, const struct store_schedule_run *r)
{
	struct schedules *s = arg;

	for (size_t i = 0; i < s->n; i++)
		if (s->v[i]->id == r->schedule_id)
			remember_run(s->v[i], r->job_id, r->ms, r->note);
}

struct schedules *schedules_create(struct store *store, const struct schedules_ops *ops,
				   char **err)
{
	struct schedules *s = xcalloc(1, sizeof *s);

	s->ops = *ops;
	s->store = store;
	s->next_id = 1;
	if (store && store_load_schedules(store, on_load, on_load_run, s, err) < 0) {
		int saved = errno;

		schedules_destroy(s);
		errno = saved;
		return NULL;
	}
	return s;
}

void schedules_destroy(struct schedules *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		schedule_free(s->v[i]);
	free(s->v);
	free(s);
}

/* ---- runs ---- */

/* A run of sc at now, its next run at next_ms. Release it with run_release(). */
static void run_prepare(struct schedule *sc, int64_t now, int64_t next_ms, const char *note,
			struct schedule_run *run)
{
	memset(run, 0, sizeof *run);
	run->schedule = sc;
	run->who = (struct caller){ sc->uid, sc->gid, sc->groups, sc->ngroups };
	run->name = sc->name;
	run->user = sc->user;
	run->ms = now;
	snprintf(run->note, sizeof run->note, "%s", note);
	to_row(sc, &run->row, &run->groups);
	run->row.next_ms = next_ms;
}

static void run_release(struct schedule_run *run)
{
	free(run->groups);
	run->groups = NULL;
}

/* The run was committed as job: remember it, and its next run is the row's. */
static void run_made(const struct schedule_run *run, int64_t job)
{
	struct schedule *sc = run->schedule;

	sc->next_ms = run->row.next_ms;
	remember_run(sc, job, run->ms, run->note);
	log_info("schedule %s: submitted job %lld%s%s", sc->name, (long long)job,
		 *run->note ? " " : "", run->note);
	free(sc->last_error);
	sc->last_error = xstrdup("");
}

/* How many runs fell between due (exclusive) and now (inclusive): the
 * periods missed while the scheduler was down. */
static long missed_runs(const struct schedule *sc, int64_t due, int64_t now)
{
	uint64_t period = every_period_s(sc->every);
	long n = 0;

	/* due is on the grid of a period: count its steps. */
	if (period > 0)
		return (long)((now - due) / ((int64_t)period * 1000));
	for (int64_t t = every_next(sc->every, sc->anchor_ms, due); t > 0 && t <= now;
	     t = every_next(sc->every, sc->anchor_ms, t))
		if (++n == MISSED_COUNT_MAX)
			break;
	return n;
}

size_t schedules_due(struct schedules *s, int64_t now, struct schedule_run **runs)
{
	size_t n = 0;

	*runs = NULL;
	for (size_t i = 0; i < s->n; i++) {
		struct schedule *sc = s->v[i];
		char note[256] = "", due[64];
		long missed;

		if (sc->paused || !sc->every || sc->next_ms <= 0 || sc->next_ms > now)
			continue;
		/* Late runs are made once, whatever number of periods went by:
		 * the next run is the first one after now. */
		missed = missed_runs(sc, sc->next_ms, now);
		time_format_iso(sc->next_ms, due, sizeof due);
		if (missed > 0)
			snprintf(note, sizeof note, "late: due at %s; %s%ld later run%s missed while the "
				 "scheduler was down %s skipped", due, missed >= MISSED_COUNT_MAX ?
				 "at least " : "", missed, missed == 1 ? "" : "s", missed == 1 ? "is" : "are");
		else if (now - sc->next_ms > 60000)
			snprintf(note, sizeof note, "late: due at %s", due);
		*runs = xrealloc(*runs, (n + 1) * sizeof **runs);
		run_prepare(sc, now, every_next(sc->every, sc->anchor_ms, now), note, &(*runs)[n++]);
	}
	return n;
}

void schedules_ran(struct schedules *s, const struct schedule_run *run, int failed, int64_t job,
		   const char *err)
{
	struct schedule *sc = run->schedule;

	(void)s;
	if (!failed) {
		run_made(run, job);
		return;
	}
	/* Said once, not on every pass while the disk stays full. */
	if (strcmp(sc->last_error, err ? err : "cannot submit") != 0) {
		log_warnx("schedule %s: cannot submit its run: %s", sc->name, err ? err : "?");
		free(sc->last_error);
		sc->last_error = xstrdup(err ? err : "cannot submit");
	}
	/* A spec that is refused (it waits for a job that is gone) is tried again
	 * at the next period; a commit that failed (busy, disk full) on the next
	 * pass. */
	if (failed == EINVAL)
		sc->next_ms = run->row.next_ms;
}

void schedules_runs_free(struct schedule_run *runs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		run_release(&runs[i]);
	free(runs);
}

/* ---- the API ---- */

/* The schedule's name: the name its file gives (spec_file_stem, as a job's
 * default name). NULL with *err when that is not a good name. */
static char *name_of(const char *filename, char **err)
{
	size_t n;
	const char *base = spec_file_stem(filename, &n);
	char *name;

	name = xasprintf("%.*s", (int)n, base);
	for (const char *c = name; *c; c++)
		if (!isalnum((unsigned char)*c) && !strchr("._-", *c))
			n = 0;
	if (n == 0 || n > SCHEDULE_NAME_MAX || name[0] == '.') {
		errno = EINVAL;
		errprintf(err, "%s: a schedule is named after its file: use 1 to %d letters, digits, "
			  "'.', '_' or '-', not starting with '.' (e.g. nightly.conf for schedules/nightly)",
			  filename, SCHEDULE_NAME_MAX);
		free(name);
		return NULL;
	}
	return name;
}

static int may_change(const struct schedule *sc, const struct caller *who, const char *what, char **err)
{
	if (who->uid == 0 || who->uid == sc->uid)
		return 0;
	errno = EACCES;
	return errprintf(err, "schedule %s belongs to %s: only they or root may %s it", sc->name,
			 sc->user, what);
}

int schedules_put(struct schedules *s, const struct caller *who, const char *filename,
		  const char *text, size_t len, int64_t *id, char **err)
{
	struct schedule *sc = NULL, *old;
	struct store_schedule row;
	struct spec *spec = NULL;
	char *name = NULL, *groups = NULL, *why = NULL;
	struct every *every = NULL;
	int64_t now;
	int ret = -1, saved;

	if (len > SPEC_MAX_BYTES) {
		errno = EFBIG;
		return errprintf(err, "%s: %zu bytes is larger than the limit of %d bytes", filename,
				 len, SPEC_MAX_BYTES);
	}
	name = name_of(filename, err);
	if (!name)
		return -1;
	spec = spec_parse(text, len, filename, err);
	if (!spec)
		goto fail;
	if (!spec->every) {
		errno = EINVAL;
		errprintf(err, "%s:1: a spec in schedules/ needs [job] every = WHEN, a cron line such as "
			  "0 2 * * * or a period such as 6h (to run it once, write it to queue/)", filename);
		goto fail;
	}
	every = every_parse(spec->every, &why);
	if (!every) {
		errno = EINVAL;
		errprintf(err, "%s:%d: every = %s: %s", filename, spec->every_line, spec->every,
			  why ? why : "?");
		goto fail;
	}
	sc = xcalloc(1, sizeof *sc);
	sc->name = name;
	name = NULL;
	sc->uid = who->uid;
	sc->gid = who->gid;
	sc->ngroups = who->ngroups;
	sc->groups = xcalloc(who->ngroups + 1, sizeof *sc->groups);
	if (who->ngroups)
		memcpy(sc->groups, who->groups, who->ngroups * sizeof *sc->groups);
	sc->user = ident_user_name(who->uid);
	sc->spec_file = xstrdup(filename);
	sc->spec = xmalloc(len + 1);
	memcpy(sc->spec, text, len);
	sc->spec[len] = '\0';
	sc->spec_len = len;
	sc->every = every;
	every = NULL;
	sc->last_error = xstrdup("");

	s->ops.lock(s->ops.arg);
	now = s->ops.now_ms(s->ops.arg);
	old = find(s, sc->name);
	if (old && may_change(old, who, "replace", err) < 0)
		goto unlock;
	/* A new spec starts a new rhythm from now; the runs so far stay. */
	sc->id = old ? old->id : s->next_id;
	sc->paused = old ? old->paused : false;
	sc->created_ms = old ? old->created_ms : now;
	sc->anchor_ms = now;
	sc->next_ms = every_next(sc->every, sc->anchor_ms, now);
	to_row(sc, &row, &groups);
	if (store_put_schedule(s->store, &row, err) < 0)
		goto unlock;
	if (old) {
		/* Keep the history: move the runs over. */
		memcpy(sc->runs, old->runs, sizeof sc->runs);
		sc->runs_head = old->runs_head;
		sc->nruns = old->nruns;
		sc->total_runs = old->total_runs;
		old->nruns = 0;
		for (size_t i = 0; i < s->n; i++)
			if (s->v[i] == old)
				s->v[i] = sc;
		schedule_free(old);
	} else {
		add(s, sc);
	}
	log_info("schedule %s %s by %s: every %s, next run %lld", sc->name, old ? "replaced" : "created",
		 sc->user, every_text(sc->every), (long long)sc->next_ms);
	*id = sc->id;
	sc = NULL;
	ret = 0;
unlock:
	saved = errno;
	s->ops.unlock(s->ops.arg);
	errno = saved;
fail:
	saved = errno;
	schedule_free(sc);
	every_destroy(every);
	spec_destroy(spec);
	free(name);
	free(groups);
	free(why);
	errno = saved;
	return ret;
}

int schedules_remove(struct schedules *s, const struct caller *who, const char *name, char **err)
{
	struct schedule *sc;
	int ret = -1, saved;

	s->ops.lock(s->ops.arg);
	sc = find(s, name);
	if (!sc) {
		errno = ENOENT;
		errprintf(err, "no schedule '%s'", name);
		goto out;
	}
	if (may_change(sc, who, "remove", err) < 0 || store_delete_schedule(s->store, sc->id, err) < 0)
		goto out;
	for (size_t i = 0; i < s->n; i++) {
		if (s->v[i] == sc) {
			s->v[i] = s->v[--s->n];
			break;
		}
	}
	log_info("schedule %s removed (%lld run%s made)", sc->name, (long long)sc->total_runs,
		 sc->total_runs == 1 ? "" : "s");
	schedule_free(sc);
	ret = 0;
out:
	saved = errno;
	s->ops.unlock(s->ops.arg);
	errno = saved;
	return ret;
}

typedef int (*sched_ctl_fn)(struct schedules *s, struct schedule *sc, int64_t now, char **err);

static int save(struct schedules *s, struct schedule *sc, char **err)
{
	struct store_schedule row;
	char *groups;
	int ret;

	to_row(sc, &row, &groups);
	ret = store_put_schedule(s->store, &row, err);
	free(groups);
	return ret;
}

static int ctl_pause(struct schedules *s, struct schedule *sc, int64_t now, char **err)
{
	(void)now;
	if (sc->paused) {
		errno = EBUSY;
		return errprintf(err, "schedule %s is already paused", sc->name);
	}
	sc->paused = true;
	if (save(s, sc, err) < 0) {
		sc->paused = false;
		return -1;
	}
	return 0;
}

static int ctl_resume(struct schedules *s, struct schedule *sc, int64_t now, char **err)
{
	int64_t old_next = sc->next_ms;

	if (!sc->paused) {
		errno = EBUSY;
		return errprintf(err, "schedule %s is not paused", sc->name);
	}
	sc->paused = false;
	/* Runs that fell in the pause are not made up: the next one after now. */
	if (sc->every && sc->next_ms <= now)
		sc->next_ms = every_next(sc->every, sc->anchor_ms, now);
	if (save(s, sc, err) < 0) {
		sc->paused = true;
		sc->next_ms = old_next;
		return -1;
	}
	return 0;
}

static int ctl_run_now(struct schedules *s, struct schedule *sc, int64_t now, char **err)
{
	struct schedule_run run;
	int64_t job = 0;
	int ret = -1, saved;

	/* The regular runs keep their times. */
	run_prepare(sc, now, sc->next_ms, "run-now", &run);
	if (s->ops.submit(s->ops.arg, &run, &job, err) < 0)
		goto out;
	run_made(&run, job);
	ret = 0;
out:
	saved = errno;
	run_release(&run);
	errno = saved;
	return ret;
}

/* The handler of each command of ctl_schedule_table, by its index. */
static const sched_ctl_fn schedule_handlers[CTL_SCHEDULE_COMMANDS] = {
	[CTL_SCHEDULE_PAUSE] = ctl_pause,
	[CTL_SCHEDULE_RESUME] = ctl_resume,
	[CTL_SCHEDULE_RUN_NOW] = ctl_run_now,
};

char *schedules_ctl_commands(const char *last_sep)
{
	return ctl_list(&ctl_schedule_table, last_sep);
}

/* The index in ctl_schedule_table of the command of line (command as
 * written), or -1 with errno EINVAL and *err. */
static int schedule_command_of(const struct ctl_line *line, const char *command, char **err)
{
	int i = ctl_find(&ctl_schedule_table, line->word);
	char *list;

	if (i >= 0 && ctl_arity_ok(&ctl_schedule_table.entries[i], line))
		return i;
	errno = EINVAL;
	list = ctl_list(&ctl_schedule_table, " or ");
	errprintf(err, "unknown command '%s': a schedule's ctl takes %s", command, list);
	free(list);
	return -1;
}

int schedules_ctl_check(const char *command, char **err)
{
	struct ctl_line line;

	ctl_split(command, &line);
	return schedule_command_of(&line, command, err) < 0 ? -1 : 0;
}

int schedules_ctl(struct schedules *s, const struct caller *who, const char *name,
		  const char *command, char **err)
{
	struct ctl_line line;
	struct schedule *sc;
	int ret = -1, saved, i;

	ctl_split(command, &line);
	i = schedule_command_of(&line, command, err);
	if (i < 0)
		return -1;
	s->ops.lock(s->ops.arg);
	sc = find(s, name);
	if (!sc) {
		errno = ENOENT;
		errprintf(err, "no schedule '%s'", name);
		goto out;
	}
	if (may_change(sc, who, line.word, err) < 0 ||
	    schedule_handlers[i](s, sc, s->ops.now_ms(s->ops.arg), err) < 0)
		goto out;
	log_info("schedule %s: %s", sc->name, line.word);
	ret = 0;
out:
	saved = errno;
	s->ops.unlock(s->ops.arg);
	errno = saved;
	return ret;
}

/* ---- views (the lock held by the calls below) ---- */

static const char *run_state(struct schedules *s, const struct run *r)
{
	const char *state = s->ops.job_state(s->ops.arg, r->job);

	return state ? state : "gone";
}

static json_t *schedule_json(struct schedules *s, const struct schedule *sc)
{
	json_t *runs = json_array();

	/* Newest first, as people read them. */
	for (size_t i = sc->nruns; i-- > 0; ) {
		const struct run *r = &sc->runs[(sc->runs_head + i) % SCHEDULE_RUNS_KEPT];

		json_array_append_new(runs, json_pack("{s:I,s:I,s:s,s:s}", "job", (json_int_t)r->job,
						      "submitted_ms", (json_int_t)r->ms,
						      "state", run_state(s, r), "note", r->note));
	}
	return json_pack("{s:I,s:s,s:I,s:I,s:s,s:s,s:s,s:b,s:I,s:I,s:I,s:I,s:s,s:o}",
			 "id", (json_int_t)sc->id, "name", sc->name, "uid", (json_int_t)sc->uid,
			 "gid", (json_int_t)sc->gid, "user", sc->user, "spec_file", sc->spec_file,
			 "every", sc->every ? every_text(sc->every) : "", "paused", (int)sc->paused,
			 "next_ms", (json_int_t)(sc->paused ? 0 : sc->next_ms),
			 "anchor_ms", (json_int_t)sc->anchor_ms, "created_ms", (json_int_t)sc->created_ms,
			 "runs_total", (json_int_t)sc->total_runs, "last_error", sc->last_error,
			 "runs", runs);
}

json_t *schedules_list_json(struct schedules *s)
{
	json_t *list = json_array();

	s->ops.lock(s->ops.arg);
	for (size_t i = 0; i < s->n; i++)
		json_array_append_new(list, schedule_json(s, s->v[i]));
	s->ops.unlock(s->ops.arg);
	return json_pack("{s:o}", "schedules", list);
}

json_t *schedules_json(struct schedules *s, const char *name)
{
	struct schedule *sc;
	json_t *json = NULL;

	s->ops.lock(s->ops.arg);
	sc = find(s, name);
	if (sc)
		json = schedule_json(s, sc);
	s->ops.unlock(s->ops.arg);
	if (!json)
		errno = ENOENT;
	return json;
}

char *schedules_status(struct schedules *s, const char *name)
{
	struct schedule *sc;
	char *buf = NULL, when[128], at[64], *name_esc, *user_esc, *file_esc, *error_esc;
	size_t len = 0;
	int64_t now;
	FILE *f;

	s->ops.lock(s->ops.arg);
	sc = find(s, name);
	if (!sc) {
		s->ops.unlock(s->ops.arg);
		errno = ENOENT;
		return NULL;
	}
	now = s->ops.now_ms(s->ops.arg);
	f = open_memstream(&buf, &len);
	if (!f)
		abort();
	/* Names and errors as user text that cannot start a line (escape.h). */
	name_esc = escape_text(sc->name);
	user_esc = escape_text(sc->user);
	file_esc = escape_text(sc->spec_file);
	error_esc = escape_text(sc->last_error);
	fprintf(f, "name: %s\nowner: %s\nspec: %s\nevery: %s\nstate: %s\n", name_esc, user_esc,
		file_esc, sc->every ? every_text(sc->every) : "?", sc->paused ? "paused" : "active");
	if (sc->paused || sc->next_ms <= 0) {
		fprintf(f, "next run: -%s\n", sc->paused ? " (paused: write resume to ctl)" : "");
	} else {
		timing_when(sc->next_ms, now, when, sizeof when);
		fprintf(f, "next run: %s\n", when);
	}
	time_format_iso(sc->created_ms, at, sizeof at);
	fprintf(f, "created: %s\nruns: %lld\n", at, (long long)sc->total_runs);
	if (*sc->last_error)
		fprintf(f, "last error: %s\n", error_esc);
	for (size_t i = sc->nruns; i-- > 0; ) {
		const struct run *r = &sc->runs[(sc->runs_head + i) % SCHEDULE_RUNS_KEPT];

		time_format_iso(r->ms, at, sizeof at);
		fprintf(f, "run: job %lld submitted %s %s", (long long)r->job, at, run_state(s, r));
		if (*r->note) {
			char *note = escape_text(r->note);

			fprintf(f, " (%s)", note);
			free(note);
		}
		fprintf(f, "\n");
	}
	s->ops.unlock(s->ops.arg);
	fclose(f);
	free(name_esc);
	free(user_esc);
	free(file_esc);
	free(error_esc);
	return buf;
}

char *schedules_spec(struct schedules *s, const char *name, size_t *len)
{
	struct schedule *sc;
	char *text = NULL;

	s->ops.lock(s->ops.arg);
	sc = find(s, name);
	if (sc) {
		text = xmalloc(sc->spec_len + 1);
		memcpy(text, sc->spec, sc->spec_len + 1);
		*len = sc->spec_len;
	}
	s->ops.unlock(s->ops.arg);
	if (!text)
		errno = ENOENT;
	return text;
}
