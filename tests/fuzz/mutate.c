#include "mutate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Values that break number parsers: limits of the integer types, signs,
 * exponents and the empty string. */
static const char *const interesting[] = {
	"0", "-1", "1", "-0", "+1", "255", "256", "65536", "2147483647", "2147483648",
	"-2147483649", "4294967296", "9223372036854775807", "9223372036854775808",
	"-9223372036854775809", "18446744073709551615", "18446744073709551616",
	"1e308", "1e309", "-1e309", "0.5", ".5", "5.", "1.5e3", "nan", "inf", "0x10",
	"99999999999999999999999999", "", " ", "\t", "\n", "\r\n", "\"", "\\", "\0",
};

/* Allocation failure in a test driver: nothing sensible to do but stop. */
static void *must(void *p)
{
	if (!p) {
		fprintf(stderr, "fuzz: out of memory\n");
		abort();
	}
	return p;
}

void blob_list_add(struct blob_list *list, const uint8_t *data, size_t len)
{
	struct blob *b;

	list->items = must(realloc(list->items, (list->n + 1) * sizeof *list->items));
	b = &list->items[list->n++];
	b->data = must(malloc(len ? len : 1));
	memcpy(b->data, data, len);
	b->len = len;
	b->name = NULL;
}

void blob_list_free(struct blob_list *list)
{
	for (size_t i = 0; i < list->n; i++) {
		free(list->items[i].data);
		free(list->items[i].name);
	}
	free(list->items);
	*list = (struct blob_list){ 0 };
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* One dictionary line: an optional name=, then the token in quotes. */
static void dict_line(const char *line, struct blob_list *tokens)
{
	const char *p = strchr(line, '"');
	uint8_t buf[256];
	size_t n = 0;

	if (!p || line[strspn(line, " \t")] == '#')
		return;
	for (p++; *p && *p != '"' && n < sizeof buf; p++) {
		if (*p == '\\' && p[1] == 'x' && hex_digit(p[2]) >= 0 && hex_digit(p[3]) >= 0) {
			buf[n++] = (uint8_t)(hex_digit(p[2]) * 16 + hex_digit(p[3]));
			p += 3;
		} else if (*p == '\\' && p[1]) {
			buf[n++] = (uint8_t)*++p;
		} else {
			buf[n++] = (uint8_t)*p;
		}
	}
	if (n)
		blob_list_add(tokens, buf, n);
}

int dict_load(const char *path, struct blob_list *tokens)
{
	FILE *f = fopen(path, "r");
	char line[1024];

	if (!f)
		return -1;
	while (fgets(line, sizeof line, f))
		dict_line(line, tokens);
	fclose(f);
	return 0;
}

uint64_t mutate_rand(uint64_t *state)
{
	uint64_t x = *state ? *state : 0x9e3779b97f4a7c15ULL;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static size_t below(uint64_t *state, size_t n)
{
	return n ? (size_t)(mutate_rand(state) % n) : 0;
}

/* The working copy: data[0..len) with room for cap bytes. */
struct buf {
	uint8_t *data;
	size_t len, cap;
};

/* Replace data[at, at+cut) with what (n bytes), within cap. */
static void splice_in(struct buf *b, size_t at, size_t cut, const uint8_t *what, size_t n)
{
	if (at > b->len)
		at = b->len;
	if (cut > b->len - at)
		cut = b->len - at;
	if (b->len - cut + n > b->cap)
		n = b->cap - (b->len - cut);
	memmove(b->data + at + n, b->data + at + cut, b->len - at - cut);
	if (n)
		memcpy(b->data + at, what, n);
	b->len = b->len - cut + n;
}

static void mutate_step(uint64_t *st, struct buf *b, const struct blob_list *corpus,
			const struct blob_list *tokens)
{
	size_t at = below(st, b->len + 1);
	uint8_t byte;

	switch (below(st, 10)) {
	case 0: /* flip a bit */
		if (b->len)
			b->data[below(st, b->len)] ^= (uint8_t)(1u << below(st, 8));
		break;
	case 1: /* a random byte in place */
		if (b->len)
			b->data[below(st, b->len)] = (uint8_t)mutate_rand(st);
		break;
	case 2: /* insert a random byte */
		byte = (uint8_t)mutate_rand(st);
		splice_in(b, at, 0, &byte, 1);
		break;
	case 3: /* delete a run */
		splice_in(b, at, 1 + below(st, 16), NULL, 0);
		break;
	case 4: /* truncate */
		b->len = at;
		break;
	case 5: /* copy a run of itself elsewhere */
		if (b->len) {
			size_t from = below(st, b->len), n = 1 + below(st, b->len - from);
			uint8_t *copy = must(malloc(n));

			memcpy(copy, b->data + from, n);
			splice_in(b, at, 0, copy, n);
			free(copy);
		}
		break;
	case 6: { /* splice in a piece of another entry */
		const struct blob *o = &corpus->items[below(st, corpus->n)];
		size_t from = below(st, o->len + 1);

		splice_in(b, at, below(st, 32), o->data + from, below(st, o->len - from + 1));
		break;
	}
	case 7: /* insert or overwrite with a dictionary token */
	case 8:
		if (tokens->n) {
			const struct blob *t = &tokens->items[below(st, tokens->n)];

			splice_in(b, at, below(st, 2) ? 0 : t->len, t->data, t->len);
			break;
		}
		/* fall through */
	case 9: { /* an interesting number in place of a run */
		const char *v = interesting[below(st, sizeof interesting / sizeof *interesting)];

		splice_in(b, at, below(st, 8), (const uint8_t *)v, strlen(v) + (*v == '\0'));
		break;
	}
	}
}

uint8_t *mutate_one(uint64_t *state, const struct blob_list *corpus,
		    const struct blob_list *tokens, size_t max_len, size_t *len)
{
	const struct blob *from = &corpus->items[below(state, corpus->n)];
	struct buf b = { .data = must(malloc(max_len ? max_len : 1)), .cap = max_len };
	size_t steps = 1 + below(state, 4);

	b.len = from->len < max_len ? from->len : max_len;
	memcpy(b.data, from->data, b.len);
	for (size_t i = 0; i < steps; i++)
		mutate_step(state, &b, corpus, tokens);
	*len = b.len;
	return b.data;
}
