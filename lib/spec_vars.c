/* ${var} expansion in a spec: the [vars] section indexed by name, each var
 * expanded once, with cycles, nesting depth and the total size of the expanded
 * text bounded and reported; other ${...} stay for the shell. */
#include "spec_internal.h"
#include "util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* ${var} nesting deeper than this is a mistake, and it bounds our recursion. */
#define VAR_DEPTH_MAX 32

static int var_cmp(const void *a, const void *b)
{
	const struct var *x = a, *y = b;

	return strcmp(x->name, y->name);
}

static struct var *find_var(struct parser *p, const char *name, size_t len)
{
	size_t lo = 0, hi = p->nvars;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strncmp(p->vars[mid].name, name, len);

		if (c == 0 && p->vars[mid].name[len] != '\0')
			c = 1;
		if (c == 0)
			return &p->vars[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool spec_is_var(struct parser *p, const char *name)
{
	return find_var(p, name, strlen(name)) != NULL;
}

/* The chain of vars being expanded, innermost last, for cycle messages. */
struct var_chain {
	struct var *v[VAR_DEPTH_MAX + 1];
	int depth;
};

static const char *var_value(struct parser *p, struct var *v, struct var_chain *chain);

/* Append text to out with every ${name} of a [vars] name replaced; other
 * ${...} stay for the shell. Returns 0, or -1 when a var could not be expanded
 * or the budget ran out (both reported, at line). */
static int expand_into(struct parser *p, const char *text, int line, struct spec_buf *out,
		       struct var_chain *chain)
{
	const char *s = text;

	while (*s) {
		const char *d = strstr(s, "${"), *name, *end, *lit = s;
		size_t lit_len;
		struct var *v = NULL;

		lit_len = d ? (size_t)(d - s) + 2 : strlen(s);
		if (d) {
			name = d + 2;
			for (end = name; isalnum((unsigned char)*end) || *end == '_'; end++)
				;
			if (*end == '}' && end > name && !isdigit((unsigned char)*name))
				v = find_var(p, name, (size_t)(end - name));
			if (v) {
				lit_len -= 2;
				s = end + 1;
			} else {
				s = d + 2;
			}
		} else {
			s += lit_len;
		}
		if (lit_len > p->budget)
			goto over;
		p->budget -= lit_len;
		spec_buf_add(out, lit, lit_len);
		if (v) {
			const char *val = var_value(p, v, chain);
			size_t n;

			if (!val)
				return -1;
			n = strlen(val);
			if (n > p->budget)
				goto over;
			p->budget -= n;
			spec_buf_add(out, val, n);
		}
	}
	if (!out->s)
		spec_buf_add(out, "", 0);
	return 0;
over:
	if (!p->budget_reported)
		spec_report(p, line, "${vars} expand to more than %zu MiB of text: a spec is text a person reads",
		            EXPAND_BUDGET >> 20);
	p->budget_reported = true;
	p->budget = 0;
	return -1;
}

/* The expanded value of a var, computed once; NULL when it cannot be
 * expanded (a cycle, too deep), which is reported once at the var's line. */
static const char *var_value(struct parser *p, struct var *v, struct var_chain *chain)
{
	struct spec_buf b = { 0 };

	switch (v->state) {
	case VAR_DONE:
		return v->value;
	case VAR_FAILED:
		return NULL;
	case VAR_BUSY: {
		struct spec_buf path = { 0 };
		int first = 0;

		while (chain->v[first] != v)
			first++;
		for (int i = first; i < chain->depth; i++)
			spec_buf_addf(&path, "%s -> ", chain->v[i]->name);
		spec_buf_addf(&path, "%s", v->name);
		spec_report(p, chain->v[first]->line, "var '%s' refers to itself: %s; remove one of these ${...}",
		            v->name, path.s);
		free(path.s);
		return NULL;
	}
	case VAR_NEW:
		break;
	}
	if (chain->depth >= VAR_DEPTH_MAX) {
		if (!p->depth_reported)
			spec_report(p, v->line, "${vars} nest more than %d deep: define vars before the vars that use them",
			            VAR_DEPTH_MAX);
		p->depth_reported = true;
		return NULL; /* not FAILED: the var itself may be fine */
	}
	v->state = VAR_BUSY;
	chain->v[chain->depth++] = v;
	if (expand_into(p, v->raw, v->line, &b, chain) < 0) {
		free(b.s);
		v->state = VAR_FAILED;
	} else {
		v->value = b.s;
		v->state = VAR_DONE;
	}
	chain->depth--;
	return v->value;
}

/* The expanded form of a value (malloc'ed), or NULL if it cannot be. */
char *spec_expand(struct parser *p, const char *text, int line)
{
	struct var_chain chain = { .depth = 0 };
	struct spec_buf b = { 0 };

	if (expand_into(p, text, line, &b, &chain) < 0) {
		free(b.s);
		return NULL;
	}
	return b.s;
}

void spec_collect_vars(struct parser *p)
{
	struct section *vs = NULL;
	size_t n = 0;

	for (size_t i = 0; i < p->nsects; i++)
		if (p->sects[i].kind == SECT_VARS)
			vs = &p->sects[i];
	if (!vs)
		return;
	p->vars = xcalloc(vs->n, sizeof *p->vars);
	for (size_t i = 0; i < vs->n; i++) {
		struct entry *e = &vs->entries[i];

		if (e->dup)
			continue;
		if (!spec_is_identifier(e->key)) {
			spec_report(p, e->line, "bad var name '%s': use letters, digits and '_', not starting with a digit",
			            e->key);
			continue;
		}
		p->vars[n].name = e->key;
		p->vars[n].raw = e->value;
		p->vars[n].line = e->line;
		n++;
	}
	p->nvars = n;
	qsort(p->vars, n, sizeof *p->vars, var_cmp);
	/* Expand them all now, in file order, so that a broken var is reported
	 * even when nothing uses it. */
	for (size_t i = 0; i < vs->n; i++) {
		struct entry *e = &vs->entries[i];
		struct var *v;

		if (e->dup || !spec_is_identifier(e->key))
			continue;
		v = find_var(p, e->key, strlen(e->key));
		if (v) {
			struct var_chain chain = { .depth = 0 };

			var_value(p, v, &chain);
		}
	}
}
