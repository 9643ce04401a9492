#!/bin/bash
# Issue 36: exactly once across restarts, counted in Slurm itself. Every
# sbatch (one job, or an array of the cycle's starts) is tagged
# --comment=parsa:<runner>:<stamp>.<pid>.<seq>, unique to it; with MinJobAge
# long enough squeue -t all still lists every job of the test, so one tag on
# two Slurm jobs (two array ids) would be a batch submitted twice. The Slurm runner killed -9
# during a fan-out and started again, then the scheduler killed -9 during
# another and started again: each time no tag twice, every instance ran once,
# and the job succeeds. Last, --slurm-path-map to the storage volume itself
# (the local storage folder plays the lab's export mounted by the kernel on
# the compute nodes): the Slurm stage reads its input and writes its output
# and log there, and the pipeline's result is right.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/slurm.sh"
SLURM_CPUS=8 SLURM_MIN_JOB_AGE=900 start_slurm n1
pass "slurmctld and slurmd n1 up"

ensure_user parsa-slurm1 parsa-slurmers
start_all --cpus 2
start_runner slurm1 --executor slurm --slurm-partition debug --slurm-lost-after 20 -v

submit_as() {
	chmod 644 "$1"
	as_user parsa-slurm1 cp "$1" "$MNT/queue/$(basename "$1")" || return 1
	as_user parsa-slurm1 readlink "$MNT/jobs/last"
}
# tags: "JOBID|TAG" of every job and array task of slurm1 Slurm keeps.
tags() {
	squeue --noheader -t all --name=parsa-slurm1 -o '%A|%k'
}
# twice: the tags given to more than one Slurm job or array (%F: the array's
# id, a plain job's own), none when exactly once.
twice() {
	squeue --noheader -t all --name=parsa-slurm1 -o '%F|%k' | sort -u | cut -d'|' -f2 | sort | uniq -d
}
some_running() {
	[ "$(grep -l '^state: running' "$MNT"/jobs/"$1"/stages/fan/instances/*/status 2>/dev/null | wc -l)" -ge 2 ]
}
# check_once JOB WHAT: every instance of JOB's 16 ran once, in its own Slurm
# job, and no attempt went to Slurm twice.
check_once() {
	local out=$MNT/jobs/$1/out/fan
	check "$2: every instance ran once (16 runs, got $(cat "$out"/ids.* | wc -l))" \
		test "$(cat "$out"/ids.* | wc -l)" -eq 16
	check "$2: in 16 distinct Slurm jobs" test "$(cat "$out"/ids.* | sort -u | wc -l)" -eq 16
	check "$2: no attempt submitted twice (tags twice: $(twice | tr '\n' ' '))" test -z "$(twice)"
}

cat >"$TEST_DIR/fan.conf" <<'SPEC'
[stage fan]
hosts = slurm1
instances = 16
run = echo "$SLURM_JOB_ID" >> "$PARSA_OUT/ids.$PARSA_INDEX"; sleep 3
SPEC

# --- the runner killed -9 during the fan-out ---
before=$(tags | wc -l)
fan=$(submit_as "$TEST_DIR/fan.conf") || fail "cannot submit"
wait_for "the fan-out runs" 60 some_running "$fan"
kill -9 "${DAEMON_PID[runner-slurm1]}"
wait "${DAEMON_PID[runner-slurm1]}" 2>/dev/null
unset 'DAEMON_PID[runner-slurm1]'
log "runner slurm1 killed -9 with $(squeue --noheader --name=parsa-slurm1 -t PENDING,RUNNING -o %A | wc -l) jobs in Slurm"
start_runner slurm1 --executor slurm --slurm-partition debug --slurm-lost-after 20 -v
wait_job "$fan" 180 succeeded
pass "the fan-out succeeded across the runner's kill -9"
check_once "$fan" "runner killed"
check "16 Slurm jobs for it" test $(($(tags | wc -l) - before)) -eq 16

# --- the scheduler killed -9 during the fan-out ---
before=$(tags | wc -l)
fan2=$(submit_as "$TEST_DIR/fan.conf") || fail "cannot submit"
wait_for "the second fan-out runs" 60 some_running "$fan2"
stop_daemon sched KILL
log "scheduler killed with $(squeue --noheader --name=parsa-slurm1 -t PENDING,RUNNING -o %A | wc -l) jobs in Slurm"
sleep 2
start_sched
wait_job "$fan2" 180 succeeded
pass "the fan-out succeeded across the scheduler's kill -9"
check_once "$fan2" "scheduler killed"
check "16 Slurm jobs for it" test $(($(tags | wc -l) - before)) -eq 16

