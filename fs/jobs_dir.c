/* jobs/ (see jobs_dir.h). Existence and ownership come from the job cache;
 * content comes from the scheduler at open, or from the storage for logs. */
#include "jobs_dir.h"
#include "jobs_internal.h"
#include "ctl_file.h"
#include "api_answers.h"
#include "api_paths.h"
#include "backend.h"
#include "job_cache.h"
#include "log.h"
#include "sched_link.h"
#include "util.h"
#include "volume_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { JOB_SUMMARY_BYTES = 150 };  /* about one job's share of GET /v1/jobs */

static const char *const stage_entries[] = { "status", "log", "wait", "instances" };
static const char *const instance_entries[] = { "status", "status.json", "log" };

char *jobs_log_path(int64_t id, const char *stage, int index)
{
	return xasprintf("jobs/%lld/log/%s/%d.log", (long long)id, stage, index);
}

/* The job (and stage, and instance) that p names, as a cache reference the
 * caller puts. NULL with ENOENT when one of them does not exist. A stage or
 * instance the cache does not know is asked for again: a foreach stage grows
 * its instances when its upstream ends, and the runner may already be opening
 * the new instance's log. */
const struct job_meta *jobs_resolve(struct fs_ctx *fs, const struct fs_path *p, enum level level,
				    struct where *w)
{
	const struct job_meta *m = NULL;
	struct fs_identity who;
	int64_t index = 0;
	int flags = level == LEVEL_JOB ? 0 : JOB_NEED_STAGES;

	if (fs_parse_id(p->arg[0], &w->id) < 0)
		return NULL;
	if (level == LEVEL_INSTANCE && (fs_parse_id(p->arg[2], &index) < 0 || index > INT32_MAX))
		return NULL;
	w->index = (int)index;
	w->stage = -1;
	fs_identity_basic(fs, &who);
	for (int attempt = 0; attempt < 2; attempt++) {
		m = job_cache_get(fs->jobs, &who, w->id, flags | (attempt ? JOB_FRESH : 0));
		if (!m || level == LEVEL_JOB)
			break;
		w->stage = job_meta_stage(m, p->arg[1]);
		if (w->stage >= 0 && (level == LEVEL_STAGE || w->index < m->stages[w->stage].instances))
			break;
		job_meta_put(m);
		m = NULL;
		errno = ENOENT;
	}
	fs_identity_clear(&who);
	return m;
}

static int stat_at(struct fs_ctx *fs, const struct fs_path *p, enum level level, struct stat *st,
		   bool dir, mode_t mode)
{
	struct where w;
	const struct job_meta *m = jobs_resolve(fs, p, level, &w);

	if (!m)
		return -1;
	if (dir)
		fs_stat_dir(fs, st, mode, m->uid, m->gid);
	else
		fs_stat_file(fs, st, mode, m->uid, m->gid, 0);
	fs_stat_time(st, m->submitted_ms);
	job_meta_put(m);
	return 0;
}

static int fill_names(fs_fill_fn fill, void *arg, const char *const *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fill(arg, names[i], NULL))
			break;
	return 0;
}

/* The fixed entries of a folder of a job, a stage or an instance that exists. */
static int level_readdir(struct fs_ctx *fs, const struct fs_path *p, enum level level,
			 fs_fill_fn fill, void *arg, const char *const *names, size_t n)
{
	struct where w;
	const struct job_meta *m = jobs_resolve(fs, p, level, &w);

	if (!m)
		return -1;
	job_meta_put(m);
	return fill_names(fill, arg, names, n);
}

/* A view: GET url as the caller, once, into a read-only buffer. */
static int open_view(struct fs_ctx *fs, const char *url, bool exact, int flags, struct fs_file **file)
{
	struct fs_identity who;
	size_t len = 0;
	char *text;

	if (fs_check_read_only(flags) < 0)
		return -1;
	fs_identity_basic(fs, &who);
	text = sched_link_get_text(fs->link, &who, url, !exact, &len);
	fs_identity_clear(&who);
	if (!text)
		return -1;
	*file = text_file_create(text, len);
	return 0;
}

/* ---- jobs/ and jobs/last ---- */

static int root_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	(void)p;
	fs_stat_dir(fs, st, MODE_DIR, fs->uid, fs->gid);
	return 0;
}

static int root_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	struct fs_identity who;
	int64_t *ids = NULL;
	size_t n = 0;
	char name[32];
	int ret;

	(void)p;
	fs_identity_basic(fs, &who);
	ret = job_cache_list(fs->jobs, &who, &ids, &n);
	fs_identity_clear(&who);
	if (ret < 0)
		return -1;
	if (!fill(arg, "last", NULL)) {
		for (size_t i = 0; i < n; i++) {
			snprintf(name, sizeof name, "%lld", (long long)ids[i]);
			if (fill(arg, name, NULL))
				break;
		}
	}
	free(ids);
	/* The answer, its tree, the owners and the ids were several MB past
	 * some thousand jobs: all freed now. */
	if (n * JOB_SUMMARY_BYTES >= MEM_LARGE)
		mem_give_back();
	return 0;
}

