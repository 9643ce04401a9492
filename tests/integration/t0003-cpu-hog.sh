#!/bin/bash
# Work started outside parsa counts: with every core busy with a hand-started
# CPU hog, a submitted job must wait (why says live CPU), and start once the hog
# ends. The limit is relative to the machine's load without the hogs.
. "$(dirname "$0")/../lib/common.sh"
start_all --cpus 2 --cpu-limit 90

# The limit is set relative to what the machine does without this test (a
# build, another test run): halfway between that and 100%, so that the hogs
# below pass it and their end brings the host back under it. Sampled for
# 3 s after the daemons' own start-up; a machine that keeps 1.2 of the 2
# cores busy leaves no room to measure in, and the test skips.
sleep 1
base=0
for i in $(seq 1 15); do
	base=$(awk -v a="$base" -v b="$(outside_cores local)" 'BEGIN { print (b + 0 > a ? b + 0 : a) }')
	sleep 0.2
done
if awk -v b="$base" 'BEGIN { exit !(b >= 1.2) }'; then
	echo "# SKIP: the machine keeps $base of 2 cores busy outside this test: no room to measure"
	exit 77
fi
limit=$(awk -v b="$base" -v n="$(nproc)" 'BEGIN { l = int((b / n * 100 + 100) / 2); print (l > 90 ? 90 : l) }')
log "outside this test: up to $base cores busy; the runner's cpu limit: $limit%"
stop_daemon runner-local
start_runner local --cpus 2 --cpu-limit "$limit"

hogs=()
for i in $(seq 1 "$(nproc)"); do
	sh -c 'while :; do :; done' "$TEST_DIR/hog" &
	hogs+=($!)
done
on_cleanup "kill ${hogs[*]}"

live_cpu() {
	sed -n 's/^live cpu: *\([0-9]*\).*/\1/p' "$MNT/hosts/local/status"
}
cpu_above() { [ "$(live_cpu)" -ge "$1" ] 2>/dev/null; }
wait_for "the runner reports the hog" 15 cpu_above "$limit"
log "host status with the hog: $(tr '\n' '|' <"$MNT/hosts/local/status")"

cat >"$TEST_DIR/small.conf" <<'SPEC'
[stage tiny]
run = echo ran > "$PARSA_OUT/ran"
SPEC
id=$(submit "$TEST_DIR/small.conf") || fail "submit failed"
stays_queued "$id" 30 "the job waits while the CPU is over the limit"
check "why names the live CPU limit" grep -qi 'cpu' "$MNT/jobs/$id/why"
log "why: $(tr '\n' '|' <"$MNT/jobs/$id/why")"

kill "${hogs[@]}"
wait "${hogs[@]}" 2>/dev/null
wait_job "$id" 30 succeeded
check "the job ran once the hog ended" test -f "$MNT/jobs/$id/out/tiny/ran"
