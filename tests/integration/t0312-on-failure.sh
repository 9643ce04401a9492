#!/bin/bash
# A fan-out where one index fails, under each on_failure: finish (the default)
# lets the other instances run to the end before the stage and the job fail,
# naming the index, and the stage after it never starts; stop cancels the
# running ones at once; ignore counts the failure and goes on (max_failed = 0
# makes it fail); max_running = 2 never has more than two at once on a
# 4-core runner.
. "$(dirname "$0")/../lib/common.sh"
start_all --cpus 4 --cpu-limit 100 --grace 1

# fan_spec ON_FAILURE_LINES SLEEP: 4 instances, index 1 exits 3 at once, the
# others sleep and leave a file; a stage after it leaves one too.
fan_spec() {
	cat <<SPEC
[stage fan]
instances = 4
$1
run = if [ "\$PARSA_INDEX" = 1 ]; then exit 3; fi
      sleep $2
      touch "\$PARSA_OUT/done-\$PARSA_INDEX"

[stage after]
after = fan
run = touch "\$PARSA_OUT/ran"
SPEC
}

# fan NAME ON_FAILURE_LINES SLEEP [STATE]: submit such a spec as NAME.conf and,
# with STATE, wait until it ends so; $id and $J name the job and its folder.
fan() {
	fan_spec "$2" "$3" >"$TEST_DIR/$1.conf"
	id=$(submit "$TEST_DIR/$1.conf") || fail "submitting $1.conf failed"
	J=$MNT/jobs/$id
	[ -z "${4:-}" ] || wait_job "$id" 20 "$4"
}

# ---- finish (the default) ----
fan finish "" 2
wait_for "index 1 fails" 20 grep -q 'stage fan instance 1 failed on local (exit code 3)' "$J/events"
check "the job still runs while the others do" job_is "$id" running
check "why says the others run to the end" grep -q 'instance 1 failed (exit code 3), more than max_failed = 0: the others run to the end (on_failure = finish), then the stage fails' "$J/why"
wait_job "$id" 20 failed
for i in 0 2 3; do
	check "instance $i ran to the end" test -e "$J/out/fan/done-$i"
done
check "nothing was cancelled" sh -c "! grep -q 'signal 15: cancelled' '$J/events'"
check "the job failed after the others succeeded" sh -c "grep -n 'instance 0 succeeded\|instance 2 succeeded\|instance 3 succeeded\|job failed' '$J/events' | tail -1 | grep -q 'job failed'"
check "the stage's status names index 1" grep -q '^failures: instance 1 failed (exit code 3)$' "$J/stages/fan/status"
check "the job's reason too" grep -q '^reason: stage fan failed: instance 1 failed (exit code 3)$' "$J/status"
check "the stage after it never started" test ! -e "$J/out/after/ran"
check "and is cancelled" grep -q '^state: cancelled' "$J/stages/after/status"

# ---- stop ----
fan stop "on_failure = stop" 30 failed
check "stop: instance 0 is cancelled at once" grep -q 'stage fan instance 0 cancelled on local' "$J/events"
check "it never finished" test ! -e "$J/out/fan/done-0"
check "the reason names index 1" grep -q '^reason: stage fan failed: instance 1 failed (exit code 3)$' "$J/status"

# ---- ignore ----
fan ignore "on_failure = ignore" 1 succeeded
check "ignore: the stage succeeds, counting the failure" grep -q '^stage fan: succeeded, 1 of 4 failed$' "$J/status"
check "its status names index 1" grep -q '^failures: instance 1 failed (exit code 3)$' "$J/stages/fan/status"
check "the stage after it ran" test -e "$J/out/after/ran"

fan ignore0 "on_failure = ignore
max_failed = 0" 1 failed
check "ignore with max_failed = 0 fails the stage" grep -q '^state: failed' "$J/stages/fan/status"
check "after the others ran" test -e "$J/out/fan/done-3"
check "and the stage after it never started" test ! -e "$J/out/after/ran"

# ---- max_running ----
cat >"$TEST_DIR/limited.conf" <<'SPEC'
[stage few]
instances = 6
max_running = 2
run = echo "start $(date +%s.%N)" >"$PARSA_OUT/$PARSA_INDEX"
      sleep 1
      echo "end $(date +%s.%N)" >>"$PARSA_OUT/$PARSA_INDEX"
SPEC
id=$(submit "$TEST_DIR/limited.conf") || fail "submit failed"
J=$MNT/jobs/$id
most=0
while ! job_is "$id" succeeded; do
	n=$(sed -n 's/^running: //p' "$J/stages/few/status")
	[ "${n:-0}" -gt "$most" ] && most=$n
	job_is "$id" failed && fail "the limited job failed"
	sleep 0.05
done
check "max_running = 2: never more than 2 running in the stage's status (saw $most)" test "$most" -le 2
check "and it did run 2 at once" test "$most" -eq 2
# From the instances' own times: the most that overlapped.
overlap=$(cat "$J"/out/few/* | awk '{ print $2, ($1 == "start" ? 1 : -1) }' | sort -n |
	awk '{ n += $2; if (n > m) m = n } END { print m }')
check "their own start and end times overlap 2 at most (got $overlap)" test "$overlap" -le 2
check "all six ran" test "$(ls "$J/out/few" | wc -l)" -eq 6
