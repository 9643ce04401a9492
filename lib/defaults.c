#include "defaults.h"
#include "util.h"

#include <stdlib.h>
#include <unistd.h>

char *default_state_dir(uid_t uid, const char *home, const char *xdg_state)
{
	if (uid == 0)
		return xstrdup(PARSA_SYSTEM_STATE);
	if (xdg_state && *xdg_state)
		return xasprintf("%s/parsa", xdg_state);
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
