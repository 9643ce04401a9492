#!/bin/bash
# A full disk under the scheduler's database: submissions fail with ENOSPC
# (never a crash, never a lost acknowledged job), and work again once there is
# space.
. "$(dirname "$0")/../lib/common.sh"
need_root
# The state folder on a small tmpfs of its own.
mount -t tmpfs -o size=3m,mode=755 parsa-test-state "$STATE" || { echo "# SKIP: cannot mount tmpfs"; exit 77; }
on_cleanup "umount -l '$STATE'"
start_all --cpus 2 --cpu-limit 100

cat >"$TEST_DIR/s.conf" <<'SPEC'
[stage s]
run = true
SPEC
before=$(submit "$TEST_DIR/s.conf") || fail "submit with space failed"
wait_job "$before" 30 succeeded

# Fill the disk, leaving the database nowhere to grow.
dd if=/dev/zero of="$STATE/filler" bs=64k 2>/dev/null || true
big=$TEST_DIR/big.conf
{ echo '[vars]'; for i in $(seq 1 3000); do echo "v$i = $(head -c 150 /dev/zero | tr '\0' x)"; done
  echo '[stage s]'; echo 'run = true'; } >"$big"
refused=0
for i in $(seq 1 20); do
	if ! err=$(cp "$big" "$MNT/queue/big$i.conf" 2>&1); then
		refused=1
		break
	fi
done
[ "$refused" -eq 1 ] || fail "submissions kept being accepted on a full disk"
log "on a full disk: $err"
case $err in
*"No space left"*|*"Input/output error"*|*"Resource temporarily unavailable"*) pass "a submission on a full disk fails cleanly" ;;
*) fail "unexpected error on a full disk: $err" ;;
esac
check "the scheduler survived the full disk" daemon_alive sched
check "the mount survived the full disk" daemon_alive fs
check "an acknowledged job is still there" grep -q '^state: succeeded' "$MNT/jobs/$before/status"

rm -f "$STATE/filler"
after=$(submit "$TEST_DIR/s.conf") || fail "submit after freeing space failed"
wait_job "$after" 30 succeeded
pass "submissions work again once there is space"

stop_daemon sched
start_sched
check "every acknowledged job survives a restart" grep -q '^state: succeeded' "$MNT/jobs/$after/status"
