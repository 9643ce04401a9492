#!/bin/bash
# Recurring pipelines: a spec with every = written to schedules/ becomes
# schedules/<name>/ and submits a normal job each period (three times here,
# the clock moved an hour at a time); ctl pauses, resumes and runs it now;
# removing the folder removes the schedule and keeps its jobs. A cron line
# fires at its minute. A spec without every is refused in schedules/, one
# with every is refused in queue/.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/time.sh"
start_all_clocked --cpus 2 --cpu-limit 100

S=$MNT/schedules
cat >"$TEST_DIR/hourly.conf" <<'SPEC'
[job]
every = 1h

[stage a]
run = date > "$PARSA_OUT/when"
SPEC
ls "$S" >/dev/null # the mount now holds a list without it
sleep 1.1
before=$(date +%s)
cp "$TEST_DIR/hourly.conf" "$S/" || fail "writing a schedule failed"
check "ls shows the new schedule at once" grep -qx hourly <<<"$(ls "$S")"
check "the schedule is a folder named after the file" test -d "$S/hourly"
check "with its own time, not the mount's" test "$(stat -c %Y "$S/hourly")" -ge "$before"
check "it has spec, status, status.json and ctl" \
	test "$(ls "$S/hourly" | tr '\n' ' ')" = "ctl spec status status.json "
check "its spec is the text written" cmp -s "$TEST_DIR/hourly.conf" "$S/hourly/spec"
check "status says when it runs next" grep -q '^next run: .* (in 1h\|^next run: .* (in 59m' "$S/hourly/status"
check "status says every" grep -q '^every: 1h' "$S/hourly/status"

runs() { sed -n 's/^runs: //p' "$S/hourly/status"; }
runs_are() { test "$(runs)" = "$1"; }
last_job() { sed -n 's/^run: job \([0-9]*\) .*/\1/p' "$S/hourly/status" | head -1; }
for hour in 1 2 3; do
	set_clock "+${hour}h"
	wait_for "run $hour" 20 runs_are "$hour"
	wait_job "$(last_job)" 20 succeeded
done
pass "the schedule fired three times, each run a normal job that succeeded"
check "status lists the runs and their results" \
	test "$(grep -c '^run: job [0-9]* submitted .* succeeded' "$S/hourly/status")" -eq 3
check "status.json has the runs" grep -q '"runs_total": *3' "$S/hourly/status.json"

echo pause >"$S/hourly/ctl" || fail "pause failed"
check "status says paused" grep -q '^state: paused' "$S/hourly/status"
set_clock +4h30m
settle_passes
check "a paused schedule does not run" test "$(runs)" = 3
echo resume >"$S/hourly/ctl" || fail "resume failed"
settle_passes
check "resuming does not make up the paused runs" test "$(runs)" = 3
check "the next run is the next period" grep -q '^next run: .* (in 30m\|^next run: .* (in 29m' "$S/hourly/status"
echo run-now >"$S/hourly/ctl" || fail "run-now failed"
check "run-now runs at once" test "$(runs)" = 4
wait_job "$(last_job)" 20 succeeded
if echo bogus >"$S/hourly/ctl" 2>/dev/null; then fail "an unknown ctl command was accepted"; fi
pass "an unknown command is refused"

# Writing the same name again replaces the spec; the runs so far stay.
sed 's/^every = 1h/every = 2h/' "$TEST_DIR/hourly.conf" >"$TEST_DIR/hourly2.conf"
cp "$TEST_DIR/hourly2.conf" "$S/hourly.conf" || fail "replacing the schedule failed"
check "the new spec is in force" grep -q '^every: 2h' "$S/hourly/status"
check "the runs so far stay" test "$(runs)" = 4
check "the spec file shows the new text" cmp -s "$TEST_DIR/hourly2.conf" "$S/hourly/spec"

first=$(sed -n 's/^run: job \([0-9]*\) .*/\1/p' "$S/hourly/status" | tail -1)
rm -r "$S/hourly" || fail "rm -r of the schedule failed"
check "the schedule is gone" test ! -e "$S/hourly"
check "its jobs stay" test -d "$MNT/jobs/$first"

# A cron line, at a known local time.
set_clock 2030-01-07T01:59:30
cat >"$TEST_DIR/nightly.conf" <<'SPEC'
[job]
every = 0 2 * * *

[stage a]
run = true
SPEC
cp "$TEST_DIR/nightly.conf" "$S/" || fail "writing the nightly schedule failed"
check "the next run is at 02:00" grep -q '^next run: 2030-01-07T02:00:00' "$S/nightly/status"
set_clock 2030-01-07T02:00:01
wait_for "the nightly run" 20 grep -q '^runs: 1' "$S/nightly/status"
check "the next one is tomorrow" grep -q '^next run: 2030-01-08T02:00:00' "$S/nightly/status"

# Wrong folder either way.
if cp "$TEST_DIR/nightly.conf" "$MNT/queue/" 2>/dev/null; then fail "queue/ accepted a spec with every"; fi
check "queue/ says where every belongs" grep -q 'nightly.conf:2: every = 0 2 \* \* \*: a spec that repeats goes to schedules/' \
	"$MNT/queue/nightly.conf.rejected"
printf '[stage a]\nrun = true\n' >"$TEST_DIR/once.conf"
if cp "$TEST_DIR/once.conf" "$S/" 2>/dev/null; then fail "schedules/ accepted a spec without every"; fi
check "schedules/ says every is needed" grep -q 'once.conf:1: a spec in schedules/ needs \[job\] every' "$S/once.conf.rejected"
