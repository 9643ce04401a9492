#!/bin/bash
# tar's sequence on NFS (create, write, futimens, fchown, fchmod, close): the
# mount keeps the three changes for one SETATTR at close (storage/nfs_fattr.c),
# and everything through the mount sees them at once: fstat, stat by name,
# another user's open while the file is still open; the server has them after
# close. A write after futimens moves mtime as POSIX says; the same by name
# (chmod on the path of the open file) is kept and shown too.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"

command -v python3 >/dev/null || { echo "# SKIP: needs python3"; exit 77; }
start_nfs
start_sched
start_fs
ensure_user parsa-nfsa parsa-nfsg
ua=$(id -u parsa-nfsa)
ga=$(id -g parsa-nfsa)
printf '[stage s]\nrun = true\n' >"$TEST_DIR/s.conf"
id=$(submit "$TEST_DIR/s.conf") || fail "submission failed"
out=$MNT/jobs/$id/out/s
exp=$NFS_EXPORT/jobs/$id/out/s
chmod 755 "$out"

# The open file's side, as tar (root) does it; between the calls and close it
# asks the shell side (fifo) to look, and reports what fstat said.
cat >"$TEST_DIR/tarlike.py" <<'EOF'
import os, sys, time
path, uid, gid, look, done = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.write(fd, b"kept attributes\n")
os.utime(fd, ns=(1_600_000_000_000_000_000, 1_500_000_000_000_000_000))
os.fchown(fd, uid, gid)
os.fchmod(fd, 0o640)
st = os.fstat(fd)
print("fstat %o %d:%d %d %d" % (st.st_mode & 0o7777, st.st_uid, st.st_gid, st.st_mtime, st.st_size), flush=True)
open(look, "w").close()
give_up = time.monotonic() + 120
while not os.path.exists(done) and time.monotonic() < give_up:
    time.sleep(0.02)
os.close(fd)
EOF
rm -f "$TEST_DIR/look" "$TEST_DIR/done"
python3 "$TEST_DIR/tarlike.py" "$out/t" "$ua" "$ga" "$TEST_DIR/look" "$TEST_DIR/done" >"$TEST_DIR/fstat.txt" &
py=$!
for _ in $(seq 600); do [ -e "$TEST_DIR/look" ] || sleep 0.05; done
[ -e "$TEST_DIR/look" ] || { kill "$py"; fail "the writer did not get to its changes"; }
check "fstat shows the kept changes" grep -qx "fstat 640 $ua:$ga 1500000000 16" "$TEST_DIR/fstat.txt"
check "stat by name shows them while the file is open" \
	test "$(stat -c '%a %u:%g %Y %s' "$out/t")" = "640 $ua:$ga 1500000000 16"
check "the new owner reads the file while it is open" \
	test "$(as_user parsa-nfsa cat "$out/t")" = "kept attributes"
touch "$TEST_DIR/done"
wait "$py" || fail "the writer failed (close reports the late SETATTR)"
check "the server has mode, owner and mtime after close" \
	test "$(stat -c '%a %u:%g %Y %s' "$exp/t")" = "640 $ua:$ga 1500000000 16"

# A write after futimens: mtime moves again (the kept times go first).
python3 - "$out/w" <<'EOF' || fail "futimens then write failed"
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
os.utime(fd, ns=(1_500_000_000_000_000_000, 1_500_000_000_000_000_000))
os.write(fd, b"later\n")
os.close(fd)
EOF
check "a write after futimens moves mtime" test "$(stat -c %Y "$exp/w")" -gt 1500000000
check "through the mount too" test "$(stat -c %Y "$out/w")" -gt 1500000000

# By name while open (chmod(1) beside the writer): kept, shown, then on the server.
python3 - "$out/n" <<'EOF' || fail "chmod by name of an open file failed"
import os, subprocess, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
os.write(fd, b"n\n")
os.utime(fd, ns=(1_500_000_000_000_000_000, 1_500_000_000_000_000_000))
subprocess.run(["chmod", "604", sys.argv[1]], check=True)
if os.stat(sys.argv[1]).st_mode & 0o7777 != 0o604:
    sys.exit("stat after chmod by name: %o" % (os.stat(sys.argv[1]).st_mode & 0o7777))
os.close(fd)
EOF
check "chmod by name of the open file reached the server" test "$(stat -c %a "$exp/n")" = 604
check "and its mtime" test "$(stat -c %Y "$exp/n")" = 1500000000
