#!/bin/bash
# What NFSv3 cannot do as POSIX says fails the way docs/filesystem.md tells,
# through the mount (tests/lib/special.sh, in out/ and data/) and through the
# backend itself (the unit test test_backend_nfs against this server), while
# FIFOs and unix sockets work: mkfifo, bind, mknod, fallocate, touch -h,
# names over 255 bytes, a 4,095-byte symlink target, times past 2^32.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"
. "$(dirname "$0")/../lib/special.sh"

start_nfs
start_sched
start_fs
printf '[stage s]\nrun = true\n' >"$TEST_DIR/s.conf"
id=$(submit "$TEST_DIR/s.conf") || fail "submission failed"
special_checks "$MNT/jobs/$id/out/s/special" nfs
special_checks "$MNT/data/special" nfs
check "a FIFO made through the mount is one on the server" sh -c "mkfifo '$MNT/data/p' && test -p '$NFS_EXPORT/data/p'"
rm -f "$MNT/data/p"

unit=$PARSA_BIN/../tests/test_backend_nfs
if [ -x "$unit" ]; then
	PARSA_TEST_NFS_URL=$NFS_URL "$unit" >"$LOGS/test_backend_nfs.tap" 2>&1
	check "the backend's own checks pass against the server ($(grep -c '^ok' "$LOGS/test_backend_nfs.tap") ok)" \
		sh -c "! grep -q '^not ok' '$LOGS/test_backend_nfs.tap' && grep -q 'nfs: all of it removed' '$LOGS/test_backend_nfs.tap'"
	grep '^not ok' -A2 "$LOGS/test_backend_nfs.tap" | head -20
else
	log "no $unit: the backend's unit checks against the server are skipped"
fi
