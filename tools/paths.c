#include "paths.h"
#include "defaults.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

void up_env_from_process(struct up_env *env, char *buf, size_t len)
{
	const char *home = getenv("HOME");
	const char *cwd = NULL;

	env->uid = geteuid();
	if (!home || !*home) {
		/* Services and sudo may run us without HOME; the passwd entry still knows. */
		struct passwd *pw = getpwuid(env->uid);

		home = pw && pw->pw_dir ? pw->pw_dir : "/";
	}
	env->home = home;
	env->xdg_state = getenv("XDG_STATE_HOME");
	if (env->xdg_state && env->xdg_state[0] != '/')
		env->xdg_state = NULL; /* the XDG spec says relative values are ignored */
	env->xdg_runtime = getenv("XDG_RUNTIME_DIR");
	if (env->xdg_runtime && env->xdg_runtime[0] != '/')
		env->xdg_runtime = NULL;
	if (buf && len > 0)
		cwd = getcwd(buf, len);
	env->cwd = cwd ? cwd : "/";
	env->system_state = default_system_state();
}

char *paths_default_mount(const struct up_env *env)
{
	if (env->uid == 0)
		return xstrdup("/parsa");
	return path_absolute("parsa", env->home);
}

char *paths_default_state(const struct up_env *env)
{
	char *base, *state;

	if (env->uid == 0)
		return xstrdup("/var/lib/parsa");
	if (env->xdg_state && *env->xdg_state)
		base = xstrdup(env->xdg_state);
	else
		base = path_absolute(".local/state", env->home);
	state = path_absolute("parsa", base);
	free(base);
	return state;
}

char *paths_default_endpoint(const struct up_env *env)
{
	return default_sched_endpoint(env->uid, env->home, env->xdg_state, NULL, env->system_state);
}

char *paths_runtime_dir(const struct up_env *env)
{
	if (env->uid == 0)
		return xstrdup("/run/parsa");
	if (env->xdg_runtime && *env->xdg_runtime)
		return path_absolute("parsa", env->xdg_runtime);
	return xasprintf("/tmp/parsa-%u", (unsigned)env->uid);
}

char *paths_mount_key(const char *mount)
{
	char *key;

	if (strlen(mount) > NAME_MAX) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	key = xstrdup(mount);
	for (char *p = key; *p; p++)
		if (*p == '/')
			*p = '%';
	return key;
}

char *path_absolute(const char *path, const char *cwd)
{
	char *joined, *out, *q;
	const char *p;

	if (path[0] == '/')
		joined = xstrdup(path);
	else
		joined = xasprintf("%s/%s", cwd && *cwd ? cwd : "/", path);
	/* Clean component by component into out; out never grows past joined. */
	out = xmalloc(strlen(joined) + 2);
	q = out;
	p = joined;
	while (*p) {
		const char *start;
		size_t n;

		while (*p == '/')
			p++;
		start = p;
		while (*p && *p != '/')
			p++;
		n = (size_t)(p - start);
		if (n == 0 || (n == 1 && start[0] == '.'))
			continue;
		if (n == 2 && start[0] == '.' && start[1] == '.') {
			while (q > out && *--q != '/')
				;
			continue;
		}
		*q++ = '/';
		memcpy(q, start, n);
		q += n;
	}
	if (q == out)
		*q++ = '/';
	*q = '\0';
	free(joined);
	return out;
}

int paths_is_url(const char *storage)
{
	return strstr(storage, "://") != NULL;
}

int up_paths_init(struct up_paths *p, const struct up_env *env, const char *mount,
		  const char *state, const char *storage, char **err)
{
	struct sockaddr_un sun;
	char *runtime, *key;

	memset(p, 0, sizeof *p);
	p->mount = mount ? path_absolute(mount, env->cwd) : paths_default_mount(env);
	p->state = state ? path_absolute(state, env->cwd) : paths_default_state(env);
	if (strcmp(p->mount, "/") == 0) {
		up_paths_free(p);
		errno = EINVAL;
		return errprintf(err, "cannot mount parsa on /: choose a folder with --mount DIR");
	}
	/* A volume URL (nfs://server/export, file:///path) is passed on as given. */
	p->storage = storage ? (paths_is_url(storage) ? xstrdup(storage) : path_absolute(storage, env->cwd))
			     : xasprintf("%s/storage", p->state);
	p->logs = xasprintf("%s/logs", p->state);
	p->socket = xasprintf("%s/sched.sock", p->state);
	p->endpoint = xasprintf("unix:%s", p->socket);
	p->scratch = xasprintf("%s/scratch", p->state);
	p->runner_state = xasprintf("%s/runner", p->state);
	p->runfile = xasprintf("%s/up.json", p->state);
	p->lockfile = xasprintf("%s/up.lock", p->state);
	runtime = paths_runtime_dir(env);
	p->pointer_dir = xasprintf("%s/up", runtime);
	free(runtime);
	key = paths_mount_key(p->mount);
	if (!key) {
		int saved = errno;

		errprintf(err, "mount path '%s' is too long (at most %d characters)", p->mount, NAME_MAX);
		up_paths_free(p);
		errno = saved;
		return -1;
	}
	p->pointer = xasprintf("%s/%s", p->pointer_dir, key);
	free(key);
	/* The scheduler binds STATE/sched.sock: a unix socket path has a hard limit. */
	if (strlen(p->socket) >= sizeof sun.sun_path) {
		errprintf(err, "state folder '%s' is too deep for a unix socket (its path must stay under %zu characters): choose a shorter --state",
			  p->state, sizeof sun.sun_path - strlen("/sched.sock"));
		up_paths_free(p);
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

void up_paths_free(struct up_paths *p)
{
	free(p->mount);
	free(p->state);
	free(p->storage);
	free(p->logs);
	free(p->socket);
	free(p->endpoint);
	free(p->scratch);
	free(p->runner_state);
	free(p->runfile);
	free(p->lockfile);
	free(p->pointer_dir);
	free(p->pointer);
	memset(p, 0, sizeof *p);
}

/* Undo mountinfo's octal escapes (\040 for a space, \011, \012, \134) in place. */
static void unescape_octal(char *s)
{
	char *out = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*out++ = (char)(((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0'));
			s += 4;
		} else {
			*out++ = *s++;
		}
	}
	*out = '\0';
}

int mountinfo_find(const char *text, const char *path, char *fstype, size_t len)
{
	const char *line = text;
	int found = 0;

	while (line && *line && !found) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);
		char *copy = xmalloc(n + 1), *save = NULL, *field, *sep;
		int i;

		memcpy(copy, line, n);
		copy[n] = '\0';
		/* Fields: id parent major:minor root MOUNTPOINT options ... - FSTYPE source ... */
		field = strtok_r(copy, " ", &save);
		for (i = 1; field && i < 5; i++)
			field = strtok_r(NULL, " ", &save);
		if (field) {
			unescape_octal(field);
			if (strcmp(field, path) == 0) {
				found = 1;
				if (fstype && len > 0) {
					fstype[0] = '\0';
					sep = strstr(save ? save : "", " - ");
					if (sep) {
						char *type = sep + 3, *stop = strchr(type, ' ');

						if (stop)
							*stop = '\0';
						snprintf(fstype, len, "%s", type);
					}
				}
			}
		}
		free(copy);
		line = end ? end + 1 : NULL;
	}
	return found;
}
