/* jobs/ (see jobs_dir.h). Existence and ownership come from the job cache;
 * content comes from the scheduler at open, or from the storage for logs. */
#include "jobs_dir.h"
#include "ctl_file.h"
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

#define MODE_DIR 0555
#define MODE_VIEW 0444
#define MODE_CTL 0644
#define MODE_LOG 0644

static const char *const job_entries[] = {
	"spec", "status", "status.json", "why", "wait", "ctl", "events", "stages", "out",
};
static const char *const stage_entries[] = { "status", "log", "wait", "instances" };
static const char *const instance_entries[] = { "status", "log" };

/* The file names of a job's views and where the scheduler serves them. The
 * spec is given back byte for byte; the others end with a newline. */
static const struct {
	const char *file;
	const char *suffix;
	bool exact;
} job_views[] = {
	{ "spec", "/spec", true },
	{ "status", "/status", false },
	{ "status.json", "", false },
	{ "why", "/why", false },
	{ "events", "/events", false },
};

enum level { LEVEL_JOB, LEVEL_STAGE, LEVEL_INSTANCE };

struct where {
	int64_t id;
	int stage;                 /* index in meta->stages */
	int index;                 /* instance */
};

char *jobs_log_path(int64_t id, const char *stage, int index)
{
	return xasprintf("jobs/%lld/log/%s/%d.log", (long long)id, stage, index);
}

/* The job (and stage, and instance) that p names, as a cache reference the
 * caller puts. NULL with ENOENT when one of them does not exist. A stage or
 * instance the cache does not know is asked for again: a foreach stage grows
 * its instances when its upstream ends, and the runner may already be opening
 * the new instance's log. */
static const struct job_meta *resolve(struct fs_ctx *fs, const struct fs_path *p, enum level level,
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
	const struct job_meta *m = resolve(fs, p, level, &w);

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
	const struct job_meta *m = resolve(fs, p, level, &w);

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
	json_t *root;
	json_int_t id;
	int n;

	(void)p;
	fs_identity_basic(fs, &who);
	root = sched_link_get_json(fs->link, &who, "/v1/jobs/last");
	fs_identity_clear(&who);
	if (!root)
		return -1;
	id = json_integer_value(json_object_get(root, "id"));
	json_decref(root);
	if (id <= 0) {
		errno = ENOENT;
		return -1;
	}
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
	return level_readdir(fs, p, LEVEL_JOB, fill, arg, job_entries, ARRAY_LEN(job_entries));
}

const struct node_ops job_dir_ops = {
	.getattr = job_getattr,
	.readdir = job_readdir,
};

static int view_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	return stat_at(fs, p, LEVEL_JOB, st, false, MODE_VIEW);
}

static int view_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	const char *suffix = NULL;
	bool exact = false;
	char url[96];
	int64_t id;

	for (size_t i = 0; i < ARRAY_LEN(job_views) && !suffix; i++) {
		if (strcmp(job_views[i].file, p->name) == 0) {
			suffix = job_views[i].suffix;
			exact = job_views[i].exact;
		}
	}
	if (!suffix || fs_parse_id(p->arg[0], &id) < 0) {
		errno = ENOENT;
		return -1;
	}
	snprintf(url, sizeof url, "/v1/jobs/%lld%s", (long long)id, suffix);
	return open_view(fs, url, exact, flags, file);
}

/* The spec never changes: its real size, so that `cmp -s` (which trusts
 * sizes) and `ls -l` tell the truth. One request per stat the kernel makes. */
static int spec_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	struct fs_identity who;
	char url[64], *text;
	size_t len = 0;
	int64_t id;

	if (view_getattr(fs, p, st) < 0 || fs_parse_id(p->arg[0], &id) < 0)
		return -1;
	snprintf(url, sizeof url, "/v1/jobs/%lld/spec", (long long)id);
	fs_identity_basic(fs, &who);
	text = sched_link_get_text(fs->link, &who, url, false, &len);
	fs_identity_clear(&who);
	if (!text)
		return -1;
	free(text);
	st->st_size = (off_t)len;
	st->st_blocks = (st->st_size + 511) / 512;
	return 0;
}

