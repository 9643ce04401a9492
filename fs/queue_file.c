/* An open file of queue/ (see queue_dir.h): the spec's text held in memory
 * while it is written, submitted as its creator when they close it, the
 * answer kept for queue/.clone and a refusal turned into <name>.rejected.
 * The folder itself (names, lookups, reports) is fs/queue_dir.c. */
#include "queue_dir.h"
#include "queue_dir_internal.h"
#include "api_answers.h"
#include "api_requests.h"
#include "escape.h"
#include "proc_fd.h"
#include "job_cache.h"
#include "log.h"
#include "sched_link.h"
#include "spec.h"
#include "util.h"
#include "wire.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Tell the kernel that name is no longer in the folder with node id parent
 * (from the file's CREATE, fs/wire.h), so that the next open of the same name
 * looks it up and creates it: one LOOKUP, where the recently gone trick costs
 * a GETATTR, two LOOKUPs of the name, one of the folder and a FORGET. The
 * kernel takes the folder's lock for it, so only a handler of a request that
 * holds no folder lock may ask: FLUSH does (close(2) holds none), RELEASE
 * need not (the kernel sends one under the folder's lock when an O_CREAT
 * open fails after its CREATE). True when the kernel dropped the name. */
static bool drop_cached_name(struct queue_dir *q, uint64_t parent, const char *name)
{
	struct fuse_session *se;

	if (!q->fs->fuse || !parent)
		return false;
	se = fuse_get_session(q->fs->fuse);
	return se && fuse_lowlevel_notify_inval_entry(se, parent, name, strlen(name)) == 0;
}

/* Take f out of the folder. The kernel may keep its name for entry_timeout:
 * with may_drop (see drop_cached_name) it is dropped at once, else, or when
 * that fails, the name is marked recently gone (see GONE_SLOTS). */
static void unlist(struct spec_file *f, bool may_drop)
{
	struct queue_dir *q = f->q;
	struct spec_file **pp;
	struct gone_name *g = NULL;
	bool was = false;

	pthread_mutex_lock(&q->lock);
	if (f->listed) {
		for (pp = &q->open; *pp; pp = &(*pp)->next) {
			if (*pp == f) {
				*pp = f->next;
				break;
			}
		}
		f->listed = false;
		was = true;
	}
	/* Marked before the kernel hears of it: a look at the name in between
	 * must not find it plainly missing while the kernel still believes in it. */
	if (was && strlen(f->name) <= NAME_MAX) {
		g = &q->gone[q->next_gone++ % GONE_SLOTS];
		snprintf(g->name, sizeof g->name, "%s", f->name);
		g->until_ms = time_mono_ms() + GONE_MS;
	}
	pthread_mutex_unlock(&q->lock);
	if (!was)
		return;
	if (may_drop && drop_cached_name(q, f->parent_node, f->name)) {
		/* The kernel forgot the name: its next look is a plain LOOKUP,
		 * which must miss, not be told ESTALE. Unless the ring went round
		 * meanwhile and the slot is another name's. */
		pthread_mutex_lock(&q->lock);
		if (g && strcmp(g->name, f->name) == 0)
			g->until_ms = 0;
		pthread_mutex_unlock(&q->lock);
		return;
	}
	queue_invalidate(q, f->name);
}

/* POST one spec as who. 0 with *id, or -1 with errno and *err: the
 * scheduler's "file:line: message" lines, or why it could not be asked. */
static int post_spec(struct queue_dir *q, const struct fs_identity *who, const char *name,
		     const char *workdir, const char *text, size_t len, bool too_big, int64_t *id,
		     char **err)
{
	struct api_reply reply = { 0 };
	json_t *body = NULL;
	struct api_job_meta job;
	char *dump = NULL, token[API_TOKEN_SIZE];
	bool unconfirmed = false, has_job = false, bad_spec = false;
	int ret = -1, saved = 0, rc;

	if (too_big) {
		saved = EFBIG;
		errprintf(err, "%s: larger than the limit of %d bytes (a spec is text a person writes; "
			  "put data in files the stages read): nothing was submitted", name, SPEC_MAX_BYTES);
		goto out;
	}
	/* A job must be submitted once even when the answer is lost: a token. */
	if (q->once && api_new_token(token) < 0) {
		saved = EIO;
		errprintf(err, "%s: no random bytes for the submission's token (%s): nothing was "
			  "submitted", name, strerror(errno));
		goto out;
	}
	body = api_submission_json(name, text, len, q->once ? token : NULL, workdir, &bad_spec);
	if (!body && bad_spec) {
		/* Not UTF-8, or a NUL byte (JSON carries it as \u0000, which the
		 * scheduler refuses with a message about JSON): no text either,
		 * so the spec parser says where. */
		struct spec *parsed = spec_parse(text, len, name, err);

		spec_destroy(parsed);
		saved = EINVAL;
		if (!err || !*err)
			errprintf(err, "%s: is not a text file", name);
		goto out;
	}
	if (!body) {
		saved = EINVAL;
		errprintf(err, "%s: the file name is not UTF-8 text: rename it", name);
		goto out;
	}
	dump = json_dumps(body, JSON_COMPACT);
	rc = q->once ? sched_link_submit(q->fs->link, who, q->post_path, dump, strlen(dump), &reply,
					 &unconfirmed)
		     : sched_link_call(q->fs->link, who, "POST", q->post_path, dump, strlen(dump),
				       SCHED_CALL_TIMEOUT_MS, &reply);
	if (rc < 0) {
		saved = errno;
		if (reply.status && !unconfirmed) {
			char *text_err = api_reply_error(&reply);

			errprintf(err, "%s", text_err);
			free(text_err);
		} else if (unconfirmed) {
			errprintf(err, "%s: the scheduler at %s may have taken the request but gave no "
				  "answer for %ld s: the job may or may not have been submitted; look in jobs/ "
				  "before you submit it again", name, sched_link_endpoint(q->fs->link),
				  SCHED_SUBMIT_DEADLINE_MS / 1000);
		} else if (saved == ENOTCONN) {
			/* Every connect was refused before a byte of the request was
			 * written (api_client_unsent()): the one case where nothing
			 * can have been submitted. */
			errprintf(err, "%s: the scheduler at %s is not running: nothing was submitted",
				  name, sched_link_endpoint(q->fs->link));
		} else {
			/* Sent, or perhaps sent (ENOTCONN is only for a request that
			 * no connection carried), and no answer. */
			errprintf(err, "%s: the scheduler at %s gave no answer (%s): it may or may not "
				  "have been submitted; look in %s/ before you submit it again", name,
				  sched_link_endpoint(q->fs->link), strerror(saved),
				  q->once ? "jobs" : q->folder);
		}
		goto out;
	}
	if (api_read_submitted(reply.body, reply.len, id, &job, &has_job, NULL) < 0) {
		saved = EIO;
		errprintf(err, "%s: the scheduler accepted the spec but its answer has no job id", name);
		goto out;
	}
	if (has_job)
		job_cache_prime(q->fs->jobs, *id, &job);
	ret = 0;
out:
	json_decref(body);
	free(dump);
	api_reply_clear(&reply);
	errno = saved;
	return ret;
}

/* Submit f's text once. Caller holds f->lock. may_drop: see unlist. 0 or -1
 * with errno. */
static int submit_locked(struct spec_file *f, bool may_drop)
{
	char *err = NULL;
	int64_t id = 0;
	int rc;

	rc = post_spec(f->q, &f->who, f->name, f->workdir, f->text, f->len, f->too_big, &id, &err);
	f->submitted = true;
	f->result = rc < 0 ? errno : 0;
	if (rc == 0) {
		/* Each new job's names (jobs/N, its status, wait, out/...) stay in
		 * the kernel's cache and pin a libfuse node each: let the kernel
		 * forget the unused ones now and then (a submission is the flush
		 * of the file: no folder lock held). */
		if (f->q->once && atomic_fetch_add(&f->q->accepted, 1) % QUEUE_FORGET_EVERY ==
					 QUEUE_FORGET_EVERY - 1)
			fs_forget_top_folder(f->q->fs, "jobs");
		if (f->q->on_accepted)
			f->q->on_accepted(f->q->on_accepted_arg);
		f->answer = xasprintf("%lld\n", (long long)id);
		log_debug("queue/%s: job %lld for uid %u", f->clone ? ".clone" : f->name,
			  (long long)id, (unsigned)f->who.uid);
	} else {
		size_t n = err ? strlen(err) : 0;

		f->answer = n && err[n - 1] == '\n' ? xstrdup(err) : xasprintf("%s\n", err ? err : "");
		log_debug("queue/%s: refused: %s", f->clone ? ".clone" : f->name, err ? err : "");
	}
	f->answer_len = strlen(f->answer);
	unlist(f, may_drop);
	if (!f->clone) {
		char *rejected = xasprintf("%s%s", f->name, REJECTED_SUFFIX);

		if (rc == 0)
			queue_remove_rejected(f->q, rejected, f->who.uid);
		else
			queue_add_rejected(f->q, f->name, &f->who, f->answer);
		free(rejected);
	}
	free(err);
	errno = f->result;
	return rc;
}

static ssize_t spec_write(struct fs_file *file, const char *buf, size_t size, off_t off)
{
	struct spec_file *f = (struct spec_file *)file;
	ssize_t ret = -1;
	int saved = 0;

	pthread_mutex_lock(&f->lock);
	if (f->submitted) {
		saved = EBUSY;
		goto out;
	}
	if (off < 0 || (size_t)off > SPEC_MAX_BYTES || size > SPEC_MAX_BYTES - (size_t)off) {
		f->too_big = true;
		saved = EFBIG;
		goto out;
	}
	if ((size_t)off + size > f->cap) {
		size_t cap = f->cap ? f->cap : 4096;

		while (cap < (size_t)off + size)
			cap *= 2;
		f->text = xrealloc(f->text, cap);
		f->cap = cap;
	}
	if ((size_t)off > f->len)
		memset(f->text + f->len, 0, (size_t)off - f->len);
	if (size)
		memcpy(f->text + off, buf, size);
	if ((size_t)off + size > f->len)
		f->len = (size_t)off + size;
	atomic_store(&f->size, f->len);
	ret = (ssize_t)size;
out:
	pthread_mutex_unlock(&f->lock);
	errno = saved;
	return ret;
}

/* A named file read back gives its text; the clone's first read submits and
 * its answer is served from the offset of that read on (see queue_dir.h). */
static ssize_t spec_read(struct fs_file *file, char *buf, size_t size, off_t off)
{
	struct spec_file *f = (struct spec_file *)file;
	const char *data;
	size_t len;
	ssize_t ret = -1;
	int saved = 0;

	pthread_mutex_lock(&f->lock);
	if (!f->clone) {
		data = f->text;
		len = f->len;
	} else {
		if (!f->submitted)
			submit_locked(f, false);
		if (!f->read_started) {
			f->read_started = true;
			f->answer_base = off;
		}
		if (f->result && !f->error_told) {
			f->error_told = true;
			saved = f->result;
			goto out;
		}
		data = f->answer;
		len = f->answer_len;
		off -= f->answer_base;
	}
	if (off < 0 || (size_t)off >= len) {
		ret = 0;
		goto out;
	}
	if (size > len - (size_t)off)
		size = len - (size_t)off;
	memcpy(buf, data + off, size);
	ret = (ssize_t)size;
out:
	pthread_mutex_unlock(&f->lock);
	errno = saved;
	return ret;
}

/* FUSE sends a flush for every close(2) of every copy of the descriptor, and
 * shells close copies all the time (`cmd > f` opens, dup2()s and closes the
 * original before cmd writes a byte). The spec is submitted at the close after
 * which neither the closing process nor the creator holds the file any more:
 * the end of `cp`, of `cat spec > f`, and of `exec 3>f; cmd >&3; exec 3>&-`,
 * but not a child's exit while its parent still holds the descriptor. */
static bool still_held(struct spec_file *f)
{
	const char *mnt = f->q->fs->mountpoint;
	pid_t closer = fs_caller_pid(f->q->fs);
	char *path;
	bool held;

	if (!mnt)
		return false;
	path = xasprintf("%s/%s/%s", strcmp(mnt, "/") == 0 ? "" : mnt, f->q->folder,
			 f->clone ? ".clone" : f->name);
	held = proc_holds_path(closer, path) || (f->opener != closer && proc_holds_path(f->opener, path));
	free(path);
	return held;
}

static int spec_flush(struct fs_file *file)
{
	struct spec_file *f = (struct spec_file *)file;
	bool settled;
	int ret = 0;

	/* The closes after the one that submitted need not look in /proc. */
	pthread_mutex_lock(&f->lock);
	settled = f->submitted || (f->clone && f->len == 0 && !f->too_big);
	pthread_mutex_unlock(&f->lock);
	if (settled || still_held(f))
		return 0;
	pthread_mutex_lock(&f->lock);
	/* An unused clone descriptor submits nothing. */
	if (!f->submitted && (!f->clone || f->len > 0 || f->too_big))
		ret = submit_locked(f, true);
	pthread_mutex_unlock(&f->lock);
	return ret;
}

static int spec_truncate(struct fs_file *file, off_t size)
{
	struct spec_file *f = (struct spec_file *)file;
	int ret = -1, saved = 0;

	pthread_mutex_lock(&f->lock);
	if (f->submitted) {
		saved = EBUSY;
		goto out;
	}
	if (size < 0 || (size_t)size > SPEC_MAX_BYTES) {
		saved = EFBIG;
		goto out;
	}
	if ((size_t)size > f->len) {
		pthread_mutex_unlock(&f->lock);
		/* Growing is writing zeros: one path for the limit and the buffer. */
		return spec_write(file, "", 0, size) < 0 ? -1 : 0;
	}
	f->len = (size_t)size;
	atomic_store(&f->size, f->len);
	ret = 0;
out:
	pthread_mutex_unlock(&f->lock);
	errno = saved;
	return ret;
}

/* A spec being written shows as the folder's owner's and writable by all:
 * the kernel may answer another user's open of the same name from its cache
 * of the writer's lookup (entry_timeout), and its permission checks
 * (default_permissions, fs.protected_regular for O_CREAT in a sticky folder)
 * must let that open through to entry_open, which gives them a spec of
 * their own. */
static int spec_getattr(struct fs_file *file, struct stat *st)
{
	struct spec_file *f = (struct spec_file *)file;

	fs_stat_file(f->q->fs, st, 0666, f->q->fs->uid, f->q->fs->gid,
		     f->clone ? 0 : (off_t)atomic_load(&f->size));
	if (!f->clone)
		st->st_mtim = st->st_ctim = f->created;
	return 0;
}

static void spec_release(struct fs_file *file)
{
	struct spec_file *f = (struct spec_file *)file;

	/* The creator's close never came through (it was another thread, or the
	 * descriptor went away with a process we did not see): submit now. */
	pthread_mutex_lock(&f->lock);
	if (!f->submitted && (!f->clone || f->len > 0 || f->too_big))
		submit_locked(f, false);
	pthread_mutex_unlock(&f->lock);
	unlist(f, false);
	pthread_mutex_destroy(&f->lock);
	fs_identity_clear(&f->who);
	free(f->name);
	free(f->workdir);
	free(f->text);
	free(f->answer);
	free(f);
}

static const struct fs_file_ops spec_file_ops = {
	.read = spec_read,
	.write = spec_write,
	.flush = spec_flush,
	.truncate = spec_truncate,
	.getattr = spec_getattr,
	.release = spec_release,
};

/* Where the process that creates the spec works (`cp spec.conf /parsa/queue/`
 * from ~/lab: ~/lab), read from /proc as the kernel knows it: its instances
 * run there when the folder exists on their host. NULL when unknown. */
static char *caller_workdir(pid_t pid)
{
	char link[64], path[PATH_MAX];
	ssize_t n;

	if (pid <= 0)
		return NULL;
	snprintf(link, sizeof link, "/proc/%d/cwd", (int)pid);
	n = readlink(link, path, sizeof path - 1);
	if (n <= 0 || path[0] != '/')
		return NULL;
	path[n] = '\0';
	/* A removed folder reads as "/old/path (deleted)": no place to run. */
	if (n > 10 && strcmp(path + n - 10, " (deleted)") == 0)
		return NULL;
	return xstrdup(path);
}

struct spec_file *queue_spec_file_new(struct queue_dir *q, const char *name, bool clone)
{
	struct spec_file *f = xcalloc(1, sizeof *f);

	f->base.ops = &spec_file_ops;
	f->base.direct_io = true;
	f->q = q;
	f->name = xstrdup(name);
	f->clone = clone;
	fs_identity_current(q->fs, &f->who);
	f->opener = fs_caller_pid(q->fs);
	f->workdir = caller_workdir(f->opener);
	clock_gettime(CLOCK_REALTIME, &f->created);
	pthread_mutex_init(&f->lock, NULL);
	atomic_init(&f->size, 0);
	return f;
}

