#!/bin/bash
# Issue 36's foundation: the private Slurm of tests/lib/slurm.sh works as the
# runner will use it. Two slurmds on this machine (n1, n2), a job submitted
# with sbatch --parsable as a non-root user runs as that user, with
# --export=NONE in that user's environment plus the variables named, an array job
# runs every task, squeue and scontrol show a running job, scancel ends it,
# and a node set DOWN under a running --no-requeue job ends it in NODE_FAIL.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/slurm.sh"
start_slurm n1 n2
pass "slurmctld and slurmds n1, n2 up, both nodes idle"

ensure_user parsa-slurm1 parsa-slurmers
WORK=$TEST_DIR/work
mkdir -p "$WORK"
chown parsa-slurm1: "$WORK"

# slurm_done ID: the job (every task of an array) has left the queue's live states.
slurm_done() {
	! squeue --noheader -j "$1" -t PENDING,RUNNING,CONFIGURING,COMPLETING -o %i 2>/dev/null | grep -q .
}

id=$(slurm_as parsa-slurm1 sbatch --parsable --no-requeue -J parsa-smoke -o "$WORK/one.log" \
	--wrap "id -un > $WORK/who") || fail "sbatch as parsa-slurm1 failed"
log "job $id"
check "sbatch --parsable gives a job id" test -n "$id" -a "$id" -eq "$id"
wait_for "job $id done" 60 slurm_done "$id"
check "the job ran as parsa-slurm1" test "$(cat "$WORK/who")" = parsa-slurm1
check "scontrol says COMPLETED, exit 0:0" \
	bash -c "scontrol show job -o $id | grep -q 'JobState=COMPLETED .*ExitCode=0:0'"
check "scontrol names the user" bash -c "scontrol show job -o $id | grep -q 'UserId=parsa-slurm1('"

# The runner's way: --export=NONE plus its own variables. Slurm then starts
# the job in the user's login environment, not the submitter's.
env_job=$(FOO=from-submitter slurm_as parsa-slurm1 sbatch --parsable --no-requeue -o /dev/null \
	--export=NONE,PARSA_X=1 --wrap "env > $WORK/env") || fail "sbatch --export=NONE failed"
wait_for "job $env_job done" 60 slurm_done "$env_job"
check "--export=NONE,PARSA_X=1 passes PARSA_X" grep -qx PARSA_X=1 "$WORK/env"
check "and not the submitter's variables" bash -c "! grep -q '^FOO=' '$WORK/env'"
check "HOME is the user's" grep -qx "HOME=$(getent passwd parsa-slurm1 | cut -d: -f6)" "$WORK/env"

arr=$(slurm_as parsa-slurm1 sbatch --parsable --no-requeue -J parsa-arr --array=0-5 \
	-o "$WORK/arr-%a.log" --wrap "echo \$SLURM_ARRAY_TASK_ID \$SLURMD_NODENAME > $WORK/task.\$SLURM_ARRAY_TASK_ID") ||
	fail "sbatch --array failed"
wait_for "array $arr done" 60 slurm_done "$arr"
n=$(find "$WORK" -name "task.*" | wc -l)
check "every array task ran (6 files, got $n)" test "$n" -eq 6
log "array tasks ran on: $(cat "$WORK"/task.* | awk '{ print $2 }' | sort | uniq -c | tr '\n' ' ')"
check "scontrol shows task 5 as ${arr}_5" \
	bash -c "scontrol show job -o ${arr}_5 | grep -q 'ArrayJobId=$arr ArrayTaskId=5 '"

long=$(slurm_as parsa-slurm1 sbatch --parsable --no-requeue -J parsa-long -o /dev/null \
	--wrap 'sleep 300') || fail "sbatch failed"
wait_for "job $long running" 30 slurm_job_is "$long" RUNNING
check "squeue shows it running with its node" \
	bash -c "squeue --noheader -j $long -o '%i %T %N' | grep -Eq '^$long RUNNING n[12]\$'"
scancel "$long" || fail "scancel failed"
wait_for "job $long cancelled" 30 slurm_job_is "$long" CANCELLED
check "scontrol says CANCELLED" bash -c "scontrol show job -o $long | grep -q JobState=CANCELLED"

doomed=$(slurm_as parsa-slurm1 sbatch --parsable --no-requeue -J parsa-doomed -w n2 -o /dev/null \
	--wrap 'sleep 300') || fail "sbatch failed"
wait_for "job $doomed running on n2" 30 slurm_job_is "$doomed" RUNNING
scontrol update NodeName=n2 State=DOWN Reason=parsa-test || fail "scontrol update failed"
wait_for "job $doomed in NODE_FAIL" 30 slurm_job_is "$doomed" NODE_FAIL
# ReturnToService=2 takes n2 back as soon as its slurmd answers (ms later
# here); RESUME covers a slower answer.
log "n2 after DOWN: $(sinfo --noheader -n n2 -o %T)"
scontrol update NodeName=n2 State=RESUME 2>/dev/null || true
wait_for "n2 idle again" 60 slurm_nodes_idle
pass "n2 back to idle after RESUME"

check "sacct says accounting is disabled" bash -c "sacct 2>&1 | grep -qi 'disabled'"
