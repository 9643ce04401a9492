#!/bin/bash
# parsa admin backup under load: while two clients submit jobs as fast as the
# scheduler acknowledges them and a runner runs them, a backup is taken; then
# the scheduler is stopped, the database restored from the backup (refused
# while the scheduler runs), and the restarted scheduler has every job that
# was acknowledged before the backup began, and none of the later ones.
. "$(dirname "$0")/../lib/common.sh"
start_all --cpus 2 --cpu-limit 100

cat >"$TEST_DIR/small.conf" <<'SPEC'
[stage s]
run = true
SPEC

# submitter N: submit until told to stop; one acknowledged id per line.
submitter() {
	while [ ! -e "$TEST_DIR/stop" ]; do
		id=$(parsa submit "$TEST_DIR/small.conf" 2>>"$TEST_DIR/submit-$1.err") || continue
		echo "$id" >>"$TEST_DIR/acked-$1"
	done
}
submitter 1 &
sub1=$!
submitter 2 &
sub2=$!
on_cleanup "touch '$TEST_DIR/stop'; kill $sub1 $sub2 2>/dev/null"
wait_for "submissions under way" 20 sh -c "[ \$(cat '$TEST_DIR'/acked-* 2>/dev/null | wc -l) -ge 100 ]"

# Acknowledged before the backup begins: whole lines only.
cat "$TEST_DIR"/acked-* | grep -E '^[0-9]+$' | sort -n >"$TEST_DIR/before"
start_ns=$(date +%s%N)
out=$(parsa admin backup --state "$STATE" "$TEST_DIR/backup.db" 2>&1) || fail "parsa admin backup: $out"
backup_ms=$((($(date +%s%N) - start_ns) / 1000000))
pass "backup under load in $backup_ms ms: $out"
sleep 0.5 # more submissions after the backup
touch "$TEST_DIR/stop"
wait "$sub1" "$sub2"
cat "$TEST_DIR"/acked-* | grep -E '^[0-9]+$' | sort -n >"$TEST_DIR/all"
after=$(comm -13 "$TEST_DIR/before" "$TEST_DIR/all" | wc -l)
log "$(wc -l <"$TEST_DIR/before") jobs acknowledged before the backup, $after after it began"
[ "$after" -gt 0 ] || fail "no submission was acknowledged during or after the backup: not under load"
check "the backup is one file, not in WAL mode" test ! -e "$TEST_DIR/backup.db-wal"

if out=$(parsa admin restore --state "$STATE" "$TEST_DIR/backup.db" 2>&1); then
	fail "restore with the scheduler running was accepted: $out"
fi
case $out in *"stop it first"*) ;; *) fail "restore while running: unexpected message: $out" ;; esac
pass "restore is refused while the scheduler runs: $out"

stop_daemon runner-local
stop_daemon sched
out=$(parsa admin restore --state "$STATE" "$TEST_DIR/backup.db" 2>&1) || fail "parsa admin restore: $out"
pass "restore: $out"
check "the replaced database is kept" test -e "$STATE/parsa.db.before-restore"
check "and the message says so" grep -q "the one it replaced is parsa.db.before-restore" <<<"$out"
check "no stale -wal beside the restored database" test ! -e "$STATE/parsa.db-wal"

start_sched
curl -sf --unix-socket "$SOCK" http://localhost/v1/jobs >"$TEST_DIR/jobs.json" || fail "GET /v1/jobs after the restore"
python3 - "$TEST_DIR/jobs.json" "$TEST_DIR/before" "$TEST_DIR/all" <<'PY' || fail "the restored jobs"
import json, sys
jobs = {j["id"] for j in json.load(open(sys.argv[1]))["jobs"]}
before = {int(l) for l in open(sys.argv[2]) if l.strip()}
every = {int(l) for l in open(sys.argv[3]) if l.strip()}
missing = sorted(before - jobs)
if missing:
    sys.exit(f"acknowledged before the backup but not restored: {missing[:10]}")
later = sorted(i for i in every - before if i in jobs)
beyond = sorted((every - before) - jobs)
if not beyond:
    sys.exit("every later job is there too: the restore replaced nothing")
print(f"# restored {len(jobs)} jobs: all {len(before)} acknowledged before the backup; "
      f"{len(later)} acknowledged while it ran; {len(beyond)} later ones are gone")
PY
pass "every job acknowledged before the backup is there after the restore"

# The restored scheduler goes on: a new job runs.
start_runner local2 --cpus 2 --cpu-limit 100
id=$(submit "$TEST_DIR/small.conf") || fail "submit after the restore"
wait_job "$id" 60
pass "a job submitted after the restore runs (job $id)"

# Into an empty folder (a new head node): nothing was replaced, and it says so.
mkdir -p "$TEST_DIR/fresh-state"
out=$(parsa admin restore --state "$TEST_DIR/fresh-state" "$TEST_DIR/backup.db" 2>&1) ||
	fail "restore into an empty folder: $out"
case $out in *"there was no database to replace"*) ;; *) fail "restore into an empty folder says: $out" ;; esac
check "nothing set aside in the empty folder" test ! -e "$TEST_DIR/fresh-state/parsa.db.before-restore"
pass "restore into an empty folder: $out"
