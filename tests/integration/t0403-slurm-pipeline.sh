#!/bin/bash
# Issue 36's first end-to-end slice: a runner that fronts a Slurm partition
# (parsa-runner --executor slurm, runner/executor_slurm.c) beside a local one.
# The lab pipeline with warm and gather on "local" and 20 timing instances on
# "slurm1" succeeds with every result once; the Slurm instances ran as the
# submitting user through sbatch; a failing instance's exit code reaches its
# status; echo cancel > ctl leaves none of the runner's jobs in squeue; the
# runner killed -9 in a fan-out and started again submits no instance twice.
# slurm1 offers sinfo's CPUs of the partition capped by --slurm-max-jobs;
# slurm2 writes the wrapper with --slurm-path-map's paths; a job scancel'ed outside
# parsa fails its instance with Slurm's reason.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/slurm.sh"
SLURM_CPUS=8 SLURM_MIN_JOB_AGE=30 start_slurm n1
pass "slurmctld and slurmd n1 up"

ensure_user parsa-slurm1 parsa-slurmers
start_all --cpus 2
start_runner slurm1 --executor slurm --slurm-partition debug --slurm-max-jobs 6 --slurm-lost-after 20 -v
check "slurm1 offers the operator's cap of 6 cpus (sinfo says 8)" grep -q 'capacity: 6 cpus' "$MNT/hosts/slurm1/status"
check "from sinfo's 8, capped" grep -q 'Slurm partition debug: 8 CPUs up; offering 6' "$LOGS/runner-slurm1.log"
log "slurm1: $(tr '\n' ' ' <"$MNT/hosts/slurm1/status" | cut -c1-200)"

# on_slurm: this runner's jobs Slurm still has pending or running.
on_slurm() {
	squeue --noheader --name=parsa-slurm1 -t PENDING,RUNNING,CONFIGURING,COMPLETING -o %A 2>/dev/null
}

spec=$TEST_DIR/lab.conf
# shellcheck disable=SC2016 # the stage's own variables, for the stage's shell
sed -e 's/^samples = 16/samples = 20/' \
	-e '/^\[stage warm\]/a hosts = local' \
	-e '/^\[stage timing\]/a hosts = slurm1' \
	-e '/^\[stage gather\]/a hosts = local' \
	-e 's|^run     = start=\$(date +%s.%N)|run     = id -un > "$PARSA_OUT/$PARSA_INDEX.who"; start=$(date +%s.%N)|' \
	"$PARSA_SRC/examples/lab-pipeline.conf" >"$spec"
grep -q 'id -un' "$spec" || fail "the spec was not rewritten: $(cat "$spec")"
chmod 644 "$spec"
as_user parsa-slurm1 cp "$spec" "$MNT/queue/lab.conf" || fail "parsa-slurm1 cannot submit"
id=$(as_user parsa-slurm1 readlink "$MNT/jobs/last") || fail "no jobs/last"
wait_job "$id" 240 succeeded
pass "the pipeline succeeded with its fan-out on Slurm"

results=$MNT/jobs/$id/out/gather/results.csv
check "results.csv has a header and 20 samples" test "$(wc -l <"$results")" -eq 21
check "every sample once" test "$(tail -n +2 "$results" | cut -d, -f1 | sort -u | wc -l)" -eq 20
check "sample 7's cycles are right" grep -q '^ckpt-0007,8000,' "$results"
who=$(cat "$MNT/jobs/$id/out/timing/"*.who | sort -u | tr '\n' ' ')
check "the Slurm instances ran as the submitting user (got: $who)" test "$who" = "parsa-slurm1 "
check "20 timing instances" test "$(ls "$MNT/jobs/$id/stages/timing/instances" | wc -l)" -eq 20
check "the timing instances ran on slurm1" \
	bash -c "grep -l 'slurm1' '$MNT'/jobs/$id/stages/timing/instances/*/status | wc -l | grep -qx 20"
