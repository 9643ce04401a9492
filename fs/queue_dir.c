/* queue/ (see queue_dir.h). Every open file of queue/ is a struct spec_file
 * holding the text in memory; the named ones are listed in the folder until
 * they are submitted. The .rejected files live only in memory too. */
#include "queue_dir.h"
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

#define REJECTED_SUFFIX ".rejected"
#define CLONE_JOB_NAME "clone"

struct spec_file {
	struct fs_file base;
	struct queue_dir *q;
	char *name;                /* file name sent with the spec */
	bool clone;                /* opened as queue/.clone */
	struct fs_identity who;    /* the creator: the spec is submitted as them */
	pid_t opener;              /* see spec_flush */
	uint64_t parent_node;      /* the folder's node id in the kernel, from the CREATE
				    * (fs/wire.h); 0: unknown */
	struct timespec created;
	atomic_size_t size;        /* len, for getattr without the lock */
	pthread_mutex_t lock;      /* guards the members below */
	char *text;
	size_t len, cap;
	bool too_big;              /* a write went past SPEC_MAX_BYTES */
	bool submitted;
	int result;                /* errno of the submission, 0 once accepted */
	char *answer;              /* clone: "42\n", or the errors */
	size_t answer_len;
	bool read_started;         /* clone: answer_base is set */
	off_t answer_base;         /* clone: offset of the first read */
	bool error_told;           /* clone: one read failed with result */
	/* protected by q->lock */
	bool listed;
	struct spec_file *next;
};

struct rejected {
	char *name;                /* "lab.conf.rejected" */
	uid_t uid;
	gid_t gid;
	char *text;
	size_t len;
	struct timespec when;
	struct rejected *next;
};

/* The kernel keeps a name in its dentry cache for up to entry_timeout after
 * the spec left queue/ (libfuse's high-level fuse_invalidate_path() drops the
 * attributes, not the name), and asks for its attributes again before reusing
 * it (`printf ... > queue/x.conf` twice in a second). The flush that submits
 * drops the name itself (drop_cached_name); where that cannot be done, answering
 * ESTALE once instead of ENOENT for such a name makes the VFS redo the lookup,
 * which then misses, so the open creates a new file. */
#define GONE_SLOTS 64
#define GONE_MS 3000

struct gone_name {
	char name[NAME_MAX + 1];
	int64_t until_ms;          /* monotonic */
};

struct queue_dir {
	struct fs_ctx *fs;
	const char *folder;        /* "queue", or "schedules" (fs/schedules_dir.c) */
	const char *post_path;     /* where a spec is sent: "/v1/jobs", "/v1/schedules" */
	bool once;                 /* a token per submission, asked again until answered */
	pthread_mutex_t lock;
	struct gone_name gone[GONE_SLOTS]; /* ring; protected by lock */
	unsigned next_gone;        /* protected by lock */
	struct spec_file *open;    /* named files being written; protected by lock */
	struct rejected *rejected; /* newest first; protected by lock */
	size_t nrejected;          /* protected by lock */
	atomic_uint accepted;      /* submissions accepted, for QUEUE_FORGET_EVERY */
};

struct queue_dir *queue_dir_create(struct fs_ctx *fs)
{
	struct queue_dir *q = queue_dir_create_at(fs, "queue", "/v1/jobs");

	/* A job must be submitted exactly once even when the answer is lost
	 * (docs/design.md, "Exactly-once submission"); a schedule is created
	 * under a unique name, which makes its retry by hand safe already. */
	q->once = true;
	return q;
}

struct queue_dir *queue_dir_create_at(struct fs_ctx *fs, const char *folder, const char *post_path)
{
	struct queue_dir *q = xcalloc(1, sizeof *q);

	q->fs = fs;
	q->folder = folder;
	q->post_path = post_path;
	pthread_mutex_init(&q->lock, NULL);
	return q;
}

static void rejected_free(struct rejected *r)
{
	free(r->name);
	free(r->text);
	free(r);
}

