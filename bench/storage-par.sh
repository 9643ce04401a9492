# Sourced by bench/storage (after storage-env.sh): 8 readers, then 8
# writers, at once, each on a file of its own of $par_size bytes, through the
# NFS mount and straight to the export with libnfs (8 nfs-cat to /dev/null;
# 8 nfs-cp from files in memory), alternating (A B B A ...), the median of
# $runs rounds of the total MB/s. Readers start with the page cache dropped
# (the server reads its disk); a writer's time runs to the end of a sync.
# par8_read_ratio, par8_write_ratio: the mount over libnfs.
# par8_read_mount_cpu_s_per_gb: the CPU seconds (user + system, from
# /proc/PID/stat) the NFS mount's parsafs spent per 10^9 bytes the 8 readers
# read through it, the median over the rounds.
# par8_read_floor_ratio: the same 8 dd on bench_read_floor (a FUSE file
# system whose reads hand out a buffer and do nothing else) over 8 nfs-cat,
# alternated likewise: what FUSE alone lets through beside what libnfs
# does; par8_read_floor_cpu_s_per_gb: that file system's CPU per GB, FUSE's
# share of the mount's cost, which no file system on FUSE goes below.
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
par_cpu=$dir/par-cpu
: >"$par_cpu"
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# read_cpu PID FILE COMMAND-WITH-%i: par8 COMMAND, PID's CPU seconds per GB
# read added to FILE; prints par8's microseconds
read_cpu() {
	local c0 us
	drop
	c0=$(cpu_ticks "$1")
	us=$(par8 "$3") || return 1
	awk -v t=$(($(cpu_ticks "$1") - c0)) -v hz="$(getconf CLK_TCK)" -v b="$par_total" \
		'BEGIN { printf "%.3f\n", t / hz / (b / 1e9) }' >>"$2"
	echo "$us"
}
par_read_mount() { read_cpu "$fs_pid_nfs" "$par_cpu" "dd if='$out_nfs/par%i' of=/dev/null bs=1M status=none"; }
par_read_floor() { read_cpu "$floor_pid" "$par_floor_cpu" "dd if='$dir/mnt-floor/r%i' of=/dev/null bs=1M status=none"; }
# the median of the numbers in FILE
median_of() { sort -n "$1" | awk '{ v[++n] = $1 } END { print v[int((n + 1) / 2)] }'; }
par_read_libnfs() { drop; par8 "nfs-cat '$url/jobs/$id/out/s/par%i?$opts' >/dev/null"; }
par_write_mount() { rm -f "$out_nfs"/pw*; drop; cat "$par_src" >/dev/null; par8 "dd if='$par_src' of='$out_nfs/pw%i' bs=1M status=none && sync"; }
par_write_libnfs() { rm -f "$out_nfs"/pw*; drop; cat "$par_src" >/dev/null; par8 "nfs-cp '$par_src' '$url/jobs/$id/out/s/pw%i?$opts' && sync"; }
size_saved=$size
size=$par_total
res=$(compare par_read_mount par_read_libnfs)
read -r par_r_mount par_r_ref <<<"$res"
par_cpu_gb=$(median_of "$par_cpu")
echo "par_read_mount cpu (s/GB):" $(cat "$par_cpu") >&2
floor_bin=$bin/bench_read_floor
[ -x "$floor_bin" ] || floor_bin=$src_dir/build/bin/bench_read_floor
par_floor=n/a
par_floor_ref=n/a
par_floor_cpu=$dir/par-floor-cpu
: >"$par_floor_cpu"
if [ -x "$floor_bin" ]; then
	mkdir -p "$dir/mnt-floor"
	"$floor_bin" "$dir/mnt-floor" 8 "$par_size" >"$dir/logs/floor.log" 2>&1 &
	floor_pid=$!
	pids+=($!)
	mounts+=("$dir/mnt-floor")
	wait_until "the floor mount" 20 mounted "$dir/mnt-floor"
	# As parsafs does for its own mount (fs/main.c raise_readahead).
	echo 1024 >"/sys/class/bdi/$(mountpoint -d "$dir/mnt-floor")/read_ahead_kb" || true
	res=$(compare par_read_floor par_read_libnfs)
	read -r par_floor par_floor_ref <<<"$res"
else
	echo "bench/storage: no bench_read_floor (build it): no floor" >&2
fi
res=$(compare par_write_mount par_write_libnfs)
read -r par_w_mount par_w_ref <<<"$res"
size=$size_saved
rm -f "$par_src" "$out_nfs"/par* "$out_nfs"/pw*
# The mount gives its free heap back once idle for 5 s, at its next probe.
sleep 10
cat <<EOP
par8_size: $par_size
par8_read_mount_mb_s: $par_r_mount
par8_read_libnfs_mb_s: $par_r_ref
par8_write_mount_mb_s: $par_w_mount
par8_write_libnfs_mb_s: $par_w_ref
par8_read_ratio: $(ratio "$par_r_mount" "$par_r_ref")
par8_read_mount_cpu_s_per_gb: $par_cpu_gb
par8_read_floor_mb_s: $par_floor
par8_read_floor_libnfs_mb_s: $par_floor_ref
par8_read_floor_ratio: $( [ "$par_floor" = n/a ] && echo n/a || ratio "$par_floor" "$par_floor_ref")
par8_read_floor_cpu_s_per_gb: $( [ "$par_floor" = n/a ] && echo n/a || median_of "$par_floor_cpu")
parsafs_rss_mb_after: $(rss_mb "$fs_pid_nfs")
parsafs_local_rss_mb_after: $(rss_mb "$fs_pid_local")
par8_write_ratio: $(ratio "$par_w_mount" "$par_w_ref")
EOP
