#!/bin/bash
# A small volume: the export is a 24 MiB tmpfs. Writes past its end fail with
# ENOSPC (at write, flush or close: never silently), and the scheduler counts
# `disk =` against the volume's free space: two stages that each need most of
# it run one after the other, `why` saying that the second waits for space.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"

need_nfs
mkdir -p "$NFS_EXPORT"
mount -t tmpfs -o size=24m,mode=755 parsa-test "$NFS_EXPORT" || { echo "# SKIP: cannot mount a tmpfs"; exit 77; }
on_cleanup "umount -l '$NFS_EXPORT'"
start_nfs
start_sched
start_fs
start_runner local --cpus 4 --cpu-limit 100 --mem-limit 100

printf '[stage s]\nrun = true\n' >"$TEST_DIR/s.conf"
id=$(submit "$TEST_DIR/s.conf") || fail "submission failed"
wait_job "$id" 60 succeeded
out=$MNT/jobs/$id/out/s
head -c $((40 * 1024 * 1024)) /dev/urandom >"$TEST_DIR/big"
if cp "$TEST_DIR/big" "$out/big" 2>"$TEST_DIR/cp.err"; then
	fail "cp of 40 MiB onto a 24 MiB volume succeeded"
fi
grep -q "No space left on device" "$TEST_DIR/cp.err" || fail "cp failed otherwise: $(cat "$TEST_DIR/cp.err")"
pass "cp past the end of the volume fails with ENOSPC"
if dd if="$TEST_DIR/big" of="$out/dd" bs=1M conv=fsync status=none 2>"$TEST_DIR/dd.err"; then
	fail "dd conv=fsync past the end succeeded"
fi
grep -q "No space left on device" "$TEST_DIR/dd.err" || fail "dd failed otherwise: $(cat "$TEST_DIR/dd.err")"
pass "dd conv=fsync past the end fails with ENOSPC"
rm -f "$out/big" "$out/dd"
check "space comes back after rm" dd if="$TEST_DIR/big" of="$out/small" bs=1M count=4 conv=fsync status=none
rm -f "$out/small"

# Space: 14M each on a volume with about 24M free.
cat >"$TEST_DIR/a.conf" <<EOF2
[stage fill]
disk = 14M
run = while [ ! -e "$TEST_DIR/go" ]; do sleep 0.05; done
EOF2
cat >"$TEST_DIR/b.conf" <<EOF2
[stage fill]
disk = 14M
run = echo done > "\$PARSA_OUT/done"
EOF2
cat >"$TEST_DIR/c.conf" <<EOF2
[stage huge]
disk = 1T
run = true
EOF2
a=$(submit "$TEST_DIR/a.conf") || fail "submission a failed"
wait_for "stage a runs" 20 job_is "$a" running
b=$(submit "$TEST_DIR/b.conf") || fail "submission b failed"
c=$(submit "$TEST_DIR/c.conf") || fail "submission c failed"
wait_for "b says it waits for space" 20 grep -q "stage fill: waits for space on the volume: needs 14M" "$MNT/jobs/$b/why"
check "b is still queued" job_is "$b" queued
check "c needs more than the volume has" grep -q "stage huge: waits for space on the volume: needs 1T" "$MNT/jobs/$c/why"
touch "$TEST_DIR/go"
wait_job "$a" 30 succeeded
wait_job "$b" 30 succeeded
pass "b ran once a had ended and released its space"
check "c still waits" job_is "$c" queued
echo cancel >"$MNT/jobs/$c/ctl"
