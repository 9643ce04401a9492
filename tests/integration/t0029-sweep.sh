#!/bin/bash
# Parameter sweeps: matrix.NAME = v1, v2, ... gives a stage one instance per
# point (2 x 3 here), each with $NAME, $PARSA_POINT and a folder of its own
# (out/sim/cache=2M,quantum=1000/); status names the point; a later stage
# goes through one point's outputs with foreach = sim/POINT/GLOB, another
# gathers all; foreach x matrix gives entries x points; a failed point under
# on_failure = finish, stop and ignore ends the job as each says.
. "$(dirname "$0")/../lib/common.sh"
start_all --cpus 4 --cpu-limit 100

cat >"$TEST_DIR/sweep.conf" <<'SPEC'
[stage sim]
matrix.cache = 1M, 2M
matrix.quantum = 100, 1000, 10000
env.LABEL = c${cache}-q${quantum}
run = echo "$cache $quantum $PARSA_POINT $LABEL" > "$PARSA_OUT/result"

[stage one_point]
after = sim
foreach = sim/cache=2M,quantum=1000/result
run = cp "$PARSA_ITEM" "$PARSA_OUT/copy"

[stage gather]
after = sim
run = cat "$PARSA_JOBDIR"/out/sim/*/result | sort > "$PARSA_OUT/all.csv"

[stage per_entry]
after = one_point
foreach = one_point
matrix.mode = fast, slow
run = echo "$mode $(basename "$PARSA_ITEM")" > "$PARSA_OUT/seen"
SPEC
id=$(submit "$TEST_DIR/sweep.conf") || fail "submit failed"
wait_job "$id" 60 succeeded
J=$MNT/jobs/$id

check "six points, six instances" test "$(ls "$J/stages/sim/instances" | wc -l)" -eq 6
check "each point has its own folder" test "$(ls "$J/out/sim" | tr '\n' ' ')" = \
	"cache=1M,quantum=100 cache=1M,quantum=1000 cache=1M,quantum=10000 cache=2M,quantum=100 cache=2M,quantum=1000 cache=2M,quantum=10000 "
check "an instance sees its values, its point and env with \${NAME}" \
	test "$(cat "$J/out/sim/cache=2M,quantum=1000/result")" = "2M 1000 cache=2M quantum=1000 c2M-q1000"
check "the last axis varies fastest: instance 1 is cache=1M quantum=1000" \
	grep -qx 'point: cache=1M quantum=1000' "$J/stages/sim/instances/1/status"
check "the stage's status lists the axes" grep -qx 'matrix.quantum: 100, 1000, 10000' "$J/stages/sim/status"
check "and the points" grep -qx 'points: 6' "$J/stages/sim/status"
check "foreach over one point's outputs" test "$(cat "$J/out/one_point/copy")" = "2M 1000 cache=2M quantum=1000 c2M-q1000"
check "the gathering stage sees all six" test "$(wc -l <"$J/out/gather/all.csv")" -eq 6
check "foreach x matrix: one entry x two points" test "$(ls "$J/stages/per_entry/instances" | wc -l)" -eq 2
check "each in its point's folder" test "$(cat "$J/out/per_entry/mode=slow/seen")" = "slow copy"

# A failed point under each on_failure.
for how in finish stop ignore; do
	cat >"$TEST_DIR/fail-$how.conf" <<SPEC
[stage sim]
matrix.size = 1, 2, 3
on_failure = $how
run = [ "\$size" != 2 ] || exit 3
      touch "\$PARSA_OUT/done"
SPEC
done
f=$(submit "$TEST_DIR/fail-finish.conf") || fail "submit failed"
wait_job "$f" 60 failed
check "finish: the other points ran" test -e "$MNT/jobs/$f/out/sim/size=3/done" -a -e "$MNT/jobs/$f/out/sim/size=1/done"
check "finish: the job's reason names the failed instance" grep -q '^reason: stage sim failed: instance 1 failed (exit code 3' "$MNT/jobs/$f/status"
i=$(submit "$TEST_DIR/fail-ignore.conf") || fail "submit failed"
wait_job "$i" 60 succeeded
check "ignore: the job succeeds with the point's failure counted" grep -q 'stage sim: succeeded, 1 of 3 failed' "$MNT/jobs/$i/status"
s=$(submit "$TEST_DIR/fail-stop.conf") || fail "submit failed"
wait_job "$s" 60 failed
check "stop: the job fails" grep -q '^state: failed' "$MNT/jobs/$s/status"
pass "sweeps: points, their folders and values, foreach and gathering, failures"
