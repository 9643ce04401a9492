/* The logs under jobs/ (see jobs_dir.h): stages/<s>/log, the instances' logs
 * one after the other, and instances/<i>/log, the storage's
 * jobs/<id>/log/<s>/<i>.log that the runner writes through the mount. */
#include "jobs_dir.h"
#include "jobs_internal.h"
#include "backend.h"
#include "job_cache.h"
#include "util.h"
#include "volume_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	m = jobs_resolve(fs, p, LEVEL_STAGE, &w);
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
	.getattr = jobs_stage_file_getattr,
	.open = stage_log_open,
	.truncate = fs_refuse_truncate,
	.utimens = jobs_refuse_utimens,
};

/* ---- instances/<i>/log: the storage's jobs/<id>/log/<s>/<i>.log ---- */

static char *instance_log_path(const struct job_meta *m, const struct where *w)
{
	return jobs_log_path(w->id, m->stages[w->stage].name, w->index);
}

static int instance_log_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	struct where w;
	const struct job_meta *m = jobs_resolve(fs, p, LEVEL_INSTANCE, &w);
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
	const struct job_meta *m = jobs_resolve(fs, p, LEVEL_INSTANCE, &w);
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
	const struct job_meta *m = jobs_resolve(fs, p, LEVEL_INSTANCE, &w);
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
	const struct job_meta *m = jobs_resolve(fs, p, LEVEL_INSTANCE, &w);
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
