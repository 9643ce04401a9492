# Sourced by bench/storage (after storage-env.sh): 8 readers, then 8
# writers, at once, each on a file of its own of $par_size bytes, through the
# NFS mount and straight to the export with libnfs (8 nfs-cat to /dev/null;
# 8 nfs-cp from files in memory), alternating (A B B A ...), the median of
# $runs rounds of the total MB/s. Readers start with the page cache dropped
# (the server reads its disk); a writer's time runs to the end of a sync.
# par8_read_ratio, par8_write_ratio: the mount over libnfs.
par_src=/dev/shm/parsa-bench-par.$$
head -c "$par_size" /dev/urandom >"$par_src"
for i in 0 1 2 3 4 5 6 7; do
	cp "$par_src" "$out_nfs/par$i"
done
par_total=$((8 * par_size))
# par8 COMMAND-WITH-%i: the 8 commands at once; microseconds until the last ends
par8() {
	local t0 t1 i pids=() fail=0
	t0=$(date +%s%N)
	for i in 0 1 2 3 4 5 6 7; do
		sh -c "${1//%i/$i}" >/dev/null &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i" || fail=1; done
	t1=$(date +%s%N)
	((fail == 0)) || { echo "bench/storage: failed: $1" >&2; return 1; }
	echo "$(((t1 - t0) / 1000))"
}
par_read_mount() { drop; par8 "dd if='$out_nfs/par%i' of=/dev/null bs=1M status=none"; }
par_read_libnfs() { drop; par8 "nfs-cat '$url/jobs/$id/out/s/par%i?$opts' >/dev/null"; }
par_write_mount() { rm -f "$out_nfs"/pw*; drop; cat "$par_src" >/dev/null; par8 "dd if='$par_src' of='$out_nfs/pw%i' bs=1M status=none && sync"; }
par_write_libnfs() { rm -f "$out_nfs"/pw*; drop; cat "$par_src" >/dev/null; par8 "nfs-cp '$par_src' '$url/jobs/$id/out/s/pw%i?$opts' && sync"; }
size_saved=$size
size=$par_total
res=$(compare par_read_mount par_read_libnfs)
read -r par_r_mount par_r_ref <<<"$res"
res=$(compare par_write_mount par_write_libnfs)
read -r par_w_mount par_w_ref <<<"$res"
size=$size_saved
rm -f "$par_src" "$out_nfs"/par* "$out_nfs"/pw*
cat <<EOP
par8_size: $par_size
par8_read_mount_mb_s: $par_r_mount
par8_read_libnfs_mb_s: $par_r_ref
par8_write_mount_mb_s: $par_w_mount
par8_write_libnfs_mb_s: $par_w_ref
par8_read_ratio: $(ratio "$par_r_mount" "$par_r_ref")
par8_write_ratio: $(ratio "$par_w_mount" "$par_w_ref")
EOP