check "warm ran on local" grep -q 'local' "$MNT/jobs/$id/stages/warm/instances/0/status"
check "no exit file is left among the outputs" \
	bash -c "! ls -A '$MNT/jobs/$id/out/timing' | grep -q '^\.parsa-exit'"
n=$(grep -c 'slurm: sbatch' "$LOGS/runner-slurm1.log")
check "the 20 instances went in fewer sbatch calls, as arrays (got $n)" test "$n" -lt 20
check "an array task's id reached an instance" grep -qE 'slurm job [0-9]+_[0-9]+ ' "$LOGS/runner-slurm1.log"
jobs=$(grep -o 'slurm job [0-9]*' "$LOGS/runner-slurm1.log" | grep -v ended | sort -u | wc -l)
log "distinct Slurm jobs named in the runner's log: $jobs; squeue calls: $(grep -c 'slurm: squeue' "$LOGS/runner-slurm1.log")"

# A failing instance: its exit code from the wrapper's file.
cat >"$TEST_DIR/fail.conf" <<'SPEC'
[stage bad]
hosts = slurm1
run = echo "failing on purpose" >&2; exit 7
SPEC
chmod 644 "$TEST_DIR/fail.conf"
as_user parsa-slurm1 cp "$TEST_DIR/fail.conf" "$MNT/queue/fail.conf" || fail "cannot submit"
fid=$(as_user parsa-slurm1 readlink "$MNT/jobs/last")
wait_job "$fid" 120 failed
check "the failed instance's status gives exit code 7" \
	grep -qi 'exit.*7' "$MNT/jobs/$fid/stages/bad/instances/0/status"
check "its log has its stderr" grep -q 'failing on purpose' "$MNT/jobs/$fid/stages/bad/instances/0/log"

# Cancel: running Slurm jobs are scancel'ed.
cat >"$TEST_DIR/long.conf" <<'SPEC'
[stage sleepy]
hosts = slurm1
instances = 3
run = sleep 300
SPEC
chmod 644 "$TEST_DIR/long.conf"
as_user parsa-slurm1 cp "$TEST_DIR/long.conf" "$MNT/queue/long.conf" || fail "cannot submit"
lid=$(as_user parsa-slurm1 readlink "$MNT/jobs/last")
wait_for "the three instances run" 90 sh -c "grep -l '^state: running' '$MNT'/jobs/$lid/stages/sleepy/instances/*/status | wc -l | grep -qx 3"
check "three of slurm1's jobs are in squeue" test "$(on_slurm | wc -l)" -eq 3
echo cancel >"$MNT/jobs/$lid/ctl" || fail "cancel write failed"
wait_job "$lid" 60 cancelled
pass "the job is cancelled"
wait_for "no job of slurm1 left pending or running in Slurm" 30 test -z "$(on_slurm)"
pass "cancel leaves no Slurm job behind"

# The runner killed -9 in the middle of a fan-out and started again: it finds
# its Slurm jobs by the ids in its state folder (or, killed right after an
# sbatch, by their batch's tag) and submits none twice: every instance ran
# once, in its own Slurm job, and slurmctld took no more submissions than
# the runners made.
cat >"$TEST_DIR/fan.conf" <<'SPEC'
[stage fan]
hosts = slurm1
instances = 20
run = echo "$SLURM_JOB_ID" >> "$PARSA_OUT/ids.$PARSA_INDEX"; sleep 2
SPEC
chmod 644 "$TEST_DIR/fan.conf"
submits() {
	grep -c '_slurm_rpc_submit_batch_job: JobId=' "$LOGS/slurmctld.log"
}
before=$(submits)
as_user parsa-slurm1 cp "$TEST_DIR/fan.conf" "$MNT/queue/fan.conf" || fail "cannot submit"
fan=$(as_user parsa-slurm1 readlink "$MNT/jobs/last")
wait_for "some of the fan-out runs" 60 sh -c "grep -l '^state: running' '$MNT'/jobs/$fan/stages/fan/instances/*/status 2>/dev/null | wc -l | grep -qv '^0$'"
kill -9 "${DAEMON_PID[runner-slurm1]}"
unset 'DAEMON_PID[runner-slurm1]'
log "runner slurm1 killed with $(on_slurm | wc -l) of its jobs in Slurm"
sleep 1
start_runner slurm1 --executor slurm --slurm-partition debug --slurm-max-jobs 6 --slurm-lost-after 20 -v
wait_job "$fan" 180 succeeded
pass "the fan-out succeeded across the runner's kill -9 and restart"
n=$(cat "$MNT/jobs/$fan/out/fan/"ids.* | wc -l)
check "every instance ran once (20 runs, got $n)" test "$n" -eq 20
check "in 20 distinct Slurm jobs" test "$(cat "$MNT/jobs/$fan/out/fan/"ids.* | sort -u | wc -l)" -eq 20
after=$(submits)
check "slurmctld took at most 20 submissions for it, as arrays (got $((after - before)))" \
	test $((after - before)) -ge 1 -a $((after - before)) -le 20
