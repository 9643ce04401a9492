/* The NFS backend's volume URL, nfs://server/export[/folder][?options]: our
 * own options (timeout, patience, spin) taken out, libnfs's own (ports, ...) passed on. */
#include "backend.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_TIMEOUT_MS 30000
#define PATIENCE_MAX_S (7 * 86400)
/* A reply later than this is not worth a CPU spinning for it: the sleep
 * and wake-up it saves cost some 10-50 us. */
#define DEFAULT_SPIN_US 100
#define SPIN_MAX_US 10000

int backend_nfs_parse_url(const char *url, char **server, char **export, char **libnfs_url,
			  struct nfs_url_opts *opts, char **err)
{
	const char *p, *slash, *q;
	char *query = NULL, *rest = NULL, *opt, *save = NULL;
	int ret = -1;

	*server = *export = *libnfs_url = NULL;
	opts->timeout_ms = DEFAULT_TIMEOUT_MS;
	opts->patience_ms = -1;
	opts->spin_us = DEFAULT_SPIN_US;
	if (strncmp(url, "nfs://", 6) != 0) {
		errno = EINVAL;
		return errprintf(err, "storage '%s' is not nfs://server/export/path", url);
	}
	p = url + 6;
	slash = strchr(p, '/');
	q = strchr(p, '?');
	if (!slash || slash == p || (q && q < slash)) {
		errno = EINVAL;
		return errprintf(err, "storage '%s': expected nfs://server/export/path", url);
	}
	*server = xasprintf("%.*s", (int)(slash - p), p);
	*export = q ? xasprintf("%.*s", (int)(q - slash), slash) : xstrdup(slash);
	/* A trailing slash would make libnfs mount "export/". */
	while (strlen(*export) > 1 && (*export)[strlen(*export) - 1] == '/')
		(*export)[strlen(*export) - 1] = '\0';
	if (strstr(*export, "/../") || strcmp(*export + strlen(*export) - (strlen(*export) >= 3 ? 3 : 0), "/..") == 0) {
		errno = EINVAL;
		errprintf(err, "storage '%s': '..' in the export path", url);
		goto out;
	}
	/* Our own options come out of the query; libnfs gets the others. */
	rest = xstrdup("");
	if (q) {
		query = xstrdup(q + 1);
		for (opt = strtok_r(query, "&", &save); opt; opt = strtok_r(NULL, "&", &save)) {
			if (strncmp(opt, "timeout=", 8) == 0) {
				char *end;
				double secs = strtod(opt + 8, &end);

				if (end == opt + 8 || *end || secs < 0.1 || secs > 86400) {
					errno = EINVAL;
					errprintf(err, "storage '%s': timeout must be seconds between 0.1 and 86400", url);
					goto out;
				}
				opts->timeout_ms = (int)(secs * 1000);
			} else if (strncmp(opt, "patience=", 9) == 0) {
				char *end;
				double secs = strtod(opt + 9, &end);

				if (end == opt + 9 || *end || !(secs >= 0 && secs <= PATIENCE_MAX_S)) {
					errno = EINVAL;
					errprintf(err, "storage '%s': patience must be seconds between 0 and %d "
						  "(0: fail at once while the server is unreachable)", url, PATIENCE_MAX_S);
					goto out;
				}
				opts->patience_ms = (int64_t)(secs * 1000);
			} else if (strncmp(opt, "spin=", 5) == 0) {
				char *end;
				long us = strtol(opt + 5, &end, 10);

				if (end == opt + 5 || *end || us < 0 || us > SPIN_MAX_US) {
					errno = EINVAL;
					errprintf(err, "storage '%s': spin must be microseconds between 0 and %d "
						  "(0: never poll for a reply, always sleep)", url, SPIN_MAX_US);
					goto out;
				}
				opts->spin_us = (int)us;
			} else if (strncmp(opt, "nfsport=", 8) == 0 || strncmp(opt, "mountport=", 10) == 0 ||
				   strncmp(opt, "tcp-syncnt=", 11) == 0 || strncmp(opt, "autoreconnect=", 14) == 0) {
				char *joined = xasprintf("%s%s%s", rest, *rest ? "&" : "", opt);

				free(rest);
				rest = joined;
			} else {
				errno = EINVAL;
				errprintf(err, "storage '%s': unknown option '%s' (known: timeout, patience, spin, "
					  "nfsport, mountport, tcp-syncnt, autoreconnect)", url, opt);
				goto out;
			}
		}
	}
	*libnfs_url = xasprintf("nfs://%s%s%s%s", *server, *export, *rest ? "?" : "", rest);
	ret = 0;
out:
	if (ret < 0) {
		free(*server);
		free(*export);
		*server = *export = NULL;
	}
	free(query);
	free(rest);
	return ret;
}
