/* Where `parsa up` puts things on this machine and where the other subcommands
 * find the scheduler: the defaults for root and for an ordinary user, the files
 * inside the state folder, and the per-mount pointer that lets `parsa down
 * --mount DIR` find a running supervisor. Everything here is pure computation
 * on strings (the caller passes the environment in), so it is unit-tested. */
#ifndef PARSA_PATHS_H
#define PARSA_PATHS_H

#include <stddef.h>
#include <sys/types.h>

/* The parts of the process environment the defaults depend on. */
struct up_env {
	uid_t uid;               /* effective uid: 0 picks the system-wide defaults */
	const char *home;        /* $HOME, or the passwd entry's home */
	const char *xdg_state;   /* $XDG_STATE_HOME or NULL */
	const char *xdg_runtime; /* $XDG_RUNTIME_DIR or NULL */
	const char *cwd;         /* to make relative paths absolute */
	const char *system_state; /* the machine's parsa (default_system_state()), NULL: none */
};

/* Fill env from this process (getenv, getpwuid, getcwd). The strings point
 * into the environment or into buf, which must outlive env. */
void up_env_from_process(struct up_env *env, char *buf, size_t len);

/* Every path the up/down pair uses; all absolute and malloc'ed. */
struct up_paths {
	char *mount;        /* MOUNT */
	char *state;        /* STATE */
	char *storage;      /* STORAGE (default STATE/storage), or a volume URL (nfs://...) */
	char *logs;         /* STATE/logs: one log per daemon, up.log for a detached supervisor */
	char *socket;       /* STATE/sched.sock */
	char *endpoint;     /* "unix:" STATE/sched.sock */
	char *scratch;      /* STATE/scratch: the runner's local scratch */
	char *runner_state; /* STATE/runner */
	char *runfile;      /* STATE/up.json: the supervisor's pid and the paths */
	char *lockfile;     /* STATE/up.lock: held by the supervisor while it lives */
	char *pointer_dir;  /* RUNTIME/up */
	char *pointer;      /* RUNTIME/up/<mount key>: holds STATE */
};

/* Defaults: as root MOUNT=/parsa, STATE=/var/lib/parsa; as a user
 * MOUNT=$HOME/parsa, STATE=${XDG_STATE_HOME:-$HOME/.local/state}/parsa. */
char *paths_default_mount(const struct up_env *env);
char *paths_default_state(const struct up_env *env);
/* "unix:" default state "/sched.sock". */
char *paths_default_endpoint(const struct up_env *env);
/* /run/parsa as root, else $XDG_RUNTIME_DIR/parsa, else /tmp/parsa-UID. */
char *paths_runtime_dir(const struct up_env *env);

/* The pointer file name for an absolute mount path: '/' becomes '%'
 * ("/tmp/x/mnt" -> "%tmp%x%mnt"). Not reversible when the path holds '%';
 * readers check the run file's mount, so a collision is refused, never confused.
 * NULL with ENAMETOOLONG when the name would not fit in a directory entry. */
char *paths_mount_key(const char *mount);

/* path made absolute against cwd and cleaned lexically (no "//", ".", ".."). */
char *path_absolute(const char *path, const char *cwd);

/* Fill p from the flags (NULL for a default); frees nothing on failure.
 * Returns 0, or -1 with errno and *err (a path too long for a unix socket). */
/* storage names a volume by URL (nfs://server/export, file:///path), not a folder. */
int paths_is_url(const char *storage);
int up_paths_init(struct up_paths *p, const struct up_env *env, const char *mount,
		  const char *state, const char *storage, char **err);
void up_paths_free(struct up_paths *p);

/* 1 if the mountinfo text (/proc/self/mountinfo) lists a mount at path, else 0.
 * fstype, if not NULL, receives the file system type (up to len bytes). */
int mountinfo_find(const char *text, const char *path, char *fstype, size_t len);

#endif
