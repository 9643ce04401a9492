/* User and group names, and group lists as text (see ident.h). */
#include "ident.h"
#include "util.h"

#include <errno.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

char *ident_user_name(uid_t uid)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res)
		return xstrdup(pw.pw_name);
	return xasprintf("%u", (unsigned)uid);
}

char *ident_group_name(gid_t gid)
{
	struct group gr, *res = NULL;
	size_t len = 16384;
	char *buf = NULL, *name;
	int rc;

	/* A group with many members needs a large buffer: grow it on ERANGE. */
	do {
		buf = xrealloc(buf, len);
		rc = getgrgid_r(gid, &gr, buf, len, &res);
		len *= 4;
	} while (rc == ERANGE && len <= (1 << 24));
	if (rc == 0 && res)
		name = xstrdup(gr.gr_name);
	else
		name = xasprintf("%u", (unsigned)gid);
	free(buf);
	return name;
}

char *ident_groups_text(const gid_t *groups, size_t n)
{
	size_t cap = n * 12 + 1, used = 0;
	char *text = xmalloc(cap);

	text[0] = '\0';
	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(text + used, cap - used, "%s%u", i ? "," : "",
					 (unsigned)groups[i]);
	return text;
}

gid_t *ident_groups_parse(const char *text, size_t *n)
{
	gid_t *groups = xcalloc(strlen(text) / 2 + 1, sizeof *groups);
	const char *p = text;

	*n = 0;
	while (*p) {
		char *end;
		unsigned long g = strtoul(p, &end, 10);

		if (end == p)
			break;
		groups[(*n)++] = (gid_t)g;
		p = *end == ',' ? end + 1 : end;
	}
	return groups;
}

/* ---- the cache ---- */

/* Entries of all kinds; when full, the cache starts over (a lab has a few
 * dozen users: it never is). */
#define IDENT_CACHE_MAX 512

enum ident_kind { IDENT_USER, IDENT_GROUP, IDENT_GROUPS };

struct ident_entry {
	enum ident_kind kind;
	uint32_t id;                  /* uid or gid */
	gid_t gid;                    /* IDENT_GROUPS: the primary asked with */
	char *name;                   /* IDENT_USER, IDENT_GROUP */
	gid_t *groups;                /* IDENT_GROUPS */
	size_t ngroups;
	int64_t until_ms;             /* monotonic */
};

struct ident_cache {
	pthread_mutex_t lock;
	struct ident_entry entries[IDENT_CACHE_MAX]; /* protected by lock */
	size_t n;                     /* protected by lock */
	struct timespec passwd_mtime, group_mtime; /* protected by lock */
	int64_t files_checked_ms;     /* monotonic; protected by lock */
};

struct ident_cache *ident_cache_create(void)
{
	struct ident_cache *c = xcalloc(1, sizeof *c);

	pthread_mutex_init(&c->lock, NULL);
	return c;
}

/* The places are zeroed: slot_locked frees what a place it reuses held. */
static void clear_locked(struct ident_cache *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->entries[i].name);
		free(c->entries[i].groups);
		c->entries[i] = (struct ident_entry){ 0 };
	}
	c->n = 0;
}