# --- --slurm-path-map to the volume ---
start_runner slurm2 --executor slurm --slurm-path-map "$MNT=$STORAGE" -v
cat >"$TEST_DIR/vol.conf" <<'SPEC'
[stage make]
hosts = local
run = for i in 1 2 3; do echo "$i" > "$PARSA_OUT/n$i"; done
[stage square]
hosts = slurm2
after = make
foreach = make/n*
run = n=$(cat "$PARSA_ITEM"); echo "$PARSA_OUT" > "$PARSA_OUT/where.$PARSA_INDEX"
	echo "$n $((n * n))" > "$PARSA_OUT/sq.$n"; echo "squared $n"
[stage sum]
hosts = local
after = square
run = awk '{ s += $2 } END { print s }' "$PARSA_JOBDIR"/out/square/sq.* > "$PARSA_OUT/sum"
SPEC
vol=$(submit_as "$TEST_DIR/vol.conf") || fail "cannot submit"
wait_job "$vol" 120 succeeded
check "the sum of the squares is right" grep -qx 14 "$MNT/jobs/$vol/out/sum/sum"
check "the Slurm stage wrote where the volume is on its node" \
	grep -qx "$STORAGE/jobs/$vol/out/square" "$MNT/jobs/$vol/out/square/where.0"
check "its log is the instance's log, seen through the mount" \
	grep -q '^squared [123]$' "$MNT/jobs/$vol/stages/square/instances/0/log"
check "no exit file left among the outputs" \
	bash -c "! ls -A '$MNT/jobs/$vol/out/square' | grep -q '^\.parsa-exit'"

# --- a runner gone past its lease, then back: its old jobs are scancel'ed ---
# The scheduler again, with a short lease: the instances of a runner silent
# past it are requeued (a failed attempt each: retries = 1); when the runner
# comes back and lists the old attempts it reattached, the scheduler has it
# cancel them, and Slurm's jobs of the old attempts end CANCELLED.
stop_daemon sched
start_sched --lease 3s
cat >"$TEST_DIR/gone.conf" <<'SPEC'
[stage gone]
hosts = slurm1
instances = 3
retries = 1
run = if [ -e "$PARSA_OUT/first.$PARSA_INDEX" ]; then echo "again $PARSA_INDEX" > "$PARSA_OUT/done.$PARSA_INDEX"; exit 0; fi
	echo "$SLURM_JOB_ID" > "$PARSA_OUT/first.$PARSA_INDEX"; sleep 300
SPEC
gone=$(submit_as "$TEST_DIR/gone.conf") || fail "cannot submit"
wait_for "the three first attempts run in Slurm" 60 \
	sh -c "[ \$(ls '$MNT/jobs/$gone/out/gone/' 2>/dev/null | grep -c '^first') -eq 3 ]"
old=$(cat "$MNT/jobs/$gone/out/gone/"first.* | tr '\n' ' ')
kill -9 "${DAEMON_PID[runner-slurm1]}"
wait "${DAEMON_PID[runner-slurm1]}" 2>/dev/null
unset 'DAEMON_PID[runner-slurm1]'
wait_for "the scheduler gives slurm1 up and requeues its instances" 60 \
	grep -q 'host slurm1 down' "$MNT/jobs/$gone/events"
for sid in $old; do
	check "old job $sid still runs in Slurm while its runner is away" slurm_job_is "$sid" RUNNING
done
start_runner slurm1 --executor slurm --slurm-partition debug --slurm-lost-after 20 -v
wait_job "$gone" 120 succeeded
pass "the job succeeded on the new attempts"
for sid in $old; do
	wait_for "old job $sid cancelled in Slurm" 30 slurm_job_is "$sid" CANCELLED
done
pass "the old attempts' Slurm jobs were cancelled when the runner came back ($old)"
check "each instance finished once on its new attempt" test "$(cat "$MNT/jobs/$gone/out/gone/"done.* | wc -l)" -eq 3
check "no attempt submitted twice (tags twice: $(twice | tr '\n' ' '))" test -z "$(twice)"
