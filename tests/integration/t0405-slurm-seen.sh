#!/bin/bash
# A Slurm host seen everywhere (issue 36): hosts/slurm1/status names the
# executor, the partition, its jobs pending and running in Slurm, the
# partition's CPUs and the last poll; an instance's status gives the Slurm job
# id that squeue and scontrol know; `why` gives Slurm's own reason while an
# instance pends there for real (another user's job holds the node's CPUs it
# needs); the web host page and /metrics show the same facts; accounting is
# off (this Slurm has no slurmdbd) and no sacct is ever run. Live capacity:
# a runner with a CPU limit places nothing while other users' Slurm jobs fill
# the partition (the poll's squeue, every 30 s while it has no job there),
# and places again once they end.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/slurm.sh"
# One node of 2 CPUs: one CPU held by another user leaves too few for a
# 2-CPU instance.
SLURM_CPUS=2 start_slurm n1
pass "slurmctld and slurmd n1 (2 CPUs) up"

ensure_user parsa-seen parsa-slurmers
ensure_user parsa-other parsa-slurmers
start_sched --web 127.0.0.1:0
start_fs
start_runner local --cpus 2
start_runner slurm1 --executor slurm --slurm-partition debug --slurm-lost-after 20 -v
wait_for "the scheduler wrote the page's URL" 10 test -s "$STATE/web.url"
URL=$(cat "$STATE/web.url")
status=$MNT/hosts/slurm1/status
wait_for "slurm1's heartbeat names its executor" 10 grep -qx 'executor: slurm' "$status"
check "the partition" grep -qx 'slurm partition: debug' "$status"
check "no jobs in Slurm yet" grep -qx 'slurm jobs: 0 pending, 0 running' "$status"
check "the partition's CPUs from sinfo" grep -qx 'slurm cpus: 2 up, 0 held by other users'"'"' jobs' "$status"
wait_for "accounting off: this Slurm has no slurmdbd" 10 grep -qx 'slurm accounting: off (no sacct)' "$status"
check "a local host has none of it" sh -c "! grep -q '^executor:\|^slurm' '$MNT/hosts/local/status'"
log "slurm1: $(grep -E '^(executor|slurm)' "$status" | tr '\n' ';')"

# Another user's job holds one of the node's two CPUs.
blocker=$(slurm_as parsa-other sbatch --parsable -J blocker -c 1 -o /dev/null --chdir=/tmp --wrap 'sleep 600') ||
	fail "cannot submit the blocker"
wait_for "the blocker runs" 30 slurm_job_is "$blocker" RUNNING

cat >"$TEST_DIR/wide.conf" <<'SPEC'
[stage wide]
hosts = slurm1
cpus = 2
run = echo "$SLURM_JOB_ID" > "$PARSA_OUT/id"
SPEC
chmod 644 "$TEST_DIR/wide.conf"
as_user parsa-seen cp "$TEST_DIR/wide.conf" "$MNT/queue/wide.conf" || fail "cannot submit"
id=$(as_user parsa-seen readlink "$MNT/jobs/last") || fail "no jobs/last"
inst=$MNT/jobs/$id/stages/wide/instances/0/status
wait_for "the instance's status names its Slurm job" 30 grep -q '^slurm job: [0-9]' "$inst"
sid=$(sed -n 's/^slurm job: //p' "$inst")
check "squeue knows job $sid as this runner's" \
	sh -c "squeue --noheader --name=parsa-slurm1 -o %i | grep -qx '$sid'"
check "scontrol shows it pending" slurm_job_is "$sid" PENDING
# Right after sbatch Slurm says "None" until its scheduler has looked.
pending_reason() {
	local r
	r=$(squeue --noheader -j "$sid" -t PENDING -o %r 2>/dev/null)
	[ -n "$r" ] && [ "$r" != None ] && echo "$r"
}
wait_for "Slurm gives job $sid a pending reason" 30 pending_reason
reason=$(pending_reason)
log "Slurm's reason for job $sid: $reason"
wait_for "why gives Slurm's reason" 20 \
	grep -qF "1 instance waits in Slurm on slurm1: $reason (Slurm's reason)" "$MNT/jobs/$id/why"
log "why: $(tr '\n' ';' <"$MNT/jobs/$id/why")"
check "the instance's status gives it too" grep -qx "slurm reason: $reason" "$inst"
check "and is assigned, not running" grep -qx 'state: assigned' "$inst"
wait_for "slurm1 counts one job pending in Slurm" 10 grep -qx 'slurm jobs: 1 pending, 0 running' "$status"
check "with a recent poll" grep -Eq '^slurm last poll: [0-9]\.[0-9] s ago$' "$status"
# The poll's squeue (every second while the instance pends) counts the
# blocker's CPU as other users'.
wait_for "slurm1 sees the blocker's CPU as other users'" 45 \
	grep -qx "slurm cpus: 2 up, 1 held by other users' jobs" "$status"

