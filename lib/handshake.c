#include "handshake.h"
#include "util.h"
#include "version.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *handshake_user_agent(const char *program)
{
	return xasprintf("%s/%s (protocol %d)", program, PARSA_VERSION, PARSA_PROTOCOL);
}

int handshake_check(const char *user_agent, char **err)
{
	char program[64], version[32];
	int protocol;

	if (!user_agent || strncmp(user_agent, "parsa", 5) != 0)
		return 0;
	if (sscanf(user_agent, "%63[^/]/%31s (protocol %d)", program, version, &protocol) != 3)
		return 0;
	if (protocol == PARSA_PROTOCOL)
		return 0;
	errprintf(err, "%s %s speaks protocol %d, this scheduler (parsa-sched %s) protocol %d: "
		  "install the same parsa release on the hosts as on the head node (parsa %d.%d.x, "
		  "packages parsa, parsa-runner and parsa-sched of one version), %s",
		  program, version, protocol, PARSA_VERSION, PARSA_PROTOCOL,
		  PARSA_VERSION_MAJOR, PARSA_VERSION_MINOR,
		  protocol > PARSA_PROTOCOL ? "or upgrade the scheduler first"
					    : "or upgrade this host to it");
	errno = EPROTO;
	return -1;
}
