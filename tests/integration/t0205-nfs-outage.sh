#!/bin/bash
# The NFS server killed (SIGKILL) in the middle of a large copy through a
# mount without patience (patience=0 in the volume's URL, which wins over
# parsafs's --storage-patience; t0209 has the default, waiting through an
# outage): the copy fails cleanly (or, had it resumed, its data is right), calls
# fail with EIO or ETIMEDOUT within the volume's timeout instead of hanging,
# the scheduler keeps answering, the mount does not spin while it waits, and
# once the server is back the mount works again by itself: a new copy is
# verified by checksum.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"

NFS_OPTIONS="timeout=3&patience=0"
start_nfs
start_sched
start_fs
printf '[stage s]\nrun = true\n' >"$TEST_DIR/s.conf"
id=$(submit "$TEST_DIR/s.conf") || fail "submission failed"
out=$MNT/jobs/$id/out/s

head -c $((16 * 1024 * 1024)) /dev/urandom >"$TEST_DIR/chunk"
for i in $(seq 1 48); do cat "$TEST_DIR/chunk"; done >"$TEST_DIR/big"
want=$(md5sum <"$TEST_DIR/big")

cp "$TEST_DIR/big" "$out/copy" 2>"$TEST_DIR/cp.err" &
cp_pid=$!
copied() { [ "$(stat -c %s "$NFS_EXPORT/jobs/$id/out/s/copy" 2>/dev/null || echo 0)" -ge $((64 * 1024 * 1024)) ]; }
wait_for "the copy is under way" 60 copied
kill_ganesha KILL
pass "ganesha killed during the copy"
# CPU time (ms) the mount's daemon has used: a refused reconnection must not
# turn its waits into a busy loop (it did: a whole core until the time-out).
fs_cpu_ms() { awk '{ print ($14 + $15) * 10 }' "/proc/${DAEMON_PID[fs]}/stat"; }
cpu0=$(fs_cpu_ms)
wall0=$(date +%s%N)

# While it is down: errors, quickly; the scheduler still answers.
t0=$(date +%s%N)
if stat "$out/copy" >/dev/null 2>"$TEST_DIR/stat.err"; then
	log "stat answered from the kernel's cache"
fi
ls "$out" >/dev/null 2>&1 && fail "listing the volume worked with the server down"
t1=$(date +%s%N)
check "calls fail within the timeout ($(((t1 - t0) / 1000000)) ms)" test $(((t1 - t0) / 1000000)) -lt 8000
check "the scheduler answers meanwhile" timeout 5 grep -q '^state:' "$MNT/jobs/$id/status"
check "new jobs are taken meanwhile" timeout 10 cp "$TEST_DIR/s.conf" "$MNT/queue/during.conf"
wait_for "storage says unreachable" 20 grep -qx 'state: unreachable' "$MNT/storage"
check "status says I/O fails at once" sh -c "head -1 '$MNT/status' | grep -q 'I/O in out/ and data/ fails at once'"

deadline=$(($(date +%s) + 30))
while kill -0 "$cp_pid" 2>/dev/null; do
	[ "$(date +%s)" -lt "$deadline" ] || fail "cp still runs 30 s after the server died"
	sleep 0.1
done
cpu1=$(fs_cpu_ms)
wall=$((($(date +%s%N) - wall0) / 1000000))
check "the mount waits for the server without spinning ($((cpu1 - cpu0)) ms of CPU in $wall ms)" \
	test $((cpu1 - cpu0)) -lt $((wall / 2))
if wait "$cp_pid"; then
	check "the copy resumed and is complete" test "$(md5sum <"$out/copy")" = "$want"
else
	log "cp: $(cat "$TEST_DIR/cp.err")"
	check "the copy failed with an I/O error" grep -Eq "Input/output error|timed out|Connection" "$TEST_DIR/cp.err"
fi

start_ganesha
pass "ganesha restarted"
wait_for "the mount works again" 30 ls "$out"
cp "$TEST_DIR/big" "$out/copy2" || fail "a copy after the restart failed"
check "the new copy is complete (checksum)" test "$(md5sum <"$out/copy2")" = "$want"
check "and so it is on the export" test "$(md5sum <"$NFS_EXPORT/jobs/$id/out/s/copy2")" = "$want"
