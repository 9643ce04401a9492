/* A folder's entries as read at the first readdir of an open folder, kept
 * with it and handed to the kernel by offset. Filled without offsets, libfuse
 * keeps a copy of its own, a malloc'ed entry of ~200 bytes each, and freed
 * them too late for the heap to shrink (50,000 jobs: 11 MB for good); here a
 * folder costs ~16 bytes an entry plus its name, in two arrays freed at
 * releasedir. */
#ifndef PARSA_DIR_LISTING_H
#define PARSA_DIR_LISTING_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

struct dir_listing;

/* For the folder at path (copied). */
struct dir_listing *dir_listing_create(const char *path);
void dir_listing_destroy(struct dir_listing *l);
const char *dir_listing_path(const struct dir_listing *l);

/* Forget the entries (a new read from offset 0: rewinddir). */
void dir_listing_clear(struct dir_listing *l);
/* Add an entry (an fs_fill_fn: arg is the listing); st, when given, lends its
 * inode number and type. Returns 0 (never full). */
int dir_listing_add(void *arg, const char *name, const struct stat *st);
size_t dir_listing_count(const struct dir_listing *l);
/* Entry i's name; *st gets its inode number and type, and the result says
 * whether it had any (else pass NULL on to libfuse). */
const char *dir_listing_entry(const struct dir_listing *l, size_t i, struct stat *st, bool *has_st);

#endif
