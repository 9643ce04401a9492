#!/bin/bash
# The lab's pipeline with its job folders on NFS (a real nfs-ganesha, reached
# with libnfs): the scheduler and two mounts each have their own connections
# to the server. Stage 1 (warm) runs on host "warm" through one mount, the
# timing instances on "time1" and "time2" through the other, so every
# checkpoint crosses from one NFS client to another; the gathered CSV must be
# right. Also: data/ is shared, the runner's logs land on the volume, and the
# files belong to the submitter on the server.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"

start_nfs
start_sched
start_fs
MNT_B=$TEST_DIR/mnt-b
mkdir -p "$MNT_B"
parsafs "$MNT_B" --sched "unix:$SOCK" --storage "$STORAGE" -f -o allow_other >>"$LOGS/fs-b.log" 2>&1 &
DAEMON_PID[fs-b]=$!
MOUNTS+=("$MNT_B")
wait_for "second mount is up" 20 is_mounted "$MNT_B"
wait_for "second mount answers" 20 test -e "$MNT_B/status"

start_runner warm --cpus 1 --cpu-limit 100
start_runner time1 --cpus 2 --cpu-limit 100 --mount "$MNT_B"
start_runner time2 --cpus 2 --cpu-limit 100 --mount "$MNT_B"

# The example pipeline, with each stage pinned to its hosts.
spec=$TEST_DIR/pipeline.conf
sed -e '/^\[stage warm\]/a hosts = warm' -e '/^\[stage timing\]/a hosts = time*' \
	-e '/^\[stage gather\]/a hosts = warm' "$PARSA_SRC/examples/lab-pipeline.conf" >"$spec"
id=$(submit "$spec" pipeline.conf) || fail "cp into queue/ failed"
wait_job "$id" 120 succeeded
pass "the pipeline succeeded with its folders on NFS"

results=$MNT/jobs/$id/out/gather/results.csv
check "results.csv has a header and 16 samples" test "$(wc -l <"$results")" -eq 17
check "sample 7's cycles are right" grep -q '^ckpt-0007,8000,' "$results"
check "the other mount reads the same results" cmp -s "$results" "$MNT_B/jobs/$id/out/gather/results.csv"
hosts=$(cat "$MNT/jobs/$id/stages/timing/instances"/*/status | sed -n 's/^host: //p' | sort -u | tr '\n' ' ')
check "timing ran on both timing hosts ($hosts)" test "$hosts" = "time1 time2 "
check "warm ran on host warm" grep -q '^host: warm' "$MNT/jobs/$id/stages/warm/instances/0/status"
check "the checkpoint folders are on the export" \
	test "$(ls -d "$NFS_EXPORT/jobs/$id/out/warm"/ckpt-* | wc -l)" -eq 16
check "the instances' logs are on the export" test -e "$NFS_EXPORT/jobs/$id/log/warm/0.log"

# data/: one area for inputs, the same from every mount, sticky like /tmp.
check "data/ is listed at the root" sh -c "ls '$MNT' | grep -qx data"
check "data/ is world-writable and sticky" test "$(stat -c %a "$MNT/data")" = 1777
head -c 3000000 /dev/urandom >"$TEST_DIR/image.qcow2"
cp "$TEST_DIR/image.qcow2" "$MNT/data/" || fail "cp into data/ failed"
check "the other mount sees the same data/ file" cmp -s "$TEST_DIR/image.qcow2" "$MNT_B/data/image.qcow2"
check "data/ lives on the volume" cmp -s "$TEST_DIR/image.qcow2" "$NFS_EXPORT/data/image.qcow2"
check "mv from data/ into out/ works (copy across)" \
	mv "$MNT/data/image.qcow2" "$MNT/jobs/$id/out/gather/image.qcow2"
check "it moved" cmp -s "$TEST_DIR/image.qcow2" "$MNT/jobs/$id/out/gather/image.qcow2"

# A second job, by a user: its folders and files are theirs on the server.
ensure_user parsa-nfs1 parsa-nfsg
uid=$(id -u parsa-nfs1)
printf '[stage s]\nrun = echo hi > "$PARSA_OUT/f"\n' >"$TEST_DIR/u.conf"
chmod 644 "$TEST_DIR/u.conf"
as_user parsa-nfs1 cp "$TEST_DIR/u.conf" "$MNT/queue/u.conf" || fail "user submission failed"
uid_job=$(as_user parsa-nfs1 readlink "$MNT/jobs/last")
wait_job "$uid_job" 60 succeeded
check "the user's output file is theirs on the server" \
	test "$(stat -c %u "$NFS_EXPORT/jobs/$uid_job/out/s/f")" = "$uid"
check "the user's stage folder is theirs on the server" \
	test "$(stat -c %u "$NFS_EXPORT/jobs/$uid_job/out/s")" = "$uid"
