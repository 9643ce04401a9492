#include "ctl_file.h"
#include "api_answers.h"
#include "api_client.h"
#include "api_requests.h"
#include "escape.h"
#include "log.h"
#include "ops.h"
#include "sched_link.h"
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The last refused write of each of the most recently refused ctl nodes, so
 * that `cat ctl` says what a failed `printf 'hold\nbogus\n' > ctl` did. */
enum { CTL_NOTES = 64 };

struct ctl_notes {
	pthread_mutex_t lock;
	struct {
		char *url;       /* the node's route; NULL: a free slot */
		char *text;      /* one line */
	} slot[CTL_NOTES];    /* protected by lock */
	size_t next;          /* the slot to reuse next; protected by lock */
};

struct ctl_notes *ctl_notes_create(void)
{
	struct ctl_notes *n = xcalloc(1, sizeof *n);

	pthread_mutex_init(&n->lock, NULL);
	return n;
}

void ctl_notes_destroy(struct ctl_notes *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < CTL_NOTES; i++) {
		free(n->slot[i].url);
		free(n->slot[i].text);
	}
	pthread_mutex_destroy(&n->lock);
	free(n);
}

/* Keep text (taken) as url's note, in place of an older one. */
static void note_set(struct ctl_notes *n, const char *url, char *text)
{
	size_t i;

	if (!n) {
		free(text);
		return;
	}
	pthread_mutex_lock(&n->lock);
	for (i = 0; i < CTL_NOTES; i++)
		if (n->slot[i].url && strcmp(n->slot[i].url, url) == 0)
			break;
	if (i == CTL_NOTES) {
		i = n->next;
		n->next = (n->next + 1) % CTL_NOTES;
		free(n->slot[i].url);
		n->slot[i].url = xstrdup(url);
	}
	free(n->slot[i].text);
	n->slot[i].text = text;
	pthread_mutex_unlock(&n->lock);
}

/* url's note, malloc'ed, or NULL. */
static char *note_get(struct ctl_notes *n, const char *url)
{
	char *text = NULL;

	if (!n)
		return NULL;
	pthread_mutex_lock(&n->lock);
	for (size_t i = 0; i < CTL_NOTES; i++)
		if (n->slot[i].url && strcmp(n->slot[i].url, url) == 0)
			text = xstrdup(n->slot[i].text);
	pthread_mutex_unlock(&n->lock);
	return text;
}

struct ctl_file {
	struct fs_file base;
	struct fs_ctx *fs;
	char *url;
	char *what;
	char *path;          /* where it was opened: fstat and ftruncate come without one */
	char *shown;         /* what a read shows: the help, and the node's last refusal */
	pthread_mutex_t lock; /* guards the members below: writes to one open may overlap */
	char *applied;       /* the first APPLIED_SHOWN commands this open applied: "'hold', 'release'" */
	size_t napplied;     /* how many it applied */
};

/* A script may send thousands of commands through one open: name the first few. */
enum { APPLIED_SHOWN = 16 };

/* One command as the writer: 400 EINVAL, 403 EACCES, 409 EBUSY, with the
 * scheduler's reason in *why (malloc'ed) when it gave one. */
static int post_command(struct ctl_file *f, const struct fs_identity *who, const char *cmd, size_t n,
			char **why)
{
	struct api_reply reply;
	json_t *body = api_command_json(cmd, n);
	char *dump;
	int ret;

	if (!body) {
		*why = xstrdup("the line is not UTF-8 text");
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
		*why = text;
		errno = saved;
	}
	api_reply_clear(&reply);
	free(dump);
	json_decref(body);
	return ret;
}

/* Ask whether cmd is one of the node's commands, changing nothing: 0 yes,
 * 1 no (*why says why, malloc'ed), 2 when the scheduler predates the check
 * (it answers 400 to a body without "command"), -1 with errno when it could
 * not be asked. */
static int check_command(struct ctl_file *f, const struct fs_identity *who, const char *cmd, size_t n,
			 char **why)
{
	struct api_reply reply;
	json_t *body = api_check_request_json(cmd, n);
	char *dump;
	int ret;

	if (!body) {
		*why = xstrdup("the line is not UTF-8 text");
		return 1;
	}
	dump = json_dumps(body, JSON_COMPACT);
	ret = sched_link_call(f->fs->link, who, "POST", f->url, dump, strlen(dump),
			      SCHED_CALL_TIMEOUT_MS, &reply);
	if (ret < 0) {
		ret = reply.status == 400 ? 2 : -1;
	} else {
		bool good = false;

		if (api_read_check(reply.body, reply.len, &good, why, NULL) < 0)
			*why = xstrdup("the scheduler's answer is not a check's");
		ret = good ? 0 : 1;
	}
	api_reply_clear(&reply);
	free(dump);
	json_decref(body);
	return ret;
}

/* The commands of one write: each line trimmed of surrounding blanks, blank
 * lines left out. Pointers into the written buffer. */
struct ctl_lines {
	const char **at;
	size_t *len;
	size_t n;
};

