/* Who a uid or a gid is, as text the scheduler keeps: the user and group
 * names recorded with jobs and schedules (the number when the name service
 * does not know it), and the "1001,27" form of a group list that the jobs and
 * schedules tables store. */
#ifndef PARSA_IDENT_H
#define PARSA_IDENT_H

#include <stddef.h>
#include <sys/types.h>

/* The user's name, or the uid in decimal. Malloc'ed. */
char *ident_user_name(uid_t uid);
/* The group's name, or the gid in decimal. Malloc'ed. */
char *ident_group_name(gid_t gid);

/* The same answers, remembered: the name service (/etc/passwd and /etc/group,
 * or LDAP behind them) is asked again after IDENT_CACHE_MS, or within
 * IDENT_FILES_CHECK_MS of a change of either file. A submission asks for its
 * user's name, group name and group list; read from the files each time they
 * were a tenth of its cost. Any thread. */
#define IDENT_CACHE_MS 30000
/* How long an edit of either file may go unseen. */
#define IDENT_FILES_CHECK_MS 250

struct ident_cache;

struct ident_cache *ident_cache_create(void);
void ident_cache_destroy(struct ident_cache *c);
char *ident_cache_user_name(struct ident_cache *c, uid_t uid);
char *ident_cache_group_name(struct ident_cache *c, gid_t gid);
/* uid's groups (gid, the primary, first; only gid when uid has no name), at
 * most max of them into groups; returns how many. */
size_t ident_cache_groups(struct ident_cache *c, uid_t uid, gid_t gid, gid_t *groups, size_t max);

/* groups as "1001,27" ("" for none). Malloc'ed. */
char *ident_groups_text(const gid_t *groups, size_t n);
/* "1001,27" as a malloc'ed array (never NULL) of *n gids; parsing stops at
 * the first thing that is not a number. */
gid_t *ident_groups_parse(const char *text, size_t *n);

#endif
