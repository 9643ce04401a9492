#!/bin/bash
# A hard-linked file never shows stale attributes through its other name
# (issue 35, item 5). Each name is its own kernel inode with attributes cached
# for attr_timeout (1 s): a chmod, chown, truncate, touch -d, write, fchmod,
# ftruncate or futimens through one name must drop the other's at once, or
# `stat a` shows the old mode and, on a local volume, a user the new mode
# shuts out still reads the file through a. On a local volume, then on NFS (a
# real nfs-ganesha; that part skips where there is none), in data/ and in a
# job's out/. Each change comes right after a stat of the other name, so its
# attributes are cached; a slow machine can only make a check pass that
# should fail, never the other way.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/fscheck.sh"
. "$(dirname "$0")/../lib/nfs.sh"
need_root
ensure_user parsa-hlu parsa-hlg

denied() { ! as_user parsa-hlu cat "$1" >/dev/null 2>&1; }

# hardlink_checks DIR LABEL: a and b, one file, in DIR (made, then removed).
hardlink_checks() {
	local d=$1 w=$2 a=$1/a b=$1/b
	mkdir -p "$d" && chmod 755 "$d" || fail "$w: mkdir $d"
	printf 'secret\n' >"$a" && chmod 644 "$a" && ln "$a" "$b" || fail "$w: a file with two names"
	expect_eq "$w: a and b are one file with 2 links" "$(stat -c '%i %h' "$a")" "$(stat -c '%i 2' "$b")"
	expect_eq "$w: the user reads a (644)" "$(as_user parsa-hlu cat "$a" 2>&1)" secret

	stat "$a" >/dev/null
	chmod 600 "$b"
	expect_eq "$w: chmod 600 b: stat a says 600 at once" "$(stat -c %a "$a")" 600
	expect "$w: and the user can no longer read a" denied "$a"

	stat "$a" >/dev/null
	chown parsa-hlu "$b"
	expect_eq "$w: chown b: stat a names the new owner at once" "$(stat -c %U "$a")" parsa-hlu
	expect_eq "$w: and the new owner reads a" "$(as_user parsa-hlu cat "$a" 2>&1)" secret
	chown root "$b"
	expect "$w: chown back: the user cannot read a again" denied "$a"

	stat "$a" >/dev/null
	truncate -s 3 "$b"
	expect_eq "$w: truncate -s 3 b: stat a says 3 bytes at once" "$(stat -c %s "$a")" 3

	stat "$a" >/dev/null
	touch -d '2001-02-03 04:05:06 UTC' "$b"
	expect_eq "$w: touch -d b: stat a has the new mtime at once" "$(stat -c %Y "$a")" 981173106

	stat "$a" >/dev/null
	printf 'more!' >>"$b"
	expect_eq "$w: a write to b: stat a says 8 bytes at once" "$(stat -c %s "$a")" 8
	expect_eq "$w: and a reads it" "$(cat "$a")" secmore!

	# Through an open file: the kernel sends these with a handle, no path.
	stat "$a" >/dev/null
	python3 -c 'import os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
os.fchmod(fd, 0o604)
os.ftruncate(fd, 2)
os.utime(fd, (1000000000, 1000000000))
os.close(fd)' "$b" || soft_fail "$w: fchmod, ftruncate and futimens of b"
	expect_eq "$w: fchmod, ftruncate, futimens of b: stat a at once" \
		"$(stat -c '%a %s %Y' "$a")" "604 2 1000000000"
	expect_eq "$w: and the user reads a again (604)" "$(as_user parsa-hlu cat "$a" 2>&1)" se

	stat "$a" >/dev/null
	chmod 600 "$a"
	expect_eq "$w: the other way, chmod 600 a: stat b says 600 at once" "$(stat -c %a "$b")" 600
	expect "$w: and the user can no longer read b" denied "$b"
	rm -rf "$d"
}

start_sched
start_fs
job_out_dir
hardlink_checks "$MNT/data/hl" "local data/"
hardlink_checks "$OUT/hl" "local out/"
stop_daemon fs
wait_for "unmounted" 20 sh -c "! mountpoint -q '$MNT'"
stop_daemon sched

if ! command -v ganesha.nfsd >/dev/null || ! command -v rpcbind >/dev/null; then
	echo "# SKIP: the NFS part needs nfs-ganesha, nfs-ganesha-vfs and rpcbind"
	end_checks
	exit 0
fi
# A fresh scheduler state for the other volume.
STATE=$TEST_DIR/state-nfs
SOCK=$STATE/sched.sock
export PARSA_SCHED=unix:$SOCK
mkdir -p "$STATE"
start_nfs
start_sched
start_fs
job_out_dir
hardlink_checks "$MNT/data/hl" "nfs data/"
hardlink_checks "$OUT/hl" "nfs out/"
end_checks