curl -sf "${URL}metrics" >"$TEST_DIR/metrics.txt" || fail "GET /metrics failed"
check "/metrics: one pending job in Slurm" grep -qx 'parsa_host_slurm_jobs{host="slurm1",state="pending"} 1' "$TEST_DIR/metrics.txt"
check "/metrics: none running" grep -qx 'parsa_host_slurm_jobs{host="slurm1",state="running"} 0' "$TEST_DIR/metrics.txt"
check "/metrics: the last poll's age" \
	awk '$1 == "parsa_host_slurm_last_poll_age_seconds{host=\"slurm1\"}" && $2 >= 0 && $2 < 10 { ok = 1 } END { exit !ok }' "$TEST_DIR/metrics.txt"
check "/metrics: polls answer" grep -qx 'parsa_host_slurm_poll_failing{host="slurm1"} 0' "$TEST_DIR/metrics.txt"
check "/metrics: no Slurm series for the local host" sh -c "! grep -q 'slurm.*host=\"local\"' '$TEST_DIR/metrics.txt'"
if command -v promtool >/dev/null; then
	check "promtool accepts /metrics" sh -c "promtool check metrics <'$TEST_DIR/metrics.txt' >/dev/null 2>&1"
fi
curl -sf "${URL}hosts/slurm1" >"$TEST_DIR/host.html" || fail "GET /hosts/slurm1 failed"
check "the web host page has the Slurm facts" grep -q 'id="executor"' "$TEST_DIR/host.html"
check "with the pending job" grep -q '<td class="pending">1</td>' "$TEST_DIR/host.html"
check "the local host's page has none" sh -c "! curl -sf '${URL}hosts/local' | grep -q 'id=\"executor\"'"

scancel "$blocker" || fail "cannot cancel the blocker"
wait_job "$id" 90 succeeded
pass "the instance ran once the blocker left"
check "the job id the instance saw is the one its status gives" grep -qx "$sid" "$MNT/jobs/$id/out/wide/id"
check "its status keeps the Slurm job id" grep -qx "slurm job: $sid" "$inst"
check "and no reason any more" sh -c "! grep -q '^slurm reason' '$inst'"
check "scontrol knows the job as completed" slurm_job_is "$sid" COMPLETED
check "why no longer speaks of Slurm" sh -c "! grep -q 'in Slurm' '$MNT/jobs/$id/why'"
check "no sacct without accounting" sh -c "! grep -q 'slurm: sacct' '$LOGS/runner-slurm1.log'"
check "the runner said why" grep -q 'slurm: accounting off' "$LOGS/runner-slurm1.log"

# Live capacity: slurm2 fronts the same partition with a CPU limit, so other
# users' Slurm jobs are its outside load. A full partition places nothing;
# once it is free again (the partition looked at again at once by SIGHUP, as
# an operator may) the instance is placed.
start_runner slurm2 --executor slurm --slurm-partition debug --cpu-limit 95 -v
full=$(slurm_as parsa-other sbatch --parsable -J full -c 2 -o /dev/null --chdir=/tmp --wrap 'sleep 600') ||
	fail "cannot submit the partition's filler"
wait_for "the filler runs" 30 slurm_job_is "$full" RUNNING
# An idle runner looks every 30 s; SIGHUP (registering again) looks at once.
kill -HUP "${DAEMON_PID[runner-slurm2]}"
wait_for "slurm2 sees the partition full of other users' jobs" 45 \
	grep -qx "slurm cpus: 2 up, 2 held by other users' jobs" "$MNT/hosts/slurm2/status"
cat >"$TEST_DIR/small.conf" <<'SPEC'
[stage small]
hosts = slurm2
run = echo ran
SPEC
chmod 644 "$TEST_DIR/small.conf"
as_user parsa-seen cp "$TEST_DIR/small.conf" "$MNT/queue/small.conf" || fail "cannot submit"
sm=$(as_user parsa-seen readlink "$MNT/jobs/last")
sleep 3
check "nothing of it went to Slurm" test -z "$(squeue --noheader --name=parsa-slurm2 -o %A)"
check "its instance waits in parsa's queue" grep -qx 'state: queued' "$MNT/jobs/$sm/stages/small/instances/0/status"
check "why says slurm2's outside load holds it" grep -q 'slurm2: .*outside' "$MNT/jobs/$sm/why"
log "why: $(tr '\n' ';' <"$MNT/jobs/$sm/why")"
scancel "$full" || fail "cannot cancel the filler"
wait_for "the filler is gone" 30 sh -c "! squeue --noheader -j '$full' -t RUNNING,COMPLETING -o %A 2>/dev/null | grep -q ."
kill -HUP "${DAEMON_PID[runner-slurm2]}"
wait_job "$sm" 90 succeeded
pass "placed once squeue showed the partition free again"
