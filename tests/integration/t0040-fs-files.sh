#!/bin/bash
# The mount's own contract, through files alone: queue/ entries and their
# .rejected, the queue/.clone protocol from many scripts at once, out/ as a
# POSIX folder for its owner only, ctl errnos, a wait that Ctrl-C ends, the
# scheduler going away (control files fail fast, out/ keeps working, all comes
# back), and a mount that refuses to depend on itself.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/special.sh"
need_root
ensure_user parsa-fs-eve parsa-fs-eve
on_cleanup "userdel parsa-fs-eve; groupdel parsa-fs-eve"
start_sched
start_fs

cat >"$TEST_DIR/s.conf" <<'SPEC'
[stage warm]
run = sleep 1000
SPEC
chmod 644 "$TEST_DIR/s.conf"

# -- queue/: listed while open, gone once submitted, same name again --
exec 4>"$MNT/queue/open.conf"
check "an entry being written is listed" sh -c "ls '$MNT/queue' | grep -qx open.conf"
cat "$TEST_DIR/s.conf" >&4
check "a child's close does not submit it" sh -c "ls '$MNT/queue' | grep -qx open.conf"
exec 4>&-
check "the creator's close submits it" sh -c "! ls '$MNT/queue' | grep -qx open.conf"
id1=$(submit "$TEST_DIR/s.conf" again.conf) || fail "submit failed"
id2=$(submit "$TEST_DIR/s.conf" again.conf) || fail "the same name again failed"
check "the same name can be submitted again" test "$id2" -gt "$id1"
check "the spec reads back byte for byte" cmp -s "$TEST_DIR/s.conf" "$MNT/jobs/$id2/spec"

# -- queue/.clone: eight scripts at once each learn their own id --
cat >"$TEST_DIR/clone.sh" <<CLONE
#!/bin/bash
exec 3<>"$MNT/queue/.clone"
cat "\$1" >&3
if read -r id <&3 2>/dev/null; then echo "\$id"; else echo "error: \$(cat <&3)"; exit 1; fi
exec 3>&-
CLONE
chmod 755 "$TEST_DIR/clone.sh"
pids=()
for i in 1 2 3 4 5 6 7 8; do
	"$TEST_DIR/clone.sh" "$TEST_DIR/s.conf" >"$TEST_DIR/id.$i" &
	pids+=($!)
done
wait "${pids[@]}"
ids=$(cat "$TEST_DIR"/id.* | sort -n | uniq)
check "eight clone submissions give eight ids" test "$(echo "$ids" | grep -c '^[0-9][0-9]*$')" -eq 8
for j in $ids; do
	test -d "$MNT/jobs/$j" || fail "clone id $j is not a job"
done
pass "every clone id is a job"
printf '[stage a]\nrun = true\ncpu = 2\n' >"$TEST_DIR/bad.conf"
out=$("$TEST_DIR/clone.sh" "$TEST_DIR/bad.conf") && fail "a bad spec got an id through the clone"
case $out in *"clone:3: "*"cpus"*) pass "a refused clone submission reads back its errors" ;;
*) fail "clone errors: $out" ;; esac

# -- .rejected: the submitter's, read-only, removable by them only --
cp "$TEST_DIR/bad.conf" "$TEST_DIR/eve.conf"
chmod 644 "$TEST_DIR/eve.conf"
as_user parsa-fs-eve cp "$TEST_DIR/eve.conf" "$MNT/queue/eve.conf" 2>/dev/null && fail "bad spec accepted"
check "eve's .rejected is hers" test "$(stat -c %U "$MNT/queue/eve.conf.rejected")" = parsa-fs-eve
check "writing a .rejected fails even for root" sh -c "! echo x 2>/dev/null >'$MNT/queue/eve.conf.rejected'"
check "nobody else may remove it" sh -c "! setpriv --reuid 65534 --regid 65534 --clear-groups rm -f '$MNT/queue/eve.conf.rejected' 2>/dev/null"
check "its owner may" as_user parsa-fs-eve rm "$MNT/queue/eve.conf.rejected"

# -- out/: POSIX for the owner, read-only for others --
out=$MNT/jobs/$id1/out/warm
wait_for "the job's output folder exists" 10 test -d "$out"
echo hello >"$out/a" && mkdir "$out/d" && mv "$out/a" "$out/d/b" && ln -s d/b "$out/l" ||
	fail "basic file operations in out/"
