#!/bin/bash
# A schedule survives a scheduler restart, and periods that passed while the
# scheduler was down make one run when it is back, not one per period: the
# run says it was late and how many were skipped, and the next run is the
# next period after now.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/time.sh"
start_all_clocked --cpus 2 --cpu-limit 100

S=$MNT/schedules
printf '[job]\nevery = 1h\n\n[stage a]\nrun = true\n' >"$TEST_DIR/hourly.conf"
cp "$TEST_DIR/hourly.conf" "$S/" || fail "writing a schedule failed"
check "no run yet" grep -q '^runs: 0' "$S/hourly/status"

stop_daemon sched
set_clock +5h
start_sched --clock-file "$CLOCK"
pass "the scheduler was down for five periods"
wait_for "the schedule made its late run" 20 grep -q '^runs: 1' "$S/hourly/status"
settle_passes
check "one run only, not five" grep -q '^runs: 1$' "$S/hourly/status"
check "the run says it was late and how many were skipped" \
	grep -q '^run: job [0-9]* submitted .* (late: due at .*; 4 later runs missed while the scheduler was down are skipped)' \
	"$S/hourly/status"
check "the next run is within the next period" grep -q '^next run: .* (in \(1h\|[0-9]*m\?[0-9]*s\?\))$' "$S/hourly/status"
check "the job's events say which schedule made it" \
	grep -q 'run of schedule hourly: late' "$MNT/jobs/$(sed -n 's/^run: job \([0-9]*\) .*/\1/p' "$S/hourly/status")/events"
