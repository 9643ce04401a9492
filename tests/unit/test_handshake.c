/* The version handshake (lib/handshake.h): what each client sends, and which
 * User-Agents a scheduler of this release serves or refuses, and with what. */
#include "handshake.h"
#include "tap.h"
#include "util.h"
#include "version.h"

#include <stdlib.h>
#include <string.h>

TAP_STATE;

int main(void)
{
	char *ua, *err = NULL, *other;

	ua = handshake_user_agent("parsa-runner");
	other = xasprintf("parsa-runner/%s (protocol %d)", PARSA_VERSION, PARSA_PROTOCOL);
	is_str(ua, other, "the User-Agent names the program, release and protocol");
	ok(handshake_check(ua, &err) == 0 && !err, "this release's own clients are served");
	free(other);
	free(ua);

	ok(handshake_check(NULL, &err) == 0, "no User-Agent: served");
	ok(handshake_check("curl/7.88.1", &err) == 0, "curl: served");
	ok(handshake_check("parsafs", &err) == 0, "a parsa client before the handshake: served");

	other = xasprintf("parsafs/9.9.9 (protocol %d)", PARSA_PROTOCOL + 1);
	ok(handshake_check(other, &err) < 0, "a newer protocol is refused");
	ok(err && strstr(err, "parsafs 9.9.9") && strstr(err, "parsa-sched " PARSA_VERSION) &&
	   strstr(err, "upgrade the scheduler first"), "the message names both versions and what to do: %s", err);
	free(err);
	err = NULL;
	free(other);

	other = xasprintf("parsa-runner/0.0.1 (protocol %d)", PARSA_PROTOCOL - 1);
	ok(handshake_check(other, &err) < 0, "an older protocol is refused");
	ok(err && strstr(err, "upgrade this host"), "an older host is told to upgrade: %s", err);
	free(err);
	free(other);
	return done_testing();
}