/* Read-only for everyone, root included. */
static int refuse_utimens(struct fs_ctx *fs, const struct fs_path *p, const struct timespec tv[2])
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
	.utimens = refuse_utimens,
};

const struct node_ops job_spec_ops = {
	.getattr = spec_getattr,
	.open = view_open,
	.truncate = fs_refuse_truncate,
	.utimens = refuse_utimens,
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
		json_t *root;
		const char *state;

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
		root = json_loadb(reply.body, reply.len, 0, NULL);
		api_reply_clear(&reply);
		state = json_string_value(json_object_get(root, "state"));
		if (json_is_true(json_object_get(root, "done"))) {
			f->answer = xasprintf("%s\n", state ? state : "ended");
			f->len = strlen(f->answer);
			json_decref(root);
			ret = 0;
			break;
		}
		json_decref(root);
		if (!state) {
			saved = EIO;
			break;
		}
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
	m = resolve(fs, p, level, &w);
	if (!m)
		return -1;
	f = xcalloc(1, sizeof *f);
	f->base.ops = &wait_file_ops;
	f->base.direct_io = true;
	f->fs = fs;
	if (level == LEVEL_STAGE) {
		char *stage = url_escape(m->stages[w.stage].name);

		f->url = xasprintf("/v1/jobs/%lld/wait?timeout_ms=%ld&stage=%s", (long long)w.id,
				   SCHED_WAIT_POLL_MS, stage);
		free(stage);
	} else {
		f->url = xasprintf("/v1/jobs/%lld/wait?timeout_ms=%ld", (long long)w.id, SCHED_WAIT_POLL_MS);
	}
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
	.utimens = refuse_utimens,
};

/* ---- ctl ---- */

static const char ctl_help[] = "commands: cancel | hold | release | retry | priority N | purge | keep | unkeep\n";

static int ctl_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	if (stat_at(fs, p, LEVEL_JOB, st, false, MODE_CTL) < 0)
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
	char url[64], what[32];
	struct where w;
	const struct job_meta *m = resolve(fs, p, LEVEL_JOB, &w);

	(void)flags;
	if (!m)
		return -1;
	job_meta_put(m);
	snprintf(url, sizeof url, "/v1/jobs/%lld/ctl", (long long)w.id);
	snprintf(what, sizeof what, "job %lld", (long long)w.id);
	*file = ctl_file_create(fs, url, what, ctl_help);
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

static int stage_file_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	return stat_at(fs, p, LEVEL_STAGE, st, false, MODE_VIEW);
}

static int stage_status_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	char *stage = url_escape(p->arg[1]), *url;
	int64_t id;
	int ret = -1;

	if (fs_parse_id(p->arg[0], &id) == 0) {
		url = xasprintf("/v1/jobs/%lld/stages/%s/status", (long long)id, stage);
		ret = open_view(fs, url, false, flags, file);
		free(url);
	}
	free(stage);
	return ret;
}

const struct node_ops stage_status_ops = {
	.getattr = stage_file_getattr,
	.open = stage_status_open,
	.truncate = fs_refuse_truncate,
	.utimens = refuse_utimens,
};

static int stage_wait_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	return open_wait(fs, p, flags, LEVEL_STAGE, file);
}

const struct node_ops stage_wait_ops = {
	.getattr = stage_file_getattr,
	.open = stage_wait_open,
	.truncate = fs_refuse_truncate,
	.utimens = refuse_utimens,
};

/* ---- stages/<s>/log: the instances' logs one after the other ---- */

struct log_part {
	char *header;              /* "==> instance 3 <==\n" when there are several */
	size_t hlen;
	char *path;                /* the instance's log on the storage */
	off_t size;                /* as it was at open */
};

struct concat_file {
	struct fs_file base;
	struct backend *b;
	struct log_part *parts;
	size_t n;
};

static ssize_t read_part(struct backend *b, const struct log_part *part, char *buf, size_t size, off_t off)
{
	struct backend_cred nobody = { 0, 0 };
	struct backend_file *bf;
	ssize_t n;

	if (backend_open(b, &nobody, part->path, O_RDONLY, 0, &bf) < 0)
		return errno == ENOENT ? 0 : -1;
	n = backend_pread(b, bf, buf, size, off);
	backend_close(b, bf);
	return n;
}

