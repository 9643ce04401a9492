#!/bin/bash
# The data path as POSIX says, on a local volume: hard links share an inode
# number and see fresh link counts, the made-up nodes have their own, another
# user's write clears set-uid, and an open file outlives its name (fstat,
# fchmod, pread after unlink; rename over it) until the last close.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/posix.sh"
need_root
start_sched
start_fs

posix_checks "$STORAGE"

# A daemon that died leaves its unlinked files: the next mount of this host
# removes them, and leaves a live daemon's alone.
host=$(hostname)
mkdir -p "$STORAGE/.parsa-unlinked/$host.999999999" "$STORAGE/.parsa-unlinked/$host.1"
touch "$STORAGE/.parsa-unlinked/$host.999999999/.fuse_hidden0000000100000001"
stop_daemon fs
wait_for "unmounted" 20 sh -c "! mountpoint -q '$MNT'"
check "a clean unmount removes its own folder" \
	test "$(ls "$STORAGE/.parsa-unlinked" | grep -c "^$host\.")" = 2
start_fs
check "leftovers of a dead daemon are removed at mount" test ! -e "$STORAGE/.parsa-unlinked/$host.999999999"
check "a live process's folder stays" test -d "$STORAGE/.parsa-unlinked/$host.1"
check "the mount has its own" test -d "$STORAGE/.parsa-unlinked/$host.${DAEMON_PID[fs]}"
