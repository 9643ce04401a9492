#!/bin/bash
# Issue 14: what ran is recorded as it ran. Starts and ends are stamped by the
# runner on the host (ms), with the cpu-seconds and peak memory of the
# instance's process tree; instance status, status.json and events show them.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/times.sh"
start_all --cpus 2

cat >"$TEST_DIR/short.conf" <<'SPEC'
[stage nap]
instances = 2
run = date +%s%3N > "$PARSA_OUT/$PARSA_INDEX.start"; sleep 0.3
[stage burn]
run = python3 -c 'import time; t = time.process_time() + 1; exec("while time.process_time() < t: pass")'
SPEC
id=$(submit "$TEST_DIR/short.conf") || fail "submit failed"
wait_job "$id" 60 succeeded

while read -r index started ended cpu state; do
	own=$(cat "$MNT/jobs/$id/out/nap/$index.start")
	log "nap $index: started $started (the instance says $own), ended $ended, cpu $cpu ms"
	check "nap $index lasted 0.25-0.45 s" test $((ended - started)) -ge 250 -a $((ended - started)) -le 450
	check "nap $index's start stamp is within 50 ms of its own" test $((own - started)) -ge -50 -a $((own - started)) -le 50
done < <(instance_times "$id" nap)

read -r _ started ended cpu _ < <(instance_times "$id" burn)
log "burn: $((ended - started)) ms wall, $cpu ms cpu"
check "a loop that burns 1 s of CPU used 0.8-1.2 cpu-seconds" test "$cpu" -ge 800 -a "$cpu" -le 1200

status=$MNT/jobs/$id/stages/nap/instances/0/status
log "instance status: $(tr '\n' '|' <"$status")"
check "status: started with milliseconds" grep -Eq '^started: [0-9T:-]+\.[0-9]{3}$' "$status"
check "status: ended with milliseconds" grep -Eq '^ended: [0-9T:-]+\.[0-9]{3}$' "$status"
check "status: duration" grep -Eq '^duration: 0\.[2-4][0-9]{2} s$' "$status"
check "status: cpu" grep -Eq '^cpu: [0-9]+\.[0-9]{3} s$' "$status"
check "status: max mem" grep -q '^max mem: ' "$status"
check "status.json has its fields" python3 -c "
import json, sys
j = json.load(open('$MNT/jobs/$id/stages/nap/instances/0/status.json'))
need = ['started_ms', 'ended_ms', 'cpu_ms', 'max_rss_bytes', 'host', 'attempt', 'exit_code', 'signal', 'reason']
sys.exit(not (all(k in j for k in need) and j['host'] == 'local' and j['exit_code'] == 0 and j['max_rss_bytes'] > 0))"
check "ls shows status.json" sh -c "ls '$MNT/jobs/$id/stages/nap/instances/0' | grep -qx status.json"
log "events: $(tr '\n' '|' <"$MNT/jobs/$id/events")"
check "events: the true duration of a short instance" \
	grep -Eq 'stage nap instance 0 succeeded on local \(0\.[2-4][0-9]{2} s\)' "$MNT/jobs/$id/events"
check "no start without a pid" sh -c "! grep -q 'pid 0' '$MNT/jobs/$id/events'"
start_line=$(grep 'stage nap instance 0 started' "$MNT/jobs/$id/events" | awk '{print $1}')
end_line=$(grep 'stage nap instance 0 succeeded' "$MNT/jobs/$id/events" | awk '{print $1}')
check "the start and end events are not the same instant" test "$start_line" != "$end_line"
