/* One NFSv3 request of the NFS backend, waited for: its callback copies what
 * the reply holds (take_*) into a struct call, call_finish waits on the
 * connection and turns the outcome into 0 or -1/errno. Also the translation
 * of attributes and times between NFSv3 and struct stat / timespec. */
#include "nfs_internal.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

void call_cb(struct rpc_context *rpc, int status, void *data, void *arg)
{
	struct call *call = arg;

	(void)rpc;
	call->rpc_status = status;
	if (status == RPC_STATUS_SUCCESS && data) {
		/* Every NFSv3 result starts with its nfsstat3. */
		call->nfs_status = *(const int *)data;
		if (call->nfs_status == NFS3_OK && call->take)
			call->take(call, data);
	}
	call->pending = 0;
}

static void take_fh(struct call *call, const nfs_fh3 *fh)
{
	if (fh->data.data_len > 0 && fh->data.data_len <= NFS3_FHSIZE) {
		call->fh.len = fh->data.data_len;
		memcpy(call->fh.val, fh->data.data_val, fh->data.data_len);
		call->have_fh = true;
	}
}

static void take_attr(struct call *call, const post_op_attr *a)
{
	if (a->attributes_follow) {
		call->attr = a->post_op_attr_u.attributes;
		call->have_attr = true;
	}
}

static void take_dir_attr(struct call *call, const wcc_data *w)
{
	if (w->after.attributes_follow) {
		call->dir_attr = w->after.post_op_attr_u.attributes;
		call->have_dir_attr = true;
	}
}

/* The folder's attributes after a change to a name in it. */
void take_remove(struct call *call, void *res)
{
	take_dir_attr(call, &((REMOVE3res *)res)->REMOVE3res_u.resok.dir_wcc);
}

void take_rmdir(struct call *call, void *res)
{
	take_dir_attr(call, &((RMDIR3res *)res)->RMDIR3res_u.resok.dir_wcc);
}

void take_symlink(struct call *call, void *res)
{
	take_dir_attr(call, &((SYMLINK3res *)res)->SYMLINK3res_u.resok.dir_wcc);
}

void take_mknod(struct call *call, void *res)
{
	take_dir_attr(call, &((MKNOD3res *)res)->MKNOD3res_u.resok.dir_wcc);
}

void take_link(struct call *call, void *res)
{
	take_dir_attr(call, &((LINK3res *)res)->LINK3res_u.resok.linkdir_wcc);
}

void take_rename(struct call *call, void *res)
{
	RENAME3resok *ok = &((RENAME3res *)res)->RENAME3res_u.resok;

	take_dir_attr(call, &ok->fromdir_wcc);
	if (ok->todir_wcc.after.attributes_follow) {
		call->dir2_attr = ok->todir_wcc.after.post_op_attr_u.attributes;
		call->have_dir2_attr = true;
	}
}

void take_lookup(struct call *call, void *res)
{
	LOOKUP3resok *ok = &((LOOKUP3res *)res)->LOOKUP3res_u.resok;

	take_fh(call, &ok->object);
	take_attr(call, &ok->obj_attributes);
}

void take_getattr(struct call *call, void *res)
{
	call->attr = ((GETATTR3res *)res)->GETATTR3res_u.resok.obj_attributes;
	call->have_attr = true;
}

void take_create(struct call *call, void *res)
{
	CREATE3resok *ok = &((CREATE3res *)res)->CREATE3res_u.resok;

	if (ok->obj.handle_follows)
		take_fh(call, &ok->obj.post_op_fh3_u.handle);
	take_attr(call, &ok->obj_attributes);
	take_dir_attr(call, &ok->dir_wcc);
}

void take_mkdir(struct call *call, void *res)
{
	MKDIR3resok *ok = &((MKDIR3res *)res)->MKDIR3res_u.resok;

	if (ok->obj.handle_follows)
		take_fh(call, &ok->obj.post_op_fh3_u.handle);
	take_attr(call, &ok->obj_attributes);
	take_dir_attr(call, &ok->dir_wcc);
}

