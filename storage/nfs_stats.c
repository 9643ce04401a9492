/* The NFS backend's requests counted by NFSv3 procedure, for bench/nfs-rpc
 * and docs/design.md's table: with PARSA_NFS_RPC_COUNTS=FILE in a daemon's
 * environment, its NFS backends add each request they send to a shared
 * mapping of FILE, which a benchmark reads while the mount runs (od -t u8).
 * Without it nothing is mapped and counting costs one branch. */
#include "nfs_internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

void rpc_stats_open(struct nfs_backend *nb)
{
	const char *file = getenv("PARSA_NFS_RPC_COUNTS");
	const size_t size = RPC_STATS_SLOTS * sizeof(uint64_t);
	struct stat st;
	void *map;
	int fd;

	if (!file || !*file)
		return;
	/* Best effort, like a debugging aid: a file that cannot be mapped
	 * leaves the backend uncounted, never failed. */
	fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && (st.st_size >= (off_t)size || ftruncate(fd, (off_t)size) == 0)) {
		map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (map != MAP_FAILED)
			nb->rpc_counts = map;
	}
	close(fd);
}

void rpc_stats_close(struct nfs_backend *nb)
{
	if (nb->rpc_counts)
		munmap((void *)nb->rpc_counts, RPC_STATS_SLOTS * sizeof(uint64_t));
	nb->rpc_counts = NULL;
}

void rpc_count(struct nfs_backend *nb, int proc)
{
	if (nb->rpc_counts && proc >= 0 && proc < RPC_STATS_SLOTS)
		atomic_fetch_add_explicit(&nb->rpc_counts[proc], 1, memory_order_relaxed);
}
