#!/bin/bash
# Progress while stages run: DONE/TOTAL lines written to $PARSA_PROGRESS, a
# count of the entries appearing in the output folder (progress = files:N),
# and a fan-out's sum over its instances, read back from status, the stage's
# status, status.json and the instance's status; stages/<s>/wait waits for one
# stage while the rest of the job goes on.
. "$(dirname "$0")/../lib/common.sh"
start_all --cpus 8 --cpu-limit 100

cat >"$TEST_DIR/gate.sh" <<GATE
#!/bin/sh
while [ ! -e "$TEST_DIR/open-\$1" ]; do sleep 0.05; done
GATE
chmod 755 "$TEST_DIR/gate.sh"
cat >"$TEST_DIR/progress.conf" <<SPEC
[vars]
n = 4

[stage lines]
run = for i in 1 2 3; do echo "\$i/10" >> "\$PARSA_PROGRESS"; done
      "$TEST_DIR/gate.sh" lines

[stage files]
progress = files:\${n}
run = touch "\$PARSA_OUT/a"
      "$TEST_DIR/gate.sh" more
      touch "\$PARSA_OUT/b" "\$PARSA_OUT/.hidden"
      "$TEST_DIR/gate.sh" files

[stage fan]
instances = 4
run = echo 50% > "\$PARSA_PROGRESS"
      "$TEST_DIR/gate.sh" fan

[stage after]
after = lines
run = true
SPEC
id=$(submit "$TEST_DIR/progress.conf") || fail "submit failed"
J=$MNT/jobs/$id
wait_for "the progress lines reach status" 20 grep -q '^progress lines: 3/10 (30%), .*/s, estimated end ' "$J/status"
wait_for "the folder's count reaches status" 20 grep -q '^progress files: 1/4 (25%)' "$J/status"
touch "$TEST_DIR/open-more"
wait_for "a new entry is counted as it appears (not dot files)" 20 grep -q '^progress files: 2/4 (50%)' "$J/status"
wait_for "the fan-out's sum reaches status" 20 grep -q '^progress fan: 200/400 (50%)' "$J/status"
check "the fan-out's status counts its instances" grep -q '^stage fan: running (4 running, 0 done, 0 queued, 0 failed of 4)' "$J/status"
check "the stage's status has progress, rate and end" \
	sh -c "grep -q '^progress: 3/10 (30%)' '$J/stages/lines/status' && grep -q '^rate: ' '$J/stages/lines/status' && grep -q '^estimated end: ' '$J/stages/lines/status'"
check "the instance's status has its own" grep -q '^progress: 50/100 (50%)' "$J/stages/fan/instances/2/status"
check "status.json has the same fields" grep -q '"progress":{"done":3\(\.0\)\?,"total":10\(\.0\)\?,"percent":30' "$J/status.json"

# stages/<s>/wait: one stage, while the others still run.
timeout 20 cat "$J/stages/lines/wait" >"$TEST_DIR/lines-wait" &
waiter=$!
touch "$TEST_DIR/open-lines"
wait "$waiter" || fail "waiting for the stage failed"
check "the stage's wait says how it ended" test "$(cat "$TEST_DIR/lines-wait")" = succeeded
check "the job still runs" job_is "$id" running
if cat "$J/stages/nope/wait" 2>/dev/null; then fail "a stage that does not exist could be waited for"; fi
pass "waiting for a stage that does not exist fails at once"

touch "$TEST_DIR/open-files" "$TEST_DIR/open-fan"
wait_job "$id" 30 succeeded
check "the final count stays in status" grep -q '^progress files: 2/4 (50%)' "$J/status"
check "a finished fan-out is complete" grep -q '^progress fan: 400/400 (100%)' "$J/status"
