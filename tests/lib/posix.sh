# POSIX checks of the data path shared by the local (t0043) and NFS (t0206)
# tests: hard links (one inode number, fresh link counts), inode numbers of the
# made-up nodes, set-uid cleared by another user's write, open files that
# outlive their name. Source after common.sh, then: posix_checks VOLUME_DIR,
# the folder on disk that holds the mount's volume (where .parsa-unlinked is).

POSIX_PY=/usr/bin/python3

posix_checks() {
	local vol=$1 d=$MNT/data/posix i1 i2 n1 n2 m out
	mkdir -p "$d" && chmod 1777 "$d" || fail "mkdir $d"

	# -- hard links: one inode number, the link count fresh at once --
	echo a >"$d/f1"
	ln "$d/f1" "$d/f2" || fail "ln"
	read -r i1 n1 <<<"$(stat -c '%i %h' "$d/f1")"
	read -r i2 n2 <<<"$(stat -c '%i %h' "$d/f2")"
	log "after ln: f1 $i1 $n1, f2 $i2 $n2; on disk $(stat -c '%i %h' "$vol/data/posix/f1")"
	check "hard links share an inode number" test "$i1" = "$i2"
	check "it is the storage's" test "$i1" = "$(stat -c %i "$vol/data/posix/f1")"
	check "the link source sees nlink 2 at once" test "$n1" = 2
	check "so does the new name" test "$n2" = 2
	check "find -samefile finds both" test "$(find "$d" -samefile "$d/f1" | wc -l)" = 2
	rm "$d/f2"
	check "nlink is 1 again right after rm of the other name" test "$(stat -c %h "$d/f1")" = 1
	ln "$d/f1" "$d/f3"
	echo b >"$d/g"
	mv "$d/g" "$d/f3"
	check "renamed over, the other name has nlink 1 at once" test "$(stat -c %h "$d/f1")" = 1
	check "du counts a hard-linked file once" test "$(ln "$d/f1" "$d/f4" && du -b "$d" >/dev/null && du -bs "$d/f1" "$d/f4" | wc -l)" = 1

	# -- the made-up nodes: own, stable, distinct inode numbers --
	out=$(stat -c %i "$MNT" "$MNT/status" "$MNT/queue" "$MNT/jobs" "$MNT/hosts" "$MNT/schedules")
	check "made-up nodes have distinct inode numbers" test "$(sort -u <<<"$out" | wc -l)" = 6
	check "and the same ones when asked again" test "$out" = \
		"$(stat -c %i "$MNT" "$MNT/status" "$MNT/queue" "$MNT/jobs" "$MNT/hosts" "$MNT/schedules")"
	check "above 2^63, where storage inode numbers are not" \
		$POSIX_PY -c "import sys; sys.exit(0 if all(int(x) >= 2**63 for x in sys.argv[1:]) else 1)" $out

	# -- set-uid and set-gid: cleared by another user's write --
	echo x >"$d/suid"
	chmod 04777 "$d/suid"
	setpriv --reuid 65534 --regid 65534 --clear-groups -- sh -c "echo y >>'$d/suid'" || fail "write as 65534"
	m=$(stat -c %a "$d/suid")
	log "after a write by 65534: $m (on disk $(stat -c %a "$vol/data/posix/suid"))"
	check "a write by another user clears set-uid" test "$m" = 777
	chmod 02775 "$d/suid"
	chmod o+w "$d/suid"
	setpriv --reuid 65534 --regid 65534 --clear-groups -- sh -c "echo y >>'$d/suid'"
	check "and group-executable set-gid" test "$(stat -c %a "$d/suid")" = 777
	# Without group execute, set-gid goes only for a writer outside the
	# file's group (Linux 6.x: setattr_should_drop_sgid, as on ext4 here).
	chmod 02767 "$d/suid"
	setpriv --reuid 65534 --regid 65534 --clear-groups -- sh -c "echo y >>'$d/suid'"
	check "set-gid without group execute goes for a writer outside the group" test "$(stat -c %a "$d/suid")" = 767
	chgrp 65534 "$d/suid" && chmod 02767 "$d/suid"
	setpriv --reuid 65534 --regid 65534 --clear-groups -- sh -c "echo y >>'$d/suid'"
	check "and stays for a writer in the group" test "$(stat -c %a "$d/suid")" = 2767
	chmod 04777 "$d/suid"
	echo z >>"$d/suid"
	check "root's write keeps set-uid" test "$(stat -c %a "$d/suid")" = 4777
	# One open file, a chmod between two writes: checked again.
	chmod 0777 "$d/suid"
	rm -f "$d/go" "$d/wrote"
	setpriv --reuid 65534 --regid 65534 --clear-groups -- $POSIX_PY -c "
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, b'1'); open(sys.argv[2] + '/wrote', 'w').close()
while not os.path.exists(sys.argv[2] + '/go'): time.sleep(0.02)
os.write(fd, b'2'); os.close(fd)" "$d/suid" "$d" &
	wait_for "the first write" 10 test -e "$d/wrote"
	chmod 04777 "$d/suid"
	touch "$d/go"
	wait $! || fail "the writer failed"
	check "a chmod between two writes of one open file: cleared again" test "$(stat -c %a "$d/suid")" = 777

	# -- an unlinked open file lives until its last close --
	mkdir "$d/sub"
	out=$($POSIX_PY - "$d" "$vol" <<'PY'
import os, sys, glob
d, vol = sys.argv[1], sys.argv[2]
fd = os.open(d + "/sub/f", os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"hello")
os.unlink(d + "/sub/f")
st = os.fstat(fd)
print("fstat", st.st_size, st.st_nlink)
os.fchmod(fd, 0o600)
print("fchmod", oct(os.fstat(fd).st_mode & 0o7777))
print("pread", os.pread(fd, 5, 0).decode())
os.ftruncate(fd, 2)
print("ftruncate", os.fstat(fd).st_size)
os.utime(fd, (1, 1))
print("futimens", int(os.fstat(fd).st_mtime))
print("listed", len(os.listdir(d + "/sub")))
print("hidden", len(glob.glob(vol + "/.parsa-unlinked/*/.fuse_hidden*")))
# renamed over: the old file stays readable through its descriptor
g = os.open(d + "/g", os.O_RDWR | os.O_CREAT, 0o644)
os.write(g, b"old")
with open(d + "/h", "w") as h:
    h.write("new")
os.rename(d + "/h", d + "/g")
print("renamed-over", os.pread(g, 3, 0).decode(), open(d + "/g").read())
os.close(g)
os.close(fd)
PY
) || fail "unlinked open file: $out"
	log "$(tr '\n' ';' <<<"$out")"
	check "fstat after unlink" grep -qx "fstat 5 0" <<<"$out"
	check "fchmod after unlink" grep -qx "fchmod 0o600" <<<"$out"
	check "pread after unlink" grep -qx "pread hello" <<<"$out"
	check "ftruncate after unlink" grep -qx "ftruncate 2" <<<"$out"
	check "futimens after unlink" grep -qx "futimens 1" <<<"$out"
	check "the folder lists nothing" grep -qx "listed 0" <<<"$out"
	check "the file waits in the unlinked folder" grep -qx "hidden 1" <<<"$out"
	check "a file renamed over reads on" grep -qx "renamed-over old new" <<<"$out"
	# The kernel sends the release after close(2) returns.
	wait_for "the last close removes it" 10 sh -c "! ls -A '$vol'/.parsa-unlinked/*/ | grep -q fuse_hidden"
	pass "the last close removes it"
	# The emptied folder can go; its open file reads on (what libfuse no
	# longer finds a path for stays in the unlinked folder until unmount).
	out=$($POSIX_PY - "$d" <<'PY'
import os, sys
d = sys.argv[1]
fd = os.open(d + "/sub/f", os.O_RDWR | os.O_CREAT, 0o644)
os.write(fd, b"hello")
os.unlink(d + "/sub/f")
os.rmdir(d + "/sub")
print("rmdir ok")
print("pread", os.pread(fd, 5, 0).decode())
os.close(fd)
PY
) || fail "rmdir with an unlinked open file: $out"
	check "an emptied folder can be removed while its file is open" grep -qx "rmdir ok" <<<"$out"
	check "and the file reads on" grep -qx "pread hello" <<<"$out"

	# -- the reserved prefix --
	out=$(touch "$d/.fuse_hiddenx" 2>&1)
	check "creating a .fuse_hidden name is refused" grep -q "Invalid argument" <<<"$out"
	check "so is mkdir of one" sh -c "! mkdir '$d/.fuse_hidden1' 2>/dev/null"
	echo q >"$d/q"
	check "and renaming to one" sh -c "! mv -T '$d/q' '$d/.fuse_hiddenq' 2>/dev/null"
	rm -rf "$d"
}