static ssize_t concat_read(struct fs_file *file, char *buf, size_t size, off_t off)
{
	struct concat_file *f = (struct concat_file *)file;
	size_t done = 0;
	off_t start = 0;        /* offset where the current part begins */

	for (size_t i = 0; i < f->n && done < size; i++) {
		const struct log_part *part = &f->parts[i];
		off_t hend = start + (off_t)part->hlen, end = hend + part->size;
		off_t at = off + (off_t)done;

		if (at < hend) {
			size_t k = (size_t)(hend - at) < size - done ? (size_t)(hend - at) : size - done;

			memcpy(buf + done, part->header + (at - start), k);
			done += k;
			at += (off_t)k;
		}
		if (done < size && at >= hend && at < end) {
			size_t want = (size_t)(end - at) < size - done ? (size_t)(end - at) : size - done;
			ssize_t n = read_part(f->b, part, buf + done, want, at - hend);

			if (n < 0)
				return done ? (ssize_t)done : -1;
			done += (size_t)n;
			/* The log shrank since open: what is left of it reads as nothing. */
			if ((size_t)n < want)
				return (ssize_t)done;
		}
		start = end;
	}
	return (ssize_t)done;
}

static void concat_release(struct fs_file *file)
{
	struct concat_file *f = (struct concat_file *)file;

	for (size_t i = 0; i < f->n; i++) {
		free(f->parts[i].header);
		free(f->parts[i].path);
	}
	free(f->parts);
	free(f);
}

static const struct fs_file_ops concat_file_ops = {
	.read = concat_read,
	.release = concat_release,
};

static int stage_log_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	struct concat_file *f;
	struct where w;
	const struct job_meta *m;
	int n;

	if (fs_check_read_only(flags) < 0)
		return -1;
	m = resolve(fs, p, LEVEL_STAGE, &w);
	if (!m)
		return -1;
	n = m->stages[w.stage].instances;
	f = xcalloc(1, sizeof *f);
	f->base.ops = &concat_file_ops;
	f->base.direct_io = true;
	f->b = fs->backend;
	f->parts = xcalloc(n > 0 ? (size_t)n : 1, sizeof *f->parts);
	for (int i = 0; i < n; i++) {
		struct log_part *part = &f->parts[f->n++];
		struct stat st;

		part->path = jobs_log_path(w.id, m->stages[w.stage].name, i);
		if (backend_getattr(fs->backend, part->path, &st) == 0 && S_ISREG(st.st_mode))
			part->size = st.st_size;
		if (n > 1)
			part->header = xasprintf("%s==> instance %d <==\n", i ? "\n" : "", i);
		part->hlen = part->header ? strlen(part->header) : 0;
	}
	job_meta_put(m);
	*file = &f->base;
	return 0;
}

const struct node_ops stage_log_ops = {
	.getattr = stage_file_getattr,
	.open = stage_log_open,
	.truncate = fs_refuse_truncate,
	.utimens = refuse_utimens,
};

/* ---- instances ---- */

static int instances_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	return stat_at(fs, p, LEVEL_STAGE, st, true, MODE_DIR);
}

static int instances_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	struct where w;
	const struct job_meta *m = resolve(fs, p, LEVEL_STAGE, &w);
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
	char *stage = url_escape(p->arg[1]), *url;
	int64_t id, index;
	int ret = -1;

	if (fs_parse_id(p->arg[0], &id) == 0 && fs_parse_id(p->arg[2], &index) == 0) {
		url = xasprintf("/v1/jobs/%lld/stages/%s/instances/%lld/status", (long long)id, stage,
				(long long)index);
		ret = open_view(fs, url, false, flags, file);
		free(url);
	}
	free(stage);
	return ret;
}

const struct node_ops instance_status_ops = {
	.getattr = instance_status_getattr,
	.open = instance_status_open,
	.truncate = fs_refuse_truncate,
	.utimens = refuse_utimens,
};

