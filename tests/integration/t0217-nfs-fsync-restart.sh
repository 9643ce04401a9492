#!/bin/bash
# fsync of a file written across a restart of the NFS server (issue 35): the
# mount keeps the data of answered UNSTABLE writes until a COMMIT with their
# verifier, and when nfs-ganesha restarted in between (a new verifier) sends
# them again and commits again, as a kernel client does, instead of EIO.
# - a 40 MiB file still open across a restart (KILL, start): its fsync
#   succeeds, the data sent again (the log says so), the export holds it;
# - the same closed without fsync after the restart: close commits (a
#   connection was lost meanwhile) and succeeds;
# - dd conv=fsync, paced across a restart, succeeds;
# - 100 MiB (past what a file keeps, 64 MiB) with the restart half-way and one
#   fsync at the end;
# each checked by md5 on the export.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"

NFS_OPTIONS=timeout=3
start_nfs
start_sched
start_fs
wait_for "data/ is there" 30 test -d "$MNT/data"
d=$MNT/data/fsync-restart
e=$NFS_EXPORT/data/fsync-restart
mkdir "$d" || fail "cannot make $d"

# writer SRC DST FIRST_MIB END: writes FIRST_MIB MiB of SRC to DST, touches
# DST.ready and waits for DST.go, writes the rest, then fsyncs (END=fsync)
# or only closes (END=close). Exit 0 and "ok", or 1 and the error.
writer() {
	python3 - "$@" <<'PY'
import os, sys, time
src, dst, first, end = sys.argv[1], sys.argv[2], int(sys.argv[3]) << 20, sys.argv[4]
try:
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    done = 0
    with open(src, 'rb') as s:
        def put(b):
            while b:
                n = os.write(fd, b)
                b = b[n:]
        while done < first:
            b = s.read(min(1 << 20, first - done))
            if not b:
                break
            put(b)
            done += len(b)
        open(dst + '.ready', 'w').close()
        while not os.path.exists(dst + '.go'):
            time.sleep(0.1)
        while True:
            b = s.read(1 << 20)
            if not b:
                break
            put(b)
    if end == 'fsync':
        os.fsync(fd)
    os.close(fd)
    print('ok')
except OSError as e:
    print('error: %s' % e)
    sys.exit(1)
PY
}

restart() {
	kill_ganesha KILL
	sleep "${1:-1}"
	start_ganesha
}

head -c $((40 << 20)) /dev/urandom >"$TEST_DIR/src40"
head -c $((100 << 20)) /dev/urandom >"$TEST_DIR/src100"
head -c $((4 << 20)) /dev/urandom >"$TEST_DIR/chunk4"
resent() { grep -c "committed: sent again" "$LOGS/fs.log"; }

# ---- 40 MiB open across a restart, then fsync ----
before=$(resent)
writer "$TEST_DIR/src40" "$d/a" 40 fsync >"$TEST_DIR/a.out" 2>&1 &
a_pid=$!
wait_for "40 MiB written" 120 test -e "$d/a.ready"
restart 1
pass "ganesha restarted with 40 MiB written and not committed"
touch "$d/a.go"
wait "$a_pid" || fail "fsync after the restart failed: $(cat "$TEST_DIR/a.out")"
pass "fsync after the restart succeeded"
check "the writes were sent again (log)" test "$(resent)" -gt "$before"
check "the export holds the data (md5)" test "$(md5sum <"$e/a")" = "$(md5sum <"$TEST_DIR/src40")"

# ---- the same, closed without fsync ----
before=$(resent)
writer "$TEST_DIR/src40" "$d/b" 40 close >"$TEST_DIR/b.out" 2>&1 &
b_pid=$!
wait_for "40 MiB written" 120 test -e "$d/b.ready"
restart 1
touch "$d/b.go"
wait "$b_pid" || fail "close after the restart failed: $(cat "$TEST_DIR/b.out")"
pass "close after the restart succeeded"
check "close sent the writes again and committed (log)" test "$(resent)" -gt "$before"
check "the export holds the data (md5)" test "$(md5sum <"$e/b")" = "$(md5sum <"$TEST_DIR/src40")"
check "sync FILE succeeds" sync "$d/b"

# ---- dd conv=fsync paced across a restart ----
(for i in $(seq 1 8); do cat "$TEST_DIR/chunk4"; sleep 0.5; done |
	dd of="$d/c" bs=1M iflag=fullblock conv=fsync status=none) 2>"$TEST_DIR/c.err" &
c_pid=$!
wait_for "dd is under way" 60 test -s "$e/c"
restart 2
wait "$c_pid" || fail "dd conv=fsync across the restart failed: $(cat "$TEST_DIR/c.err")"
pass "dd conv=fsync across the restart succeeded"
check "the export holds the data (md5)" test "$(md5sum <"$e/c")" = "$(for i in $(seq 1 8); do cat "$TEST_DIR/chunk4"; done | md5sum)"

# ---- 100 MiB, past what a file keeps, restart half-way, one fsync ----
before=$(resent)
writer "$TEST_DIR/src100" "$d/e" 50 fsync >"$TEST_DIR/e.out" 2>&1 &
e_pid=$!
wait_for "50 MiB written" 120 test -e "$d/e.ready"
restart 1
touch "$d/e.go"
wait "$e_pid" || fail "100 MiB with the fsync at the end failed: $(cat "$TEST_DIR/e.out")"
pass "100 MiB written across a restart, fsync succeeded"
check "the writes were sent again (log)" test "$(resent)" -gt "$before"
check "the export holds the data (md5)" test "$(md5sum <"$e/e")" = "$(md5sum <"$TEST_DIR/src100")"
check "through the mount too" test "$(md5sum <"$d/e")" = "$(md5sum <"$TEST_DIR/src100")"
grep "committed: sent again" "$LOGS/fs.log" | sed 's/.*: the server/# the server/'
most=$(sed -n 's/.* before \([0-9]*\)\.[0-9] MiB .*committed: sent again/\1/p' "$LOGS/fs.log" | sort -n | tail -1)
check "never more sent again than a file keeps, 64 MiB and the 8 MiB in flight (most: $most MiB)" test "${most:-0}" -le 72
check "no I/O error anywhere" sh -c "! grep -l 'Input/output error' '$TEST_DIR'/*.out '$TEST_DIR'/*.err"
