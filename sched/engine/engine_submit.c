/* Submission: a spec parsed, checked and committed as a new job, its folders
 * made outside the lock, and what a mount needs to know of it at once. Jobs
 * of recurring pipelines are built and adopted here too. */
#include "engine_internal.h"
#include "escape.h"
#include "group_commit.h"
#include "ident.h"
#include "log.h"
#include "policy.h"
#include "schedules.h"
#include "spare_folders.h"
#include "spec.h"
#include "util.h"

#include <errno.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

int engine_check_limits(struct engine *e, uid_t uid, const char *user, const char *team,
			int64_t job_instances, int64_t added, bool new_job, const char *file, char **err)
{
	struct policy_usage mine = { 0 }, theirs = { 0 };
	/* A count over every unfinished job, for each submission: only when a
	 * limit needs it (root has none unless parsa.conf gives it one). */
	size_t n_active = policy_uses_usage(e->policy, user, uid == 0, team) ? model_nactive(e->model) : 0;

	for (size_t j = 0; j < n_active; j++) {
		const struct job *job = model_active_at(e->model, j);
		int64_t n = 0;

		if (job_ended(job))
			continue;
		for (size_t s = 0; s < job->nstages; s++) {
			const int *c = job->stages[s].counts;

			n += c[INST_QUEUED] + c[INST_ASSIGNED] + c[INST_RUNNING];
		}
		if (job->uid == uid) {
			mine.jobs++;
			mine.instances += n;
		}
		if (strcmp(job->team, team) == 0) {
			theirs.jobs++;
			theirs.instances += n;
		}
	}
	return policy_check_limits(e->policy, user, uid == 0, team, job_instances, added, new_job, &mine,
				   &theirs, file, err);
}

/* May who submit spec as user, accounted to team? The file name, the team
 * rule and [limits] (sched/policy/policy.h); instances of foreach stages are not
 * known yet and are checked again when the stage expands. */
static int admit(struct engine *e, const struct caller *who, const char *user, const char *team,
		 const struct spec *spec, const char *filename, char **err)
{
	int64_t instances = 0;

	/* The API can be called without a mount (queue_dir.c refuses these too). */
	if (escape_check_file_name(filename, err) < 0)
		return -1;
	if (spec->team && policy_check_team(e->policy, who, user, engine_is_admin(e, who), spec->team,
					    filename, spec->team_line, err) < 0)
		return -1;
	for (size_t s = 0; s < spec->nstages; s++)
		if (!spec->stages[s].foreach_stage)
			instances += (int64_t)spec->stages[s].instances *
				     (int64_t)spec_stage_points(&spec->stages[s]);
	return engine_check_limits(e, who->uid, user, team, instances, instances, true, filename, err);
}

/* A new job of who for spec (which it takes, also on failure), not yet
 * committed nor in the model. user names who; team NULL means the spec's or
 * who's primary group. NULL with errno and *err (e.g. after = a job that does
 * not exist). Commit it, then adopt() it, or model_job_free() it. */
static struct job *build(struct engine *e, const struct caller *who, const char *user,
			 const char *team, struct spec *spec, const char *filename,
			 const char *text, size_t len, int64_t now, char **err)
{
	struct job *job;
	char *owner, *account;
	int64_t next_inst;

	for (size_t i = 0; i < spec->nafter_jobs; i++) {
		enum job_state state;

		if (engine_job_state_of(e, spec->after_jobs[i], &state) != 1) {
			errno = EINVAL;
			errprintf(err, "%s: after = %lld: no such job", filename,
				  (long long)spec->after_jobs[i]);
			spec_destroy(spec);
			return NULL;
		}
	}
	owner = user ? xstrdup(user) : ident_cache_user_name(e->ident, who->uid);
	account = team ? xstrdup(team) : spec->team ? xstrdup(spec->team)
					    : ident_cache_group_name(e->ident, who->gid);
	if (admit(e, who, owner, account, spec, filename, err) < 0) {
		int saved = errno;

		free(owner);
		free(account);
		spec_destroy(spec);
		errno = saved;
		return NULL;
	}
	job = model_job_new(model_next_job_id(e->model), spec);
	job->name = xstrdup(spec->name ? spec->name : filename);
	job->spec_file = xstrdup(filename);
	job->spec_text = xmalloc(len + 1);
	memcpy(job->spec_text, text, len);
	job->spec_text[len] = '\0';
	job->spec_len = len;
	job->uid = who->uid;
	job->gid = who->gid;
	job->ngroups = who->ngroups;
	job->groups = xcalloc(who->ngroups ? who->ngroups : 1, sizeof *job->groups);
	if (who->ngroups)
		memcpy(job->groups, who->groups, who->ngroups * sizeof *job->groups);
	job->user = owner;
	job->team = account;
	job->priority = spec->priority;
	job->state = JOB_QUEUED;
	job->submitted_ms = now;
	next_inst = model_next_instance_id(e->model);
	for (size_t s = 0; s < job->nstages; s++) {
		struct stage *stage = &job->stages[s];

		if (stage->spec->foreach_stage)
			continue;
		/* A sweep: every point, instances times (spec_stage_points). */
		for (size_t i = 0; i < (size_t)stage->spec->instances * spec_stage_points(stage->spec); i++)
			model_stage_new_instance(stage, next_inst++, "");
		stage->expanded = true;
	}
	model_job_event(NULL, job, now, "submitted by %s (%s)", job->user, filename);
	return job;
}