/* ---- instances/<i>/log: the storage's jobs/<id>/log/<s>/<i>.log ---- */

static char *instance_log_path(const struct job_meta *m, const struct where *w)
{
	return jobs_log_path(w->id, m->stages[w->stage].name, w->index);
}

static int instance_log_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	struct where w;
	const struct job_meta *m = resolve(fs, p, LEVEL_INSTANCE, &w);
	struct stat real;
	char *path;

	if (!m)
		return -1;
	fs_stat_file(fs, st, MODE_LOG, m->uid, m->gid, 0);
	fs_stat_time(st, m->submitted_ms);
	/* Its real size and times, so that `tail -f` and `ls -l` mean something. */
	path = instance_log_path(m, &w);
	if (backend_getattr(fs->backend, path, &real) == 0 && S_ISREG(real.st_mode)) {
		st->st_size = real.st_size;
		st->st_blocks = real.st_blocks;
		st->st_atim = real.st_atim;
		st->st_mtim = real.st_mtim;
		st->st_ctim = real.st_ctim;
	}
	free(path);
	job_meta_put(m);
	return 0;
}

/* Reading a log not written yet gives an empty file. Writing (the instance's
 * own output, or its owner) appends, and creates the log owned by the job's
 * submitter whoever opens it first: the runner may open it as root. */
static int instance_log_open(struct fs_ctx *fs, const struct fs_path *p, int flags,
			     struct fs_file **file)
{
	struct backend *b = fs->backend;
	struct backend_file *bf = NULL;
	struct backend_cred owner;
	struct where w;
	const struct job_meta *m = resolve(fs, p, LEVEL_INSTANCE, &w);
	char *path = NULL, *dir = NULL;
	int ret = -1;

	if (!m)
		return -1;
	path = instance_log_path(m, &w);
	if ((flags & O_ACCMODE) == O_RDONLY) {
		struct backend_cred me;

		fs_caller_cred(fs, &me);
		if (backend_open(b, &me, path, O_RDONLY, 0, &bf) < 0) {
			if (errno != ENOENT)
				goto out;
			*file = text_file_create(NULL, 0);
		} else {
			*file = backend_fs_file_create(b, bf, true);
		}
		ret = 0;
		goto out;
	}
	owner.uid = m->uid;
	owner.gid = m->gid;
	dir = xasprintf("jobs/%lld/log/%s", (long long)w.id, m->stages[w.stage].name);
	if (backend_mkdir_p(b, &owner, dir, 0755) < 0)
		goto out;
	flags = (flags & (O_ACCMODE | O_TRUNC)) | O_APPEND | O_CREAT;
	if (backend_open(b, &owner, path, flags, MODE_LOG, &bf) < 0)
		goto out;
	*file = backend_fs_file_create(b, bf, true);
	ret = 0;
out:
	free(dir);
	free(path);
	job_meta_put(m);
	return ret;
}

static int instance_log_truncate(struct fs_ctx *fs, const struct fs_path *p, off_t size)
{
	struct where w;
	const struct job_meta *m = resolve(fs, p, LEVEL_INSTANCE, &w);
	char *path;
	int ret;

	if (!m)
		return -1;
	path = instance_log_path(m, &w);
	ret = backend_truncate(fs->backend, path, size);
	/* Not written yet: it is as empty as asked. */
	if (ret < 0 && errno == ENOENT && size == 0)
		ret = 0;
	free(path);
	job_meta_put(m);
	return ret;
}

static int instance_log_utimens(struct fs_ctx *fs, const struct fs_path *p, const struct timespec tv[2])
{
	struct where w;
	const struct job_meta *m = resolve(fs, p, LEVEL_INSTANCE, &w);
	char *path;
	int ret;

	if (!m)
		return -1;
	path = instance_log_path(m, &w);
	ret = backend_utimens(fs->backend, path, tv);
	if (ret < 0 && errno == ENOENT)
		ret = 0;
	free(path);
	job_meta_put(m);
	return ret;
}

const struct node_ops instance_log_ops = {
	.getattr = instance_log_getattr,
	.open = instance_log_open,
	.truncate = instance_log_truncate,
	.utimens = instance_log_utimens,
};
