#!/bin/bash
# window =: a job's instances start only inside its window, a stage's window
# overrides the job's, and a window that opens later lets them start then.
# The clock is set to known local times (2030-01-07 is a Monday).
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/time.sh"
set_clock 2030-01-07T06:59:00
start_all_clocked --cpus 2 --cpu-limit 100

cat >"$TEST_DIR/morning.conf" <<'SPEC'
[job]
window = 07:00-08:00

[stage a]
run = touch "$PARSA_OUT/ran"

[stage weekend]
after = a
window = sat,sun 00:00-24:00
run = touch "$PARSA_OUT/ran"
SPEC
id=$(submit "$TEST_DIR/morning.conf") || fail "submit failed"
check "why names the window and when it opens" \
	grep -q "outside its window (07:00-08:00) until 2030-01-07T07:00:00 (in [0-9ms]*)" "$MNT/jobs/$id/why"
settle_passes
check "outside the window nothing starts" test ! -e "$MNT/jobs/$id/out/a/ran"

set_clock 2030-01-07T07:00:01
wait_for "stage a runs once the window opens" 20 test -e "$MNT/jobs/$id/out/a/ran"
wait_for "stage weekend waits for its own window" 20 \
	grep -q "stage weekend: .* queued" "$MNT/jobs/$id/why"
check "why says the stage's window" grep -q "outside its window (sat,sun 00:00-24:00) until 2030-01-12T00:00:00" "$MNT/jobs/$id/why"
check "status.json has the stage's window" grep -q '"window": *"sat,sun 00:00-24:00"' "$MNT/jobs/$id/status.json"
settle_passes
check "the weekend stage has not run on a Monday" test ! -e "$MNT/jobs/$id/out/weekend/ran"

set_clock 2030-01-12T09:30:00
wait_job "$id" 20 succeeded
pass "the weekend stage ran on Saturday, outside the job's window: its own wins"