/* A committed job joins the model; it is placed once its folders exist. */
static void adopt(struct engine *e, struct job *job)
{
	model_add_job(e->model, job);
	/* The lock is held: the folders are made on the storage thread. */
	engine_folders_later(e, job, false);
	log_info("job %lld (%s) submitted by %s", (long long)job->id, job->name, job->user);
	engine_kick(e);
}

/* After a failed mkdir: can the volume be asked at all? (errno kept) */
static bool volume_unreachable(struct engine *e)
{
	struct statvfs vfs;
	int saved = errno;
	bool down = backend_statfs(e->storage, "", &vfs) < 0;

	errno = saved;
	return down;
}

/* A committed job whose folders the volume refused (why): its folders, rows
 * and model entry go, the storage outside the lock, as if it had never been
 * submitted, since nobody learned its id; -1 with *err for the submitter. 0
 * if the database would not let it go: then it is submitted after all. */
static int take_back(struct engine *e, int64_t id, const char *filename, int why, char **err)
{
	int ret = -1;

	char *dir = xasprintf("jobs/%lld", (long long)id), *db_err = NULL;
	struct job *job;

	if (backend_remove_tree(e->storage, dir) < 0)
		log_warn("job %lld: cannot remove %s after its failed submission", (long long)id, dir);
	pthread_mutex_lock(&e->lock);
	job = model_job(e->model, id);
	if (store_delete_new_job(e->store, id, &db_err) < 0) {
		/* Kept, then, and so submitted: placed as any other job. */
		log_warnx("job %lld: cannot take back its submission: %s", (long long)id, db_err);
		if (job)
			job->folders_pending = false;
		engine_kick(e);
		ret = 0;
	} else if (job) {
		model_forget_job(e->model, job);
		log_info("job %lld taken back: the storage volume refused its folders (%s)",
			 (long long)id, strerror(why));
	}
	pthread_mutex_unlock(&e->lock);
	free(db_err);
	free(dir);
	if (ret < 0) {
		errno = why;
		errprintf(err, "%s: the storage volume could not make the job's folders: %s "
			  "(nothing was submitted)", filename, strerror(why));
	}
	errno = why;
	return ret;
}

/* Lock held. 1 when token is already a job's: *id is it (see engine_submit).
 * 0 when it is new, -1 with errno and *err. */
static int find_token(struct engine *e, const struct caller *who, const char *filename,
		      const char *token, int64_t *id, char **err)
{
	const struct job *job;
	uid_t uid;
	int found = store_job_by_token(e->store, token, id, &uid, err);

	if (found <= 0)
		return found;
	if (uid != who->uid) {
		errno = EACCES;
		return errprintf(err, "%s: the submission's token belongs to another user's job: "
				 "a token is made anew for each submission", filename);
	}
	job = model_job(e->model, *id);
	/* Being made by its submission: the answer comes soon. Waiting for the
	 * volume (folders_wait) it is taken: the same job. */
	if (job && job->folders_pending && !job->folders_wait) {
		errno = EAGAIN;
		return errprintf(err, "%s: job %lld of this submission is still being made: ask again",
				 filename, (long long)*id);
	}
	log_info("job %lld: its submission was sent again (the answer was lost): the same job",
		 (long long)*id);
	return 1;
}

