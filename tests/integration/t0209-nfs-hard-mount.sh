#!/bin/bash
# The mount behaves like a kernel hard mount (issue 35): with a real
# nfs-ganesha stopped for 6 s, a large cp into out/ and an ls, a write and a
# read started during the outage block and then complete correctly (checksums),
# with no EIO; MOUNT/storage says unreachable during the outage and reachable
# after, /parsa/status has the line, and the mount's log both changes. A
# server that hangs (SIGSTOP) past the timeout: mkdir, an exclusive create and
# rm wait and succeed. With
# --storage-patience 3 and a 10 s outage, calls fail with EIO after about 3 s.
# A parsafs started while the server is down mounts, says unreachable, and
# works (data/ made) once the server is back. Bounds on time are generous:
# the machine may be busy.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"

NFS_OPTIONS=timeout=3
start_nfs
start_sched
start_fs
printf '[stage s]\nrun = true\n' >"$TEST_DIR/s.conf"
id=$(submit "$TEST_DIR/s.conf") || fail "submission failed"
out=$MNT/jobs/$id/out/s
wait_for "the job's out/ is there" 30 test -d "$out"
fs_pid=${DAEMON_PID[fs]}

check "storage says reachable" grep -qx 'state: reachable' "$MNT/storage"
check "storage names the volume" grep -qx "volume: nfs://127.0.0.1$NFS_EXPORT" "$MNT/storage"
check "storage is 0444" test "$(stat -c %a "$MNT/storage")" = 444
check "storage is listed at the root" sh -c "ls '$MNT' | grep -qx storage"
check "status has no storage line while reachable" sh -c "! grep -q '^storage:' '$MNT/status'"

head -c $((16 * 1024 * 1024)) /dev/urandom >"$TEST_DIR/chunk"
for i in $(seq 1 12); do cat "$TEST_DIR/chunk"; done >"$TEST_DIR/big"
want=$(md5sum <"$TEST_DIR/big")
cp "$TEST_DIR/chunk" "$out/pre" || fail "cannot write out/pre"
want_pre=$(md5sum <"$TEST_DIR/chunk")
# Out of the kernel's page cache and our read-ahead: the read below must go
# to the server.
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true

# ---- a 6 s outage under a large copy ----
cp "$TEST_DIR/big" "$out/copy" 2>"$TEST_DIR/cp.err" &
cp_pid=$!
copied() { [ "$(stat -c %s "$NFS_EXPORT/jobs/$id/out/s/copy" 2>/dev/null || echo 0)" -ge $((32 * 1024 * 1024)) ]; }
wait_for "the copy is under way" 120 copied
# A writer that is sure to span the outage whatever the machine's speed: a
# chunk a second, through one open file.
(for i in $(seq 1 12); do cat "$TEST_DIR/chunk"; sleep 1; done |
	dd of="$out/paced" bs=1M iflag=fullblock status=none) 2>"$TEST_DIR/paced.err" &
paced_pid=$!
wait_for "the paced writer is under way" 60 test -s "$NFS_EXPORT/jobs/$id/out/s/paced"
kill_ganesha KILL
pass "ganesha killed during the copy"
wait_for "storage says unreachable" 20 grep -qx 'state: unreachable' "$MNT/storage"
check "storage says since when" grep -Eq '^since: [0-9]+ \([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} UTC\)$' "$MNT/storage"
check "storage says why" grep -q '^reason: .' "$MNT/storage"
check "storage still names the volume" grep -qx "volume: nfs://127.0.0.1$NFS_EXPORT" "$MNT/storage"
check "status says so first" sh -c "head -1 '$MNT/status' | grep -Eq '^storage: unreachable since [0-9:]{8} \(.*\); I/O in out/ and data/ waits up to 300 s$'"
check "the scheduler still answers in status" grep -q '^storage: unreachable' "$MNT/status"

