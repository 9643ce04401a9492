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
