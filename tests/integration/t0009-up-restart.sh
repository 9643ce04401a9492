#!/bin/bash
# `parsa up` keeps the machine's parsa up: a daemon that dies is started again
# (the scheduler, the mount or the runner), jobs go on; a scheduler that cannot
# start is tried again and again while the runner (and its running instance)
# and the mount stay; and `parsa down` still stops everything.
. "$(dirname "$0")/../lib/common.sh"

on_cleanup "parsa down --mount '$MNT' --state '$STATE'"
MOUNTS+=("$MNT")
parsa up --detach --mount "$MNT" --state "$STATE" --storage "$STORAGE" \
	--cpus 4 --cpu-limit 100 --mem-limit 100 >"$LOGS/up.log" 2>&1 || fail "parsa up --detach failed: $(tail -5 "$LOGS/up.log")"

cat >"$TEST_DIR/gated.conf" <<SPEC
[stage work]
run = while [ ! -e "$TEST_DIR/open" ]; do sleep 0.1; done
      echo done > "\$PARSA_OUT/done"
SPEC
id=$(submit "$TEST_DIR/gated.conf") || fail "submit failed"
wait_for "the instance runs" 20 grep -q '^state: running' "$MNT/jobs/$id/stages/work/instances/0/status"

for daemon in sched fs; do
	old=$(up_pid "${daemon}_pid")
	alive "$old" || fail "no live $daemon pid in up.json"
	kill -KILL "$old"
	wait_for "the $daemon is started again" 30 replaced "${daemon}_pid" "$old"
	wait_for "the mount answers again after the $daemon restart" 30 test -r "$MNT/jobs/$id/status"
	wait_for "status is readable after the $daemon restart" 30 grep -q '^state:' "$MNT/jobs/$id/status"
	pass "$daemon killed with SIGKILL was started again"
done

# A scheduler that cannot start again (its state folder's lock is held, as
# a volume that is away would stop it): up keeps the others and tries again.
runner_pid=$(up_pid runner_pid)
sched_pid=$(up_pid sched_pid)
flock "$STATE/sched.lock" sh -c "while [ ! -e '$TEST_DIR/unlock' ]; do sleep 0.1; done" &
holder=$!
on_cleanup "touch '$TEST_DIR/unlock'; kill $holder"
holder_waits() { ls -l "/proc/$holder/fd" 2>/dev/null | grep -q sched.lock; }
wait_for "the lock's holder waits for the lock" 10 holder_waits
kill -KILL "$sched_pid"
wait_for "up says it cannot restart the scheduler" 30 \
	grep -q 'cannot restart parsa-sched' "$STATE/logs/up.log"
wait_for "and tries again" 30 \
	sh -c "[ \$(grep -c 'cannot restart parsa-sched' '$STATE/logs/up.log') -ge 2 ]"
check "the runner was not stopped" alive "$runner_pid"
check "the mount stays" is_mounted "$MNT"
runs_now() { pgrep -f -- "$1" >/dev/null; }
check "the running instance was not stopped" runs_now "$TEST_DIR/open"
touch "$TEST_DIR/unlock"
wait "$holder" 2>/dev/null
wait_for "the scheduler is back once it can start" 60 replaced sched_pid "$sched_pid"
check "up says it restarted" grep -q 'parsa-sched restarted' "$STATE/logs/up.log"
wait_for "status is readable again" 30 grep -q '^state: running' "$MNT/jobs/$id/status"
pass "a scheduler that could not start was brought back, nothing else stopped"

touch "$TEST_DIR/open"
wait_job "$id" 60 succeeded
pass "the job running across both restarts succeeded"
id2=$(submit "$TEST_DIR/gated.conf") || fail "submit after the restarts failed"
wait_job "$id2" 30 succeeded
pass "new jobs run after the restarts"

parsa down --mount "$MNT" --state "$STATE" >>"$LOGS/up.log" 2>&1 || fail "parsa down failed"
check "parsa down unmounts" sh -c "! grep -q ' $MNT fuse' /proc/mounts"
if pgrep -f -- "$STATE" >/dev/null; then
	fail "parsa down left processes: $(pgrep -af -- "$STATE")"
fi
pass "parsa down stops every daemon"
