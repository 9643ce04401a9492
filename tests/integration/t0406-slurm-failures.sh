#!/bin/bash
# Issue 36: how Slurm's end states reach parsa, on a real Slurm with two
# nodes (n1, n2). A stage's walltime goes to sbatch as --time (whole minutes)
# with its slurm.partition and slurm.account over the runner's, and
# --no-requeue; a job whose limit Slurm enforces ends TIMEOUT and the instance
# fails with Slurm's words. n2 set DOWN with scontrol during a fan-out: its
# jobs end NODE_FAIL, parsa retries them by the stage's retries and the job
# succeeds with every result once. Then, with n2 drained (parsa offers
# more CPUs than Slurm has, so some of its jobs pend in Slurm), echo cancel >
# ctl leaves no job of parsa pending or running in Slurm.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/slurm.sh"
SLURM_CPUS=4 SLURM_MIN_JOB_AGE=120 start_slurm n1 n2
scontrol create PartitionName=long Nodes=n1,n2 MaxTime=INFINITE State=UP ||
	fail "cannot add partition long"
pass "slurmctld, n1 and n2 up; partitions debug and long"

ensure_user parsa-slurm1 parsa-slurmers
start_all --cpus 2
start_runner slurm1 --executor slurm --slurm-partition debug --slurm-lost-after 10 -v

# on_slurm [STATES]: this runner's jobs in Slurm (pending or running by default).
on_slurm() {
	squeue --noheader --name=parsa-slurm1 -t "${1:-PENDING,RUNNING,CONFIGURING,COMPLETING}" -o %A 2>/dev/null
}
# submit_as FILE: submit as parsa-slurm1, print the job id.
submit_as() {
	chmod 644 "$1"
	as_user parsa-slurm1 cp "$1" "$MNT/queue/$(basename "$1")" || return 1
	as_user parsa-slurm1 readlink "$MNT/jobs/last"
}
running_count() {
	grep -l '^state: running' "$MNT"/jobs/"$1"/stages/"$2"/instances/*/status 2>/dev/null | wc -l
}

# --- walltime: --time, the stage's partition and account, TIMEOUT ---
cat >"$TEST_DIR/slow.conf" <<'SPEC'
[stage slow]
hosts = slurm1
walltime = 70s
slurm.partition = long
slurm.account = lab42
run = sleep 300
SPEC
sid_job=$(submit_as "$TEST_DIR/slow.conf") || fail "cannot submit slow.conf"
wait_for "the slow instance runs" 60 grep -q '^state: running' "$MNT/jobs/$sid_job/stages/slow/instances/0/status"
sid=$(on_slurm RUNNING)
check "one job of slurm1 runs in Slurm ($sid)" test "$(printf '%s\n' "$sid" | grep -c .)" -eq 1
rec=$(scontrol show job -o "$sid")
check "walltime 70s is --time of 2 minutes" grep -q ' TimeLimit=00:02:00 ' <<<"$rec"
check "in the stage's partition, not the runner's" grep -q ' Partition=long ' <<<"$rec"
check "with the stage's account" grep -q ' Account=lab42 ' <<<"$rec"
check "submitted with --no-requeue" grep -q ' Requeue=0 ' <<<"$rec"
# Slurm's limits are whole minutes, checked every 30 s: move the job's end to
# now rather than wait two minutes.
scontrol update JobId="$sid" EndTime=now || fail "cannot move job $sid's end"
wait_job "$sid_job" 90 failed
wait_for "Slurm says TIMEOUT" 10 slurm_job_is "$sid" TIMEOUT
status=$MNT/jobs/$sid_job/stages/slow/instances/0/status
check "the instance failed with Slurm's TIMEOUT ($(grep '^reason' "$status"))" \
	grep -q "^reason: .*slurm job $sid: walltime exceeded in Slurm (TIMEOUT)" "$status"

# --- a node set DOWN during a fan-out: NODE_FAIL, retried, every result once ---
cat >"$TEST_DIR/fan.conf" <<'SPEC'
[stage fan]
hosts = slurm1
instances = 8
retries = 2
run = echo "$SLURM_JOB_ID $SLURMD_NODENAME" >> "$PARSA_OUT/runs.$PARSA_INDEX"; sleep 8; echo "result $PARSA_INDEX" > "$PARSA_OUT/result.$PARSA_INDEX"
SPEC
fan=$(submit_as "$TEST_DIR/fan.conf") || fail "cannot submit fan.conf"
on_n2() {
	squeue --noheader --name=parsa-slurm1 -t RUNNING -o '%A %N' | grep -c ' n2$'
}
wait_for "instances of the fan-out run on n2" 60 sh -c "[ \$(squeue --noheader --name=parsa-slurm1 -t RUNNING -o '%N' | grep -c '^n2\$') -ge 1 ]"
sleep 1
lost=$(on_n2)
scontrol update NodeName=n2 State=DOWN Reason=parsa-test || fail "cannot set n2 down"
log "n2 set DOWN with $lost of the fan-out's jobs on it"
wait_job "$fan" 150 succeeded
pass "the fan-out succeeded across n2's failure"
out=$MNT/jobs/$fan/out/fan
check "every result present (8)" test "$(cat "$out"/result.* | wc -l)" -eq 8
check "each once" test "$(cat "$out"/result.* | sort -u | wc -l)" -eq 8
retried=$(grep -c 'retrying' "$MNT/jobs/$fan/events")
check "the instances on n2 were retried ($retried retries for $lost on n2)" test "$retried" -ge 1
check "for Slurm's NODE_FAIL" grep -q 'NODE_FAIL' "$MNT/jobs/$fan/events"
tries=$(cat "$out"/runs.* | wc -l)
# A job Slurm killed before its script started (on n2 as it went down) never
# wrote its line: at most one more run per retry.
check "$tries runs: 8, and at most one more per retry" test "$tries" -ge 8 -a "$tries" -le $((8 + retried))
log "events: $(grep -c . "$MNT/jobs/$fan/events") lines; runs: $tries"

# --- cancel with n2 drained: jobs running and pending in Slurm ---
# (ReturnToService=2 takes a DOWN node back when its slurmd registers again;
# a drained one stays out, and parsa still offers the 8 CPUs sinfo showed.)
scontrol update NodeName=n2 State=DRAIN Reason=parsa-test || fail "cannot drain n2"
cat >"$TEST_DIR/many.conf" <<'SPEC'
[stage many]
hosts = slurm1
instances = 12
run = sleep 300
SPEC
many=$(submit_as "$TEST_DIR/many.conf") || fail "cannot submit many.conf"
wait_for "Slurm runs 4 of them on n1 and holds others pending" 60 \
	sh -c "[ \$(squeue --noheader --name=parsa-slurm1 -t RUNNING -o %A | wc -l) -eq 4 ] && [ \$(squeue --noheader --name=parsa-slurm1 -t PENDING -o %A | wc -l) -ge 1 ]"
log "in Slurm: $(on_slurm RUNNING | wc -l) running, $(on_slurm PENDING | wc -l) pending"
echo cancel >"$MNT/jobs/$many/ctl" || fail "cancel write failed"
wait_job "$many" 60 cancelled
wait_for "no job of slurm1 left pending or running in Slurm" 30 test -z "$(on_slurm)"
pass "cancel leaves no Slurm job behind, pending ones included"
scontrol update NodeName=n2 State=RESUME || fail "cannot resume n2"