check "a symlink reads through" test "$(cat "$out/l")" = hello
chmod 600 "$out/d/b" && truncate -s 2 "$out/d/b" && touch -d 2020-01-01 "$out/d/b" || fail "chmod/truncate/touch"
check "attributes stick" test "$(stat -c '%a %s %Y' "$out/d/b")" = "600 2 $(date -d 2020-01-01 +%s)"
head -c 3000000 /dev/urandom >"$TEST_DIR/blob"
cp "$TEST_DIR/blob" "$out/blob" && check "a 3 MB file copies intact" cmp -s "$TEST_DIR/blob" "$out/blob"
exec 5<"$out/blob"
rm "$out/blob"
check "an unlinked open file still reads" sh -c "head -c 100 <&5 | wc -c | grep -qx 100"
exec 5<&-
check "another user cannot write in root's out/" sh -c "! setpriv --reuid 65534 --regid 65534 --clear-groups touch '$out/x' 2>/dev/null"
echo public >"$out/pub"
check "but can read what is readable" sh -c "setpriv --reuid 65534 --regid 65534 --clear-groups cat '$out/pub' >/dev/null"
check "and not what is not (mode 600)" sh -c "! setpriv --reuid 65534 --regid 65534 --clear-groups cat '$out/d/b' 2>/dev/null"
check "rename across two jobs' out/ is EXDEV" python3 -c "
import errno, os, sys
try:
    os.rename('$out/d/b', '$MNT/jobs/$id2/out/warm/b')
except OSError as e:
    sys.exit(0 if e.errno == errno.EXDEV else 1)
sys.exit(1)"
check "out/ itself cannot be removed" sh -c "! rmdir '$MNT/jobs/$id1/out' 2>/dev/null"
rm -r "$out/d" "$out/l" "$out/pub" || fail "rm -r in out/"
# FIFOs, sockets, fallocate, long names and targets (lib/special.sh)
special_checks "$out/special" local
special_checks "$MNT/data/special" local

# -- large files: written behind, read ahead, and coherent --
head -c $((40 * 1024 * 1024 + 12345)) /dev/urandom >"$TEST_DIR/big"
dd if="$TEST_DIR/big" of="$out/big" bs=1M status=none || fail "dd of 40 MiB into out/"
check "a 40 MiB file written in 1 MiB requests is intact" cmp -s "$TEST_DIR/big" "$out/big"
for bs in 1M 4M 512K 128K; do
	echo 3 >/proc/sys/vm/drop_caches
	check "read back in blocks of $bs, it is the same" sh -c "dd if='$out/big' bs=$bs status=none | cmp -s - '$TEST_DIR/big'"
done
check "read from its 10th MiB on, the same" bash -c \
	"dd if='$out/big' bs=1M skip=10 status=none | cmp -s - <(dd if='$TEST_DIR/big' bs=1M skip=10 status=none)"
# A reader 16 MiB on has the file read ahead of it; a write made meanwhile,
# 4 MiB ahead of it, must be what it reads: through the mount, then behind it
# (a read-ahead of the daemon's own, tried once, had to keep to this). The
# write waits until the read-ahead has brought the MiBs it checks into the
# storage file's page cache (dropped first, so that being there means read
# ahead now).
coherent() {
	python3 - "$out/big" "$1" "$2" "$STORAGE/jobs/$id1/out/warm/big" <<'PY'
import ctypes, os, sys, time
path, writer_path, first, stored = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
MiB = 1 << 20
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p)
libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)

def resident(fd, off, length):
    page = os.sysconf('SC_PAGE_SIZE')
    addr = libc.mmap(None, length, 1, 1, fd, off)  # PROT_READ, MAP_SHARED
    if addr in (None, ctypes.c_void_p(-1).value):
        return False
    vec = ctypes.create_string_buffer((length + page - 1) // page)
    done = libc.mincore(addr, length, vec) == 0 and all(b & 1 for b in vec.raw)
    libc.munmap(addr, length)
    return done

s = os.open(stored, os.O_RDONLY)
os.posix_fadvise(s, 0, 0, os.POSIX_FADV_DONTNEED)
r = os.open(path, os.O_RDONLY)
for i in range(first, first + 16):
    os.pread(r, 1 << 20, i << 20)
ahead, length = (first + 16) * MiB, min(8 * MiB, os.fstat(s).st_size - (first + 16) * MiB)
deadline = time.monotonic() + 10
while not resident(s, ahead, length):
    if time.monotonic() > deadline:
        print('# MiB %d-%d were not read ahead within 10 s' % (first + 16, first + 24), file=sys.stderr)
        break
    time.sleep(0.01)
w = os.open(writer_path, os.O_WRONLY)
os.pwrite(w, b'W' * 4096, (first + 20) << 20)
os.close(w)
seen = [os.pread(r, 1 << 20, i << 20)[:4096] == b'W' * 4096 for i in range(first + 16, first + 24)]
sys.exit(0 if seen == [i == 4 for i in range(8)] else 1)
PY
}
check "a write through the mount is seen by a reader read ahead" coherent "$out/big" 0
check "and a write behind the mount, to the storage folder" coherent "$STORAGE/jobs/$id1/out/warm/big" 14
rm "$out/big"