const struct node_ops jobs_root_ops = {
	.getattr = root_getattr,
	.readdir = root_readdir,
};

/* jobs/last is always there; what it points to depends on who reads it. */
static int last_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	(void)p;
	fs_stat_file(fs, st, 0777, fs->uid, fs->gid, 0);
	st->st_mode = S_IFLNK | 0777;
	return 0;
}

static ssize_t last_readlink(struct fs_ctx *fs, const struct fs_path *p, char *buf, size_t size)
{
	struct fs_identity who;
	char *path = api_path(API_JOBS_LAST, NULL), *text, *err = NULL;
	size_t len = 0;
	int64_t id;
	int n;

	(void)p;
	fs_identity_basic(fs, &who);
	text = sched_link_get_text(fs->link, &who, path, false, &len);
	fs_identity_clear(&who);
	free(path);
	if (!text)
		return -1;
	n = api_read_id(text, len, &id, &err);
	free(text);
	if (n < 0)
		return sched_link_unreadable(err);
	n = snprintf(buf, size, "%lld", (long long)id);
	return n < 0 ? -1 : (ssize_t)n;
}

const struct node_ops jobs_last_ops = {
	.getattr = last_getattr,
	.readlink = last_readlink,
};

/* ---- jobs/<id> ---- */

static int job_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	return stat_at(fs, p, LEVEL_JOB, st, true, MODE_DIR);
}

static int job_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	struct where w;
	const struct job_meta *m = jobs_resolve(fs, p, LEVEL_JOB, &w);
	const struct api_job_file *files;
	size_t n;

	if (!m)
		return -1;
	job_meta_put(m);
	files = api_job_files(&n);
	for (size_t i = 0; i < n; i++)
		if (fill(arg, files[i].name, NULL))
			break;
	return 0;
}

const struct node_ops job_dir_ops = {
	.getattr = job_getattr,
	.readdir = job_readdir,
};

/* The row of jobs/<id>/<name> (lib/api_paths.c); NULL with ENOENT for none. */
static const struct api_job_file *file_row(const struct fs_path *p)
{
	const struct api_job_file *f = api_job_file(p->name);

	if (!f)
		errno = ENOENT;
	return f;
}

static int view_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	const struct api_job_file *f = file_row(p);

	return f ? stat_at(fs, p, LEVEL_JOB, st, false, f->mode) : -1;
}

static int view_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	const struct api_job_file *f = file_row(p);
	char *url;
	int64_t id;
	int ret;

	if (!f || fs_parse_id(p->arg[0], &id) < 0) {
		errno = ENOENT;
		return -1;
	}
	url = api_path_id(f->route, id);
	ret = open_view(fs, url, f->kind == API_FILE_EXACT, flags, file);
	free(url);
	return ret;
}

/* The spec never changes: its real size, so that `cmp -s` (which trusts
 * sizes) and `ls -l` tell the truth. One request per stat the kernel makes. */
static int spec_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	struct fs_identity who;
	char *url, *text;
	size_t len = 0;
	int64_t id;

	if (view_getattr(fs, p, st) < 0 || fs_parse_id(p->arg[0], &id) < 0)
		return -1;
	url = api_path_id(file_row(p)->route, id);
	fs_identity_basic(fs, &who);
	text = sched_link_get_text(fs->link, &who, url, false, &len);
	fs_identity_clear(&who);
	free(url);
	if (!text)
		return -1;
	free(text);
	st->st_size = (off_t)len;
	st->st_blocks = (st->st_size + 511) / 512;
	return 0;
}

/* Read-only for everyone, root included. */
int jobs_refuse_utimens(struct fs_ctx *fs, const struct fs_path *p, const struct timespec tv[2])
{
	(void)fs;
	(void)p;
	(void)tv;
	errno = EACCES;
	return -1;
}

const struct node_ops job_view_ops = {
	.getattr = view_getattr,
	.open = view_open,
	.truncate = fs_refuse_truncate,
	.utimens = jobs_refuse_utimens,
};

const struct node_ops job_spec_ops = {
	.getattr = spec_getattr,
	.open = view_open,
	.truncate = fs_refuse_truncate,
	.utimens = jobs_refuse_utimens,
};

/* ---- wait ---- */

