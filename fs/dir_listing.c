/* An open folder's entries (see dir_listing.h): names in one block, the
 * rest in an array beside it. */
#include "dir_listing.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct dir_entry {
	uint64_t ino;
	uint32_t mode;           /* 0: no stat given */
	uint32_t name_at;        /* offset in names */
};

struct dir_listing {
	char *path;
	struct dir_entry *entries;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
};

struct dir_listing *dir_listing_create(const char *path)
{
	struct dir_listing *l = xcalloc(1, sizeof *l);

	l->path = xstrdup(path);
	return l;
}

void dir_listing_destroy(struct dir_listing *l)
{
	if (!l)
		return;
	free(l->entries);
	free(l->names);
	free(l->path);
	free(l);
}

const char *dir_listing_path(const struct dir_listing *l)
{
	return l->path;
}

void dir_listing_clear(struct dir_listing *l)
{
	free(l->entries);
	free(l->names);
	l->entries = NULL;
	l->names = NULL;
	l->n = l->cap = l->names_len = l->names_cap = 0;
}

int dir_listing_add(void *arg, const char *name, const struct stat *st)
{
	struct dir_listing *l = arg;
	size_t len = strlen(name) + 1;

	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 64;
		l->entries = xrealloc(l->entries, l->cap * sizeof *l->entries);
	}
	while (l->names_len + len > l->names_cap) {
		l->names_cap = l->names_cap ? l->names_cap * 2 : 1024;
		l->names = xrealloc(l->names, l->names_cap);
	}
	memcpy(l->names + l->names_len, name, len);
	l->entries[l->n++] = (struct dir_entry){
		.ino = st ? (uint64_t)st->st_ino : 0,
		.mode = st ? (uint32_t)st->st_mode : 0,
		.name_at = (uint32_t)l->names_len,
	};
	l->names_len += len;
	return 0;
}

size_t dir_listing_count(const struct dir_listing *l)
{
	return l->n;
}

const char *dir_listing_entry(const struct dir_listing *l, size_t i, struct stat *st, bool *has_st)
{
	const struct dir_entry *e = &l->entries[i];

	memset(st, 0, sizeof *st);
	st->st_ino = (ino_t)e->ino;
	st->st_mode = (mode_t)e->mode;
	*has_st = e->mode != 0;
	return l->names + e->name_at;
}
