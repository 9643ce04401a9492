/* What the mount says of its volume (fs/storage_watch.c): the exact format of
 * MOUNT/storage, which the runner parses (key: value lines; since: starts
 * with the epoch seconds), and the line status starts with while the volume
 * is unreachable. A local folder is reachable; an NFS server nobody runs (a
 * port nobody listens on) is not. Nothing here needs a server. */
#include "backend.h"
#include "fs_node.h"
#include "storage_watch.h"
#include "tap.h"
#include "util.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

TAP_STATE;

static bool matches(const char *text, const char *pattern)
{
	regex_t re;
	bool ret;

	if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB) != 0)
		return false;
	ret = regexec(&re, text, 0, NULL, 0) == 0;
	regfree(&re);
	return ret;
}

static void test_reachable(void)
{
	char root[] = "/tmp/parsa-test-watch.XXXXXX";
	struct fs_ctx fs = { 0 };
	char *err = NULL, *text, *want;

	if (!ok(mkdtemp(root) != NULL, "a folder"))
		return;
	fs.backend = backend_create(root, &err);
	fs.storage_url = root;
	fs.storage_patience_ms = 300000;
	if (ok(fs.backend != NULL, "a local volume")) {
		text = storage_watch_text(&fs);
		want = xasprintf("state: reachable\nvolume: %s\n", root);
		is_str(text, want, "storage: reachable, and the volume");
		ok(storage_watch_status_line(&fs) == NULL, "status gets no line");
		free(want);
		free(text);
		backend_destroy(fs.backend);
	}
	free(err);
	rmdir(root);
}

static void test_unreachable(void)
{
	struct fs_ctx fs = { 0 };
	char *err = NULL, *text, *line;
	int64_t since = 0;
	char utc[64], *since_line;
	struct tm tm;
	time_t t;

	fs.backend = backend_create("nfs://127.0.0.1/nothing?nfsport=1&mountport=1&timeout=3", &err);
	fs.storage_url = "nfs://127.0.0.1/nothing";
	fs.storage_patience_ms = 300000;
	if (!ok(fs.backend != NULL, "an NFS volume whose server is down is made")) {
		free(err);
		return;
	}
	ok(backend_health(fs.backend, &since, NULL) == 0, "unreachable");
	t = (time_t)since;
	gmtime_r(&t, &tm);
	strftime(utc, sizeof utc, "%Y-%m-%d %H:%M:%S UTC", &tm);
	text = storage_watch_text(&fs);
	if (!ok(matches(text, "^state: unreachable\n"
			 "since: [0-9]+ \\([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2} UTC\\)\n"
			 "volume: nfs://127\\.0\\.0\\.1/nothing\n"
			 "reason: cannot mount 127\\.0\\.0\\.1:/nothing: [^\n]+\n$"),
		"storage: four key: value lines in order"))
		diag("%s", text);
	since_line = xasprintf("since: %lld (%s)\n", (long long)since, utc);
	ok(strstr(text, since_line) != NULL, "since: the epoch seconds, then the same in UTC");
	free(since_line);
	free(text);
	line = storage_watch_status_line(&fs);
	if (!ok(line && matches(line, "^storage: unreachable since [0-9]{2}:[0-9]{2}:[0-9]{2} "
				 "\\(cannot mount 127\\.0\\.0\\.1:/nothing: [^\n]+\\); "
				 "I/O in out/ and data/ waits up to 300 s\n$"),
	   "the status line says since when, why and what I/O does") && line)
		diag("%s", line);
	free(line);
	fs.storage_patience_ms = 0;
	line = storage_watch_status_line(&fs);
	ok(line && strstr(line, "; I/O in out/ and data/ fails at once\n"), "without patience: fails at once");
	free(line);
	backend_destroy(fs.backend);
	free(err);
}

int main(void)
{
	test_reachable();
	test_unreachable();
	return done_testing();
}
