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

const char *default_system_state(void)
{
	const char *env = getenv("PARSA_SYSTEM_STATE");

	return env ? env : PARSA_SYSTEM_STATE;
}

char *default_sched_endpoint(uid_t uid, const char *home, const char *xdg_state,
			     const char *env_sched, const char *system_state)
{
	char *state, *own, *machine = NULL, *endpoint;

	if (env_sched && *env_sched)
		return xstrdup(env_sched);
	state = default_state_dir(uid, home, xdg_state);
	own = xasprintf("%s/sched.sock", state);
	if (system_state && *system_state)
		machine = xasprintf("%s/sched.sock", system_state);
	if (uid != 0 && access(own, F_OK) != 0 && machine && access(machine, F_OK) == 0)
		endpoint = xasprintf("unix:%s", machine);
	else
		endpoint = xasprintf("unix:%s", own);
	free(machine);
	free(own);
	free(state);
	return endpoint;
}