struct wait_file {
	struct fs_file base;
	struct fs_ctx *fs;
	char *url;                 /* the long-poll, with timeout_ms */
	pthread_mutex_t lock;      /* guards answer: one waiter per descriptor */
	char *answer;              /* "succeeded\n" once the job or stage ended */
	size_t len;
};

/* Poll until the scheduler says it ended. 0, or -1 with errno (EINTR when
 * the reader gave up: Ctrl-C on `cat wait` must not leave a thread behind). */
static int wait_for_end(struct wait_file *f)
{
	struct fs_identity who;
	struct api_reply reply;
	int ret = -1, saved = 0;

	fs_identity_basic(f->fs, &who);
	for (;;) {
		char *state = NULL;
		bool done = false;
		int rc;

		if (fs_interrupted(f->fs)) {
			saved = EINTR;
			break;
		}
		if (sched_link_call(f->fs->link, &who, "GET", f->url, NULL, 0,
				    SCHED_WAIT_POLL_MS + SCHED_CALL_TIMEOUT_MS, &reply) < 0) {
			saved = errno;
			api_reply_clear(&reply);
			break;
		}
		rc = api_read_wait(reply.body, reply.len, &done, &state, NULL);
		api_reply_clear(&reply);
		if (rc < 0) {
			saved = EIO;
			break;
		}
		if (done) {
			f->answer = xasprintf("%s\n", state);
			f->len = strlen(f->answer);
			free(state);
			ret = 0;
			break;
		}
		free(state);
	}
	fs_identity_clear(&who);
	errno = saved;
	return ret;
}

static ssize_t wait_read(struct fs_file *file, char *buf, size_t size, off_t off)
{
	struct wait_file *f = (struct wait_file *)file;
	ssize_t ret = -1;
	int saved = 0;

	pthread_mutex_lock(&f->lock);
	if (!f->answer && wait_for_end(f) < 0) {
		saved = errno;
		goto out;
	}
	ret = 0;
	if (off >= 0 && (size_t)off < f->len) {
		ret = (ssize_t)(f->len - (size_t)off < size ? f->len - (size_t)off : size);
		memcpy(buf, f->answer + off, (size_t)ret);
	}
out:
	pthread_mutex_unlock(&f->lock);
	errno = saved;
	return ret;
}

static void wait_release(struct fs_file *file)
{
	struct wait_file *f = (struct wait_file *)file;

	pthread_mutex_destroy(&f->lock);
	free(f->url);
	free(f->answer);
	free(f);
}

static const struct fs_file_ops wait_file_ops = {
	.read = wait_read,
	.release = wait_release,
};

static int open_wait(struct fs_ctx *fs, const struct fs_path *p, int flags, enum level level,
		     struct fs_file **file)
{
	struct wait_file *f;
	struct where w;
	const struct job_meta *m;

	if (fs_check_read_only(flags) < 0)
		return -1;
	m = jobs_resolve(fs, p, level, &w);
	if (!m)
		return -1;
	f = xcalloc(1, sizeof *f);
	f->base.ops = &wait_file_ops;
	f->base.direct_io = true;
	f->fs = fs;
	f->url = api_path_wait(w.id, level == LEVEL_STAGE ? m->stages[w.stage].name : NULL,
			       SCHED_WAIT_POLL_MS);
	pthread_mutex_init(&f->lock, NULL);
	job_meta_put(m);
	*file = &f->base;
	return 0;
}

static int job_wait_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	return open_wait(fs, p, flags, LEVEL_JOB, file);
}

const struct node_ops job_wait_ops = {
	.getattr = view_getattr,
	.open = job_wait_open,
	.truncate = fs_refuse_truncate,
	.utimens = jobs_refuse_utimens,
};

/* ---- ctl ---- */

static int ctl_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	if (view_getattr(fs, p, st) < 0)
		return -1;
	/* The admin group may act on anybody's job (the scheduler checks again). */
	if (fs->admin_set) {
		st->st_gid = fs->admin_gid;
		st->st_mode |= S_IWGRP;
	}
	return 0;
}

static int ctl_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	const struct api_job_file *f = file_row(p);
	char *url, what[32];
	struct where w;
	const struct job_meta *m = f ? jobs_resolve(fs, p, LEVEL_JOB, &w) : NULL;

	(void)flags;
	if (!m)
		return -1;
	job_meta_put(m);
	url = api_path_id(f->route, w.id);
	snprintf(what, sizeof what, "job %lld", (long long)w.id);
	*file = ctl_file_create(fs, p, url, what, &ctl_job_table);
	free(url);
	return 0;
}

const struct node_ops job_ctl_ops = {
	.getattr = ctl_getattr,
	.open = ctl_open,
	.truncate = ctl_node_truncate,
	.utimens = ctl_node_utimens,
};

/* ---- stages ---- */

static int stages_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	return stat_at(fs, p, LEVEL_JOB, st, true, MODE_DIR);
}

