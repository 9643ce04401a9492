#!/bin/bash
# A runner whose mount cannot reach the volume starts nothing (issue 35): with
# a real nfs-ganesha stopped, the runner reads MOUNT/storage, its heartbeat
# says storage unreachable, and the scheduler places nothing on the host:
# hosts/local/status, /parsa/status and the job's why say so, the waiting
# instance uses no attempt; a job submitted meanwhile does not start either.
# Once the server is back both jobs run and succeed, each instance once, no
# attempt counted as failed (retries = 0).
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"

NFS_OPTIONS=timeout=3
start_nfs
start_all --cpus 4 --cpu-limit 100 --grace 1

# Stage a runs before the outage and ends during it: stage b then waits.
cat >"$TEST_DIR/gated.conf" <<SPEC
[stage a]
retries = 0
run = while [ ! -e "$TEST_DIR/open" ]; do sleep 0.1; done

[stage b]
after = a
retries = 0
run = echo ran >> "\$PARSA_OUT/ran"
SPEC
printf '[stage s]\nretries = 0\nrun = echo ran >> "$PARSA_OUT/ran"\n' >"$TEST_DIR/during.conf"
id=$(submit "$TEST_DIR/gated.conf") || fail "submit failed"
wait_for "stage a runs" 30 grep -q '^state: running' "$MNT/jobs/$id/stages/a/instances/0/status"
check "the host's storage is reachable" grep -qx 'storage: reachable' "$MNT/hosts/local/status"

kill_ganesha KILL
pass "ganesha stopped"
wait_for "the mount says unreachable" 30 grep -qx 'state: unreachable' "$MNT/storage"
wait_for "the host says storage unreachable" 30 \
	grep -Eq '^storage: unreachable since [0-9:T-]+ \(.+\): nothing new starts here' "$MNT/hosts/local/status"
check "the runner's log says so" grep -q 'storage unreachable: .*starting nothing until it answers' "$LOGS/runner-local.log"
check "the cluster's status has it on the host's line" grep -q '^host local: .*, storage unreachable since ' "$MNT/status"
check "and the API's host list" sh -c "curl -sf --unix-socket '$SOCK' http://localhost/v1/hosts | grep -q '\"storage\": *{[^}]*\"unreachable\"'"

touch "$TEST_DIR/open"
wait_for "stage a succeeds" 30 grep -q '^state: succeeded' "$MNT/jobs/$id/stages/a/instances/0/status"
binst=$MNT/jobs/$id/stages/b/instances/0/status
wait_for "why says the host's storage is unreachable" 20 \
	grep -q '^  local: storage unreachable since .*: nothing starts there until the volume answers' "$MNT/jobs/$id/why"
id2=$(submit "$TEST_DIR/during.conf") || fail "a submission during the outage failed"
pass "job $id2 submitted during the outage"
# Not starting is a negative property: sample it for 3 s.
for i in $(seq 1 30); do
	grep -q '^state: queued' "$binst" || fail "stage b's instance left queued: $(grep '^state' "$binst")"
	grep -q '^attempt: 0' "$binst" || fail "stage b's instance used an attempt: $(grep '^attempt' "$binst")"
	job_is "$id2" queued || fail "job $id2 left queued ($(job_state "$id2"))"
	sleep 0.1
done
pass "nothing starts while the volume is away, and no attempt is used"
check "no failure in the events" sh -c "! grep -q 'failed on' '$MNT/jobs/$id/events'"

start_ganesha
pass "ganesha back"
wait_for "the mount says reachable" 60 grep -qx 'state: reachable' "$MNT/storage"
wait_for "the host's storage is reachable again" 30 grep -qx 'storage: reachable' "$MNT/hosts/local/status"
wait_job "$id" 60 succeeded
wait_job "$id2" 60 succeeded
check "stage b ran once" test "$(cat "$MNT/jobs/$id/out/b/ran")" = ran
check "the job submitted meanwhile ran once" test "$(cat "$MNT/jobs/$id2/out/s/ran")" = ran
check "no attempt failed" sh -c "! grep -q 'failed on' '$MNT/jobs/$id/events' '$MNT/jobs/$id2/events'"
check "the runner's log says it is back" grep -q 'storage reachable again' "$LOGS/runner-local.log"