ls "$out" >"$TEST_DIR/ls.out" 2>"$TEST_DIR/ls.err" &
ls_pid=$!
sh -c "echo during >'$out/during'" 2>"$TEST_DIR/write.err" &
write_pid=$!
md5sum <"$out/pre" >"$TEST_DIR/pre.md5" 2>"$TEST_DIR/read.err" &
read_pid=$!
# The outage itself lasts 6 s: calls made in it must wait, not fail.
sleep 6
for p in "$ls_pid:ls" "$write_pid:write" "$read_pid:read"; do
	if ! kill -0 "${p%%:*}" 2>/dev/null; then
		wait "${p%%:*}" || fail "${p#*:} during the outage failed: $(cat "$TEST_DIR/${p#*:}.err" 2>/dev/null)"
		log "${p#*:} during the outage was answered (from a cache)"
	fi
done
if kill -0 "$cp_pid" 2>/dev/null; then
	pass "cp still runs (waits)"
else
	wait "$cp_pid" || fail "cp failed during the outage: $(cat "$TEST_DIR/cp.err")"
	log "cp was done before the server went (a fast machine): the paced writer spans the outage"
fi
check "the paced writer still runs (waits)" kill -0 "$paced_pid"
start_ganesha
pass "ganesha back after the outage"

waited() {
	local pid=$1 what=$2 secs=$3 deadline
	deadline=$(($(date +%s) + secs))
	while kill -0 "$pid" 2>/dev/null; do
		[ "$(date +%s)" -lt "$deadline" ] || fail "$what still waits ${secs} s after the server came back"
		sleep 0.2
	done
	wait "$pid"
}
if kill -0 "$cp_pid" 2>/dev/null; then
	waited "$cp_pid" "cp" 240 || fail "cp failed: $(cat "$TEST_DIR/cp.err")"
fi
pass "cp finished without an error"
waited "$ls_pid" "ls" 60 || fail "ls failed: $(cat "$TEST_DIR/ls.err")"
check "ls listed the folder" grep -qx copy "$TEST_DIR/ls.out"
waited "$write_pid" "the write" 60 || fail "the write failed: $(cat "$TEST_DIR/write.err")"
check "the write is there" test "$(cat "$out/during")" = during
waited "$read_pid" "the read" 60 || fail "the read failed: $(cat "$TEST_DIR/read.err")"
check "the read read the right bytes" test "$(cat "$TEST_DIR/pre.md5")" = "$want_pre"
waited "$paced_pid" "the paced writer" 240 || fail "the paced writer failed: $(cat "$TEST_DIR/paced.err")"
check "the paced file is complete (checksum)" test "$(md5sum <"$out/paced")" = "$(for i in $(seq 1 12); do cat "$TEST_DIR/chunk"; done | md5sum)"
check "the copy is complete (checksum through the mount)" test "$(md5sum <"$out/copy")" = "$want"
check "and on the export" test "$(md5sum <"$NFS_EXPORT/jobs/$id/out/s/copy")" = "$want"
check "no I/O error anywhere" sh -c "! grep -l 'Input/output error' '$TEST_DIR'/*.err"
wait_for "storage says reachable again" 20 grep -qx 'state: reachable' "$MNT/storage"
check "status has no storage line any more" sh -c "! grep -q '^storage:' '$MNT/status'"
check "the log says it became unreachable" grep -q "storage nfs://127.0.0.1$NFS_EXPORT: unreachable: " "$LOGS/fs.log"
check "the log says it is back" grep -Eq "storage nfs://127.0.0.1$NFS_EXPORT: reachable again after [0-9]+\.[0-9] s" "$LOGS/fs.log"
grep -q "sent again" "$LOGS/fs.log" && log "writes cut off by the outage were sent again: $(grep -c "sent again" "$LOGS/fs.log") files"

# ---- a server that hangs (SIGSTOP) longer than the timeout (3 s) ----
# Requests get no answer (some may be carried out once it resumes, their
# answers lost): mkdir, an exclusive create and rm wait and succeed.
echo x >"$out/doomed"
gpid=${DAEMON_PID[ganesha]}
on_cleanup "kill -CONT $gpid"
kill -STOP "$gpid"
mkdir "$out/made-in-a-hang" 2>"$TEST_DIR/hang-mkdir.err" &
hm_pid=$!
sh -c "set -C; echo new >'$out/excl-in-a-hang'" 2>"$TEST_DIR/hang-excl.err" &
he_pid=$!
rm "$out/doomed" 2>"$TEST_DIR/hang-rm.err" &
hr_pid=$!
wait_for "storage says unreachable while the server hangs" 30 grep -qx 'state: unreachable' "$MNT/storage"
sleep 2
kill -CONT "$gpid"
pass "ganesha hung for more than its timeout"
waited "$hm_pid" "mkdir" 120 || fail "mkdir across the hang failed: $(cat "$TEST_DIR/hang-mkdir.err")"
check "mkdir made the folder" test -d "$NFS_EXPORT/jobs/$id/out/s/made-in-a-hang"
waited "$he_pid" "the exclusive create" 120 || fail "the exclusive create failed: $(cat "$TEST_DIR/hang-excl.err")"
check "the exclusive create wrote the file" test "$(cat "$out/excl-in-a-hang")" = new
waited "$hr_pid" "rm" 120 || fail "rm across the hang failed: $(cat "$TEST_DIR/hang-rm.err")"
check "rm removed the file" test ! -e "$NFS_EXPORT/jobs/$id/out/s/doomed"
wait_for "storage says reachable after the hang" 20 grep -qx 'state: reachable' "$MNT/storage"

# ---- --storage-patience 3: a 10 s outage fails calls with EIO after ~3 s ----
MNT2=$TEST_DIR/mnt2
FS_FLAGS="--storage-patience 3" start_fs "$MNT2"
out2=$MNT2/jobs/$id/out/s
check "the second mount reads the volume" test -s "$out2/pre"
kill_ganesha KILL
t0=$(date +%s%N)
ls "$out2/" >/dev/null 2>"$TEST_DIR/ls2.err" && fail "ls with 3 s of patience worked with the server down"
ms=$((($(date +%s%N) - t0) / 1000000))
check "it failed with EIO" grep -q 'Input/output error' "$TEST_DIR/ls2.err"
check "after the patience, not at once ($ms ms)" test "$ms" -ge 2500
check "and not much later ($ms ms)" test "$ms" -lt 60000
check "status says I/O waits up to 3 s there" sh -c "head -1 '$MNT2/status' | grep -q 'waits up to 3 s'"

# ---- a parsafs started while the server is down ----
rm -rf "$NFS_EXPORT/data"
MNT3=$TEST_DIR/mnt3
start_fs "$MNT3"
fs3_pid=${DAEMON_PID[fs]}
pass "parsafs mounts with the server down"
check "its storage says unreachable" grep -qx 'state: unreachable' "$MNT3/storage"
check "its storage says why (the mount)" grep -q '^reason: cannot mount' "$MNT3/storage"
check "its log says so" grep -q "storage nfs://127.0.0.1$NFS_EXPORT: unreachable: cannot mount" "$LOGS/fs.log"
start_ganesha
wait_for "its storage says reachable" 20 grep -qx 'state: reachable' "$MNT3/storage"
wait_for "data/ is made once the server is back" 30 test -d "$NFS_EXPORT/data"
check "data/ through the mount" test -d "$MNT3/data"
wait_for "its folder of unlinked files is made" 30 test -d "$NFS_EXPORT/.parsa-unlinked/$(hostname | tr / _).$fs3_pid"
echo after >"$MNT3/jobs/$id/out/s/after" || fail "a write through it failed"
check "it works" test "$(cat "$NFS_EXPORT/jobs/$id/out/s/after")" = after
check "the first mount is still alive" kill -0 "$fs_pid"

# ---- stopping a mount while a call waits for the server ----
kill_ganesha KILL
ls "$MNT3/jobs/$id/out/s/" >/dev/null 2>"$TEST_DIR/ls3.err" &
ls3_pid=$!
wait_for "the mount sees the outage" 20 grep -qx 'state: unreachable' "$MNT3/storage"
kill -TERM "$fs3_pid"
t0=$(date +%s)
while kill -0 "$fs3_pid" 2>/dev/null; do
	[ $(($(date +%s) - t0)) -lt 60 ] || fail "parsafs still runs 60 s after SIGTERM, a call waiting (patience 300 s)"
	sleep 0.2
done
pass "parsafs stops within $(($(date +%s) - t0)) s of SIGTERM while a call waits for the server"
unset "DAEMON_PID[fs]"
wait "$ls3_pid" && fail "the waiting ls succeeded with the server down"
pass "the waiting call failed when the mount stopped"