# -- ctl and wait --
err=$(bash -c "echo release >'$MNT/jobs/$id1/ctl'" 2>&1) && fail "release of a job not held worked"
case $err in *"busy"*) pass "ctl: not possible now is EBUSY" ;; *) fail "release: $err" ;; esac
err=$(setpriv --reuid 65534 --regid 65534 --clear-groups bash -c "echo cancel >'$MNT/jobs/$id1/ctl'" 2>&1) &&
	fail "another user cancelled"
pass "ctl of another user's job is refused: $err"
start_ns=$(date +%s%N)
timeout -s INT 1 cat "$MNT/jobs/$id1/wait" >/dev/null 2>&1 && fail "wait returned for a queued job"
ms=$((($(date +%s%N) - start_ns) / 1000000))
check "Ctrl-C ends a blocked wait (${ms} ms)" test "$ms" -lt 4000
# The cancel comes once the wait below is open and blocked.
waiting_on() {
	local pid
	for pid in $(find /proc/[0-9]*/fd -maxdepth 1 -lname "$1" 2>/dev/null | cut -d/ -f3); do
		[ "$(cut -d' ' -f3 "/proc/$pid/stat" 2>/dev/null)" = S ] && return 0
	done
	return 1
}
(wait_for "a blocked wait" 10 waiting_on "$MNT/jobs/$id1/wait"; echo cancel >"$MNT/jobs/$id1/ctl") &
canceller=$!
check "wait returns the final state" test "$(timeout 10 cat "$MNT/jobs/$id1/wait")" = cancelled
wait "$canceller"

# -- the scheduler goes away and comes back --
stop_daemon sched KILL
start_ns=$(date +%s%N)
timeout 10 cat "$MNT/jobs/$id2/status" >/dev/null 2>"$TEST_DIR/err" && fail "status readable with no scheduler"
ms=$((($(date +%s%N) - start_ns) / 1000000))
check "status fails fast with EIO or ENOTCONN (${ms} ms)" grep -Eq 'Input/output error|not connected' "$TEST_DIR/err"
check "a submission fails" sh -c "! cp '$TEST_DIR/s.conf' '$MNT/queue/down.conf' 2>/dev/null"
check "and says why in down.conf.rejected" grep -q 'not running' "$MNT/queue/down.conf.rejected"
rm -f "$MNT/queue/down.conf.rejected"
check "out/ still lists" ls "$MNT/jobs/$id2/out/warm"
check "out/ still takes writes" sh -c "echo during >'$MNT/jobs/$id2/out/warm/during'"
check "job folders are still listed" sh -c "ls '$MNT/jobs' | grep -qx '$id2'"
start_sched
id3=$(submit "$TEST_DIR/s.conf") || fail "no submission once the scheduler is back"
check "submissions work again" test "$id3" -gt "$id2"
check "status reads again" grep -q '^state:' "$MNT/jobs/$id2/status"

# -- never depend on itself --
mkdir -p "$TEST_DIR/inside"
check "a storage inside the mount point is refused" sh -c \
	"! parsafs '$MNT' --sched 'unix:$SOCK' --storage '$MNT/jobs' -f 2>/dev/null"
check "a mount point inside the storage is refused" sh -c \
	"! parsafs '$STORAGE' --sched 'unix:$SOCK' --storage '$TEST_DIR' -f 2>/dev/null"

for j in $id2 $id3 $ids; do echo cancel >"$MNT/jobs/$j/ctl" 2>/dev/null; done
stop_daemon fs
check "SIGTERM unmounts" sh -c "! grep -q ' $MNT fuse' /proc/mounts"