check "the new runner reattached to the jobs the old one left" grep -q 'of an earlier runner still run here: reattached' "$LOGS/runner-slurm1.log"

# --slurm-path-map: the nodes see the mount elsewhere (here a bind mount of
# it); the wrapper's paths are the nodes', the exit file is read through the
# runner's. No --slurm-max-jobs: the host offers all sinfo says.
NODEMNT=$TEST_DIR/node-mnt
mkdir -p "$NODEMNT"
mount --bind "$MNT" "$NODEMNT" || fail "cannot bind-mount the mount"
on_cleanup "umount -l '$NODEMNT'"
start_runner slurm2 --executor slurm --slurm-path-map "$MNT=$NODEMNT" -v
check "slurm2 offers sinfo's 8 cpus" grep -q 'capacity: 8 cpus' "$MNT/hosts/slurm2/status"
cat >"$TEST_DIR/map.conf" <<'SPEC'
[stage where]
hosts = slurm2
instances = 2
run = echo "$PARSA_OUT" > "$PARSA_OUT/where.$PARSA_INDEX"; echo "logged $PARSA_INDEX"
SPEC
chmod 644 "$TEST_DIR/map.conf"
as_user parsa-slurm1 cp "$TEST_DIR/map.conf" "$MNT/queue/map.conf" || fail "cannot submit"
mid=$(as_user parsa-slurm1 readlink "$MNT/jobs/last")
wait_job "$mid" 120 succeeded
check "the instance saw the nodes' path" grep -qx "$NODEMNT/jobs/$mid/out/where" "$MNT/jobs/$mid/out/where/where.1"
check "its log is the instance's log" grep -qx 'logged 1' "$MNT/jobs/$mid/stages/where/instances/1/log"

# Cancelled in Slurm behind parsa's back (an admin's scancel): the wrapper
# never wrote its exit file; the instance fails with Slurm's word for it.
cat >"$TEST_DIR/victim.conf" <<'SPEC'
[stage victim]
hosts = slurm1
run = sleep 300
SPEC
chmod 644 "$TEST_DIR/victim.conf"
as_user parsa-slurm1 cp "$TEST_DIR/victim.conf" "$MNT/queue/victim.conf" || fail "cannot submit"
vid=$(as_user parsa-slurm1 readlink "$MNT/jobs/last")
wait_for "the victim runs" 60 grep -q '^state: running' "$MNT/jobs/$vid/stages/victim/instances/0/status"
sid=$(on_slurm)
check "one job of slurm1 in Slurm ($sid)" test "$(printf '%s\n' "$sid" | grep -c .)" -eq 1
scancel "$sid" || fail "scancel $sid failed"
wait_job "$vid" 60 failed
check "its status says Slurm cancelled it" grep -q "slurm job $sid: cancelled in Slurm" \
	"$MNT/jobs/$vid/stages/victim/instances/0/status"