static int stages_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	struct fs_identity who;
	const struct job_meta *m;
	int64_t id;

	if (fs_parse_id(p->arg[0], &id) < 0)
		return -1;
	fs_identity_basic(fs, &who);
	m = job_cache_get(fs->jobs, &who, id, JOB_NEED_STAGES);
	fs_identity_clear(&who);
	if (!m)
		return -1;
	for (size_t i = 0; i < m->nstages; i++)
		if (fill(arg, m->stages[i].name, NULL))
			break;
	job_meta_put(m);
	return 0;
}

const struct node_ops stages_dir_ops = {
	.getattr = stages_getattr,
	.readdir = stages_readdir,
};

static int stage_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	return stat_at(fs, p, LEVEL_STAGE, st, true, MODE_DIR);
}

static int stage_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	return level_readdir(fs, p, LEVEL_STAGE, fill, arg, stage_entries, ARRAY_LEN(stage_entries));
}

const struct node_ops stage_dir_ops = {
	.getattr = stage_getattr,
	.readdir = stage_readdir,
};

int jobs_stage_file_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	return stat_at(fs, p, LEVEL_STAGE, st, false, MODE_VIEW);
}

static int stage_status_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	struct api_ref ref = { .name = p->arg[1] };
	char *url;
	int ret;

	if (fs_parse_id(p->arg[0], &ref.id) < 0)
		return -1;
	url = api_path(API_STAGE_STATUS, &ref);
	ret = open_view(fs, url, false, flags, file);
	free(url);
	return ret;
}

const struct node_ops stage_status_ops = {
	.getattr = jobs_stage_file_getattr,
	.open = stage_status_open,
	.truncate = fs_refuse_truncate,
	.utimens = jobs_refuse_utimens,
};

static int stage_wait_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	return open_wait(fs, p, flags, LEVEL_STAGE, file);
}

const struct node_ops stage_wait_ops = {
	.getattr = jobs_stage_file_getattr,
	.open = stage_wait_open,
	.truncate = fs_refuse_truncate,
	.utimens = jobs_refuse_utimens,
};

/* ---- instances ---- */

static int instances_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	return stat_at(fs, p, LEVEL_STAGE, st, true, MODE_DIR);
}

static int instances_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	struct where w;
	const struct job_meta *m = jobs_resolve(fs, p, LEVEL_STAGE, &w);
	char name[16];

	if (!m)
		return -1;
	for (int i = 0; i < m->stages[w.stage].instances; i++) {
		snprintf(name, sizeof name, "%d", i);
		if (fill(arg, name, NULL))
			break;
	}
	job_meta_put(m);
	return 0;
}

const struct node_ops instances_dir_ops = {
	.getattr = instances_getattr,
	.readdir = instances_readdir,
};

static int instance_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	return stat_at(fs, p, LEVEL_INSTANCE, st, true, MODE_DIR);
}

static int instance_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	return level_readdir(fs, p, LEVEL_INSTANCE, fill, arg, instance_entries, ARRAY_LEN(instance_entries));
}

const struct node_ops instance_dir_ops = {
	.getattr = instance_getattr,
	.readdir = instance_readdir,
};

static int instance_status_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	return stat_at(fs, p, LEVEL_INSTANCE, st, false, MODE_VIEW);
}

static int instance_status_open(struct fs_ctx *fs, const struct fs_path *p, int flags,
				struct fs_file **file)
{
	struct api_ref ref = { .name = p->arg[1] };
	char *url;
	int ret;

	if (fs_parse_id(p->arg[0], &ref.id) < 0 || fs_parse_id(p->arg[2], &ref.index) < 0)
		return -1;
	/* status.json is the instance itself, as for a job. */
	url = api_path(strcmp(p->name, "status.json") == 0 ? API_INSTANCE : API_INSTANCE_STATUS, &ref);
	ret = open_view(fs, url, false, flags, file);
	free(url);
	return ret;
}

const struct node_ops instance_status_ops = {
	.getattr = instance_status_getattr,
	.open = instance_status_open,
	.truncate = fs_refuse_truncate,
	.utimens = jobs_refuse_utimens,
};

static const struct node_ops *file_ops(const char *name)
{
	const struct api_job_file *f = api_job_file(name);

	switch (f ? f->kind : API_FILE_DIR) {
	case API_FILE_VIEW:
		return &job_view_ops;
	case API_FILE_EXACT:
		return &job_spec_ops;
	case API_FILE_WAIT:
		return &job_wait_ops;
	case API_FILE_CTL:
		return &job_ctl_ops;
	case API_FILE_DIR:
		break;
	}
	return NULL;
}

const struct node_ops job_file_family = {
	.by_name = file_ops,
};
