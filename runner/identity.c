#include "identity.h"
#include "util.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

/* This host's group list for a user known to passwd, as initgroups() would set it. */
static int host_groups(const char *user, gid_t gid, gid_t **groups, int *ngroups)
{
	int n = 32;

	for (int tries = 0; tries < 8; tries++) {
		int got = n;
		gid_t *list = xcalloc((size_t)n, sizeof *list);

		if (getgrouplist(user, gid, list, &got) >= 0) {
			*groups = list;
			*ngroups = got;
			return 0;
		}
		free(list);
		n = got > n ? got : n * 2;
	}
	errno = E2BIG;
	return -1;
}

/* Decide who the instance runs as (see identity.h). 0, or -1 with *err. */
static int plan_identity(const struct assignment *a, const char *scratch,
			 struct identity *id, char **err)
{
	struct passwd pwbuf, *pw = NULL;
	uid_t euid = geteuid();
	char *buf = NULL;
	size_t buflen = 16384;
	int rc = -1, e;

	memset(id, 0, sizeof *id);
	for (;;) {
		buf = xrealloc(buf, buflen);
		if (a->user[0])
			e = getpwnam_r(a->user, &pwbuf, buf, buflen, &pw);
		else
			e = getpwuid_r(a->uid, &pwbuf, buf, buflen, &pw);
		if (e != ERANGE || buflen >= (1 << 20))
			break;
		buflen *= 2;
	}
	if (e != 0)
		pw = NULL;
	if (pw && pw->pw_uid != a->uid) {
		errno = EPERM;
		errprintf(err, "cannot start: user '%s' is uid %u on this host, but the job "
			  "belongs to uid %u", a->user, (unsigned)pw->pw_uid, (unsigned)a->uid);
		goto out;
	}
	id->uid = a->uid;
	id->gid = a->gid;
	if (euid == 0) {
		/* uid 0 only when the scheduler says root itself submitted the job:
		 * anything else is a bug or an attack, never a reason for a root shell. */
		if (a->uid == 0 && strcmp(a->user, "root") != 0) {
			errno = EPERM;
			errprintf(err, "cannot start: refusing to run as uid 0 a job not submitted by root");
			goto out;
		}
		id->change = 1;
		if (pw) {
			if (host_groups(pw->pw_name, a->gid, &id->groups, &id->ngroups) < 0) {
				errprintf(err, "cannot start: cannot list the groups of '%s': %s",
					  pw->pw_name, strerror(errno));
				goto out;
			}
		} else {
			id->groups = xcalloc(a->ngroups + 1, sizeof *id->groups);
			id->groups[id->ngroups++] = a->gid;
			for (size_t i = 0; i < a->ngroups; i++)
				if (a->groups[i] != a->gid)
					id->groups[id->ngroups++] = a->groups[i];
		}
	} else if (a->uid != euid) {
		errno = EPERM;
		errprintf(err, "cannot start: this runner runs as uid %u and can only start "
			  "jobs of that user, not of uid %u (run parsa-runner as root to serve "
			  "several users)", (unsigned)euid, (unsigned)a->uid);
		goto out;
	}
	if (pw) {
		id->user = xstrdup(pw->pw_name);
		id->home = xstrdup(pw->pw_dir);
		id->shell = xstrdup(pw->pw_shell && pw->pw_shell[0] ? pw->pw_shell : "/bin/sh");
	} else {
		/* A user this host does not know (no shared passwd): the scratch
		 * folder is the one place that surely belongs to them. */
		id->user = a->user[0] ? xstrdup(a->user) : xasprintf("%u", (unsigned)a->uid);
		id->home = xstrdup(scratch);
		id->shell = xstrdup("/bin/sh");
	}
	rc = 0;
out:
	free(buf);
	if (rc < 0) {
		int saved = errno;

		identity_free(id);
		memset(id, 0, sizeof *id);
		errno = saved;
	}
	return rc;
}

json_t *identity_decide(const struct assignment *a, const char *scratch, char **err)
{
	struct identity id;
	json_t *groups, *json;

	if (plan_identity(a, scratch, &id, err) < 0)
		return NULL;
	groups = json_array();
	for (int i = 0; i < id.ngroups; i++)
		json_array_append_new(groups, json_integer(id.groups[i]));
	json = json_pack("{s:b, s:I, s:I, s:o, s:s, s:s, s:s}", "change", id.change,
			 "uid", (json_int_t)id.uid, "gid", (json_int_t)id.gid, "groups", groups,
			 "user", id.user, "home", id.home, "shell", id.shell);
	identity_free(&id);
	if (!json) {
		errno = EINVAL;
		errprintf(err, "cannot start: the user's name, home or shell is not UTF-8");
	}
	return json;
}

