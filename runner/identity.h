/* Who a stage instance runs as. The runner decides it (the passwd and group
 * lookups happen there, in a long-lived process, with the NSS modules loaded
 * once) and hands it as JSON to the instance's supervisor, a small static
 * program that only applies it before exec (runner/launch.h). */
#ifndef PARSA_RUNNER_IDENTITY_H
#define PARSA_RUNNER_IDENTITY_H

#include <jansson.h>
#include <stdlib.h>
#include <sys/types.h>

#include "assign.h"

struct identity {
	int change;          /* set groups, gid and uid in the child (root runner) */
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	int ngroups;
	char *user;
	char *home;
	char *shell;
};

/* The rules: a root runner sets the assignment's groups (or this host's
 * group list for the user, when passwd knows that user with the same uid),
 * gid and uid, and refuses uid 0 unless the user named is root; a runner that
 * is not root starts only jobs of its own uid. HOME is passwd's, or the
 * scratch folder for a user this host does not know. As JSON for
 * launch_request.identity; NULL with errno and *err = "cannot start: <why>"
 * when a may not run here. */
json_t *identity_decide(const struct assignment *a, const char *scratch, char **err);

static inline void identity_free(struct identity *id)
{
	free(id->groups);
	free(id->user);
	free(id->home);
	free(id->shell);
}

#endif