static void split_lines(const char *buf, size_t size, struct ctl_lines *l)
{
	const char *p = buf, *end = buf + size;
	size_t cap = 0;

	l->at = NULL;
	l->len = NULL;
	l->n = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *stop = nl ? nl : end, *a = p, *z = stop;

		while (a < z && (*a == ' ' || *a == '\t' || *a == '\r'))
			a++;
		while (z > a && (z[-1] == ' ' || z[-1] == '\t' || z[-1] == '\r'))
			z--;
		if (z > a) {
			if (l->n == cap) {
				cap = cap ? 2 * cap : 8;
				l->at = xrealloc(l->at, cap * sizeof *l->at);
				l->len = xrealloc(l->len, cap * sizeof *l->len);
			}
			l->at[l->n] = a;
			l->len[l->n++] = (size_t)(z - a);
		}
		p = nl ? nl + 1 : end;
	}
}

/* Say why a write was refused, in the mount's log and in the node's note
 * (what `cat ctl` shows): line (1-based, of this write) cmd refused with why,
 * and what this open had applied before it. */
static void refused(struct ctl_file *f, const struct fs_identity *who, size_t line, const char *cmd,
		    size_t n, const char *why, const char *after)
{
	char *shown = xasprintf("%.*s", (int)n, cmd), *esc = escape_text(shown), *text;
	char *reason = escape_text(why);  /* it may quote the line */
	char more[64] = "";

	if (f->napplied > APPLIED_SHOWN)
		snprintf(more, sizeof more, " and %zu more", f->napplied - APPLIED_SHOWN);
	text = xasprintf("'%s' (line %zu) by uid %u refused: %s; %s%s%s%s", esc, line, (unsigned)who->uid,
			 reason, after, f->napplied ? ", after this open applied " : "",
			 f->napplied ? f->applied : "", more);
	log_info("%s: ctl %s", f->what, text);
	note_set(f->fs->ctl_notes, f->url, text);
	free(reason);
	free(esc);
	free(shown);
}

static void applied(struct ctl_file *f, const char *cmd, size_t n)
{
	char *shown, *esc, *all;

	if (f->napplied++ >= APPLIED_SHOWN)
		return;
	shown = xasprintf("%.*s", (int)n, cmd);
	esc = escape_text(shown);
	all = xasprintf("%s%s'%s'", f->applied ? f->applied : "", f->applied ? ", " : "", esc);
	free(f->applied);
	f->applied = all;
	free(esc);
	free(shown);
}

/* Several lines are all or nothing as far as the scheduler can tell in
 * advance: every line is checked to be a command before any is sent, so
 * `printf 'hold\nbogus\n' > ctl` holds nothing. A command refused when it
 * is applied (EBUSY: not possible now, EACCES) stops the write there. Either
 * refusal is kept as the node's note, which the next read of its ctl shows,
 * and logged: which line, why, and which lines of the write and of this open
 * (bash's printf writes a line at a time) were applied. */
static ssize_t ctl_write(struct fs_file *file, const char *buf, size_t size, off_t off)
{
	struct ctl_file *f = (struct ctl_file *)file;
	struct fs_identity who;
	struct ctl_lines l;
	ssize_t ret = (ssize_t)size;
	int saved = 0;

	(void)off;
	fs_identity_current(f->fs, &who);
	split_lines(buf, size, &l);
	pthread_mutex_lock(&f->lock);
	for (size_t i = 0; l.n > 1 && i < l.n; i++) {
		char *why = NULL;
		int rc = check_command(f, &who, l.at[i], l.len[i], &why);

		if (rc == 2)
			break;          /* an older scheduler: line by line as before */
		if (rc != 0) {
			saved = rc < 0 ? errno : EINVAL;
			if (rc == 1) {
				char *none = xasprintf("none of the %zu lines of the write was applied", l.n);

				refused(f, &who, i + 1, l.at[i], l.len[i], why, none);
				free(none);
			}
			free(why);
			ret = -1;
			goto out;
		}
	}
	for (size_t i = 0; i < l.n; i++) {
		char *why = NULL, *after;

		if (post_command(f, &who, l.at[i], l.len[i], &why) == 0) {
			applied(f, l.at[i], l.len[i]);
			continue;
		}
		saved = errno;
		after = l.n == 1 ? xstrdup("it was not applied")
			: xasprintf("of the write's %zu lines the %zu before it were applied, the %zu "
				    "after it not sent", l.n, i, l.n - i - 1);
		refused(f, &who, i + 1, l.at[i], l.len[i], why ? why : strerror(saved), after);
		free(after);
		free(why);
		ret = -1;
		break;
	}
out:
	pthread_mutex_unlock(&f->lock);
	free(l.at);
	free(l.len);
	fs_identity_clear(&who);
	errno = saved;
	return ret;
}

static ssize_t ctl_read(struct fs_file *file, char *buf, size_t size, off_t off)
{
	struct ctl_file *f = (struct ctl_file *)file;
	size_t len = strlen(f->shown);

	if (off < 0 || (size_t)off >= len)
		return 0;
	if (size > len - (size_t)off)
		size = len - (size_t)off;
	memcpy(buf, f->shown + off, size);
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
	free(f->shown);
	free(f->applied);
	pthread_mutex_destroy(&f->lock);
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
				const char *what, const struct ctl_table *commands)
{
	struct ctl_file *f = xcalloc(1, sizeof *f);
	char *note, *help = ctl_help(commands);

	f->base.ops = &ctl_file_ops;
	f->base.direct_io = true;
	f->fs = fs;
	f->path = xstrdup(p->path);
	pthread_mutex_init(&f->lock, NULL);
	note = note_get(fs->ctl_notes, url);
	f->shown = note ? xasprintf("%slast refused: %s\n", help, note) : xstrdup(help);
	free(note);
	free(help);
	f->url = xstrdup(url);
	f->what = xstrdup(what);
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