void take_readlink(struct call *call, void *res)
{
	const char *data = ((READLINK3res *)res)->READLINK3res_u.resok.data;

	call->text = xstrdup(data ? data : "");
}

void take_fsstat(struct call *call, void *res)
{
	call->fsstat = ((FSSTAT3res *)res)->FSSTAT3res_u.resok;
}

void take_commit(struct call *call, void *res)
{
	memcpy(call->verf, ((COMMIT3res *)res)->COMMIT3res_u.resok.verf, NFS3_WRITEVERFSIZE);
}

/* The handle and attributes of a listed entry, for the stats that follow a
 * listing (ls -l). */
static void readdir_remember(struct call *call, const entryplus3 *e)
{
	const nfs_fh3 *h = &e->name_handle.post_op_fh3_u.handle;
	struct fhbuf fh;
	char *path;

	if (h->data.data_len == 0 || h->data.data_len > NFS3_FHSIZE)
		return;
	fh.len = h->data.data_len;
	memcpy(fh.val, h->data.data_val, fh.len);
	path = *call->dir ? xasprintf("%s/%s", call->dir, e->name) : xstrdup(e->name);
	dcache_put_attr(call->nb, path, &fh, &e->name_attributes.post_op_attr_u.attributes, call->at);
	free(path);
}

void take_readdir(struct call *call, void *res)
{
	READDIRPLUS3resok *ok = &((READDIRPLUS3res *)res)->READDIRPLUS3res_u.resok;

	memcpy(call->cookieverf, ok->cookieverf, sizeof call->cookieverf);
	call->eof = ok->reply.eof;
	/* libnfs 4.0 decodes the entries at unaligned addresses: copy each one
	 * out before touching its fields. */
	for (const entryplus3 *next = ok->reply.entries; next && !call->stop; ) {
		entryplus3 e;
		struct stat st;

		memcpy(&e, next, sizeof e);
		next = e.nextentry;
		call->cookie = e.cookie;
		if (strcmp(e.name, ".") == 0 || strcmp(e.name, "..") == 0)
			continue;
		memset(&st, 0, sizeof st);
		if (e.name_attributes.attributes_follow)
			attr_to_stat(&e.name_attributes.post_op_attr_u.attributes, &st);
		if (call->nb && e.name_attributes.attributes_follow && e.name_handle.handle_follows)
			readdir_remember(call, &e);
		st.st_ino = e.fileid;
		if (call->fn(call->fn_arg, e.name, &st))
			call->stop = true;
	}
}

void call_init(struct call *call, void (*take)(struct call *, void *))
{
	memset(call, 0, sizeof *call);
	call->pending = 1;
	call->take = take;
}

/* Wait for a request that was queued (queued < 0: it was not) and turn its
 * outcome into 0 or -1/errno. */
int call_finish(struct op *op, struct call *call, int queued)
{
	if (queued < 0) {
		op->c->broken = op->c->unsent = true;
		errno = EIO;
		return -1;
	}
	if (conn_wait(op->c, &call->pending, 0, op->deadline) < 0)
		return -1;
	if (call->rpc_status != RPC_STATUS_SUCCESS) {
		op->c->broken = true;
		errno = call->rpc_status == RPC_STATUS_TIMEOUT ? ETIMEDOUT : EIO;
		return -1;
	}
	/* Answered, even with an error: the server is there. */
	nfs_reachable(op->nb);
	if (call->nfs_status != NFS3_OK) {
		errno = nfs_errno(call->nfs_status);
		return -1;
	}
	return 0;
}

void set_fh(nfs_fh3 *to, const struct fhbuf *fh)
{
	to->data.data_len = fh->len;
	to->data.data_val = (char *)fh->val;
}

int rpc_lookup(struct op *op, const struct fhbuf *dir, const char *name, struct call *call)
{
	LOOKUP3args args;

	memset(&args, 0, sizeof args);
	set_fh(&args.what.dir, dir);
	args.what.name = (char *)name;
	call_init(call, take_lookup);
	conn_as(op->c, &op->cred);
	rpc_count(op->nb, NFS3_LOOKUP);
	return call_finish(op, call, rpc_nfs3_lookup_async(op->c->rpc, call_cb, &args, call));
}

