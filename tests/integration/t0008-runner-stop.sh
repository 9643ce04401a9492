#!/bin/bash
# Stopping a runner on purpose (an operator's `parsa down`) is not the job's
# fault: the instances it stopped are requeued without using a retry, and run
# again when a runner is back.
. "$(dirname "$0")/../lib/common.sh"
start_all --cpus 2 --cpu-limit 100 --grace 1

cat >"$TEST_DIR/gated.conf" <<SPEC
[stage work]
retries = 0
run = echo attempt >> "\$PARSA_OUT/attempts"
      while [ ! -e "$TEST_DIR/open" ]; do sleep 0.1; done
SPEC
id=$(submit "$TEST_DIR/gated.conf") || fail "submit failed"
wait_for "the instance runs" 20 grep -q '^state: running' "$MNT/jobs/$id/stages/work/instances/0/status"
stop_daemon runner-local
pass "runner stopped with SIGTERM"
wait_for "the instance is requeued" 20 grep -q "^state: queued" "$MNT/jobs/$id/stages/work/instances/0/status"
check "the events say it was requeued" grep -q 'requeued' "$MNT/jobs/$id/events"

touch "$TEST_DIR/open"
start_runner local --cpus 2 --cpu-limit 100 --grace 1
wait_job "$id" 30 succeeded
check "it ran twice: stopped once, then to the end" test "$(wc -l <"$MNT/jobs/$id/out/work/attempts")" -eq 2
