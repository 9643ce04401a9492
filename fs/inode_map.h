/* What the mount knows about a backend file beyond one of its names. FUSE's
 * high-level library gives each name its own kernel inode, so a link, unlink
 * or rename through one name leaves the others' cached link counts stale: the
 * map keeps, for a bounded number of multiply-linked files, the names seen in
 * getattr replies, for ops.c to invalidate. It also counts the chmods that
 * set set-uid/set-gid bits, so open files know when to look at their mode again. */
#ifndef PARSA_INODE_MAP_H
#define PARSA_INODE_MAP_H

#include <stdint.h>
#include <sys/types.h>

struct inode_map;

struct inode_map *inode_map_create(void);
void inode_map_destroy(struct inode_map *m);

/* A getattr reply: path (as FUSE names it) is a non-directory with inode ino
 * and nlink links. Only nlink > 1 is remembered; the oldest file is forgotten
 * when the map is full, which only costs a stale nlink for attr_timeout. */
void inode_map_seen(struct inode_map *m, const char *path, uint64_t ino, nlink_t nlink);

/* The other known names of path's file, a malloc'ed NULL-terminated array of
 * malloc'ed strings (NULL when there are none); the caller frees it with
 * inode_map_free_names. forget also drops path itself (it was unlinked). */
char **inode_map_others(struct inode_map *m, const char *path, int forget);
void inode_map_free_names(char **names);

/* path was renamed to to: to's old file lost that name, path's file got it. */
void inode_map_renamed(struct inode_map *m, const char *path, const char *to);

/* Set-uid and set-gid: chmods through this mount that set such bits bump a
 * generation; an open file that checked its mode at an older one checks again. */
void inode_map_privs_changed(struct inode_map *m);
unsigned int inode_map_privs_gen(struct inode_map *m);

#endif
