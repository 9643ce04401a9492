/* Helpers every node module uses: the attributes of made-up nodes, read-only
 * files served from a buffer, and parsing of ids and names from paths. */
#include "fs_node.h"
#include "backend.h"
#include "inode_map.h"
#include "sched_link.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct text_file {
	struct fs_file base;
	char *data;
	size_t len;
};

static ssize_t text_read(struct fs_file *f, char *buf, size_t size, off_t off)
{
	struct text_file *t = (struct text_file *)f;

	if (off < 0 || (size_t)off >= t->len)
		return 0;
	if (size > t->len - (size_t)off)
		size = t->len - (size_t)off;
	memcpy(buf, t->data + off, size);
	return (ssize_t)size;
}

static void text_release(struct fs_file *f)
{
	struct text_file *t = (struct text_file *)f;

	free(t->data);
	free(t);
}

static const struct fs_file_ops text_file_ops = {
	.read = text_read,
	.release = text_release,
};

struct fs_file *text_file_create(char *data, size_t len)
{
	struct text_file *t = xcalloc(1, sizeof *t);

	t->base.ops = &text_file_ops;
	t->base.direct_io = true;
	t->data = data;
	t->len = data ? len : 0;
	return &t->base;
}

void fs_stat_time(struct stat *st, int64_t ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	st->st_atim = st->st_mtim = st->st_ctim = ts;
}

static void stat_common(const struct fs_ctx *fs, struct stat *st, uid_t uid, gid_t gid)
{
	memset(st, 0, sizeof *st);
	st->st_uid = uid;
	st->st_gid = gid;
	st->st_blksize = 4096;
	st->st_atim = st->st_mtim = st->st_ctim = fs->started;
}

void fs_stat_dir(const struct fs_ctx *fs, struct stat *st, mode_t mode, uid_t uid, gid_t gid)
{
	stat_common(fs, st, uid, gid);
	st->st_mode = S_IFDIR | mode;
	st->st_nlink = 2;
}

void fs_stat_file(const struct fs_ctx *fs, struct stat *st, mode_t mode, uid_t uid, gid_t gid, off_t size)
{
	stat_common(fs, st, uid, gid);
	st->st_mode = S_IFREG | mode;
	st->st_nlink = 1;
	st->st_size = size;
	st->st_blocks = (size + 511) / 512;
}

uint64_t fs_virtual_ino(const char *path)
{
	uint64_t h = 1469598103934665603ULL;   /* FNV-1a */

	for (const char *s = path; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h | (1ULL << 63);
}

bool fs_is_hidden_name(const char *name)
{
	return strncmp(name, FS_HIDDEN_PREFIX, sizeof FS_HIDDEN_PREFIX - 1) == 0;
}

bool fs_is_hide_name(const char *name)
{
	const char *hex = name + sizeof FS_HIDDEN_PREFIX - 1;

	if (!fs_is_hidden_name(name) || strlen(hex) != 16)
		return false;
	for (; *hex; hex++)
		if (!((*hex >= '0' && *hex <= '9') || (*hex >= 'a' && *hex <= 'f')))
			return false;
	return true;
}

int fs_check_read_only(int flags)
{
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC)) {
		errno = EACCES;
		return -1;
	}
	return 0;
}

int fs_refuse_truncate(struct fs_ctx *fs, const struct fs_path *p, off_t size)
{
	(void)fs;
	(void)p;
	(void)size;
	errno = EACCES;
	return -1;
}

int fs_parse_id(const char *text, int64_t *id)
{
	int64_t v = 0;

	/* One spelling per job: "042" would be a second name for job 42. */
	if (!*text || (text[0] == '0' && text[1]) || strlen(text) > 18)
		goto bad;
	for (const char *p = text; *p; p++) {
		if (*p < '0' || *p > '9')
			goto bad;
		v = v * 10 + (*p - '0');
	}
	*id = v;
	return 0;
bad:
	errno = ENOENT;
	return -1;
}

/* The current FUSE request, or NULL. Only a mounted filesystem may ask
 * libfuse: without fuse_new() its thread key does not exist and
 * fuse_get_context() would read someone else's. */
static struct fuse_context *request(const struct fs_ctx *fs)
{
	struct fuse_context *ctx;

	if (!fs->fuse)
		return NULL;
	ctx = fuse_get_context();
	return ctx && ctx->fuse ? ctx : NULL;
}

/* The supplementary groups of process pid, from the "Groups:" line of
 * /proc/PID/task/PID/status (the kernel does not pass them with a request),
 * read in one go: libfuse's fuse_getgroups() reads the file twice whenever it
 * is longer than 1 kB, which it always is. The number of groups with *out
 * malloc'ed (NULL for none), or -1 with errno when the process is gone. */
