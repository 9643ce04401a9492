#!/bin/bash
# Issue 36 with Slurm's accounting: a private Slurm with slurmdbd and its own
# MariaDB (SLURM_ACCOUNTING=1 of tests/lib/slurm.sh). The runner finds
# accounting on (hosts/slurm1/status), asks sacct of the jobs that ended, in
# one call per cycle: an instance that burnt CPU and held memory shows
# Slurm's CPU time, peak memory and end state (slurm state: COMPLETED) in
# its status, and one whose Slurm job its user cancelled with scancel names
# who did. The exit code stays the wrapper's.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/slurm.sh"
SLURM_CPUS=2 SLURM_ACCOUNTING=1 start_slurm n1
pass "slurmdbd, slurmctld and slurmd n1 up"

ensure_user parsa-acct parsa-slurmers
start_all --cpus 2
start_runner slurm1 --executor slurm --slurm-partition debug -v
status=$MNT/hosts/slurm1/status
wait_for "slurm1 finds accounting on" 20 grep -q '^slurm accounting: on' "$status"

submit() {
	chmod 644 "$1"
	as_user parsa-acct cp "$1" "$MNT/queue/$(basename "$1")" || return 1
	as_user parsa-acct readlink "$MNT/jobs/last"
}
# 60 MiB written and held while burning some CPU, then for 2.5 s more:
# jobacct_gather samples every second (under DefMemPerCPU's 100 MB).
cat >"$TEST_DIR/burn.conf" <<'SPEC'
[stage burn]
hosts = slurm1
run = python3 -c "import time; b = b'x' * (60 << 20); sum(range(20000000)); time.sleep(2.5)"
SPEC
cat >"$TEST_DIR/nap.conf" <<'SPEC'
[stage nap]
hosts = slurm1
run = sleep 300
SPEC
burn=$(submit "$TEST_DIR/burn.conf") || fail "cannot submit burn.conf"
nap=$(submit "$TEST_DIR/nap.conf") || fail "cannot submit nap.conf"
inst=$MNT/jobs/$nap/stages/nap/instances/0/status
wait_for "the nap runs" 60 grep -qx 'state: running' "$inst"
sid=$(sed -n 's/^slurm job: //p' "$inst")
slurm_as parsa-acct scancel "$sid" || fail "parsa-acct cannot scancel its job $sid"
wait_job "$burn" 60 succeeded
wait_job "$nap" 60 failed

b=$MNT/jobs/$burn/stages/burn/instances/0/status
log "burn: $(grep -E '^(cpu|max mem|exit code)' "$b" | tr '\n' ';')"
check "the burn instance's exit code is the wrapper's" grep -qx 'exit code: 0' "$b"
check "Slurm's end state from sacct" grep -qx 'slurm state: COMPLETED' "$b"
check "its CPU time from sacct" awk '$1 == "cpu:" && $2 > 0.2 { ok = 1 } END { exit !ok }' "$b"
check "its peak memory from sacct (60 MiB and more)" \
	awk '$1 == "max" && $2 == "mem:" { n = $3 + 0; u = substr($3, length($3))
		n *= u == "K" ? 1024 : u == "M" ? 1048576 : u == "G" ? 1073741824 : 1
		if (n >= 60 * 1048576) ok = 1 } END { exit !ok }' "$b"
uid=$(id -u parsa-acct)
log "nap: $(grep -E '^(reason|signal)' "$inst" | tr '\n' ';')"
check "the cancelled instance names who cancelled" \
	grep -q "^reason: .*slurm job $sid: cancelled in Slurm by parsa-acct (uid $uid)\$" "$inst"
check "and its Slurm state says so" grep -qx 'slurm state: CANCELLED by parsa-acct' "$inst"
log=$LOGS/runner-slurm1.log
check "sacct was asked, never more than once a cycle" \
	test "$(grep -c 'slurm: sacct (calls' "$log")" -le "$(grep -c 'slurm: squeue (calls' "$log")"
pass "accounting's facts reached the instances"
