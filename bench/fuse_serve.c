/* The floor benchmarks' mount and loop (fuse_serve.h). */
#include "fuse_serve.h"

#include <stdbool.h>
#include <unistd.h>

int fuse_serve(const char *name, const struct fuse_operations *ops, void *data, const char *mountpoint,
	       const char *const *opts)
{
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *loop = NULL;
	struct fuse *fuse = NULL;
	bool mounted = false, handlers = false;
	int ret = 1;

	fuse_opt_add_arg(&args, name);
	/* allow_other needs root (or user_allow_other in /etc/fuse.conf) */
	if (geteuid() == 0)
		fuse_opt_add_arg(&args, "-oallow_other");
	for (; opts && *opts; opts++)
		fuse_opt_add_arg(&args, *opts);
	fuse = fuse_new(&args, ops, sizeof *ops, data);
	if (!fuse || fuse_mount(fuse, mountpoint) != 0)
		goto out;
	mounted = true;
	if (fuse_set_signal_handlers(fuse_get_session(fuse)) != 0)
		goto out;
	handlers = true;
	loop = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(loop, 256);
	ret = fuse_loop_mt(fuse, loop) == 0 ? 0 : 1;
out:
	if (loop)
		fuse_loop_cfg_destroy(loop);
	if (handlers)
		fuse_remove_signal_handlers(fuse_get_session(fuse));
	if (mounted)
		fuse_unmount(fuse);
	if (fuse)
		fuse_destroy(fuse);
	fuse_opt_free_args(&args);
	return ret;
}
