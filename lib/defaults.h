/* Where parsa's programs look by default: the state folder and the
 * scheduler's socket, the same answer for the CLI, the mount and the runner,
 * so that a student's `parsa status` finds the machine's scheduler. */
#ifndef PARSA_DEFAULTS_H
#define PARSA_DEFAULTS_H

#include <sys/types.h>

/* The state folder of a parsa run by root, and so its socket. */
#define PARSA_SYSTEM_STATE "/var/lib/parsa"

/* The machine's parsa, whose socket a user's commands fall back to:
 * $PARSA_SYSTEM_STATE if set (the tests point it at a folder of their own,
 * so that they never talk to a parsa they did not start; "" turns the
 * fallback off), else PARSA_SYSTEM_STATE. Not malloc'ed. */
const char *default_system_state(void);

/* The state folder of a parsa run by uid: PARSA_SYSTEM_STATE for root, else
 * $XDG_STATE_HOME/parsa (xdg_state may be NULL, empty or relative: then
 * ignored), else HOME/.local/state/parsa (home NULL or empty: passwd's).
 * Malloc'ed. */
char *default_state_dir(uid_t uid, const char *home, const char *xdg_state);

/* The scheduler endpoint when none is given: $PARSA_SCHED (env_sched) if set;
 * else the socket of uid's own state folder if a scheduler made it; else the
 * machine's scheduler if its socket is in system_state (NULL or "": none, see
 * default_system_state()); else uid's own socket (so that the error message
 * names the place `parsa up` would use). Malloc'ed. */
char *default_sched_endpoint(uid_t uid, const char *home, const char *xdg_state,
			     const char *env_sched, const char *system_state);

#endif
