#!/bin/bash
# Failures on a three-host cluster (network namespaces): a runner killed with
# SIGKILL during a stage (its instance survives under its supervisor and the
# new runner reattaches); a network cut shorter than the lease (the instance
# keeps running, counted once); one longer than the lease (the runner kills it,
# the scheduler requeues it once, the result is right); and a scheduler killed
# and restarted mid-run (nothing killed, nothing started twice).
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cluster.sh"

TIMEOUTS=(--host-timeout 3s --lease 8s)
cluster_setup
start_cluster_sched "${TIMEOUTS[@]}"
start_head_fs
for h in h1 h2 h3; do
	start_host "$h" --cpus 1 --mem 4G
done

cat >"$TEST_DIR/gate.sh" <<GATE
#!/bin/sh
while [ ! -e "$TEST_DIR/open-\$1" ] && [ ! -e "$TEST_DIR/open-all" ]; do sleep 0.05; done
GATE
chmod 755 "$TEST_DIR/gate.sh"
cat >"$TEST_DIR/work.conf" <<SPEC
[stage work]
instances = 3
retries = 1
run = echo start >> "\$PARSA_OUT/started-\$PARSA_INDEX"
      "$TEST_DIR/gate.sh" "work-\$PARSA_INDEX"
      echo "\$PARSA_INDEX,ok" > "\$PARSA_OUT/\$PARSA_INDEX.csv"

[stage gather]
after = work
run = cat "\$PARSA_JOBDIR"/out/work/*.csv | sort > "\$PARSA_OUT/results.csv"
SPEC
id=$(submit "$TEST_DIR/work.conf") || fail "submit failed"
out=$MNT/jobs/$id/out/work
wait_for "three instances run, one per host" 30 sh -c "[ \$(ls '$out' | grep -c started) -eq 3 ]"
started() { wc -l <"$out/started-$1"; }

# -- kill -9 of a runner: the instance survives and is reattached.
# (The runner reports a start 50 ms after it, so the pid may lag the marker.)
has_pid() { [ -n "$(inst_field "$1" "$2" "$3" pid)" ]; }
wait_for "instance 0 is running with its pid" 10 has_pid "$id" work 0
h=$(inst_field "$id" work 0 host)
pid=$(inst_field "$id" work 0 pid)
[ -n "$h" ] && [ -n "$pid" ] || fail "instance 0 has no host or pid"
stop_daemon "runner-$h" KILL
check "the instance outlives its runner (kill -9)" kill -0 "$pid"
start_host_runner "$h" --cpus 1 --mem 4G
wait_for "the new runner reattaches" 20 grep -q "reattached to job $id stage work index 0" "$LOGS/runner-$h.log"
check "the scheduler still sees attempt 1 running on $h" \
	test "$(inst_field "$id" work 0 state)/$(inst_field "$id" work 0 attempt)" = running/1
touch "$TEST_DIR/open-work-0"
wait_for "instance 0 ends as succeeded" 20 inst_is "$id" work 0 state succeeded
check "it started once" test "$(started 0)" -eq 1
check "its exit status came through the new runner" grep -q "instance $(inst_field "$id" work 0 id)) exited with 0" "$LOGS/runner-$h.log"

# -- a network cut shorter than the lease: down for a moment, nothing requeued.
h=$(inst_field "$id" work 1 host)
cut_host "$h"
wait_for "$h is down past the host timeout" 20 host_is "$h" down
heal_host "$h"
wait_for "$h is back" 20 host_is "$h" up
check "the instance kept running: attempt 1, running" \
	test "$(inst_field "$id" work 1 state)/$(inst_field "$id" work 1 attempt)" = running/1
touch "$TEST_DIR/open-work-1"
wait_for "instance 1 succeeds" 20 inst_is "$id" work 1 state succeeded
check "it started once and counts once" test "$(started 1)" -eq 1
check "no retry was used" sh -c "! grep -q 'instance 1 failed' '$MNT/jobs/$id/events'"

# -- a cut longer than the lease: killed there, requeued once, right result.
h=$(inst_field "$id" work 2 host)
cut_host "$h"
wait_for "the scheduler requeues instance 2 after the lease" 30 inst_is "$id" work 2 attempt 2
wait_for "attempt 2 runs on another host" 30 inst_is "$id" work 2 state running
h2=$(inst_field "$id" work 2 host)
check "the new attempt is not on the cut host" test "$h2" != "$h"
wait_for "the cut runner killed its copy when its lease ran out" 20 \
	grep -q "no contact with the scheduler for the whole lease" "$LOGS/runner-$h.log"
heal_host "$h"
wait_for "$h is back" 20 host_is "$h" up
touch "$TEST_DIR/open-work-2"
wait_job "$id" 60 succeeded
check "the requeue happened once" test "$(grep -c 'instance 2 failed on' "$MNT/jobs/$id/events")" -eq 1
check "with the reason" grep -q "instance 2 failed on $h (.*host $h down: no heartbeat" "$MNT/jobs/$id/events"
check "instance 2 started twice: the killed attempt and the requeued one" test "$(started 2)" -eq 2
check "the result is right" test "$(cat "$MNT/jobs/$id/out/gather/results.csv" | tr '\n' ' ')" = "0,ok 1,ok 2,ok "

# -- the scheduler killed and restarted mid-run.
cat >"$TEST_DIR/restart.conf" <<SPEC
[stage r]
instances = 3
run = echo start >> "\$PARSA_OUT/started-\$PARSA_INDEX"
      "$TEST_DIR/gate.sh" "r-\$PARSA_INDEX"
SPEC
id2=$(submit "$TEST_DIR/restart.conf") || fail "submit failed"
out=$MNT/jobs/$id2/out/r
wait_for "three run" 30 sh -c "[ \$(ls '$out' | grep -c started) -eq 3 ]"
stop_daemon sched KILL
pass "scheduler killed with SIGKILL"
touch "$TEST_DIR/open-r-0"
start_cluster_sched "${TIMEOUTS[@]}"
pass "scheduler restarted"
touch "$TEST_DIR/open-all"
wait_job "$id2" 60 succeeded
for i in 0 1 2; do
	[ "$(started "$i")" -eq 1 ] || fail "instance $i of job $id2 started $(started "$i") times"
	[ "$(inst_field "$id2" r "$i" attempt)" = 1 ] || fail "instance $i of job $id2 was requeued"
done
pass "a scheduler restart killed nothing and started nothing twice"
