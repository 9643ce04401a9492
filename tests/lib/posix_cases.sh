# The POSIX cases of the data path, one body for both backends (t0042 local,
# t0211 NFS): hard links, set-uid cleared, unlink while open, fifos, sockets,
# fallocate, long names and symlinks, symlink and 64-bit times. Local storage
# must behave as ext4 does; NFS as ext4 does where NFSv3 can, and otherwise
# fail with the errno that says why. Source after lib/fscheck.sh.

# posix_checks DIR BACKEND LABEL: every case in DIR (created, then removed),
# BACKEND local or nfs, LABEL prefixing each check (e.g. "out/").
posix_checks() {
	local d=$1 backend=$2 w=$3 ino err rc got n255 n300 target
	mkdir -p "$d" || fail "$w: mkdir $d"

	# -- hard links: one inode, link counts right at once, tools keep them --
	echo a >"$d/f1" && ln "$d/f1" "$d/f2" || soft_fail "$w: echo a > f1; ln f1 f2"
	ino=$(stat -c %i "$d/f1")
	expect_eq "$w: ln: f1 and f2 are one inode, with 2 links each, right away" \
		"$(stat -c '%i %h' "$d/f1" "$d/f2" | tr '\n' ' ')" "$ino 2 $ino 2 "
	expect_eq "$w: ln: f2 reads what f1 has" "$(cat "$d/f2")" a
	expect_eq "$w: find -samefile f1 finds f1 and f2" \
		"$(find "$d" -maxdepth 1 -samefile "$d/f1" | sort | tr '\n' ' ')" "$d/f1 $d/f2 "
	echo b >>"$d/f2"
	expect_eq "$w: an append through f2 is read through f1" "$(cat "$d/f1" | tr '\n' ' ')" "a b "
	# f1's attributes cached, then changed through f2 (t0046 has every kind).
	expect_eq "$w: an append through f2: f1's size right away" "$(stat -c %s "$d/f1")" 4
	chmod 600 "$d/f2"
	expect_eq "$w: chmod 600 f2: f1's mode right away" "$(stat -c %a "$d/f1")" 600
	rm "$d/f2"
	expect_eq "$w: after rm f2, f1 says 1 link right away" "$(stat -c %h "$d/f1")" 1
	mkdir "$d/hl" && head -c 1048576 /dev/urandom >"$d/hl/big" && ln "$d/hl/big" "$d/hl/big2" ||
		soft_fail "$w: a tree with a hard link"
	got=$(du -s -b "$d/hl" | cut -f1)
	expect "$w: du counts a hard-linked 1 MiB file once ($got bytes)" \
		test "$got" -ge 1048576 -a "$got" -lt $((1048576 + 1048576 / 2))
	tar -C "$d" -cf "$TEST_DIR/hl.tar" hl || soft_fail "$w: tar c of the tree"
	expect_eq "$w: tar c stores the second name as a link to the first" \
		"$(tar -tvf "$TEST_DIR/hl.tar" | grep -c ' link to hl/big')" 1
	mkdir "$d/tar-x" && tar -C "$d/tar-x" -xf "$TEST_DIR/hl.tar" || soft_fail "$w: tar x of the tree"
	expect_eq "$w: tar x keeps the hard link one inode" \
		"$(stat -c %h "$d/tar-x/hl/big" "$d/tar-x/hl/big2" | tr '\n' ' ')|$(stat -c %i "$d/tar-x/hl/big2")" \
		"2 2 |$(stat -c %i "$d/tar-x/hl/big")"
	rsync -aH "$d/hl/" "$d/rsync-h/" || soft_fail "$w: rsync -aH of the tree"
	expect_eq "$w: rsync -aH keeps the hard link one inode" \
		"$(stat -c %h "$d/rsync-h/big" "$d/rsync-h/big2" | tr '\n' ' ')|$(stat -c %i "$d/rsync-h/big2")" \
		"2 2 |$(stat -c %i "$d/rsync-h/big")"
	expect "$w: rsync -aH copied the content" cmp -s "$d/hl/big" "$d/rsync-h/big2"
	rm -rf "$d/f1" "$d/hl" "$d/tar-x" "$d/rsync-h"

	# -- set-uid and set-gid cleared by another user's write (uid 65534) --
	expect_fscheck "$w: set-uid" 60 setuid "$d/suid" 65534 65534

	# -- an unlinked open file keeps working; nothing is left once closed --
	mkdir "$d/ul"
	expect_fscheck "$w: unlinked" 60 unlinked "$d/ul/f"
	expect_eq "$w: unlinked: once closed, nothing is left in its folder" "$(ls -A "$d/ul")" ""
	# Its folder removed meanwhile: reads and writes go on (fstat by name
	# cannot, docs/filesystem.md).
	expect_fscheck "$w: unlinked, folder removed" 60 unlinked --rmdir "$d/ul/f"
	expect "$w: unlinked: its folder is gone" test ! -e "$d/ul"
	rm -rf "$d/ul"

	# -- fifos (mkfifo, mknod p) pass data; a unix socket bound in the folder --
	err=$(mkfifo "$d/fifo" 2>&1)
	expect "$w: mkfifo works ($err)" test -z "$err"
	err=$(mknod "$d/fifo2" p 2>&1)
	expect "$w: mknod p works ($err)" test -z "$err"
	for f in fifo fifo2; do
		got=$(stat -c %F "$d/$f" 2>&1)
		expect_eq "$w: $f: stat says fifo" "$got" fifo
		if [ "$got" != fifo ]; then
			soft_fail "$w: $f: a writer and a reader pass data (not tried: no fifo)"
			continue
		fi
		timeout 10 sh -c "echo through-$f >'$d/$f'" &
		got=$(timeout 10 cat "$d/$f" 2>&1)
		wait $! 2>/dev/null
		expect_eq "$w: $f: a writer and a reader pass data" "$got" "through-$f"
	done
	rm -f "$d/fifo" "$d/fifo2"
	expect_fscheck "$w: socket" 30 socket "$d/sock"
	rm -f "$d/sock"

	# -- fallocate: works as on ext4 locally, EOPNOTSUPP on NFSv3 (no ALLOCATE) --
	head -c 1048576 /dev/urandom >"$TEST_DIR/rnd"
	if [ "$backend" = local ]; then
		err=$(fallocate -l 1M "$d/fa" 2>&1)
		expect "$w: fallocate -l 1M works ($err)" test -z "$err"
		expect_eq "$w: fallocate -l 1M: the size is 1 MiB" "$(stat -c %s "$d/fa" 2>&1)" 1048576
		expect "$w: fallocate -l 1M: it reads as zeros" cmp -s "$d/fa" <(head -c 1048576 /dev/zero)
		cp "$TEST_DIR/rnd" "$d/fp"
		err=$(fallocate -p -o 4096 -l 65536 "$d/fp" 2>&1)
		expect "$w: fallocate -p (punch a hole) works ($err)" test -z "$err"
		expect_eq "$w: fallocate -p: the size stays 1 MiB" "$(stat -c %s "$d/fp" 2>&1)" 1048576
		expect "$w: fallocate -p: the hole reads as zeros" cmp -s \
			<(dd if="$d/fp" bs=4096 skip=1 count=16 status=none) <(head -c 65536 /dev/zero)
		expect "$w: fallocate -p: the rest is untouched" cmp -s \
			<(head -c 4096 "$d/fp"; tail -c +69633 "$d/fp") \
			<(head -c 4096 "$TEST_DIR/rnd"; tail -c +69633 "$TEST_DIR/rnd")
	else
		err=$(fallocate -l 1M "$d/fa" 2>&1)
		expect "$w: fallocate -l 1M fails with 'Operation not supported' ($err)" \
			eval 'case $err in *"Operation not supported"*) true ;; *) false ;; esac'
		cp "$TEST_DIR/rnd" "$d/fp"
		err=$(fallocate -p -o 4096 -l 65536 "$d/fp" 2>&1)
		# util-linux says EOPNOTSUPP of a mode with FALLOC_FL_KEEP_SIZE (as -p is) its own way
		expect "$w: fallocate -p fails with EOPNOTSUPP ($err)" \
			eval 'case $err in *"Operation not supported"* | *"keep size mode is unsupported"*) true ;; *) false ;; esac'
		expect "$w: fallocate -p: the file is untouched" cmp -s "$d/fp" "$TEST_DIR/rnd"
	fi
	rm -f "$d/fa" "$d/fp"

	# -- names: 255 bytes work, 300 bytes are ENAMETOOLONG, as on ext4 --
	n255=$(printf 'n%.0s' $(seq 255))
	n300=$(printf 'n%.0s' $(seq 300))
	expect "$w: a 255-byte name can be created" touch "$d/$n255"
	expect "$w: and is listed" sh -c "ls '$d' | grep -qx '$n255'"
	rm -f "$d/$n255"
	err=$(touch "$d/$n300" 2>&1)
	expect "$w: touch of a 300-byte name says 'File name too long' ($err)" \
		eval 'case $err in *"File name too long"*) true ;; *) false ;; esac'
	err=$(mkdir "$d/$n300" 2>&1)
	expect "$w: mkdir of a 300-byte name says 'File name too long' ($err)" \
		eval 'case $err in *"File name too long"*) true ;; *) false ;; esac'

	# -- touch -h: a symlink's own mtime; the target's is left alone --
	echo t >"$d/target" && touch -d @1500000000 "$d/target" && ln -s target "$d/sl" ||
		soft_fail "$w: a target and a symlink to it"
	before=$(stat -c %Y "$d/sl")
	err=$(touch -h -d @1000000000 "$d/sl" 2>&1)
	expect "$w: touch -h of a symlink works ($err)" test -z "$err"
	case $w in
	nfs*)	# nfs-ganesha's VFS backend keeps a symlink's times and says it
		# set them; the mount reports that as Linux's client does.
		expect_eq "$w: touch -h: the server keeps the symlink's own mtime" \
			"$(stat -c %Y "$d/sl")" "$before" ;;
	*)	expect_eq "$w: touch -h: the symlink's own mtime is set" "$(stat -c %Y "$d/sl")" 1000000000 ;;
	esac
	expect_eq "$w: touch -h: the target's mtime is left alone" "$(stat -c %Y "$d/target")" 1500000000
	rm -f "$d/sl" "$d/target"

	# -- an mtime of 2^32: stored exactly, or EOVERFLOW (NFSv3 has 32 bits); never another value --
	echo t >"$d/t32" && touch -d @1600000000 "$d/t32"
	err=$(touch -d @4294967296 "$d/t32" 2>&1)
	rc=$?
	got=$(stat -c %Y "$d/t32")
	if [ "$backend" = local ]; then
		expect "$w: touch -d @4294967296 works ($err)" test "$rc" -eq 0
		expect_eq "$w: touch -d @4294967296: stored exactly" "$got" 4294967296
	elif [ "$rc" -eq 0 ]; then
		expect_eq "$w: touch -d @4294967296 worked, so it is stored exactly" "$got" 4294967296
	else
		expect "$w: touch -d @4294967296 fails with 'Value too large for defined data type' ($err)" \
			eval 'case $err in *"Value too large for defined data type"*) true ;; *) false ;; esac'
		expect_eq "$w: touch -d @4294967296 failed, so the mtime is unchanged" "$got" 1600000000
	fi
	rm -f "$d/t32"

	# -- a symlink of a 4,095-byte target (PATH_MAX - 1): read back exactly,
	#    or on NFS refused with ENAMETOOLONG; never EIO --
	target=$(printf '0123456789abcde/%.0s' $(seq 255))0123456789abcde
	err=$(ln -s "$target" "$d/longlink" 2>&1)
	rc=$?
	if [ "$backend" = local ] || [ "$rc" -eq 0 ]; then
		expect "$w: ln -s of a 4,095-byte target works ($err)" test "$rc" -eq 0
		got=$(readlink "$d/longlink" 2>&1)
		expect "$w: the 4,095-byte target reads back exactly ($(printf '%s' "$got" | wc -c) bytes: ${got:0:60})" \
			test "$got" = "$target"
		expect_eq "$w: its size is 4095" "$(stat -c %s "$d/longlink" 2>&1)" 4095
	else
		expect "$w: ln -s of a 4,095-byte target fails with 'File name too long' ($err)" \
			eval 'case $err in *"File name too long"*) true ;; *) false ;; esac'
	fi
	rm -f "$d/longlink"

	rmdir "$d" || soft_fail "$w: rmdir of the emptied folder ($(ls -A "$d" | head -5 | tr '\n' ' '))"
}
