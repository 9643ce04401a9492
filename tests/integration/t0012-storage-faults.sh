#!/bin/bash
# The volume fails the scheduler while it makes a job's folders (the
# fault-injecting backend, storage/backend_fault.c): EIO on every job folder,
# then ENOSPC on the second stage's folder only, after the first one was
# made. A job's folders are made by mkdir or by renaming spare folders into
# place (sched/engine/spare_folders.h): the faults are set on both. Either way the submission (cp into queue/) fails with that error,
# nothing is half-made (no job in jobs/, no folder left on the volume) and the
# scheduler keeps running; with a healthy volume again submissions work.
. "$(dirname "$0")/../lib/common.sh"
need_root
# expect, soft_fail and end_checks: each finding is reported, and the test
# fails at the end if any was wrong, so that one run says all that is wrong.
. "$(dirname "$0")/../lib/fscheck.sh"

# What a failed submission may not leave: a job in jobs/ or a folder on the
# volume that was not there before it (a part's earlier jobs stay).
numeric_jobs() { ls "$MNT/jobs" | grep -E '^[0-9]+$' | sort || true; }
volume_jobs() { (cd "$STORAGE" && find jobs -mindepth 1 2>/dev/null | sort); }
remember() { jobs_before=$(numeric_jobs); volume_before=$(volume_jobs); }
new_jobs() { comm -13 <(echo "$jobs_before") <(numeric_jobs) | tr '\n' ' '; }
new_folders() { comm -13 <(echo "$volume_before") <(volume_jobs) | tr '\n' ' '; }
no_new_job() { test -z "$(new_jobs | tr -d ' ')"; }
no_new_folder() { test -z "$(new_folders | tr -d ' ')"; }
sched_answers() { curl -sf --unix-socket "$SOCK" -o /dev/null http://localhost/v1/status; }
# The spare folders are ready, so that the renames are tried too.
spares_ready() {
	curl -sf --unix-socket "$SOCK" http://localhost/v1/stats |
		python3 -c 'import json, sys; s = json.load(sys.stdin)["spare_folders"]; sys.exit(not (s["jobs_ready"] and s["stages_ready"]))'
}

# submit_fails NAME SPEC ERRTEXT: cp SPEC to queue/NAME must fail with ERRTEXT.
submit_fails() {
	local name=$1 spec=$2 want=$3 err
	if err=$(cp "$spec" "$MNT/queue/$name" 2>&1); then
		soft_fail "cp of $name succeeded: the volume failed, the submission should have" \
			"(jobs/last -> $(readlink "$MNT/jobs/last" 2>/dev/null))"
		return
	fi
	log "cp of $name: $err"
	expect "cp of $name fails with '$want'" grep -q "$want" <<<"$err"
}

cat >"$TEST_DIR/one.conf" <<'SPEC'
[stage s]
run = true
SPEC
cat >"$TEST_DIR/two.conf" <<'SPEC'
[stage a]
run = true

[stage b]
after = a
run = true
SPEC

# 1. EIO for every job folder (jobs/ itself is made at start: path=jobs/*).
start_sched --storage "fault:eio=mkdir+rename,path=jobs/*:$STORAGE"
start_fs
start_runner local --cpus 2 --cpu-limit 100
wait_for "spare folders are ready" 20 spares_ready
remember
submit_fails one.conf "$TEST_DIR/one.conf" "Input/output error"
expect "EIO: no new job in jobs/ (new: $(new_jobs))" no_new_job
expect "EIO: no new folder on the volume (new: $(new_folders))" no_new_folder
expect "EIO: the scheduler keeps running" daemon_alive sched
expect "EIO: the scheduler answers" sched_answers

# 2. ENOSPC for the second stage's folder: jobs/N/out/a is made first.
stop_daemon sched
start_sched --storage "fault:enospc=mkdir+rename,path=jobs/*/out/b:$STORAGE"
wait_for "spare folders are ready" 20 spares_ready
remember
submit_fails two.conf "$TEST_DIR/two.conf" "No space left on device"
expect "ENOSPC: no new job in jobs/ (new: $(new_jobs))" no_new_job
expect "ENOSPC: no folder left on the volume (new: $(new_folders))" no_new_folder
expect "ENOSPC: the scheduler keeps running" daemon_alive sched
expect "ENOSPC: the scheduler answers" sched_answers

# 3. A healthy volume again: the next submission works.
stop_daemon sched
start_sched
wait_for "spare folders are ready" 20 spares_ready
id=$(submit "$TEST_DIR/two.conf") || fail "submit on a healthy volume failed"
wait_job "$id" 30 succeeded
pass "with a healthy volume a submission works again (job $id)"
taken=$(curl -sf --unix-socket "$SOCK" http://localhost/v1/stats |
	python3 -c 'import json, sys; s = json.load(sys.stdin)["spare_folders"]; print(s["jobs_taken"], s["stages_taken"])')
expect "its folders were spares renamed into place (job, stages taken: $taken)" test "$taken" = "1 2"
expect "they are in jobs/$id" test -d "$STORAGE/jobs/$id/out/a" -a -d "$STORAGE/jobs/$id/out/b"

end_checks