/* One submission waiting for its group's commit (engine_submit). */
struct submission {
	struct group_item item;       /* first: the group's items are these */
	const struct caller *who;
	const char *filename, *token, *text, *user, *team;
	size_t len;
	struct spec *spec;            /* taken by the commit */
	/* the commit's answer */
	int ret, error;               /* 0, or -1 with errno error and err */
	char *err;
	int64_t id;
	bool existed;                 /* token was a committed job's: id is it */
	struct job *job;              /* in the model while the group is open */
	struct folder_plan *plan;     /* committed: its folders, made outside the lock */
};

/* Lock held, inside the group's transaction: s's job built and written under
 * a savepoint (none when alone in its group), and in the model so that the
 * next of the group sees it (ids, limits, a token sent twice, after = ). A
 * refusal is s's alone. */
static void add_to_group(struct engine *e, struct submission *s, bool alone, int64_t now)
{
	struct job *job;
	int found;

	/* The transaction is open: a token of this very group is found too. */
	found = s->token ? find_token(e, s->who, s->filename, s->token, &s->id, &s->err) : 0;
	if (found != 0) {
		spec_destroy(s->spec);
		s->existed = found > 0;
		s->ret = found > 0 ? 0 : -1;
		s->error = errno;
		return;
	}
	job = build(e, s->who, s->user, s->team, s->spec, s->filename, s->text, s->len, now, &s->err);
	if (!job) {
		s->ret = -1;
		s->error = errno;
		return;
	}
	job->token = s->token ? xstrdup(s->token) : NULL;
	if (store_group_add(e->store, job, alone, &s->err) < 0) {
		s->ret = -1;
		s->error = errno;
		model_job_free(job);
		return;
	}
	model_add_job(e->model, job);
	/* Placed once its folders exist (engine_folders_made). */
	job->folders_pending = true;
	s->job = job;
}

void engine_commit_submissions(void *engine, struct group_item *const *items, size_t n)
{
	struct engine *e = engine;
	struct job **jobs = xcalloc(n, sizeof *jobs);
	struct submission *s;
	char *err = NULL;
	size_t njobs = 0;
	int error = 0, rc;
	int64_t now;

	pthread_mutex_lock(&e->lock);
	rc = store_group_begin(e->store, &err);
	if (rc == 0) {
		now = engine_now(e);
		for (size_t i = 0; i < n; i++) {
			s = (struct submission *)items[i];
			add_to_group(e, s, n == 1, now);
			if (s->job)
				jobs[njobs++] = s->job;
		}
		rc = store_group_end(e->store, true, jobs, njobs, &err);
	}
	if (rc < 0)
		error = errno;
	for (size_t i = 0; i < n; i++) {
		s = (struct submission *)items[i];
		if (rc < 0 && (s->job || (s->ret == 0 && !s->existed && !s->err))) {
			/* The group's transaction failed: none of it was written. */
			if (s->job)
				model_forget_job(e->model, s->job);
			else
				spec_destroy(s->spec);
			s->job = NULL;
			s->ret = -1;
			s->error = error;
			errprintf(&s->err, "%s: %s (nothing was submitted)", s->filename, err);
		} else if (s->job) {
			s->id = s->job->id;
			s->plan = folder_plan_of(s->job);
			log_info("job %lld (%s) submitted by %s", (long long)s->id, s->job->name,
				 s->job->user);
			s->job = NULL;
		}
	}
	pthread_mutex_unlock(&e->lock);
	free(err);
	free(jobs);
}

int engine_submit(struct engine *e, const struct caller *who, const char *filename,
		  const char *token, const char *text, size_t len, int64_t *id, bool *existed,
		  char **err)
{
	return engine_submit_from(e, who, filename, NULL, token, text, len, id, existed, err);
}

