#!/bin/bash
# echo cancel > ctl stops running instances (their whole process group), ends the
# job as cancelled and cancels the stages that depended on it; hold/release and
# retry work through ctl too.
. "$(dirname "$0")/../lib/common.sh"
start_all --cpus 4 --cpu-limit 100 --grace 2

# A copy of sleep inside the test folder, so that cleanup finds it by name.
cp "$(command -v sleep)" "$TEST_DIR/sleeper"
cat >"$TEST_DIR/long.conf" <<SPEC
[stage sleepy]
instances = 2
run = trap '' TERM; "$TEST_DIR/sleeper" 300 & wait; echo "should not get here"

[stage after]
after = sleepy
run = touch "\$PARSA_OUT/ran"
SPEC
id=$(submit "$TEST_DIR/long.conf") || fail "submit failed"
wait_for "both instances run" 20 sh -c "grep -q '^state: running' '$MNT/jobs/$id/stages/sleepy/instances/1/status' && grep -q '^state: running' '$MNT/jobs/$id/stages/sleepy/instances/0/status'"
pgrep -f "$TEST_DIR/slee[p]er" >/dev/null || fail "no sleep process is running"

echo cancel >"$MNT/jobs/$id/ctl" || fail "cancel write failed"
wait_job "$id" 30 cancelled
pass "the job is cancelled"
wait_for "the instances' processes are gone" 15 sh -c "! pgrep -f '$TEST_DIR/slee[p]er' >/dev/null"
pass "the process groups are killed (SIGTERM ignored, then SIGKILL)"
check "the dependent stage never ran" test ! -e "$MNT/jobs/$id/out/after/ran"
check "the dependent stage is cancelled" grep -q '^state: cancelled' "$MNT/jobs/$id/stages/after/status"

# hold / release: a blocker takes every core so the job is surely still queued
# when it is held.
cat >"$TEST_DIR/blocker.conf" <<SPEC
[stage block]
cpus = 4
run = "$TEST_DIR/sleeper" 300
SPEC
cat >"$TEST_DIR/quick.conf" <<'SPEC'
[stage one]
run = touch "$PARSA_OUT/done"
SPEC
blocker=$(submit "$TEST_DIR/blocker.conf") || fail "submit failed"
wait_for "the blocker runs" 20 job_is "$blocker" running
id2=$(submit "$TEST_DIR/quick.conf") || fail "submit failed"
echo hold >"$MNT/jobs/$id2/ctl" || fail "hold failed"
check "why says held" grep -qi 'held' "$MNT/jobs/$id2/why"
echo cancel >"$MNT/jobs/$blocker/ctl" || fail "cancel failed"
wait_job "$blocker" 30 cancelled
for i in $(seq 1 10); do
	job_is "$id2" queued || fail "a held job started ($(job_state "$id2"))"
	sleep 0.1
done
pass "a held job does not start when cores are free"
echo release >"$MNT/jobs/$id2/ctl" || fail "release failed"
wait_job "$id2" 20 succeeded
pass "released job ran"

# retry of a failed job
cat >"$TEST_DIR/flaky.conf" <<SPEC
[stage flaky]
run = if [ -e "$TEST_DIR/ok" ]; then echo fine; else echo "not yet" >&2; exit 3; fi
SPEC
id3=$(submit "$TEST_DIR/flaky.conf") || fail "submit failed"
wait_job "$id3" 20 failed
check "the failed instance's log has its stderr" grep -q 'not yet' "$MNT/jobs/$id3/stages/flaky/instances/0/log"
check "the status gives the exit code" grep -qi 'exit.*3' "$MNT/jobs/$id3/stages/flaky/instances/0/status"
touch "$TEST_DIR/ok"
echo retry >"$MNT/jobs/$id3/ctl" || fail "retry failed"
wait_job "$id3" 20 succeeded
pass "retry re-ran the failed stage"