void queue_dir_destroy(struct queue_dir *q)
{
	struct rejected *r, *next;

	if (!q)
		return;
	/* Open files are released by FUSE before this runs. */
	for (r = q->rejected; r; r = next) {
		next = r->next;
		rejected_free(r);
	}
	pthread_mutex_destroy(&q->lock);
	free(q);
}

/* schedules/ takes specs the same way as queue/, into its own queue_dir. */
static struct queue_dir *queue_of(struct fs_ctx *fs, const struct fs_path *p)
{
	if (fs->schedules_queue && strncmp(p->path, "/schedules/", 11) == 0)
		return fs->schedules_queue;
	return fs->queue;
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* The kernel may keep a name in its cache for a moment after it left the folder. */
static void invalidate(struct queue_dir *q, const char *name)
{
	char *path;

	if (!q->fs->fuse)
		return;
	path = xasprintf("/%s/%s", q->folder, name);
	fuse_invalidate_path(q->fs->fuse, path);
	free(path);
}

/* Caller holds q->lock. uid's spec called name being written, if any: each
 * user's names are their own, so two people writing job.conf at once get a
 * job each and one's open file never blocks the other. */
static struct spec_file *find_open_locked(struct queue_dir *q, const char *name, uid_t uid)
{
	for (struct spec_file *f = q->open; f; f = f->next)
		if (f->who.uid == uid && strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

/* Caller holds q->lock. Students share queue/ and often share file names
 * (job.conf): uid's own report comes first, then anybody's. */
static struct rejected *find_rejected_locked(struct queue_dir *q, const char *name, uid_t uid)
{
	struct rejected *any = NULL;

	for (struct rejected *r = q->rejected; r; r = r->next) {
		if (strcmp(r->name, name) != 0)
			continue;
		if (r->uid == uid)
			return r;
		if (!any)
			any = r;
	}
	return any;
}

/* Forget uid's report called name (anybody's with uid (uid_t)-1). */
static void remove_rejected(struct queue_dir *q, const char *name, uid_t uid)
{
	struct rejected **pp, *gone = NULL;

	pthread_mutex_lock(&q->lock);
	for (pp = &q->rejected; *pp; pp = &(*pp)->next) {
		if (strcmp((*pp)->name, name) == 0 && (uid == (uid_t)-1 || (*pp)->uid == uid)) {
			gone = *pp;
			*pp = gone->next;
			q->nrejected--;
			break;
		}
	}
	pthread_mutex_unlock(&q->lock);
	if (gone) {
		rejected_free(gone);
		invalidate(q, name);
	}
}

static void add_rejected(struct queue_dir *q, const char *file, const struct fs_identity *who,
			 const char *text)
{
	struct rejected *r = xcalloc(1, sizeof *r), **pp, *old = NULL;
	size_t n = strlen(text);

	r->name = xasprintf("%s%s", file, REJECTED_SUFFIX);
	r->uid = who->uid;
	r->gid = who->gid;
	r->text = n && text[n - 1] == '\n' ? xstrdup(text) : xasprintf("%s\n", text);
	r->len = strlen(r->text);
	clock_gettime(CLOCK_REALTIME, &r->when);
	remove_rejected(q, r->name, r->uid);
	pthread_mutex_lock(&q->lock);
	r->next = q->rejected;
	q->rejected = r;
	q->nrejected++;
	/* Bounded memory: the oldest error reports go first. */
	if (q->nrejected > QUEUE_MAX_REJECTED) {
		for (pp = &q->rejected; (*pp)->next; pp = &(*pp)->next)
			;
		old = *pp;
		*pp = NULL;
		q->nrejected--;
	}
	pthread_mutex_unlock(&q->lock);
	if (old)
		rejected_free(old);
	invalidate(q, r->name);
}

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
	invalidate(q, f->name);
}

/* Caller holds q->lock. True once per submission: the lookup that the VFS
 * retries after ESTALE must see ENOENT, or the retry fails too. */
static bool take_recently_gone_locked(struct queue_dir *q, const char *name)
{
	int64_t now = time_mono_ms();

	for (size_t i = 0; i < GONE_SLOTS; i++) {
		if (q->gone[i].until_ms > now && strcmp(q->gone[i].name, name) == 0) {
			q->gone[i].until_ms = 0;
			return true;
		}
	}
	return false;
}

/* POST one spec as who. 0 with *id, or -1 with errno and *err: the
 * scheduler's "file:line: message" lines, or why it could not be asked. */
static int post_spec(struct queue_dir *q, const struct fs_identity *who, const char *name,
		     const char *text, size_t len, bool too_big, int64_t *id, char **err)
{
	struct api_reply reply = { 0 };
	json_t *body = NULL, *spec, *answer = NULL;
	char *dump = NULL;
	bool unconfirmed = false;
	int ret = -1, saved = 0, rc;

	if (too_big) {
		saved = EFBIG;
		errprintf(err, "%s: larger than the limit of %d bytes (a spec is text a person writes; "
			  "put data in files the stages read): nothing was submitted", name, SPEC_MAX_BYTES);
		goto out;
	}
	/* A NUL byte is UTF-8 that JSON carries as \u0000, which the scheduler
	 * (as any reader without JSON_ALLOW_NUL) refuses with a message about
	 * JSON: it is no text either, so the spec parser says where it is. */
	spec = text && memchr(text, '\0', len) ? NULL : json_stringn(text ? text : "", len);
	if (!spec) {
		/* Not UTF-8, so JSON cannot carry it: the same parser says where. */
		struct spec *parsed = spec_parse(text, len, name, err);

		spec_destroy(parsed);
		saved = EINVAL;
		if (!err || !*err)
			errprintf(err, "%s: is not a text file", name);
		goto out;
	}
	body = json_pack("{s:o}", "spec", spec);
	if (!body || json_object_set_new(body, "name", json_string(name)) < 0) {
		saved = EINVAL;
		errprintf(err, "%s: the file name is not UTF-8 text: rename it", name);
		goto out;
	}
	if (q->once) {
		char token[API_TOKEN_SIZE];

		if (api_new_token(token) < 0) {
			saved = EIO;
			errprintf(err, "%s: no random bytes for the submission's token (%s): nothing was "
				  "submitted", name, strerror(errno));
			goto out;
		}
		json_object_set_new(body, "token", json_string(token));
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
	answer = json_loadb(reply.body, reply.len, 0, NULL);
	if (!json_is_integer(json_object_get(answer, "id"))) {
		saved = EIO;
		errprintf(err, "%s: the scheduler accepted the spec but its answer has no job id", name);
		goto out;
	}
	*id = json_integer_value(json_object_get(answer, "id"));
	job_cache_prime(q->fs->jobs, *id, json_object_get(answer, "job"));
	ret = 0;
out:
	json_decref(answer);
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

	rc = post_spec(f->q, &f->who, f->name, f->text, f->len, f->too_big, &id, &err);
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
			remove_rejected(f->q, rejected, f->who.uid);
		else
			add_rejected(f->q, f->name, &f->who, f->answer);
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

static struct spec_file *spec_file_new(struct queue_dir *q, const char *name, bool clone)
{
	struct spec_file *f = xcalloc(1, sizeof *f);

	f->base.ops = &spec_file_ops;
	f->base.direct_io = true;
	f->q = q;
	f->name = xstrdup(name);
	f->clone = clone;
	fs_identity_current(q->fs, &f->who);
	f->opener = fs_caller_pid(q->fs);
	clock_gettime(CLOCK_REALTIME, &f->created);
	pthread_mutex_init(&f->lock, NULL);
	atomic_init(&f->size, 0);
	return f;
}

/* ---- queue/ itself ---- */

static int root_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	(void)p;
	/* Everyone may create here; the sticky bit keeps each .rejected its owner's. */
	fs_stat_dir(fs, st, 01777, fs->uid, fs->gid);
	return 0;
}

void queue_dir_names(struct queue_dir *q, uid_t uid, char ***out, size_t *nout)
{
	char **names = NULL;
	size_t n = 0, cap = 0;

	/* Copy the names under the lock; the filler may be slow. */
	pthread_mutex_lock(&q->lock);
	for (struct spec_file *f = q->open; f; f = f->next) {
		bool dup = f->who.uid != uid;

		for (size_t i = 0; i < n && !dup; i++)
			dup = strcmp(names[i], f->name) == 0;
		if (dup)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			names = xrealloc(names, cap * sizeof *names);
		}
		names[n++] = xstrdup(f->name);
	}
	for (struct rejected *r = q->rejected; r; r = r->next) {
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			names = xrealloc(names, cap * sizeof *names);
		}
		names[n++] = xstrdup(r->name);
	}
	pthread_mutex_unlock(&q->lock);
	*out = names;
	*nout = n;
}

static int root_readdir(struct fs_ctx *fs, const struct fs_path *p, fs_fill_fn fill, void *arg)
{
	struct queue_dir *q = queue_of(fs, p);
	struct fs_identity who;
	char **names;
	size_t n;
	int ret;

	fs_identity_basic(fs, &who);
	queue_dir_names(q, who.uid, &names, &n);
	ret = fill(arg, ".clone", NULL) ? 1 : 0;
	for (size_t i = 0; i < n; i++) {
		if (ret == 0 && fill(arg, names[i], NULL))
			ret = 1;
		free(names[i]);
	}
	free(names);
	return 0;
}

const struct node_ops queue_root_ops = {
	.getattr = root_getattr,
	.readdir = root_readdir,
};

/* ---- queue/.clone ---- */

static int clone_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	(void)p;
	fs_stat_file(fs, st, 0666, fs->uid, fs->gid, 0);
	return 0;
}

