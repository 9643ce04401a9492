# Sourced by bench/storage and bench/nfs-rpc: an nfs-ganesha export on
# loopback (under the ganesha lock the storage tests take too), a scheduler
# on it, and two parsa mounts, one on the export (mnt-nfs) and one on a local
# folder (mnt-local), with a queued job whose out/s folder is where the
# benchmark writes: $out_nfs and $out_local, and $dir/local/... behind the
# latter. The caller sets bench (its name after bench/), bin, needs (the
# commands it runs besides the servers) and optionally nfs_fs_env (VAR=VALUE
# words for the NFS mount's parsafs); stop() (on EXIT) takes everything down.
# fs_pid_nfs and fs_pid_local are the two parsafs processes.
for p in "$bin/parsa-sched" "$bin/parsafs"; do
	[ -x "$p" ] || { echo "bench/$bench: build first (cmake -S . -B build && cmake --build build)" >&2; exit 1; }
done
for p in ganesha.nfsd rpcbind $needs; do
	command -v "$p" >/dev/null || { echo "bench/$bench: $p is missing (scripts/install-deps.sh)" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "bench/$bench: run as root (ganesha, allow_other, drop_caches)" >&2; exit 1; }

NFS_PORT=12049
MNT_PORT=12048
dir=$(mktemp -d "/tmp/parsa-bench-$bench.XXXXXX")
chmod 755 "$dir"
mkdir -p "$dir/export" "$dir/local" "$dir/plain" "$dir/state" "$dir/mnt-nfs" "$dir/mnt-local" "$dir/logs"
pids=()
mounts=()
shm=/dev/shm/parsa-bench-$bench.$$
stop() {
	local m p
	for m in "${mounts[@]}"; do fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		p=${pids[$i]}
		kill "$p" 2>/dev/null || continue
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null || true
	done
	rm -f "$shm"
	rm -rf "$dir"
}
trap stop EXIT
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_until() {
	local what=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 20; i++)); do "$@" 2>/dev/null && return 0; sleep 0.05; done
	echo "bench/$bench: $what: not within ${secs}s (logs in $dir/logs)" >&2
	exit 1
}
mounted() { grep -q " $1 fuse" /proc/mounts; }

# One NFS server at a time on these ports (the storage tests take it too).
exec {lock_fd}>/tmp/parsa-ganesha.lock
flock -w 900 "$lock_fd" || { echo "bench/$bench: the NFS ports stay taken" >&2; exit 1; }
if ! port_open 111; then
	rpcbind -w -f >"$dir/logs/rpcbind.log" 2>&1 &
	pids+=($!)
	wait_until "rpcbind" 20 port_open 111
fi
cat >"$dir/ganesha.conf" <<EOF
NFS_CORE_PARAM {
	NFS_Port = $NFS_PORT; MNT_Port = $MNT_PORT; NLM_Port = 12047; Rquota_Port = 12046;
	Protocols = 3, 4; Enable_NLM = false; Enable_RQUOTA = false; Bind_addr = 127.0.0.1;
}
NFSV4 { Graceless = true; }
NFS_KRB5 { Active_krb5 = false; }
EXPORT {
	Export_Id = 1; Path = $dir/export; Pseudo = $dir/export; Access_Type = RW;
	Squash = No_Root_Squash; Transports = TCP; Protocols = 3; SecType = sys;
	FSAL { Name = VFS; }
}
EOF
ganesha.nfsd -F -f "$dir/ganesha.conf" -L "$dir/logs/ganesha.log" -p "$dir/ganesha.pid" &
pids+=($!)
opts="nfsport=$NFS_PORT&mountport=$MNT_PORT"
url="nfs://127.0.0.1$dir/export"
wait_until "ganesha" 30 nfs-ls "$url?$opts"
sock=$dir/state/sched.sock
"$bin/parsa-sched" --state "$dir/state" --socket "$sock" --storage "$url?$opts" \
	>"$dir/logs/sched.log" 2>&1 &
pids+=($!)
wait_until "scheduler" 20 test -S "$sock"
for kind in nfs local; do
	storage=$([ $kind = nfs ] && echo "$url?$opts" || echo "$dir/local")
	fs_env=()
	[ $kind = nfs ] && [ -n "${nfs_fs_env:-}" ] && read -ra fs_env <<<"$nfs_fs_env"
	env "${fs_env[@]}" "$bin/parsafs" "$dir/mnt-$kind" --sched "unix:$sock" --storage "$storage" -f -o allow_other \
		>"$dir/logs/fs-$kind.log" 2>&1 &
	pids+=($!)
	[ $kind = nfs ] && fs_pid_nfs=$! || fs_pid_local=$!
	mounts+=("$dir/mnt-$kind")
	wait_until "the $kind mount" 20 mounted "$dir/mnt-$kind"
done
wait_until "the mount answers" 20 test -e "$dir/mnt-nfs/status"
printf '[stage s]\nrun = true\n' >"$dir/mnt-nfs/queue/bench.conf"
id=$(readlink "$dir/mnt-nfs/jobs/last")
# No runner: the job stays queued; its output folder is where we write.
mkdir -p "$dir/local/jobs/$id/out/s"
out_nfs=$dir/mnt-nfs/jobs/$id/out/s
out_local=$dir/mnt-local/jobs/$id/out/s
ref_url="$url/jobs/$id/out/s/ref?$opts"
