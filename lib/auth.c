#include "auth.h"
#include "util.h"

#include <errno.h>
#include <munge.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bumped if the payload's layout ever changes: an old client's credential is
 * then refused with a clear message instead of being misread. */
#define PAYLOAD_TAG "parsa-api-1"

struct auth {
	char *socket;   /* NULL: libmunge's default */
};

struct auth *auth_create(const char *munge_socket)
{
	struct auth *a = xcalloc(1, sizeof *a);

	a->socket = munge_socket && *munge_socket ? xstrdup(munge_socket) : NULL;
	return a;
}

void auth_destroy(struct auth *a)
{
	if (!a)
		return;
	free(a->socket);
	free(a);
}

const char *auth_socket(const struct auth *a)
{
	return a->socket ? a->socket : "/run/munge/munge.socket.2";
}

/* "<tag>\n<METHOD>\n<target>\n<sha256 hex>": what a credential vouches for. */
static char *payload(const char *method, const char *target, const void *body, size_t len)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char hex[2 * EVP_MAX_MD_SIZE + 1];

	if (!EVP_Digest(body ? body : "", body ? len : 0, md, &mdlen, EVP_sha256(), NULL))
		return NULL;
	for (unsigned int i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	hex[2 * mdlen] = '\0';
	return xasprintf("%s\n%s\n%s\n%s", PAYLOAD_TAG, method, target, hex);
}

/* A munge context for one call (a context is not shared between threads). */
static munge_ctx_t context(const struct auth *a, char **err)
{
	munge_ctx_t ctx = munge_ctx_create();

	if (!ctx) {
		errno = ENOMEM;
		errprintf(err, "cannot create a munge context");
		return NULL;
	}
	if (a->socket && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, a->socket) != EMUNGE_SUCCESS) {
		munge_ctx_destroy(ctx);
		errno = EINVAL;
		errprintf(err, "cannot use munge socket %s", a->socket);
		return NULL;
	}
	return ctx;
}

char *auth_sign(struct auth *a, const char *method, const char *target,
		const void *body, size_t len, char **err)
{
	munge_ctx_t ctx = NULL;
	char *text = payload(method, target, body, len), *cred = NULL;
	munge_err_t rc;

	if (!text) {
		errno = EIO;
		errprintf(err, "cannot hash the request body");
		goto out;
	}
	ctx = context(a, err);
	if (!ctx)
		goto out;
	rc = munge_encode(&cred, ctx, text, (int)strlen(text));
	if (rc != EMUNGE_SUCCESS) {
		errno = rc == EMUNGE_SOCKET ? ENOTCONN : EIO;
		errprintf(err, "cannot get a munge credential from %s: %s (is munged running with the"
			  " cluster's key?)", auth_socket(a), munge_ctx_strerror(ctx));
		free(cred);
		cred = NULL;
	}
out:
	if (ctx)
		munge_ctx_destroy(ctx);
	free(text);
	return cred;
}

/* Why munged refused a credential, in words an operator can act on. */
static const char *refusal(munge_err_t rc)
{
	switch (rc) {
	case EMUNGE_CRED_EXPIRED:
		return "the munge credential has expired (are the clocks of the hosts in sync?)";
	case EMUNGE_CRED_REWOUND:
		return "the munge credential was made in the future (are the clocks of the hosts in sync?)";
	case EMUNGE_CRED_REPLAYED:
		return "the munge credential was already used (replayed)";
	case EMUNGE_CRED_INVALID:
		return "the munge credential is invalid: forged, or made with another munge key"
		       " (every host needs the same /etc/munge/munge.key)";
	case EMUNGE_CRED_UNAUTHORIZED:
		return "the munge credential is not meant for the scheduler's user";
	case EMUNGE_BAD_CRED:
	case EMUNGE_BAD_VERSION:
	case EMUNGE_BAD_CIPHER:
	case EMUNGE_BAD_MAC:
	case EMUNGE_BAD_ZIP:
	case EMUNGE_BAD_REALM:
	case EMUNGE_BAD_LENGTH:
	case EMUNGE_BAD_ARG:
		return "the munge credential is malformed";
	default:
		return NULL;
	}
}

int auth_verify(struct auth *a, const char *header, const char *method, const char *target,
		const void *body, size_t len, uid_t *uid, gid_t *gid, char **err)
{
	size_t scheme = strlen(AUTH_SCHEME);
	munge_ctx_t ctx = NULL;
	void *got = NULL;
	int got_len = 0, ret = -1;
	char *want = NULL;
	munge_err_t rc;
	const char *why;

	if (!header || strncasecmp(header, AUTH_SCHEME, scheme) != 0 || header[scheme] != ' ') {
		errno = EACCES;
		errprintf(err, "requests over TCP need a munge credential (Authorization: "
			  AUTH_SCHEME " <credential>); parsa's programs add it themselves");
		goto out;
	}
	header += scheme;
	while (*header == ' ')
		header++;
	ctx = context(a, err);
	if (!ctx) {
		errno = EAGAIN;
		goto out;
	}
	rc = munge_decode(header, ctx, &got, &got_len, uid, gid);
	if (rc != EMUNGE_SUCCESS) {
		why = refusal(rc);
		errno = why ? EACCES : EAGAIN;
		if (why)
			errprintf(err, "%s", why);
		else
			errprintf(err, "the scheduler cannot check munge credentials (%s): %s",
				  auth_socket(a), munge_ctx_strerror(ctx));
		goto out;
	}
	want = payload(method, target, body, len);
	if (!want || got_len < 0 || (size_t)got_len != strlen(want) || memcmp(got, want, (size_t)got_len) != 0) {
		errno = EACCES;
		errprintf(err, "the munge credential was made for another request");
		goto out;
	}
	ret = 0;
out:
	if (ctx)
		munge_ctx_destroy(ctx);
	free(got);
	free(want);
	return ret;
}
