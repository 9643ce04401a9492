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

/* groups as "1001,27" ("" for none). Malloc'ed. */
char *ident_groups_text(const gid_t *groups, size_t n);
/* "1001,27" as a malloc'ed array (never NULL) of *n gids; parsing stops at
 * the first thing that is not a number. */
gid_t *ident_groups_parse(const char *text, size_t *n);

#endif
