#!/bin/bash
# Issue 36: $PARSA_PROGRESS for an instance that runs as a Slurm job. A node
# cannot write the runner's progress folder on /run: the file is on the job's
# volume beside the wrapper's exit file (out/<stage>/.parsa-progress.<index>.<attempt>),
# made by the wrapper before the stage runs, read by the runner every few
# seconds (inotify hears nothing of a node's writes) and removed when the
# instance ends. slurm1's nodes see the parsa mount; slurm2's see the storage
# folder itself (--slurm-path-map, as a kernel NFS mount of the export on a
# node): there the stage writes behind parsafs's back, so only the runner's
# reading finds the values. Both reach the instance's status and the job's,
# a progress = files:N stage's count too, and no progress file is left.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/slurm.sh"
SLURM_CPUS=8 start_slurm n1
pass "slurmctld and slurmd n1 up"

ensure_user parsa-slurm1 parsa-slurmers
start_all --cpus 2
start_runner slurm1 --executor slurm --slurm-partition debug -v
start_runner slurm2 --executor slurm --slurm-partition debug --slurm-path-map "$MNT=$STORAGE" -v

# The stages wait for the test to open their gate (a folder anyone can read).
GATE=$TEST_DIR/gate
mkdir -m 755 "$GATE"
cat >"$TEST_DIR/progress.conf" <<SPEC
[stage direct]
hosts = slurm1
instances = 2
run = [ -f "\$PARSA_PROGRESS" ] || exit 3
      echo "\$PARSA_PROGRESS" > "\$PARSA_OUT/file.\$PARSA_INDEX"
      echo 1/10 > "\$PARSA_PROGRESS"; echo 3/10 >> "\$PARSA_PROGRESS"
      while [ ! -e "$GATE/direct" ]; do sleep 0.2; done

[stage mapped]
hosts = slurm2
run = echo "\$PARSA_PROGRESS" > "\$PARSA_OUT/file"; echo 40% > "\$PARSA_PROGRESS"
      while [ ! -e "$GATE/mapped" ]; do sleep 0.2; done

[stage counted]
hosts = slurm2
progress = files:4
run = touch "\$PARSA_OUT/a" "\$PARSA_OUT/b"
      while [ ! -e "$GATE/counted" ]; do sleep 0.2; done
SPEC
chmod 644 "$TEST_DIR/progress.conf"
as_user parsa-slurm1 cp "$TEST_DIR/progress.conf" "$MNT/queue/progress.conf" || fail "cannot submit"
id=$(as_user parsa-slurm1 readlink "$MNT/jobs/last") || fail "no jobs/last"
J=$MNT/jobs/$id

wait_for "a Slurm instance's progress reaches its status" 60 \
	grep -q '^progress: 3/10 (30%)' "$J/stages/direct/instances/1/status"
wait_for "both instances' reach the job's status" 30 grep -q '^progress direct: 6/20 (30%)' "$J/status"
f=$(cat "$J/out/direct/file.0")
check "the instance's PARSA_PROGRESS is on the volume, beside its exit file ($f)" \
	bash -c "[[ '$f' =~ ^$J/out/direct/\.parsa-progress\.0\.[0-9]+$ ]]"
wait_for "written behind parsafs's back, it is read all the same" 30 \
	grep -q '^progress: 40/100 (40%)' "$J/stages/mapped/instances/0/status"
f=$(cat "$J/out/mapped/file")
check "there PARSA_PROGRESS is the node's path to the volume ($f)" \
	bash -c "[[ '$f' =~ ^$STORAGE/jobs/$id/out/mapped/\.parsa-progress\.0\.[0-9]+$ ]]"
wait_for "a files:N stage's count, not its dot files" 30 grep -q '^progress counted: 2/4 (50%)' "$J/status"

touch "$GATE/direct" "$GATE/mapped" "$GATE/counted"
wait_job "$id" 120 succeeded
for s in direct mapped counted; do
	wait_for "no progress file left in out/$s" 20 \
		bash -c "! ls -A '$J/out/$s' | grep -q '^\.parsa-progress'"
done
check "nor on the volume" bash -c "! find '$STORAGE/jobs/$id/out' -name '.parsa-progress*' | grep -q ."
