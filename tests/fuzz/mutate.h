/* A small random mutator for the fuzz harnesses when libFuzzer is not there:
 * it derives new inputs from the seed corpus (byte flips, truncation,
 * insertion, splicing, dictionary tokens) from one seeded generator, so that a
 * seed printed by a failing run gives the same inputs again. */
#ifndef PARSA_FUZZ_MUTATE_H
#define PARSA_FUZZ_MUTATE_H

#include <stddef.h>
#include <stdint.h>

/* An input in memory: the corpus entries and the dictionary's tokens. */
struct blob {
	uint8_t *data;
	size_t len;
	char *name;          /* the file it came from, or NULL */
};

struct blob_list {
	struct blob *items;
	size_t n;
};

void blob_list_add(struct blob_list *list, const uint8_t *data, size_t len);
void blob_list_free(struct blob_list *list);

/* Read a libFuzzer dictionary ("# comment" lines and "token" lines with \xNN,
 * \\ and \" escapes) into tokens. -1 when it cannot be read. */
int dict_load(const char *path, struct blob_list *tokens);

/* xorshift64*: a generator whose whole state is one number. */
uint64_t mutate_rand(uint64_t *state);

/* A new input (malloc'ed, *len set, at most max_len bytes) made from one
 * entry of corpus (which must not be empty) by one to four mutations. */
uint8_t *mutate_one(uint64_t *state, const struct blob_list *corpus,
		    const struct blob_list *tokens, size_t max_len, size_t *len);

#endif
