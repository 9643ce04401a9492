#!/bin/bash
# [job] start: nothing starts before it, whether a local time or +DURATION
# after submission; `why` and `status` say when it will. The clock is moved
# (tests/lib/time.sh), nobody waits hours.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/time.sh"
start_all_clocked --cpus 2 --cpu-limit 100

at=$(date -d '+3 hours' +%Y-%m-%dT%H:%M)
cat >"$TEST_DIR/later.conf" <<SPEC
[job]
start = $at

[stage a]
run = touch "\$PARSA_OUT/ran"
SPEC
id=$(submit "$TEST_DIR/later.conf") || fail "submit failed"
check "why says when it starts" grep -q "starts at ${at}:00 (in " "$MNT/jobs/$id/why"
check "status shows the start" grep -q "^start: ${at}:00" "$MNT/jobs/$id/status"
settle_passes
check "it is still queued after other work ran" job_is "$id" queued
check "nothing ran" test ! -e "$MNT/jobs/$id/out/a/ran"

set_clock +3h
wait_job "$id" 20 succeeded
check "it ran once its start came" test -e "$MNT/jobs/$id/out/a/ran"

# +DURATION counts from the submission, on the moved clock.
cat >"$TEST_DIR/rel.conf" <<'SPEC'
[job]
start = +90m

[stage a]
run = touch "$PARSA_OUT/ran"
SPEC
id=$(submit "$TEST_DIR/rel.conf") || fail "submit failed"
check "why counts from the submission" grep -q "starts at .* (in 1h29m\|starts at .* (in 1h30m" "$MNT/jobs/$id/why"
settle_passes
check "a relative start is waited for too" job_is "$id" queued
set_clock +4h31m
wait_job "$id" 20 succeeded
pass "a job with start = +90m ran once the clock had moved 90 minutes"