static int clone_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	(void)p;
	(void)flags;
	*file = &spec_file_new(queue_of(fs, p), CLONE_JOB_NAME, true)->base;
	return 0;
}

static int clone_create(struct fs_ctx *fs, const struct fs_path *p, int flags, mode_t mode,
			struct fs_file **file)
{
	(void)mode;
	return clone_open(fs, p, flags, file);
}

static int accept_quietly(struct fs_ctx *fs, const struct fs_path *p, off_t size)
{
	(void)fs;
	(void)p;
	(void)size;
	return 0;
}

static int utimens_quietly(struct fs_ctx *fs, const struct fs_path *p, const struct timespec tv[2])
{
	(void)fs;
	(void)p;
	(void)tv;
	return 0;
}

const struct node_ops queue_clone_ops = {
	.getattr = clone_getattr,
	.open = clone_open,
	.create = clone_create,
	/* `> queue/.clone` truncates an empty, per-descriptor file: nothing to do. */
	.truncate = accept_quietly,
	.utimens = utimens_quietly,
};

/* ---- queue/<name> and queue/<name>.rejected ---- */

static int entry_getattr(struct fs_ctx *fs, const struct fs_path *p, struct stat *st)
{
	struct queue_dir *q = queue_of(fs, p);
	struct fs_identity who;
	struct spec_file *f;
	struct rejected *r;
	int ret = -1;

	fs_identity_basic(fs, &who);
	pthread_mutex_lock(&q->lock);
	r = find_rejected_locked(q, p->name, who.uid);
	if (r) {
		fs_stat_file(fs, st, 0444, r->uid, r->gid, (off_t)r->len);
		st->st_atim = st->st_mtim = st->st_ctim = r->when;
		ret = 0;
		goto out;
	}
	f = find_open_locked(q, p->name, who.uid);
	if (f) {
		spec_getattr(&f->base, st);
		ret = 0;
		goto out;
	}
	errno = take_recently_gone_locked(q, p->name) ? ESTALE : ENOENT;
out:
	pthread_mutex_unlock(&q->lock);
	return ret;
}

