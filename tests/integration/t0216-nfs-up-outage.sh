#!/bin/bash
# `parsa up` on NFS through an outage of the file server with the scheduler
# killed while the server is down: up starts the scheduler again while the
# server is still gone, the runner and the mount stay (no running instance is
# killed), and once the server is back the fan-out finishes with every sample
# once.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"

start_nfs
on_cleanup "parsa down --mount '$MNT' --state '$STATE'"
MOUNTS+=("$MNT")
parsa up --detach --mount "$MNT" --state "$STATE" --storage "$NFS_URL" --cpus 4 --cpu-limit 100 --mem-limit 100 \
	>"$LOGS/up.log" 2>&1 || fail "parsa up --storage $NFS_URL failed: $(tail -5 "$LOGS/up.log")"

spec=$TEST_DIR/fanout.conf
cat >"$spec" <<'SPEC'
[stage warm]
run = for i in $(seq -w 0 79); do mkdir -p "$PARSA_OUT/ckpt-$i"; echo "$i" > "$PARSA_OUT/ckpt-$i/state"; done

[stage timing]
after   = warm
foreach = warm/ckpt-*
retries = 2
mem     = 8M
run     = read -r n < "$PARSA_ITEM/state"
          sleep 0.3
          echo "$n" >> "$PARSA_OUT/$PARSA_INDEX.csv"

[stage gather]
after = timing
run   = cat "$PARSA_JOBDIR"/out/timing/*.csv | sort > "$PARSA_OUT/results.csv"
SPEC
id=$(submit "$spec") || fail "submission failed"
done_count() { find "$NFS_EXPORT/jobs/$id/out/timing" -name '*.csv' 2>/dev/null | wc -l; }
done_at_least() { [ "$(done_count)" -ge "$1" ]; }
wait_for "10 instances done" 120 done_at_least 10

runner=$(up_pid runner_pid)
fs=$(up_pid fs_pid)
sched=$(up_pid sched_pid)
alive "$runner" && alive "$fs" && alive "$sched" || fail "up.json lacks a live daemon: $(cat "$STATE/up.json")"
kill_ganesha KILL
kill -KILL "$sched"
pass "server stopped and scheduler killed"
wait_for "up starts the scheduler again while the server is down" 60 replaced sched_pid "$sched"
wait_for "the new scheduler answers" 30 grep -q '^state:' "$MNT/jobs/$id/status"
sleep 5
check "the runner was not stopped" alive "$runner"
check "nor was the mount" alive "$fs"
check "the runner is the same process" test "$(up_pid runner_pid)" = "$runner"
check "the job is not failed" sh -c "! grep -q '^state: failed' '$MNT/jobs/$id/status'"
start_ganesha
pass "server back"
wait_job "$id" 300 succeeded
results=$MNT/jobs/$id/out/gather/results.csv
check "80 results" test "$(wc -l <"$results")" -eq 80
check "every sample once" test -z "$(sort "$results" | uniq -d)"
if grep -Ei 'killed|signal|failed|cannot start' "$MNT/jobs/$id/events" >"$TEST_DIR/bad"; then
	sed 's/^/#   /' "$TEST_DIR/bad"
	fail "the outage failed or killed instances"
fi
pass "no instance failed or was killed by the outage"
check "the runner lived through it all" alive "$runner"
parsa down --mount "$MNT" --state "$STATE" >>"$LOGS/up.log" 2>&1 || fail "parsa down failed"
