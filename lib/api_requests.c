/* The API's request bodies, written and read (see api_requests.h). */
#include "api_requests.h"
#include "util.h"

#include <errno.h>
#include <string.h>

/* A token is the submitter's own unique text: short, and plain, since it is
 * stored and compared as given. */
#define TOKEN_MAX 64

json_t *api_submission_json(const char *name, const char *spec, size_t len, const char *token,
			    const char *workdir, bool *bad_spec)
{
	/* JSON carries text, a NUL byte only as \u0000, which the scheduler
	 * refuses: the spec parser is the one to say where such a byte is. */
	json_t *text = spec && memchr(spec, '\0', len) ? NULL : json_stringn(spec ? spec : "", len);
	json_t *body;

	*bad_spec = !text;
	if (!text) {
		errno = EINVAL;
		return NULL;
	}
	body = json_pack("{s:o}", "spec", text);
	if (!body || json_object_set_new(body, "name", json_string(name)) < 0 ||
	    (token && json_object_set_new(body, "token", json_string(token)) < 0)) {
		json_decref(body);
		errno = EINVAL;
		return NULL;
	}
	if (workdir) {
		json_t *w = json_string(workdir);

		if (w)
			json_object_set_new(body, "workdir", w);
	}
	return body;
}

bool api_token_ok(const char *t)
{
	size_t n = strlen(t);

	if (n == 0 || n > TOKEN_MAX)
		return false;
	return strspn(t, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_") == n;
}

int api_read_submission(const json_t *body, struct api_submission *s, char **err)
{
	const json_t *name = json_object_get(body, "name"), *spec = json_object_get(body, "spec");
	const json_t *token = json_object_get(body, "token"), *workdir = json_object_get(body, "workdir");

	memset(s, 0, sizeof *s);
	errno = EINVAL;
	if (!json_is_string(spec))
		return errprintf(err, "the body needs \"spec\": the spec's text");
	if (json_is_string(name) && strlen(json_string_value(name)) != json_string_length(name))
		return errprintf(err, "\"name\" holds a NUL byte: rename the file");
	if (token && (!json_is_string(token) || !api_token_ok(json_string_value(token)) ||
		      strlen(json_string_value(token)) != json_string_length(token)))
		return errprintf(err, "\"token\" is 1 to 64 letters, digits, '-' or '_'");
	if (workdir && (!json_is_string(workdir) || json_string_value(workdir)[0] != '/' ||
			strlen(json_string_value(workdir)) != json_string_length(workdir)))
		return errprintf(err, "\"workdir\" is an absolute folder: the submitter's");
	s->workdir = json_string_value(workdir);
	s->name = json_string_value(name);
	s->spec = json_string_value(spec);
	s->len = json_string_length(spec);
	s->token = json_string_value(token);
	errno = 0;
	return 0;
}

json_t *api_command_json(const char *line, size_t n)
{
	return json_pack("{s:s%}", "command", line, n);
}

json_t *api_check_request_json(const char *line, size_t n)
{
	return json_pack("{s:s%}", "check", line, n);
}

void api_read_ctl_request(const json_t *body, const char **command, const char **check)
{
	*command = json_string_value(json_object_get(body, "command"));
	*check = *command ? NULL : json_string_value(json_object_get(body, "check"));
}
