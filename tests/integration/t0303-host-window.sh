#!/bin/bash
# A host's window (parsa-runner --window): nothing is placed on it outside the
# window; at its end, --drain-at-window-end no stops what runs and the
# scheduler requeues it without using a retry; yes lets it finish but takes
# nothing new. 2030-01-07 is a Monday.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/time.sh"
set_clock 2030-01-07T21:59:00
start_sched --clock-file "$CLOCK"
start_fs
start_runner local --cpus 2 --cpu-limit 100 --grace 2 --clock-file "$CLOCK" --window "22:00-06:00"

cat >"$TEST_DIR/gate.sh" <<GATE
#!/bin/sh
while [ ! -e "$TEST_DIR/open-\$1" ]; do sleep 0.05; done
GATE
chmod 755 "$TEST_DIR/gate.sh"
cat >"$TEST_DIR/night.conf" <<SPEC
[stage work]
run = echo start >> "\$PARSA_OUT/starts"
      "$TEST_DIR/gate.sh" 1
SPEC
inst=stages/work/instances/0/status
id=$(submit "$TEST_DIR/night.conf") || fail "submit failed"
check "why says the host is outside its window until 22:00" \
	grep -q "local: outside its window (22:00-06:00) until 2030-01-07T22:00:00" "$MNT/jobs/$id/why"
check "the host's status shows its window" \
	grep -q '^window: 22:00-06:00 (closed until 2030-01-07T22:00:00 (in [0-9ms]*); at its end running work is stopped and requeued)' \
	"$MNT/hosts/local/status"
wait_passes
check "nothing ran outside the host's window" test ! -e "$MNT/jobs/$id/out/work/starts"

set_clock 2030-01-07T22:00:01
wait_for "the instance runs once the window opens" 20 grep -q '^state: running' "$MNT/jobs/$id/$inst"

set_clock 2030-01-08T06:00:01
wait_for "the window's end stops it and requeues it" 20 grep -q '^state: queued' "$MNT/jobs/$id/$inst"
check "its reason says the window closed" grep -q '^reason: .*host window closed' "$MNT/jobs/$id/$inst"
check "the job has not failed" job_is "$id" running
check "the events say it was requeued" grep -q 'its window closed; requeued' "$MNT/jobs/$id/events"

set_clock 2030-01-08T22:00:05
wait_for "it starts again at the next window" 20 grep -q '^attempt: 2' "$MNT/jobs/$id/$inst"
touch "$TEST_DIR/open-1"
wait_job "$id" 20 succeeded
pass "requeued by the window, it succeeded the next night with retries = 0"

# drain-at-window-end yes: running work finishes, nothing new starts.
stop_daemon runner-local
start_runner local --cpus 2 --cpu-limit 100 --grace 2 --clock-file "$CLOCK" --window "22:00-06:00" \
	--drain-at-window-end yes
sed "s/gate.sh\" 1/gate.sh\" 2/" "$TEST_DIR/night.conf" >"$TEST_DIR/drain.conf"
id2=$(submit "$TEST_DIR/drain.conf") || fail "submit failed"
wait_for "the instance runs inside the window" 20 grep -q '^state: running' "$MNT/jobs/$id2/$inst"
set_clock 2030-01-09T06:00:01
id3=$(submit "$TEST_DIR/night.conf") || fail "submit failed"
wait_for "the new job is held by the window" 20 \
	grep -q "local: outside its window (22:00-06:00) until 2030-01-09T22:00:00" "$MNT/jobs/$id3/why"
check "the running instance was not stopped" grep -q '^state: running' "$MNT/jobs/$id2/$inst"
touch "$TEST_DIR/open-2"
wait_job "$id2" 20 succeeded
check "a drained window let it finish" test "$(wc -l <"$MNT/jobs/$id2/out/work/starts")" -eq 1
check "nothing new started after the window's end" job_is "$id3" queued
