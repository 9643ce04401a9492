#include "defaults.h"
#include "util.h"

#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

char *default_state_dir(uid_t uid, const char *home, const char *xdg_state)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	if (uid == 0)
		return xstrdup(PARSA_SYSTEM_STATE);
	/* The XDG spec says a relative path is invalid and to be ignored. */
	if (xdg_state && xdg_state[0] == '/')
		return xasprintf("%s/parsa", xdg_state);
	if ((!home || !*home) && getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res)
		home = pw.pw_dir;
	return xasprintf("%s/.local/state/parsa", home && *home ? home : "/tmp");
}

char *default_sched_endpoint(uid_t uid, const char *home, const char *xdg_state,
			     const char *env_sched)
{
	char *state, *own, *endpoint;

	if (env_sched && *env_sched)
		return xstrdup(env_sched);
	state = default_state_dir(uid, home, xdg_state);
	own = xasprintf("%s/sched.sock", state);
	if (uid != 0 && access(own, F_OK) != 0 && access(PARSA_SYSTEM_STATE "/sched.sock", F_OK) == 0)
		endpoint = xstrdup("unix:" PARSA_SYSTEM_STATE "/sched.sock");
	else
		endpoint = xasprintf("unix:%s", own);
	free(own);
	free(state);
	return endpoint;
}