void ident_cache_destroy(struct ident_cache *c)
{
	if (!c)
		return;
	clear_locked(c);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Lock held: whether either file changed since the last look. A submission
 * asks the cache three times; looking at most every IDENT_FILES_CHECK_MS
 * spares it six stat() calls. */
static bool files_changed_locked(struct ident_cache *c, int64_t now)
{
	struct stat pw, gr;

	if (c->files_checked_ms && now - c->files_checked_ms < IDENT_FILES_CHECK_MS)
		return false;
	c->files_checked_ms = now;
	if (stat("/etc/passwd", &pw) < 0)
		memset(&pw, 0, sizeof pw);
	if (stat("/etc/group", &gr) < 0)
		memset(&gr, 0, sizeof gr);
	if (same_time(&pw.st_mtim, &c->passwd_mtime) && same_time(&gr.st_mtim, &c->group_mtime))
		return false;
	c->passwd_mtime = pw.st_mtim;
	c->group_mtime = gr.st_mtim;
	return true;
}

/* Lock held: the entry, if it is still true. An edit of either file
 * (useradd, usermod -aG) forgets everything. */
static struct ident_entry *find_locked(struct ident_cache *c, enum ident_kind kind, uint32_t id,
				       gid_t gid)
{
	int64_t now = time_mono_ms();

	if (files_changed_locked(c, now)) {
		clear_locked(c);
		return NULL;
	}
	for (size_t i = 0; i < c->n; i++) {
		struct ident_entry *e = &c->entries[i];

		if (e->kind == kind && e->id == id && (kind != IDENT_GROUPS || e->gid == gid))
			return e->until_ms > now ? e : NULL;
	}
	return NULL;
}

/* Lock held: room for a new entry of kind and id (an expired one's place). */
static struct ident_entry *slot_locked(struct ident_cache *c, enum ident_kind kind, uint32_t id,
				       gid_t gid)
{
	struct ident_entry *e = NULL;

	for (size_t i = 0; i < c->n && !e; i++)
		if (c->entries[i].kind == kind && c->entries[i].id == id &&
		    (kind != IDENT_GROUPS || c->entries[i].gid == gid))
			e = &c->entries[i];
	if (!e) {
		if (c->n == IDENT_CACHE_MAX)
			clear_locked(c);
		e = &c->entries[c->n++];
	}
	free(e->name);
	free(e->groups);
	*e = (struct ident_entry){ .kind = kind, .id = id, .gid = gid,
				   .until_ms = time_mono_ms() + IDENT_CACHE_MS };
	return e;
}

/* The name service is asked outside the lock: LDAP may take a while. */
static char *cached_name(struct ident_cache *c, enum ident_kind kind, uint32_t id)
{
	struct ident_entry *e;
	char *name;

	pthread_mutex_lock(&c->lock);
	e = find_locked(c, kind, id, 0);
	name = e ? xstrdup(e->name) : NULL;
	pthread_mutex_unlock(&c->lock);
	if (name)
		return name;
	name = kind == IDENT_USER ? ident_user_name((uid_t)id) : ident_group_name((gid_t)id);
	pthread_mutex_lock(&c->lock);
	slot_locked(c, kind, id, 0)->name = xstrdup(name);
	pthread_mutex_unlock(&c->lock);
	return name;
}

char *ident_cache_user_name(struct ident_cache *c, uid_t uid)
{
	return cached_name(c, IDENT_USER, (uint32_t)uid);
}

char *ident_cache_group_name(struct ident_cache *c, gid_t gid)
{
	return cached_name(c, IDENT_GROUP, (uint32_t)gid);
}

size_t ident_cache_groups(struct ident_cache *c, uid_t uid, gid_t gid, gid_t *groups, size_t max)
{
	struct passwd pw, *res = NULL;
	struct ident_entry *e;
	char buf[4096];
	gid_t *found;
	int n;
	size_t count = 0;

	if (max == 0)
		return 0;
	pthread_mutex_lock(&c->lock);
	e = find_locked(c, IDENT_GROUPS, (uint32_t)uid, gid);
	if (e) {
		count = e->ngroups < max ? e->ngroups : max;
		memcpy(groups, e->groups, count * sizeof *groups);
	}
	pthread_mutex_unlock(&c->lock);
	if (e)
		return count;
	n = (int)max;
	if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res &&
	    getgrouplist(pw.pw_name, gid, groups, &n) >= 0) {
		count = (size_t)n;
	} else {
		groups[0] = gid;
		count = 1;
	}
	found = xcalloc(count, sizeof *found);
	memcpy(found, groups, count * sizeof *found);
	pthread_mutex_lock(&c->lock);
	e = slot_locked(c, IDENT_GROUPS, (uint32_t)uid, gid);
	e->groups = found;
	e->ngroups = count;
	pthread_mutex_unlock(&c->lock);
	return count;
}
