# Through the mount, in a folder of out/ or data/: FIFOs, unix sockets,
# devices refused, fallocate, a symlink's own times, names over 255 bytes,
# long symlink targets and times past 32 bits, each with what the storage can
# do (docs/filesystem.md, "What the storage cannot do").
# Source after common.sh, then: special_checks DIR local|nfs

# errno_of NAME PYTHON-STATEMENT: prints the errno name the statement fails
# with, or "ok".
errno_of() {
	python3 - "$1" "$2" <<'PY'
import errno, os, socket, stat, sys
os.chdir(sys.argv[1])
try:
    exec(sys.argv[2])
    print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])
PY
}

special_checks() {
	local d=$1 kind=$2 long t got
	mkdir -p "$d" || fail "cannot make $d"

	check "$kind: mkfifo" mkfifo "$d/fifo"
	check "$kind: it is a FIFO" test -p "$d/fifo"
	(echo through >"$d/fifo" &)
	check "$kind: data goes through the FIFO" test "$(timeout 10 cat "$d/fifo")" = through
	check "$kind: a unix socket binds and accepts" timeout 10 python3 -c "
import socket, os
os.chdir('$d')
s = socket.socket(socket.AF_UNIX); s.bind('sock'); s.listen()
c = socket.socket(socket.AF_UNIX); c.connect('sock'); a, _ = s.accept()
c.sendall(b'hi'); assert a.recv(2) == b'hi'"
	check "$kind: it is a socket" test -S "$d/sock"
	check "$kind: mknod of a character device is EPERM" \
		test "$(errno_of "$d" "os.mknod('cdev', stat.S_IFCHR | 0o666, os.makedev(1, 3))")" = EPERM
	check "$kind: mknod of a block device is EPERM" \
		test "$(errno_of "$d" "os.mknod('bdev', stat.S_IFBLK | 0o666, os.makedev(7, 0))")" = EPERM
	check "$kind: no device was made" test ! -e "$d/cdev" -a ! -e "$d/bdev"
	check "$kind: mknod of a regular file" \
		test "$(errno_of "$d" "os.mknod('reg', stat.S_IFREG | 0o640)")" = ok
	check "$kind: an empty file of mode 640" test "$(stat -c '%F %a %s' "$d/reg")" = "regular empty file 640 0"
	check "$kind: FIFO and socket are removed" rm "$d/fifo" "$d/sock"

	long=$(head -c 256 /dev/zero | tr '\0' n)
	for op in "open('$long', 'w')" "os.mkdir('$long')" "os.symlink('x', '$long')" "os.link('reg', '$long')" \
		"os.rename('reg', '$long')" "os.mkfifo('$long')" "os.lstat('$long')"; do
		got=$(errno_of "$d" "$op")
		check "$kind: ${op%%(*} of a 256-byte name is ENAMETOOLONG" test "$got" = ENAMETOOLONG
	done

	t=$(head -c 3800 /dev/zero | tr '\0' t)
	check "$kind: a symlink with a 3,800-byte target" ln -s "$t" "$d/l3800"
	check "$kind: reads back" test "$(readlink "$d/l3800")" = "$t"
	t=$(head -c 4095 /dev/zero | tr '\0' t)
	got=$(errno_of "$d" "os.symlink('$t', 'l4095')")
	case $kind in
	local) check "local: a 4,095-byte target" test "$got" = ok
		check "local: reads back" test "$(readlink "$d/l4095")" = "$t" ;;
	nfs) check "nfs: a 4,095-byte target is ENAMETOOLONG" test "$got" = ENAMETOOLONG
		check "nfs: and nothing is made" test ! -L "$d/l4095" ;;
	esac

	ln -s reg "$d/lnk"
	t=$(stat -c %Y "$d/lnk")
	got=$(errno_of "$d" "os.utime('lnk', (1577934245, 1577934245), follow_symlinks=False)")
	case $kind in
	local) check "local: touch -h sets the symlink's own mtime" \
		test "$got:$(stat -c %Y "$d/lnk")" = ok:1577934245 ;;
	nfs) check "nfs: touch -h succeeds and the server keeps the symlink's times, as through Linux's NFS client" \
		test "$got:$(stat -c %Y "$d/lnk")" = "ok:$t" ;;
	esac
	check "$kind: the target's times did not move" test "$(stat -c %Y "$d/reg")" != 1577934245

	check "$kind: an mtime of 2^32-1" touch -d @4294967295 "$d/reg"
	check "$kind: is kept" test "$(stat -c %Y "$d/reg")" = 4294967295
	got=$(errno_of "$d" "os.utime('reg', (1000, 2**32))")
	case $kind in
	local) check "local: an mtime of 2^32" test "$got:$(stat -c %Y "$d/reg")" = ok:4294967296 ;;
	nfs) check "nfs: an mtime of 2^32 is EOVERFLOW, nothing changed" \
		test "$got:$(stat -c %Y "$d/reg")" = EOVERFLOW:4294967295
		got=$(errno_of "$d" "os.utime('reg', (-1, 1000))")
		check "nfs: an atime of -1 is EOVERFLOW (got $got)" test "$got" = EOVERFLOW ;;
	esac

	head -c 65536 /dev/urandom >"$d/alloc"
	case $kind in
	local) check "local: fallocate" fallocate -l 1M "$d/alloc"
		check "local: the file grew" test "$(stat -c %s "$d/alloc")" = 1048576
		check "local: keep size" fallocate -n -o 1M -l 1M "$d/alloc"
		check "local: the size stayed" test "$(stat -c %s "$d/alloc")" = 1048576
		check "local: punch a hole" fallocate -p -o 0 -l 65536 "$d/alloc"
		check "local: the hole reads as zeros" test "$(head -c 65536 "$d/alloc" | tr -d '\0' | wc -c)" = 0
		check "local: zero a range" fallocate -z -o 65536 -l 65536 "$d/alloc" ;;
	nfs) check "nfs: fallocate is EOPNOTSUPP" \
			sh -c "fallocate -l 1M '$d/alloc' 2>&1 | grep -q 'Operation not supported'"
		check "nfs: the size stayed" test "$(stat -c %s "$d/alloc")" = 65536
		check "nfs: posix_fallocate still works (glibc writes zeros; it reads too, so O_RDWR)" \
			test "$(errno_of "$d" "fd = os.open('alloc', os.O_RDWR); os.posix_fallocate(fd, 0, 1 << 20)")" = ok
		check "nfs: the file grew" test "$(stat -c %s "$d/alloc")" = 1048576 ;;
	esac
	rm -rf "$d" || fail "$kind: cannot remove $d"
}
