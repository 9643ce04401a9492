/* User and group names, and group lists as text (see ident.h). */
#include "ident.h"
#include "util.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
