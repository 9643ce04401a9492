#!/bin/bash
# Work started outside parsa counts: with every core busy with a hand-started
# CPU hog, a submitted job must wait (why says live CPU), and start once the hog
# ends.
. "$(dirname "$0")/../lib/common.sh"
start_all --cpus 2 --cpu-limit 90
# The job must start once the hogs this test starts end: on a machine kept
# busy by something else it would wait on that too, so skip there.
need_quiet_host 20

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
wait_for "the runner reports the hog" 15 cpu_above 90
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
