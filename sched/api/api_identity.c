#include "api_identity.h"
#include "api_args.h"

#include "auth.h"
#include "engine.h"
#include "ident.h"
#include "util.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/socket.h>

/* What a connection's socket tells, asked once when it is accepted rather
 * than for each of its requests (a kept-alive connection from the mount
 * carries thousands): its local address family, and on the unix socket the
 * peer's SO_PEERCRED, which is what the peer was at connect() anyway. */
struct peer {
	int family;                   /* -1: unknown */
	bool has_cred;
	struct ucred cred;
};

static int socket_family(int fd)
{
	struct sockaddr_storage local;
	socklen_t len = sizeof local;

	return getsockname(fd, (struct sockaddr *)&local, &len) < 0 ? -1 : local.ss_family;
}

void api_on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
		       enum MHD_ConnectionNotificationCode toe)
{
	const union MHD_ConnectionInfo *info;
	struct peer *p;
	socklen_t len;

	(void)cls;
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		free(*socket_context);
		*socket_context = NULL;
		return;
	}
	info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!info)
		return;
	p = xcalloc(1, sizeof *p);
	p->family = socket_family(info->connect_fd);
	len = sizeof p->cred;
	p->has_cred = p->family == AF_UNIX &&
		      getsockopt(info->connect_fd, SOL_SOCKET, SO_PEERCRED, &p->cred, &len) == 0;
	*socket_context = p;
}

/* conn's peer as noted at its start; NULL if it was not. */
static const struct peer *peer_of(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *info = MHD_get_connection_info(conn,
		MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return info ? info->socket_context : NULL;
}

/* The address family of conn's local end, or -1. */
static int local_family(struct MHD_Connection *conn)
{
	const struct peer *p = peer_of(conn);
	const union MHD_ConnectionInfo *info;

	if (p)
		return p->family;
	info = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	return info ? socket_family(info->connect_fd) : -1;
}

bool api_on_unix_socket(struct MHD_Connection *conn)
{
	return local_family(conn) == AF_UNIX;
}

/* The peer of a TCP connection: its munge credential, bound to this request.
 * 0, or -1 with c->auth_error. */
static int identify_munge(struct call *c, const char *method, const char *target,
			  struct auth *auth)
{
	const char *header = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND,
							 MHD_HTTP_HEADER_AUTHORIZATION);
	uid_t uid;
	gid_t gid;

	if (auth_verify(auth, header, method, target ? target : "", c->body, c->len, &uid, &gid,
			&c->auth_error) < 0) {
		c->auth_busy = errno == EAGAIN;
		return -1;
	}
	c->who.uid = uid;
	c->who.gid = gid;
	return 0;
}

/* The socket's peer: SO_PEERCRED on the unix socket, a munge credential
 * over TCP. 0, -1 or -2 as api_identify(). */
static int identify_peer(struct call *c, const char *method, const char *target,
			 struct auth *auth)
{
	const union MHD_ConnectionInfo *info;
	const struct peer *p = peer_of(c->conn);
	struct ucred cred;
	socklen_t len = sizeof cred;
	int family = local_family(c->conn);

	if (family < 0)
		return -1;
	if (family != AF_UNIX)
		return identify_munge(c, method, target, auth) < 0 ? -2 : 0;
	if (p && p->has_cred) {
		cred = p->cred;
	} else {
		info = MHD_get_connection_info(c->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!info || getsockopt(info->connect_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
			return -1;
	}
	c->who.uid = cred.uid;
	c->who.gid = cred.gid;
	return 0;
}

int api_identify(struct call *c, const char *method, const char *target, struct auth *auth,
		 uid_t self_uid)
{
	const char *huid, *hgid, *hgroups;
	int64_t v;
	int peer = identify_peer(c, method, target, auth);

	if (peer < 0)
		return peer;
	c->trusted = c->who.uid == 0 || c->who.uid == self_uid;
	if (!c->trusted)
		return 0;
	huid = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "X-Parsa-Uid");
	hgid = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "X-Parsa-Gid");
	hgroups = MHD_lookup_connection_value(c->conn, MHD_HEADER_KIND, "X-Parsa-Groups");
	if (huid) {
		struct passwd pw, *res = NULL;
		char buf[4096];

		if (api_parse_num(huid, &v) < 0)
			return -1;
		c->who.uid = (uid_t)v;
		/* Never let the trusted peer's own gid (root's) leak into somebody
		 * else's identity: without X-Parsa-Gid, take the user's primary group. */
		if (!hgid) {
			if (getpwuid_r(c->who.uid, &pw, buf, sizeof buf, &res) != 0 || !res)
				return -1;
			c->who.gid = pw.pw_gid;
		}
	}
	if (hgid) {
		if (api_parse_num(hgid, &v) < 0)
			return -1;
		c->who.gid = (gid_t)v;
	}
	if (hgroups && *hgroups) {
		const char *p = hgroups;
		size_t n = 0;

		while (*p && n < API_MAX_GROUPS) {
			char *end;
			unsigned long g = strtoul(p, &end, 10);

			if (end == p)
				break;
			c->groups[n++] = (gid_t)g;
			p = end;
			while (*p == ',' || *p == ' ')
				p++;
		}
		c->who.groups = c->groups;
		c->who.ngroups = n;
		c->groups_known = true;
	}
	/* Acting for somebody else carries only that person's rights. */
	c->trusted = c->who.uid == 0 || c->who.uid == self_uid;
	return 0;
}

void api_caller_groups(struct call *c)
{
	if (c->groups_known)
		return;
	c->groups_known = true;
	c->who.ngroups = ident_cache_groups(engine_ident(c->engine), c->who.uid, c->who.gid, c->groups,
					    API_MAX_GROUPS);
	c->who.groups = c->groups;
}
