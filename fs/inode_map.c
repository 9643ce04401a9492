/* The names of multiply-linked files and the set-uid generation (see
 * inode_map.h). Small and scanned linearly: it holds files with several names
 * that were looked at recently, which a job's outputs rarely have. */
#include "inode_map.h"
#include "util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

enum { MAP_FILES = 256, MAP_NAMES = 4 };

struct file_names {
	uint64_t ino;            /* 0: a free slot */
	uint64_t used;           /* the map's clock when last seen */
	unsigned int next;       /* the name slot to replace when all are taken */
	char *name[MAP_NAMES];
	uint64_t hash[MAP_NAMES];
};

struct inode_map {
	pthread_mutex_t lock;
	size_t count;            /* files held; protected by lock */
	uint64_t clock;          /* protected by lock */
	struct file_names files[MAP_FILES];   /* protected by lock */
	atomic_uint privs_gen;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

struct inode_map *inode_map_create(void)
{
	struct inode_map *m = xcalloc(1, sizeof *m);

	pthread_mutex_init(&m->lock, NULL);
	atomic_init(&m->privs_gen, 0);
	return m;
}

static void clear_file(struct file_names *f)
{
	for (int i = 0; i < MAP_NAMES; i++)
		free(f->name[i]);
	memset(f, 0, sizeof *f);
}

void inode_map_destroy(struct inode_map *m)
{
	if (!m)
		return;
	for (int i = 0; i < MAP_FILES; i++)
		clear_file(&m->files[i]);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

/* The file and the name slot holding path, or NULL. Under lock. */
static struct file_names *find_name(struct inode_map *m, const char *path, int *slot)
{
	uint64_t h = hash_str(path);

	for (int i = 0; i < MAP_FILES && m->count; i++) {
		struct file_names *f = &m->files[i];

		if (!f->ino)
			continue;
		for (int j = 0; j < MAP_NAMES; j++)
			if (f->name[j] && f->hash[j] == h && strcmp(f->name[j], path) == 0) {
				*slot = j;
				return f;
			}
	}
	return NULL;
}

static void drop_name(struct inode_map *m, struct file_names *f, int slot)
{
	free(f->name[slot]);
	f->name[slot] = NULL;
	for (int j = 0; j < MAP_NAMES; j++)
		if (f->name[j])
			return;
	clear_file(f);
	m->count--;
}

/* The file of ino, a free slot for it, or the least recently seen file. */
static struct file_names *file_for(struct inode_map *m, uint64_t ino)
{
	struct file_names *free_slot = NULL, *oldest = NULL;

	for (int i = 0; i < MAP_FILES; i++) {
		struct file_names *f = &m->files[i];

		if (f->ino == ino)
			return f;
		if (!f->ino && !free_slot)
			free_slot = f;
		if (f->ino && (!oldest || f->used < oldest->used))
			oldest = f;
	}
	if (free_slot) {
		m->count++;
		free_slot->ino = ino;
		return free_slot;
	}
	clear_file(oldest);
	oldest->ino = ino;
	return oldest;
}

void inode_map_seen(struct inode_map *m, const char *path, uint64_t ino, nlink_t nlink)
{
	struct file_names *f;
	int slot, j;

	if (nlink <= 1 || ino == 0)
		return;
	pthread_mutex_lock(&m->lock);
	f = find_name(m, path, &slot);
	if (f && f->ino != ino) {
		drop_name(m, f, slot);   /* the name now belongs to another file */
		f = NULL;
	}
	if (!f) {
		f = file_for(m, ino);
		for (j = 0; j < MAP_NAMES && f->name[j]; j++)
			;
		if (j == MAP_NAMES) {
			j = (int)(f->next++ % MAP_NAMES);
			free(f->name[j]);
		}
		f->name[j] = xstrdup(path);
		f->hash[j] = hash_str(path);
	}
	f->used = ++m->clock;
	pthread_mutex_unlock(&m->lock);
}

char **inode_map_others(struct inode_map *m, const char *path, int forget)
{
	struct file_names *f;
	char **names = NULL;
	size_t n = 0;
	int slot;

	pthread_mutex_lock(&m->lock);
	f = m->count ? find_name(m, path, &slot) : NULL;
	if (f) {
		names = xcalloc(MAP_NAMES + 1, sizeof *names);
		for (int j = 0; j < MAP_NAMES; j++)
			if (j != slot && f->name[j])
				names[n++] = xstrdup(f->name[j]);
		if (forget)
			drop_name(m, f, slot);
	}
	pthread_mutex_unlock(&m->lock);
	if (names && n == 0) {
		free(names);
		names = NULL;
	}
	return names;
}

void inode_map_free_names(char **names)
{
	if (!names)
		return;
	for (char **p = names; *p; p++)
		free(*p);
	free(names);
}

void inode_map_renamed(struct inode_map *m, const char *path, const char *to)
{
	struct file_names *f;
	int slot;

	pthread_mutex_lock(&m->lock);
	if (m->count && (f = find_name(m, to, &slot)))
		drop_name(m, f, slot);
	if (m->count && (f = find_name(m, path, &slot))) {
		free(f->name[slot]);
		f->name[slot] = xstrdup(to);
		f->hash[slot] = hash_str(to);
	}
	pthread_mutex_unlock(&m->lock);
}

void inode_map_privs_changed(struct inode_map *m)
{
	atomic_fetch_add(&m->privs_gen, 1);
}

unsigned int inode_map_privs_gen(struct inode_map *m)
{
	return atomic_load(&m->privs_gen);
}
