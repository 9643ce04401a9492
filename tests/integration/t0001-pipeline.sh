#!/bin/bash
# The lab's two-stage pipeline end to end through `parsa up`: cp the spec into
# queue/, wait on jobs/<id>/wait, check the gathered CSV, the instance count and
# that no more single-core instances ran at once than the host has cores.
. "$(dirname "$0")/../lib/common.sh"

CORES=4
on_cleanup "parsa down --mount '$MNT' --state '$STATE'"
MOUNTS+=("$MNT")
parsa up --detach --mount "$MNT" --state "$STATE" --storage "$STORAGE" \
	--cpus "$CORES" --cpu-limit 100 --mem-limit 100 >"$LOGS/up.log" 2>&1 || fail "parsa up --detach failed: $(tail -5 "$LOGS/up.log")"
cp "$STATE"/logs/*.log "$LOGS/" 2>/dev/null || true
check "parsa up --detach returns with the mount ready" test -e "$MNT/status"

id=$(submit "$PARSA_SRC/examples/lab-pipeline.conf") || fail "cp into queue/ failed"
check "jobs/last names the new job" test -n "$id"
check "the queue entry left queue/" test ! -e "$MNT/queue/lab-pipeline.conf"
check "the spec is kept byte for byte" cmp -s "$PARSA_SRC/examples/lab-pipeline.conf" "$MNT/jobs/$id/spec"

# The same name again at once, by plain shell redirection (open, write, close).
ids=()
for i in 1 2 3; do
	printf '[stage s]\nrun = true\n' >"$MNT/queue/again.conf" || fail "submission $i of the same name failed"
	ids+=("$(readlink "$MNT/jobs/last")")
done
check "the same name submitted three times in a row gives three jobs" \
	test "$(printf '%s\n' "${ids[@]}" | sort -u | wc -l)" -eq 3

wait_job "$id" 120 succeeded
pass "the job succeeded"

results=$MNT/jobs/$id/out/gather/results.csv
check "results.csv exists" test -s "$results"
check "results.csv has a header and 16 samples" test "$(wc -l <"$results")" -eq 17
check "sample 7's cycles are right" grep -q '^ckpt-0007,8000,' "$results"
check "16 timing instances" test "$(ls "$MNT/jobs/$id/stages/timing/instances" | wc -l)" -eq 16
check "16 checkpoint folders" test "$(ls -d "$MNT/jobs/$id/out/warm"/ckpt-* | wc -l)" -eq 16

# At most CORES single-core instances at once, from the recorded start and end times.
peak=$(tail -n +2 "$results" | awk -F, '{ print $4, 1; print $5, -1 }' | sort -n -k1,1 -k2,2n |
	awk '{ n += $2; if (n > max) max = n } END { print max }')
log "peak concurrency: $peak of $CORES cores"
check "never more than $CORES instances at once" test "$peak" -le "$CORES"
check "the fan-out ran in parallel" test "$peak" -ge 2

check "status says succeeded" grep -q '^state: succeeded' "$MNT/jobs/$id/status"
check "parsa status agrees" sh -c "parsa status $id | grep -q '^state: succeeded'"
check "the events list the stages" grep -q 'timing' "$MNT/jobs/$id/events"
check "an instance log is readable" test -r "$MNT/jobs/$id/stages/gather/instances/0/log"

parsa down --mount "$MNT" --state "$STATE" >>"$LOGS/up.log" 2>&1 || fail "parsa down failed"
check "parsa down unmounts" sh -c "! grep -q ' $MNT fuse' /proc/mounts"
if pgrep -f -- "$STATE" >/dev/null; then
	fail "parsa down left processes: $(pgrep -af -- "$STATE")"
fi
pass "parsa down stops every daemon"
