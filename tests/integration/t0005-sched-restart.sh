#!/bin/bash
# Killing parsa-sched with SIGKILL loses no acknowledged job and starts no
# instance twice: runners keep running what they run and report it when the
# scheduler is back; the mount answers EIO/ENOTCONN meanwhile and recovers.
. "$(dirname "$0")/../lib/common.sh"
start_all --cpus 4 --cpu-limit 100

cat >"$TEST_DIR/restart.conf" <<SPEC
[stage work]
instances = 4
run = echo start >> "\$PARSA_OUT/started-\$PARSA_INDEX"
      "$TEST_DIR/gate.sh"
      echo done > "\$PARSA_OUT/done-\$PARSA_INDEX"

[stage next]
after = work
run = ls "\$PARSA_JOBDIR/out/work" > "\$PARSA_OUT/seen"
SPEC
# Instances wait for a file, so the test decides when they end.
cat >"$TEST_DIR/gate.sh" <<GATE
#!/bin/sh
while [ ! -e "$TEST_DIR/open" ]; do sleep 0.1; done
GATE
chmod 755 "$TEST_DIR/gate.sh"

id=$(submit "$TEST_DIR/restart.conf") || fail "submit failed"
wait_for "4 instances started" 20 sh -c "[ \$(ls '$MNT/jobs/$id/out/work' | grep -c started) -eq 4 ]"

# Submissions acknowledged just before the crash must survive it.
cat >"$TEST_DIR/small.conf" <<'SPEC'
[stage s]
run = true
SPEC
acked=()
for i in 1 2 3; do
	acked+=("$(submit "$TEST_DIR/small.conf")") || fail "submit $i failed"
done
log "acknowledged jobs before the crash: ${acked[*]}"

stop_daemon sched KILL
pass "scheduler killed with SIGKILL"

# The mount must not hang while the scheduler is down.
start_ns=$(date +%s%N)
rc=0
timeout 15 cat "$MNT/jobs/$id/status" >/dev/null 2>"$TEST_DIR/err" || rc=$?
[ "$rc" -ne 0 ] || fail "status was readable with the scheduler down"
elapsed_ms=$((($(date +%s%N) - start_ns) / 1000000))
[ "$rc" -ne 124 ] || fail "reading status hung with the scheduler down"
log "status with the scheduler down failed in ${elapsed_ms} ms: $(cat "$TEST_DIR/err")"
check "the error is EIO or ENOTCONN" grep -Eq 'Input/output error|not connected' "$TEST_DIR/err"
if cp "$TEST_DIR/small.conf" "$MNT/queue/while-down.conf" 2>/dev/null; then
	fail "a submission was acknowledged with the scheduler down"
fi
pass "submitting with the scheduler down fails"
rm -f "$MNT/queue/while-down.conf.rejected"

# Let the instances finish while the scheduler is down.
touch "$TEST_DIR/open"
wait_for "instances finished during the outage" 20 sh -c "[ \$(ls '$MNT/jobs/$id/out/work' | grep -c done) -eq 4 ]"

start_sched
pass "scheduler restarted"
wait_job "$id" 60 succeeded
for i in 0 1 2 3; do
	n=$(wc -l <"$MNT/jobs/$id/out/work/started-$i")
	[ "$n" -eq 1 ] || fail "instance $i started $n times"
done
pass "each instance started exactly once"
check "the dependent stage ran after the restart" test -s "$MNT/jobs/$id/out/next/seen"
for j in "${acked[@]}"; do
	wait_job "$j" 30 succeeded
done
pass "every acknowledged job survived the crash and ran"