static int read_groups(pid_t pid, gid_t **out)
{
	char path[64], stack[4096], *buf = stack, *line, *p, *end;
	size_t cap = sizeof stack, len = 0;
	gid_t *groups = NULL;
	int fd, n = 0, ret = -1, saved = 0;

	*out = NULL;
	snprintf(path, sizeof path, "/proc/%d/task/%d/status", (int)pid, (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	for (;;) {
		ssize_t got;

		if (len + 1 == cap) {
			char *bigger = xmalloc(cap * 4);

			memcpy(bigger, buf, len);
			if (buf != stack)
				free(buf);
			buf = bigger;
			cap *= 4;
		}
		got = read(fd, buf + len, cap - len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			saved = errno;
			goto out;
		}
		len += (size_t)got;
		buf[len] = '\0';
		line = strstr(buf, "\nGroups:");
		if (got == 0 || (line && strchr(line + 1, '\n')))
			break;
	}
	line = strstr(buf, "\nGroups:");
	if (!line) {
		saved = EIO;
		goto out;
	}
	p = line + 8;
	end = strchr(p, '\n');
	if (!end)
		end = p + strlen(p);
	/* At most one group per two characters ("1 "). */
	groups = xmalloc(((size_t)(end - p) / 2 + 1) * sizeof *groups);
	for (;;) {
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p >= end || *p < '0' || *p > '9')
			break;
		groups[n++] = (gid_t)strtoul(p, &p, 10);
	}
	if (n > 0) {
		*out = groups;
		groups = NULL;
	}
	ret = n;
out:
	free(groups);
	if (buf != stack)
		free(buf);
	close(fd);
	errno = saved;
	return ret;
}

bool fs_caller_in_group(const struct fs_ctx *fs, gid_t gid)
{
	struct fuse_context *ctx = request(fs);
	gid_t *groups;
	bool found = false;
	int n;

	if (!ctx || ctx->gid == gid)
		return true;
	n = read_groups(ctx->pid, &groups);
	for (int i = 0; i < n && !found; i++)
		found = groups[i] == gid;
	free(groups);
	return found;
}

void fs_caller_cred(const struct fs_ctx *fs, struct backend_cred *cred)
{
	struct fuse_context *ctx = request(fs);

	cred->uid = ctx ? ctx->uid : geteuid();
	cred->gid = ctx ? ctx->gid : getegid();
}

void fs_invalidate(const struct fs_ctx *fs, const char *path)
{
	if (!fs->fuse)
		return;
	/* An inode invalidation takes no lock a handler's request holds, so a
	 * handler may send it (an entry invalidation takes the folder's). It
	 * drops the file's cached pages too, which only --page-cache has. */
	fuse_invalidate_path(fs->fuse, path);
	fs_invalidate_others(fs, path, false);
}

void fs_invalidate_others(const struct fs_ctx *fs, const char *path, bool forget)
{
	char **names;

	if (!fs->fuse || !fs->inodes || !path)
		return;
	names = inode_map_others(fs->inodes, path, forget);
	for (char **n = names; n && *n; n++)
		fuse_invalidate_path(fs->fuse, *n);
	inode_map_free_names(names);
}

int fs_forget_top_folder(const struct fs_ctx *fs, const char *name)
{
	struct fuse_session *se;

	if (!fs->fuse)
		return 0;
	se = fuse_get_session(fs->fuse);
	if (!se)
		return 0;
	/* The root's node id is always FUSE_ROOT_ID. Invalidating the folder's
	 * entry there prunes every unused name below it from the kernel's
	 * cache, and the kernel then forgets them (FORGET), which frees
	 * libfuse's node of each: a dentry the kernel keeps pins one, for as
	 * long as the kernel has memory to spare. */
	return fuse_lowlevel_notify_inval_entry(se, FUSE_ROOT_ID, name, strlen(name));
}

pid_t fs_caller_pid(const struct fs_ctx *fs)
{
	struct fuse_context *ctx = request(fs);

	return ctx ? ctx->pid : 0;
}

bool fs_interrupted(const struct fs_ctx *fs)
{
	return request(fs) && fuse_interrupted();
}

void fs_identity_current(const struct fs_ctx *fs, struct fs_identity *who)
{
	struct fuse_context *ctx = request(fs);
	gid_t *groups;
	int n;

	memset(who, 0, sizeof *who);
	if (!ctx) {
		who->uid = geteuid();
		who->gid = getegid();
		return;
	}
	who->uid = ctx->uid;
	who->gid = ctx->gid;
	/* When the process is already gone, the scheduler gets no groups. */
	n = read_groups(ctx->pid, &groups);
	if (n > 0) {
		who->groups = groups;
		who->ngroups = (size_t)n;
	}
}

void fs_identity_basic(const struct fs_ctx *fs, struct fs_identity *who)
{
	struct fuse_context *ctx = request(fs);

	memset(who, 0, sizeof *who);
	who->uid = ctx ? ctx->uid : geteuid();
	who->gid = ctx ? ctx->gid : getegid();
}

