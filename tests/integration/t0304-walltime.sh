#!/bin/bash
# walltime = 1h: at the limit the runner sends SIGTERM (SIGKILL after the
# grace period), the instance fails with the reason walltime, and retries
# apply. An hour passes by moving the runner's clock.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/time.sh"
start_all_clocked --cpus 2 --cpu-limit 100 --grace 1

# A copy of sleep inside the test folder, so that cleanup finds it by name.
cp "$(command -v sleep)" "$TEST_DIR/sleeper"
cat >"$TEST_DIR/long.conf" <<SPEC
[stage long]
walltime = 1h
retries = 1
run = echo "attempt" >> "\$PARSA_OUT/attempts"
      trap '' TERM; "$TEST_DIR/sleeper" 600
SPEC
inst=stages/long/instances/0/status
id=$(submit "$TEST_DIR/long.conf") || fail "submit failed"
wait_for "the instance runs" 20 grep -q '^state: running' "$MNT/jobs/$id/$inst"
check "its stage shows the walltime" grep -q '^walltime: 1h' "$MNT/jobs/$id/stages/long/status"

set_clock +1h
wait_for "the walltime stops it and it is retried" 20 grep -q '^attempt: 2' "$MNT/jobs/$id/$inst"
check "the first attempt's end says walltime" grep -q 'failed on local (.*walltime); retrying (1 of 1' "$MNT/jobs/$id/events"
wait_for "the retry runs" 20 grep -q '^state: running' "$MNT/jobs/$id/$inst"

set_clock +2h
wait_job "$id" 20 failed
check "the instance's reason is walltime" grep -q '^reason: .*walltime' "$MNT/jobs/$id/$inst"
check "the job's reason names it too" grep -q '^reason: stage long failed: instance 0 failed (.*walltime' "$MNT/jobs/$id/status"
check "it ran twice (one retry)" test "$(wc -l <"$MNT/jobs/$id/out/long/attempts")" -eq 2
wait_for "SIGTERM was ignored, SIGKILL came after the grace" 15 sh -c "! pgrep -f '$TEST_DIR/slee[p]er' >/dev/null"
