#!/bin/bash
# A failed attempt is retried after a back-off, never at once (issue 35): a
# stage with retries = 2 whose instance fails at once starts its second
# attempt at least 2 s after the first and its third at least 4 s after the
# second (ENGINE_RETRY_BACKOFF_MS, doubling; docs/spec.md, retries), `why`
# says what it waits for meanwhile, and the job then fails with three
# attempts, each counted.
. "$(dirname "$0")/../lib/common.sh"
start_all --cpus 4 --cpu-limit 100 --grace 1

cat >"$TEST_DIR/flaky.conf" <<SPEC
[stage f]
retries = 2
run = echo attempt >> "\$PARSA_OUT/attempts"
      exit 3
SPEC
inst=stages/f/instances/0/status
id=$(submit "$TEST_DIR/flaky.conf") || fail "submit failed"
wait_for "the second attempt failed" 20 grep -q 'retrying (2 of 2 retries)' "$MNT/jobs/$id/events"
wait_for "why says the last retry waits" 3 grep -q '^  instance 0: retry 2 of 2 waits until .* (back-off after a failure on host local)' "$MNT/jobs/$id/why"
check "the instance's status says so too" grep -q '^back-off: retry 2 of 2 waits until' "$MNT/jobs/$id/$inst"
check "and the job's" grep -q '^back-off f: 1 instance waits; instance 0: retry 2 of 2' "$MNT/jobs/$id/status"
wait_job "$id" 30 failed

events=$MNT/jobs/$id/events
check "the events say how long each retry waits" grep -q 'retrying (1 of 2 retries) in 2s' "$events"
check "twice as long the second time" grep -q 'retrying (2 of 2 retries) in 4s' "$events"
check "three attempts" grep -q '^attempt: 3' "$MNT/jobs/$id/$inst"
check "each ran once" test "$(wc -l <"$MNT/jobs/$id/out/f/attempts")" -eq 3
check "the last failure is final" grep -q 'stage f instance 0 failed on local (exit code 3)$' "$events"
check "the job's reason names it" grep -q '^reason: stage f failed: instance 0 failed (exit code 3' "$MNT/jobs/$id/status"

# The starts' times, from the events: seconds of the day, in order.
starts=$(grep 'stage f instance 0 started on local' "$events" |
	awk '{ split($1, t, "T"); split(t[2], c, ":"); printf "%.3f\n", c[1] * 3600 + c[2] * 60 + c[3] }')
check "three starts in the events" test "$(printf '%s\n' "$starts" | wc -l)" -eq 3
gaps=$(printf '%s\n' "$starts" | awk 'NR > 1 { printf "%.3f\n", $1 - prev } { prev = $1 }')
log "gaps between the attempts' starts: $(echo $gaps) s"
check "the second attempt waited at least 2 s" awk -v g="$(printf '%s\n' "$gaps" | sed -n 1p)" 'BEGIN { exit !(g >= 1.9) }'
check "the third at least 4 s" awk -v g="$(printf '%s\n' "$gaps" | sed -n 2p)" 'BEGIN { exit !(g >= 3.9) }'

# The log holds every attempt, with a line before each after the first.
log_file=$MNT/jobs/$id/stages/f/instances/0/log
check "the log marks attempt 2" grep -q '^---- parsa: attempt 2 of this instance, started .* on ' "$log_file"
check "and attempt 3, after it" test "$(grep -o 'attempt [0-9]' "$log_file" | tr '\n' ' ')" = "attempt 2 attempt 3 "
pass "a failing instance is retried with growing back-off, and its log says where each attempt begins"
