#!/bin/bash
# Years of history (issue 16): with 10,000 finished jobs in the database
# (tests/tools/make_history.c, written through the store), the scheduler
# starts with none of them in memory, every old job still reads through the
# mount, and reads the same after a restart; a job that really ran reads the
# same once it has left memory; a job submitted right after a restart starts
# at once; jobs/ lists only unfinished jobs and the last list_finished; record
# retention deletes old records, and, on a moved clock, the newer ones later.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/time.sh"
MAKE_HISTORY=$PARSA_BIN/../tests/make-history
[ -x "$MAKE_HISTORY" ] || fail "no $MAKE_HISTORY (cmake --build builds it with the tests)"

mkdir -p "$STATE"
"$MAKE_HISTORY" "$STATE/parsa.db" 10000 3 365 >"$TEST_DIR/make.out" 2>&1 ||
	fail "make-history: $(cat "$TEST_DIR/make.out")"
pass "10,000 finished jobs of 3 instances over a year in the database"

sched_flags=(--clock-file "$CLOCK" --keep-finished 5s)
start_sched "${sched_flags[@]}"
start_fs
# More cores than the machine has and no load limit: other work on it (outside load) must not
# hold back the jobs whose start is timed here.
start_runner local --clock-file "$CLOCK" --cpus 8 --cpu-limit 100 --mem-limit 100
check "the scheduler holds none of them" grep -q "0 jobs in memory (0 unfinished), next id 10001" \
	"$LOGS/sched.log"
check "status counts every job" grep -q "jobs: 0 queued, 0 running, 9400 succeeded, 500 failed, 100 cancelled" \
	"$MNT/status"

# A job that really runs, then leaves memory (keep_finished 5 s).
printf '[job]\nname = real\n[stage a]\ninstances = 2\nrun = echo $PARSA_INDEX > $PARSA_OUT/i-$PARSA_INDEX\n' \
	>"$TEST_DIR/real.conf"
start_ns=$(date +%s%N)
real=$(submit "$TEST_DIR/real.conf") || fail "submit"
check "its id comes after the history's" test "$real" -eq 10001
wait_job "$real" 30 succeeded
usual_ms=$((($(date +%s%N) - start_ns) / 1000000))
log "a job before the restart ran in $usual_ms ms"
# views ID: every view of the job, its stages' and its instances'.
views() {
	local id=$1 f s i
	for f in status status.json events spec why; do
		printf '== %s\n' "$f"
		cat "$MNT/jobs/$id/$f"
	done
	for s in $(ls "$MNT/jobs/$id/stages"); do
		printf '== stage %s\n' "$s"
		cat "$MNT/jobs/$id/stages/$s/status"
		for i in $(ls "$MNT/jobs/$id/stages/$s/instances"); do
			printf '== instance %s\n' "$i"
			cat "$MNT/jobs/$id/stages/$s/instances/$i/status" \
				"$MNT/jobs/$id/stages/$s/instances/$i/status.json"
		done
	done
}
views "$real" >"$TEST_DIR/real.before"
views 5001 >"$TEST_DIR/old.before"
check "an old job reads through the mount" grep -q "^name: history-5001" "$TEST_DIR/old.before"
check "with its stages and instances" grep -q "== instance 1" "$TEST_DIR/old.before"
sleep 7
check "the real job reads the same once it has left memory" diff "$TEST_DIR/real.before" <(views "$real")

stop_daemon sched TERM
start_ns=$(date +%s%N)
start_sched "${sched_flags[@]}"
log "the scheduler answered $((($(date +%s%N) - start_ns) / 1000000)) ms after it was started"
check "after the restart, old jobs read the same" diff "$TEST_DIR/old.before" <(views 5001)
check "so does the real job" diff "$TEST_DIR/real.before" <(views "$real")
wait_for "the runner is back" 20 grep -q "state: up" "$MNT/hosts/local/status"
printf '[stage a]\nrun = true\n' >"$TEST_DIR/quick.conf"
start_ns=$(date +%s%N)
quick=$(submit "$TEST_DIR/quick.conf") || fail "submit after the restart"
wait_job "$quick" 20 succeeded
quick_ms=$((($(date +%s%N) - start_ns) / 1000000))
log "a job submitted right after the restart ran in $quick_ms ms"
check "as fast as before the restart (within 2 s of it)" test "$quick_ms" -le $((usual_ms + 2000))

# jobs/ lists unfinished jobs and those of the last 30 days (list_finished);
# older ids still resolve.
listed=$(ls "$MNT/jobs" | grep -c '^[0-9]')
log "jobs/ lists $listed of 10,002 jobs"
check "jobs/ lists the last 30 days, not the whole year" test "$listed" -gt 700 -a "$listed" -lt 1000
check "an id older than that still resolves" test -d "$MNT/jobs/1"
check "and is not listed" test -z "$(ls "$MNT/jobs" | grep -x 1)"

# Record retention: records older than 180 days go, in small batches.
stop_daemon sched TERM
start_sched "${sched_flags[@]}" --record-retention 180d
gone() { test ! -e "$MNT/jobs/$1/status"; }
# Job 5000 ended about 182 days ago, job 5200 about 175.
wait_for "records older than 180 days are deleted" 60 gone 5000
check "newer ones stay" test -e "$MNT/jobs/5200/status"
check "the real job stays" test -e "$MNT/jobs/$real/status"
left=$(sed -n 's/^jobs: .* \([0-9]*\) succeeded.*/\1/p' "$MNT/status")
log "succeeded jobs left: $left"
check "about half the year is left" test "$left" -gt 4400 -a "$left" -lt 5000
# A moved clock: 200 days on, the real job is old too.
set_clock "+200d"
wait_for "on a moved clock, the real job's records go too" 60 gone "$real"
check "the fair-share usage survives the records" grep -q "team arch: usage" "$MNT/status"
pass "done"