static int entry_create(struct fs_ctx *fs, const struct fs_path *p, int flags, mode_t mode,
			struct fs_file **file)
{
	struct queue_dir *q = queue_of(fs, p);
	struct spec_file *f;
	char *err = NULL;

	(void)flags;
	(void)mode;
	if (has_suffix(p->name, REJECTED_SUFFIX)) {
		errno = EACCES;
		return -1;
	}
	/* Its errors must be able to land in <name>.rejected. */
	if (strlen(p->name) + strlen(REJECTED_SUFFIX) > NAME_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* The name is shown in views (spec:) and logs: a newline in it could
	 * forge their lines. Refused before a byte is written, with the reason
	 * where a refusal's reason always is. */
	if (escape_check_file_name(p->name, &err) < 0) {
		struct fs_identity who;

		fs_identity_current(fs, &who);
		add_rejected(q, p->name, &who, err);
		fs_identity_clear(&who);
		free(err);
		errno = EINVAL;
		return -1;
	}
	f = spec_file_new(q, p->name, false);
	f->parent_node = fs_wire_create_parent();
	pthread_mutex_lock(&q->lock);
	f->listed = true;
	f->next = q->open;
	q->open = f;
	pthread_mutex_unlock(&q->lock);
	*file = &f->base;
	return 0;
}

static int entry_open(struct fs_ctx *fs, const struct fs_path *p, int flags, struct fs_file **file)
{
	struct queue_dir *q = queue_of(fs, p);
	struct rejected *r;
	char *copy = NULL;
	size_t len = 0;
	bool pending = false;
	struct fs_identity who;

	fs_identity_basic(fs, &who);
	pthread_mutex_lock(&q->lock);
	r = find_rejected_locked(q, p->name, who.uid);
	if (r) {
		copy = xstrdup(r->text);
		len = r->len;
	}
	pending = !r && find_open_locked(q, p->name, who.uid);
	pthread_mutex_unlock(&q->lock);
	if (copy) {
		if (fs_check_read_only(flags) < 0) {
			free(copy);
			return -1;
		}
		*file = text_file_create(copy, len);
		return 0;
	}
	/* The kernel may still believe in a name that was just submitted and open
	 * it instead of creating it: writing any name here starts a new spec. */
	if ((flags & O_ACCMODE) != O_RDONLY)
		return entry_create(fs, p, flags, 0644, file);
	errno = pending ? EACCES : ENOENT;
	return -1;
}

static int entry_unlink(struct fs_ctx *fs, const struct fs_path *p)
{
	struct queue_dir *q = queue_of(fs, p);
	struct fs_identity who;
	struct rejected *r;
	bool pending = false;
	uid_t owner = (uid_t)-1;
	int err = 0;

	fs_identity_current(fs, &who);
	pthread_mutex_lock(&q->lock);
	r = find_rejected_locked(q, p->name, who.uid);
	if (r && who.uid != 0 && who.uid != r->uid)
		err = EACCES;
	if (r)
		owner = r->uid;
	pending = !r && find_open_locked(q, p->name, who.uid);
	pthread_mutex_unlock(&q->lock);
	fs_identity_clear(&who);
	if (!err && !r)
		err = pending ? EPERM : ENOENT;
	if (err) {
		errno = err;
		return -1;
	}
	remove_rejected(q, p->name, owner);
	return 0;
}

/* Path-based truncate (O_TRUNC without atomic_o_trunc) of a spec being
 * written: the descriptor starts empty anyway. The kernel may still cache a
 * name that was just submitted and truncate it before opening it again
 * (`printf ... > queue/same.conf` twice in a row): that open creates a new
 * spec, so a missing name is no error here. */
static int entry_truncate(struct fs_ctx *fs, const struct fs_path *p, off_t size)
{
	struct stat st;

	(void)size;
	if (has_suffix(p->name, REJECTED_SUFFIX)) {
		errno = EACCES;
		return -1;
	}
	if (entry_getattr(fs, p, &st) < 0 && errno != ENOENT)
		return -1;
	return 0;
}

static int entry_utimens(struct fs_ctx *fs, const struct fs_path *p, const struct timespec tv[2])
{
	(void)tv;
	return entry_truncate(fs, p, 0);
}

const struct node_ops queue_entry_ops = {
	.getattr = entry_getattr,
	.open = entry_open,
	.create = entry_create,
	.unlink = entry_unlink,
	.truncate = entry_truncate,
	.utimens = entry_utimens,
};
