/* Who is acting on the scheduler: the socket peer, or whom a trusted peer
 * acts for (sched/api/api_identity.c fills it in). Its own header so that a
 * module that only checks ownership (schedules.h) need not see the engine. */
#ifndef PARSA_CALLER_H
#define PARSA_CALLER_H

#include <stddef.h>
#include <sys/types.h>

struct caller {
	uid_t uid;
	gid_t gid;
	const gid_t *groups;
	size_t ngroups;
};

#endif