int engine_submit_from(struct engine *e, const struct caller *who, const char *filename,
		       const char *workdir, const char *token, const char *text, size_t len,
		       int64_t *id, bool *existed, char **err)
{
	struct submission s = { .who = who, .filename = filename, .token = token, .text = text,
				.len = len };
	char *user, *team;
	int ret, saved;

	if (existed)
		*existed = false;
	if (len > SPEC_MAX_BYTES) {
		errno = EFBIG;
		return errprintf(err, "%s: %zu bytes is larger than the limit of %d bytes", filename,
				 len, SPEC_MAX_BYTES);
	}
	/* Everything that needs no lock is done before the group. */
	s.spec = spec_parse(text, len, filename, err);
	if (!s.spec)
		return -1;
	if (s.spec->every) {
		errno = EINVAL;
		errprintf(err, "%s:%d: every = %s: a spec that repeats goes to schedules/, not queue/ "
			  "(or remove every to run it once)", filename, s.spec->every_line, s.spec->every);
		spec_destroy(s.spec);
		return -1;
	}
	/* The spec's own workdir wins; else where it was submitted from. */
	if (!s.spec->workdir && workdir && workdir[0] == '/' && strlen(workdir) < 4096) {
		s.spec->workdir = xstrdup(workdir);
		s.spec->workdir_submitted = true;
	}
	s.user = user = ident_cache_user_name(e->ident, who->uid);
	s.team = team = s.spec->team ? xstrdup(s.spec->team) : ident_cache_group_name(e->ident, who->gid);
	/* Returns once the group that holds s is committed (or refused). */
	group_commit_run(e->submits, &s.item);
	ret = s.ret;
	saved = s.error;
	if (ret == 0) {
		*id = s.id;
		if (existed)
			*existed = s.existed;
	} else if (err) {
		*err = s.err;
		s.err = NULL;
	}
	/* The answer waits for the folders: a mount may look into out/ at once. */
	if (s.plan) {
		if (folder_plan_make(e, s.plan) == 0) {
			engine_folders_made(e, *id, true);
		} else if (volume_unreachable(e)) {
			/* Unreachable (an NFS server down) is not a refusal:
			 * the job is taken, its folders made once the volume is
			 * back (the storage thread tries again), and nothing of
			 * it starts before. */
			engine_folders_failed(e, s.plan);
			s.plan = NULL;
		} else {
			/* The volume refused them (ENOSPC, EACCES, EIO from a
			 * server that answers): nothing half-made, the job is
			 * taken back and the submitter told, as for a bad spec. */
			saved = errno ? errno : EIO;
			ret = take_back(e, *id, filename, saved, err);
		}
		folder_plan_free(s.plan);
	}
	free(s.err);
	free(user);
	free(team);
	errno = saved;
	return ret;
}

void engine_submit_stats(struct engine *e, size_t *groups, size_t *submissions)
{
	group_commit_counts(e->submits, groups, submissions);
}

void engine_spare_stats(struct engine *e, struct engine_spare_stats *out)
{
	memset(out, 0, sizeof *out);
	if (!e->spares)
		return;
	spare_folders_counts(e->spares, SPARE_JOB, &out->ready[0], &out->taken[0]);
	spare_folders_counts(e->spares, SPARE_STAGE, &out->ready[1], &out->taken[1]);
}

json_t *engine_job_meta_json(struct engine *e, int64_t id)
{
	json_t *json = json_object(), *stages = json_array();
	const struct job *job;

	pthread_mutex_lock(&e->lock);
	job = engine_job_get(e, id);
	if (job) {
		for (size_t s = 0; s < job->nstages; s++)
			json_array_append_new(stages, json_pack("{s:s,s:I}", "name", job->stages[s].spec->name,
							"instances", (json_int_t)job->stages[s].ninst));
		json_object_set_new(json, "uid", json_integer(job->uid));
		json_object_set_new(json, "gid", json_integer(job->gid));
		json_object_set_new(json, "submitted_ms", json_integer(job->submitted_ms));
		json_object_set(json, "stages", stages);
	}
	pthread_mutex_unlock(&e->lock);
	json_decref(stages);
	return json;
}

int engine_submit_run(void *arg, const struct schedule_run *run, int64_t *id, char **err)
{
	const struct store_schedule *row = &run->row;
	struct store_schedule_run record;
	struct engine *e = arg;
	struct spec *spec;
	struct job *job;
	int saved;

	spec = spec_parse(row->spec, row->spec_len, row->spec_file, err);
	if (!spec)
		return -1;
	job = build(e, &run->who, run->user, NULL, spec, row->spec_file, row->spec, row->spec_len,
		    run->ms, err);
	if (!job)
		return -1;
	model_job_event(NULL, job, run->ms, "run of schedule %s%s%s", run->name,
			*run->note ? ": " : "", run->note);
	record = (struct store_schedule_run){ .schedule_id = row->id, .job_id = job->id,
					      .ms = run->ms, .note = run->note };
	if (store_schedule_run(e->store, row, job, &record, err) < 0) {
		saved = errno;
		model_job_free(job);
		errno = saved;
		return -1;
	}
	*id = job->id;
	adopt(e, job);
	return 0;
}
