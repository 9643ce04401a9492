/* parsa-sched's settings as parsa.conf and the flags make them, after the
 * parse: `parsa-sched -n` checks everything the scheduler would use at start
 * (as `sshd -t` does); SIGHUP's reload runs the same check, then compares the
 * new file with the running one, saying what changes live and what needs a
 * restart. Both only read; main applies the result. */
#ifndef PARSA_RECONF_H
#define PARSA_RECONF_H

#include "config.h"
#include "engine.h"

/* What the command line gave (NULL, 0: not given). */
struct sched_flags {
	const char *listen, *munge_socket, *admin_group, *state_dir, *storage_url, *web_listen;
	struct engine_config durations;
};

/* What parsa-sched runs with: each flag, else the file's value, else the
 * default. The strings point into the flags, the file or owned. */
struct sched_settings {
	const struct sched_flags *flags;
	const struct parsa_conf *conf; /* conf->path NULL: no file */
	const char *listen;         /* NULL: no TCP */
	const char *munge_socket;
	const char *admin_group;
	const char *state_dir;
	const char *db_path;
	const char *storage_url;
	const char *web_listen;     /* NULL or "off": no page */
	struct engine_config cfg;   /* the durations and defer_bursts; admin is not filled */
	char *owned[3];             /* the defaults made here */
};

/* Fill s from flags and conf (both kept alive by the caller). */
void reconf_settings(const struct sched_flags *flags, const struct parsa_conf *conf,
		     struct sched_settings *s);
void reconf_settings_clear(struct sched_settings *s);

/* Check what the scheduler would do with s at start, without starting: the
 * addresses parse, the state folder and the database can be written, the
 * volume's URL is good, the admin group exists, the munge key is safe. Every
 * problem is one line of *report ("FILE:LINE: key = value: what; fix", or
 * "--flag ..." for a flag). 0 when none, else the number of problems. */
int reconf_check(const struct sched_settings *s, char **report);

/* The admin group's gid; -1 with *err when the group does not exist. */
int reconf_admin_gid(const char *group, gid_t *gid, char **err);

/* Compare the running settings with those of a new file read on SIGHUP:
 * fills *live with what to give engine_reconfigure() (it points into
 * fresh->conf) and returns the log lines, one per change ("[limits]
 * queued_jobs: 10 -> 20", "[sched] listen: ... needs a restart"), or "" when
 * nothing changed (malloc'ed). NULL with *err when fresh cannot be applied
 * (its admin group does not exist). */
char *reconf_diff(const struct sched_settings *old, const struct sched_settings *fresh,
		  struct engine_live *live, char **err);

#endif
