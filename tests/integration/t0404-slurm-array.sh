#!/bin/bash
# Issue 36's arrays: a 1,000-instance stage on a Slurm runner goes to a real
# Slurm with MaxArraySize=100 as job arrays (runner/slurm_submit.c). Every
# result is there exactly once, the job succeeds, slurmctld took only a few
# sbatch calls for it (its own count, sdiag's REQUEST_SUBMIT_BATCH_JOB, not
# the runner's word), squeue mapped every array task back to its instance,
# and no Slurm job of the runner is left. The node claims 1,000 CPUs
# (config_overrides) so that the runner offers the whole stage at once and
# Slurm, not parsa, queues it; each instance asks for 1 GiB so that this
# machine's memory bounds what Slurm runs at once (~20: a few hundred at once
# on 2 cores time out slurmd's launch RPCs, which Slurm reports as
# NODE_FAIL), while the runner offers parsa memory for all of them.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/slurm.sh"
N=1000
SLURM_CPUS=$N SLURM_MAX_ARRAY=100 SLURM_MIN_JOB_AGE=60 start_slurm n1
pass "slurmctld and slurmd n1 up, MaxArraySize=100"

ensure_user parsa-slurm1 parsa-slurmers
start_all --cpus 2
start_runner slurm1 --executor slurm --slurm-partition debug --slurm-lost-after 60 --mem $((N + 100))G -vv
grep -q "capacity: $N cpus" "$MNT/hosts/slurm1/status" ||
	log "slurm1: $(tr '\n' ' ' <"$MNT/hosts/slurm1/status" | cut -c1-200)"

# sdiag's count of one RPC type since the last reset.
rpc_count() {
	sdiag 2>/dev/null | awk -v t="$1" '$1 == t { sub(/.*count:/, ""); print $1 + 0; exit }'
}
sdiag -r >/dev/null || fail "sdiag -r failed"

cat >"$TEST_DIR/many.conf" <<SPEC
[stage many]
hosts = slurm1
instances = $N
mem = 1G
run = echo "result \$PARSA_INDEX" > "\$PARSA_OUT/r.\$PARSA_INDEX"
SPEC
chmod 644 "$TEST_DIR/many.conf"
as_user parsa-slurm1 cp "$TEST_DIR/many.conf" "$MNT/queue/many.conf" || fail "cannot submit"
id=$(as_user parsa-slurm1 readlink "$MNT/jobs/last") || fail "no jobs/last"
t0=$(date +%s)
wait_job "$id" 240 succeeded
pass "the 1,000-instance stage succeeded in $(($(date +%s) - t0)) s"

out=$MNT/jobs/$id/out/many
lines=$(cat "$out"/r.* | wc -l)
distinct=$(cat "$out"/r.* | sort -u | wc -l)
check "1,000 result lines (got $lines)" test "$lines" -eq $N
check "every result exactly once (got $distinct distinct)" test "$distinct" -eq $N
check "each in its own instance's file" test "$(cat "$out/r.737")" = "result 737"
check "no exit file is left among the outputs" bash -c "! ls -A '$out' | grep -q '^\.parsa-exit'"

submits=$(rpc_count REQUEST_SUBMIT_BATCH_JOB)
runner_sbatch=$(grep -c 'slurm: sbatch' "$LOGS/runner-slurm1.log")
arrays=$(grep -c 'slurm: sbatch --array' "$LOGS/runner-slurm1.log")
log "slurmctld took $submits sbatch calls ($arrays arrays by the runner's log, $runner_sbatch sbatch in all)"
check "slurmctld took 10 to 20 sbatch calls for 1,000 instances (got $submits)" \
	test "${submits:-9999}" -le 20 -a "${submits:-0}" -ge $((N / 100))
check "the runner's own count agrees with slurmctld's ($runner_sbatch)" test "$runner_sbatch" -eq "$submits"
check "arrays were used" test "$arrays" -ge $((N / 100))
check "task ids reached the instances (an array task's id in the log)" \
	grep -qE 'slurm job [0-9]+_[0-9]+ ended' "$LOGS/runner-slurm1.log"

live() {
	squeue --noheader --name=parsa-slurm1 -t PENDING,RUNNING,CONFIGURING,COMPLETING -o %i 2>/dev/null
}
wait_for "no job of slurm1 left pending or running in Slurm" 30 test -z "$(live)"
pass "no Slurm job left"
