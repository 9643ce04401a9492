/* The volume folder that holds this mount's files unlinked while open:
 * .parsa-unlinked/<host>.<pid> at the volume root. libfuse renames such a file
 * to a .fuse_hidden name and removes it at the last close; volume_dir.c sends
 * those names here, so the file leaves its folder (readdir, rmdir) while its
 * inode, or its NFS handle, stays valid, as the kernel's NFS client does. */
#ifndef PARSA_UNLINKED_H
#define PARSA_UNLINKED_H

struct backend;

#define UNLINKED_ROOT ".parsa-unlinked"

/* Remove the folders of daemons of this host that are gone (a crash leaves
 * its hidden files behind), then make this process's own, where any user may
 * rename into and remove from. The malloc'ed folder path, or NULL + errno. */
char *unlinked_prepare(struct backend *b);
/* The name unlinked_prepare gives this process's folder, without touching
 * the volume (start-up in an outage: the folder is made later). Malloc'ed. */
char *unlinked_path(void);

/* At unmount nothing is open any more: remove dir and what it still holds. */
void unlinked_finish(struct backend *b, const char *dir);

#endif