int rpc_getattr(struct op *op, const struct fhbuf *fh, struct call *call)
{
	GETATTR3args args;

	memset(&args, 0, sizeof args);
	set_fh(&args.object, fh);
	call_init(call, take_getattr);
	conn_as(op->c, &op->cred);
	rpc_count(op->nb, NFS3_GETATTR);
	return call_finish(op, call, rpc_nfs3_getattr_async(op->c->rpc, call_cb, &args, call));
}

static void take_setattr(struct call *call, void *res)
{
	take_attr(call, &((SETATTR3res *)res)->SETATTR3res_u.resok.obj_wcc.after);
}

int rpc_setattr(struct op *op, const struct fhbuf *fh, const sattr3 *sa, fattr3 *after)
{
	SETATTR3args args;
	struct call call;
	int ret;

	memset(&args, 0, sizeof args);
	set_fh(&args.object, fh);
	args.new_attributes = *sa;
	call_init(&call, take_setattr);
	conn_as(op->c, &op->cred);
	rpc_count(op->nb, NFS3_SETATTR);
	ret = call_finish(op, &call, rpc_nfs3_setattr_async(op->c->rpc, call_cb, &args, &call));
	if (after) {
		memset(after, 0, sizeof *after);
		if (ret == 0 && call.have_attr)
			*after = call.attr;
	}
	return ret;
}

/* ---- attributes ---- */

void attr_to_stat(const fattr3 *a, struct stat *st)
{
	static const mode_t types[] = {
		[NF3REG] = S_IFREG, [NF3DIR] = S_IFDIR, [NF3BLK] = S_IFBLK, [NF3CHR] = S_IFCHR,
		[NF3LNK] = S_IFLNK, [NF3SOCK] = S_IFSOCK, [NF3FIFO] = S_IFIFO,
	};

	memset(st, 0, sizeof *st);
	st->st_mode = (a->type < ARRAY_LEN(types) ? types[a->type] : 0) | (a->mode & 07777);
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_size = (off_t)a->size;
	st->st_blocks = (blkcnt_t)((a->used + 511) / 512);
	/* Tools size their buffers by st_blksize: ask for the large requests we stream. */
	st->st_blksize = 1 << 20;
	st->st_ino = a->fileid;
	st->st_rdev = makedev(a->rdev.specdata1, a->rdev.specdata2);
	st->st_atim.tv_sec = a->atime.seconds;
	st->st_atim.tv_nsec = a->atime.nseconds;
	st->st_mtim.tv_sec = a->mtime.seconds;
	st->st_mtim.tv_nsec = a->mtime.nseconds;
	st->st_ctim.tv_sec = a->ctime.seconds;
	st->st_ctim.tv_nsec = a->ctime.nseconds;
}

void sattr_time(set_atime *at, set_mtime *mt, const struct timespec tv[2])
{
	const struct timespec *t[2] = { &tv[0], &tv[1] };
	time_how how[2];
	nfstime3 val[2];

	for (int i = 0; i < 2; i++) {
		val[i].seconds = (u_int)t[i]->tv_sec;
		val[i].nseconds = (u_int)t[i]->tv_nsec;
		how[i] = t[i]->tv_nsec == UTIME_OMIT ? DONT_CHANGE :
			 t[i]->tv_nsec == UTIME_NOW ? SET_TO_SERVER_TIME : SET_TO_CLIENT_TIME;
		if (how[i] != SET_TO_CLIENT_TIME)
			val[i].seconds = val[i].nseconds = 0;
	}
	at->set_it = how[0];
	at->set_atime_u.atime = val[0];
	mt->set_it = how[1];
	mt->set_mtime_u.mtime = val[1];
}

/* Whether NFSv3's nfstime3 (unsigned 32-bit seconds) holds t. */
bool nfs_time_fits(const struct timespec *t)
{
	if (t->tv_nsec == UTIME_NOW || t->tv_nsec == UTIME_OMIT)
		return true;
	return t->tv_sec >= 0 && (uint64_t)t->tv_sec <= UINT32_MAX;
}
