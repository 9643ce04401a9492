#!/bin/bash
# The parsa command is a convenience over the same API: check, submit, status,
# wait, cancel, with the exit codes scripts rely on.
. "$(dirname "$0")/../lib/common.sh"
start_all --cpus 2 --cpu-limit 100

cat >"$TEST_DIR/good.conf" <<'SPEC'
[stage a]
run = echo a > "$PARSA_OUT/a"
[stage b]
after = a
run = cat "$PARSA_JOBDIR/out/a/a" > "$PARSA_OUT/b"
SPEC
cat >"$TEST_DIR/bad.conf" <<'SPEC'
[stage a]
run = true
cpu = 2
SPEC

check "parsa check accepts a good spec" parsa check "$TEST_DIR/good.conf"
out=$(parsa check "$TEST_DIR/bad.conf" 2>&1) && fail "parsa check accepted a bad spec"
case $out in *"bad.conf:3:"*"cpus"*) pass "parsa check names file, line and fix" ;; *) fail "parsa check said: $out" ;; esac

id=$(parsa submit "$TEST_DIR/good.conf") || fail "parsa submit failed"
case $id in ''|*[!0-9]*) fail "parsa submit printed '$id', not an id" ;; esac
pass "parsa submit prints the id ($id)"
check "parsa wait exits 0 for a job that succeeds" parsa wait "$id"
check "the pipeline's second stage saw the first's output" grep -q a "$MNT/jobs/$id/out/b/b"
check "parsa status ID" sh -c "parsa status $id | grep -q '^state: succeeded'"
check "parsa status (cluster)" sh -c "parsa status | grep -q local"

if parsa submit "$TEST_DIR/bad.conf" 2>"$TEST_DIR/err"; then fail "parsa submit accepted a bad spec"; fi
check "parsa submit shows the scheduler's errors" grep -q 'bad.conf:3:' "$TEST_DIR/err"

cat >"$TEST_DIR/slow.conf" <<'SPEC'
[stage s]
run = sleep 60
SPEC
id2=$(parsa submit "$TEST_DIR/slow.conf") || fail "submit failed"
rc=0
parsa wait "$id2" --timeout 1 >/dev/null || rc=$?
check "parsa wait --timeout exits 124 when the job is still running" test "$rc" -eq 124
check "parsa cancel" parsa cancel "$id2"
rc=0
parsa wait "$id2" >/dev/null || rc=$?
check "parsa wait exits 1 for a cancelled job" test "$rc" -eq 1

rc=0
parsa status 999999 >/dev/null 2>&1 || rc=$?
check "an unknown job is exit code 1" test "$rc" -eq 1
rc=0
parsa frobnicate >/dev/null 2>&1 || rc=$?
check "an unknown subcommand is exit code 2" test "$rc" -eq 2
