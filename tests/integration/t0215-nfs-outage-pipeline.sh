#!/bin/bash
# The lab's fan-out on NFS through two outages of the file server, as a kernel
# hard mount would take them: 200 timing instances (retries = 2, 4 cores);
# once 25 are done the server stops for 6 s, and in a second job for 60 s
# with the scheduler killed while the server is down and started again before
# it is back. Each job succeeds with every sample once, no instance is killed
# or counted as failed because of the outage, the outage shows in the mount's
# storage file, the host's status and the mount's log while it lasts, and a job
# submitted during the outage runs after it.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"

SAMPLES=200
start_nfs
start_sched
start_fs
start_runner local --cpus 4 --cpu-limit 100

# Stage 2 reads its checkpoint and appends (not writes) its line: an instance
# that ran twice leaves two lines.
spec=$TEST_DIR/fanout.conf
cat >"$spec" <<'SPEC'
[job]
name = outage-fanout

[stage warm]
run = i=0
      while [ "$i" -lt 200 ]; do
        d="$PARSA_OUT/ckpt-$(printf %04d "$i")"
        mkdir -p "$d" && echo "sample $i" > "$d/state"
        i=$((i + 1))
      done

[stage timing]
after   = warm
foreach = warm/ckpt-*
retries = 2
cpus    = 1
mem     = 8M
run     = read -r word n < "$PARSA_ITEM/state"
          sleep 0.2
          echo "$(basename "$PARSA_ITEM"),$n" >> "$PARSA_OUT/$PARSA_INDEX.csv"

[stage gather]
after = timing
run   = cat "$PARSA_JOBDIR"/out/timing/*.csv | sort > "$PARSA_OUT/results.csv"
SPEC
printf '[stage s]\nrun = echo during > "$PARSA_OUT/f"\n' >"$TEST_DIR/during.conf"

done_count() {
	find "$NFS_EXPORT/jobs/$1/out/timing" -name '*.csv' 2>/dev/null | wc -l
}
done_at_least() {
	[ "$(done_count "$1")" -ge "$2" ]
}
storage_says() {
	timeout 5 grep -q "^state: $1" "$MNT/storage"
}

# check_job ID: succeeded, every sample exactly once, nothing failed or killed.
check_job() {
	local id=$1 results=$MNT/jobs/$1/out/gather/results.csv
	wait_job "$id" 400 succeeded
	check "job $id: $SAMPLES result lines" test "$(wc -l <"$results")" -eq "$SAMPLES"
	check "job $id: every sample once" test -z "$(cut -d, -f1 "$results" | sort | uniq -d)"
	check "job $id: no instance ran twice" \
		test "$(cat "$NFS_EXPORT/jobs/$id/out/timing"/*.csv | wc -l)" -eq "$SAMPLES"
	if grep -Ei 'killed|signal|failed|cannot start' "$MNT/jobs/$id/events" >"$TEST_DIR/bad.$id"; then
		sed 's/^/#   /' "$TEST_DIR/bad.$id"
		fail "job $id: the outage failed or killed instances"
	fi
	pass "job $id: no instance failed or was killed by the outage"
}

# outage ID SECONDS [kill-sched]: stop the server once 25 instances are done.
outage() {
	local id=$1 secs=$2 how=${3:-} during t0
	wait_for "25 instances of job $id done" 120 done_at_least "$id" 25
	kill_ganesha KILL
	t0=$(date +%s)
	pass "server stopped with $(done_count "$id") of $SAMPLES done"
	if [ "$how" = kill-sched ]; then
		stop_daemon sched KILL
		pass "scheduler killed while the server is down"
		start_sched
		pass "the scheduler starts while the server is down"
	fi
	wait_for "the mount says the volume is unreachable" 30 storage_says unreachable
	wait_for "the host says so" 30 grep -q '^storage: unreachable' "$MNT/hosts/local/status"
	check "the machine's status says so" grep -qi 'storage.*unreachable' "$MNT/status"
	cp "$TEST_DIR/during.conf" "$MNT/queue/during-$id.conf" || fail "cp during the outage failed"
	during=$(readlink "$MNT/jobs/last")
	pass "job $during submitted during the outage"
	wait_for "its why names the storage" 30 grep -qi 'storage' "$MNT/jobs/$during/why"
	check "job $id is not failed meanwhile" sh -c "! grep -q '^state: failed' '$MNT/jobs/$id/status'"
	while [ $(($(date +%s) - t0)) -lt "$secs" ]; do
		sleep 1
		job_is "$id" failed && fail "job $id failed during the outage"
	done
	start_ganesha
	pass "server back after $(($(date +%s) - t0)) s"
	wait_for "the mount says the volume is reachable" 30 storage_says reachable
	wait_job "$during" 120 succeeded
	check "the job submitted during the outage wrote its file" grep -qx during "$MNT/jobs/$during/out/s/f"
}

id=$(submit "$spec") || fail "submission failed"
outage "$id" 6
check_job "$id"
check "the mount's log tells the outage" grep -q 'unreachable' "$LOGS/fs.log"
check "and the return" grep -q 'reachable again' "$LOGS/fs.log"

id=$(submit "$spec") || fail "second submission failed"
outage "$id" 60 kill-sched
check_job "$id"
