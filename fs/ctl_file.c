#include "ctl_file.h"
#include "api_client.h"
#include "log.h"
#include "ops.h"
#include "sched_link.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

struct ctl_file {
	struct fs_file base;
	struct fs_ctx *fs;
	char *url;
	char *what;
	char *path;          /* where it was opened: fstat and ftruncate come without one */
	const char *help;
};

/* One command as the writer: 400 EINVAL, 403 EACCES, 409 EBUSY. */
static int post_command(struct ctl_file *f, const struct fs_identity *who, const char *cmd, size_t n)
{
	struct api_reply reply;
	json_t *body = json_pack("{s:s%}", "command", cmd, n);
	char *dump;
	int ret;

	if (!body) {
		errno = EINVAL;         /* not UTF-8: not a command */
		return -1;
	}
	dump = json_dumps(body, JSON_COMPACT);
	ret = sched_link_call(f->fs->link, who, "POST", f->url, dump, strlen(dump),
			      SCHED_CALL_TIMEOUT_MS, &reply);
	if (ret < 0 && reply.status) {
		int saved = errno;
		char *text = api_reply_error(&reply);

		log_debug("%s: ctl '%.*s' by uid %u refused: %s", f->what, (int)n, cmd,
			  (unsigned)who->uid, text);
		free(text);
		errno = saved;
	}
	api_reply_clear(&reply);
	free(dump);
	json_decref(body);
	return ret;
}

static ssize_t ctl_write(struct fs_file *file, const char *buf, size_t size, off_t off)
{
	struct ctl_file *f = (struct ctl_file *)file;
	struct fs_identity who;
	const char *p = buf, *end = buf + size;
	ssize_t ret = (ssize_t)size;

	(void)off;
	fs_identity_current(f->fs, &who);
	/* One command per line; blank lines and surrounding blanks do not count. */
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *stop = nl ? nl : end, *a = p, *z = stop;

		while (a < z && (*a == ' ' || *a == '\t' || *a == '\r'))
			a++;
		while (z > a && (z[-1] == ' ' || z[-1] == '\t' || z[-1] == '\r'))
			z--;
		if (z > a && post_command(f, &who, a, (size_t)(z - a)) < 0) {
			ret = -1;
			break;
		}
		p = nl ? nl + 1 : end;
	}
	fs_identity_clear(&who);
	return ret;
}

static ssize_t ctl_read(struct fs_file *file, char *buf, size_t size, off_t off)
{
	struct ctl_file *f = (struct ctl_file *)file;
	size_t len = strlen(f->help);

	if (off < 0 || (size_t)off >= len)
		return 0;
	if (size > len - (size_t)off)
		size = len - (size_t)off;
	memcpy(buf, f->help + off, size);
	return (ssize_t)size;
}

/* `echo cancel > ctl` opens with O_TRUNC and `truncate -s 0 ctl` sets the
 * size through the open file: there is nothing to empty. No other size. */
static int ctl_truncate(struct fs_file *file, off_t size)
{
	(void)file;
	if (size != 0) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* With nullpath_ok, ftruncate's closing getattr and futimens come with the
 * handle and no path: answer for the node by the path it was opened at (its
 * job, host or schedule may have gone since: ENOENT then, as stat says). */
static int ctl_getattr(struct fs_file *file, struct stat *st)
{
	struct ctl_file *f = (struct ctl_file *)file;
	struct fs_path p;

	if (fs_match(f->path, &p) < 0 || !p.ops->getattr) {
		errno = ENOENT;
		return -1;
	}
	if (p.ops->getattr(f->fs, &p, st) < 0)
		return -1;
	if (st->st_ino == 0)
		st->st_ino = fs_virtual_ino(f->path);
	return 0;
}

static int ctl_utimens(struct fs_file *file, const struct timespec tv[2])
{
	struct ctl_file *f = (struct ctl_file *)file;
	struct stat st;

	(void)tv;
	return ctl_getattr(&f->base, &st);
}

static void ctl_release(struct fs_file *file)
{
	struct ctl_file *f = (struct ctl_file *)file;

	free(f->url);
	free(f->what);
	free(f->path);
	free(f);
}

static const struct fs_file_ops ctl_file_ops = {
	.read = ctl_read,
	.write = ctl_write,
	.truncate = ctl_truncate,
	.getattr = ctl_getattr,
	.utimens = ctl_utimens,
	.release = ctl_release,
};

struct fs_file *ctl_file_create(struct fs_ctx *fs, const struct fs_path *p, const char *url,
				const char *what, const char *help)
{
	struct ctl_file *f = xcalloc(1, sizeof *f);

	f->base.ops = &ctl_file_ops;
	f->base.direct_io = true;
	f->fs = fs;
	f->path = xstrdup(p->path);
	f->url = xstrdup(url);
	f->what = xstrdup(what);
	f->help = help;
	return &f->base;
}

int ctl_node_truncate(struct fs_ctx *fs, const struct fs_path *p, off_t size)
{
	struct stat st;

	if (p->ops->getattr(fs, p, &st) < 0)
		return -1;
	if (size != 0) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

int ctl_node_utimens(struct fs_ctx *fs, const struct fs_path *p, const struct timespec tv[2])
{
	struct stat st;

	(void)tv;
	return p->ops->getattr(fs, p, &st);
}
