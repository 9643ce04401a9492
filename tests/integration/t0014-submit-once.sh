#!/bin/bash
# A submission is answered once and truly (issue 15, item 2): the same token
# twice is one job; an answer lost while the scheduler is stopped is asked for
# again and gives the one job; nothing listening fails with nothing
# submitted, and a request written on a kept-alive connection that died is
# never answered so (issue 35, item 4); and a reduced kill soak (bench/submit-soak: cp and .clone loops
# while the scheduler is SIGKILLed and started again) ends with no failed
# submission committed, no acknowledged one missing and no duplicate.
. "$(dirname "$0")/../lib/common.sh"
start_sched
start_fs

api() { curl -s --max-time 10 --unix-socket "$SOCK" "$@"; }
jobs_named() { api http://localhost/v1/jobs | jq --arg n "$1" '[.jobs[] | select(.name == $n)] | length'; }
spec() { printf '[job]\nname = %s\n[stage s]\nrun = true\n' "$1"; }

# The API: a token already committed answers 200 with the same job.
body=$(spec api-once | jq -Rs '{name: "a.conf", spec: ., token: "t0014-0123abcd"}')
out1=$(api -w ' %{http_code}' -X POST --data "$body" http://localhost/v1/jobs)
out2=$(api -w ' %{http_code}' -X POST --data "$body" http://localhost/v1/jobs)
[ "${out1##* }" = 201 ] || fail "first submission with a token: ${out1}"
[ "${out2##* }" = 200 ] || fail "the same token again is not 200: ${out2}"
id1=$(printf '%s' "${out1% *}" | jq .id)
id2=$(printf '%s' "${out2% *}" | jq .id)
check "the same token gives the same id ($id1, $id2)" [ "$id1" = "$id2" ]
check "and one job" [ "$(jobs_named api-once)" = 1 ]
bad=$(spec api-bad | jq -Rs '{name: "b.conf", spec: ., token: "no spaces"}')
check "a malformed token is refused" \
	[ "$(api -o /dev/null -w '%{http_code}' -X POST --data "$bad" http://localhost/v1/jobs)" = 400 ]
check "and commits nothing" [ "$(jobs_named api-bad)" = 0 ]

# A lost answer: the scheduler is stopped while it holds the request, the
# mount's attempt times out (5 s) and it asks again with the same token; once
# the scheduler goes on it commits the first request and answers the second
# with that job. Without the token this made two jobs.
spec lost-answer >"$TEST_DIR/lost.conf"
kill -STOP "${DAEMON_PID[sched]}"
start_ns=$(date +%s%N)
cp "$TEST_DIR/lost.conf" "$MNT/queue/lost.conf" 2>"$TEST_DIR/lost.err" &
cp_pid=$!
sleep 7
kill -CONT "${DAEMON_PID[sched]}"
timeout 40 tail --pid="$cp_pid" -f /dev/null || fail "cp did not end within 40 s of the scheduler going on"
wait "$cp_pid" || fail "cp of a spec whose answer was lost failed: $(cat "$TEST_DIR/lost.err")"
ms=$((($(date +%s%N) - start_ns) / 1000000))
check "the lost answer was asked for again (${ms} ms > 5000)" [ "$ms" -gt 5000 ]
check "the lost answer's submission is one job" [ "$(jobs_named lost-answer)" = 1 ]
check "and jobs/last names it" [ "$(readlink "$MNT/jobs/last")" = \
	"$(api http://localhost/v1/jobs | jq '[.jobs[] | select(.name == "lost-answer")][0].id')" ]

# Nothing listening: after the grace for a restart, ENOTCONN and nothing.
stop_daemon sched KILL
spec while-down >"$TEST_DIR/down.conf"
start_ns=$(date +%s%N)
cp "$TEST_DIR/down.conf" "$MNT/queue/down.conf" 2>"$TEST_DIR/down.err" && fail "a submission with no scheduler succeeded"
ms=$((($(date +%s%N) - start_ns) / 1000000))
check "with no scheduler cp fails with ENOTCONN" grep -q 'not connected' "$TEST_DIR/down.err"
check "after the grace for a restart, not 30 s (${ms} ms)" [ "$ms" -lt 10000 ]
check "down.conf.rejected says nothing was submitted" grep -q 'nothing was submitted' "$MNT/queue/down.conf.rejected"
rm -f "$MNT/queue/down.conf.rejected"
parsa submit "$TEST_DIR/down.conf" 2>"$TEST_DIR/cli-down.err" && fail "parsa submit with no scheduler succeeded"
check "parsa submit with no scheduler says nothing was submitted" grep -q 'nothing was submitted' "$TEST_DIR/cli-down.err"
start_sched
check "and nothing was" [ "$(jobs_named while-down)" = 0 ]

# A scheduler started again within the grace takes the submission.
stop_daemon sched KILL
cp "$TEST_DIR/down.conf" "$MNT/queue/back.conf" 2>"$TEST_DIR/back.err" &
cp_pid=$!
sleep 0.3
start_sched
wait "$cp_pid" || fail "cp while the scheduler was starting again failed: $(cat "$TEST_DIR/back.err")"
check "a scheduler back within the grace gets the submission once" [ "$(jobs_named while-down)" = 1 ]

# A lost answer on a warm connection (issue 35, item 4): the mount's
# connection to the scheduler is kept alive by earlier calls; the scheduler
# is killed right after it logs the commit, while it makes the job's folders
# on a slow volume, and stays down for more than the 5 s grace. libcurl sends
# the request again on a fresh connection, which is refused: that must not
# read as "nothing listened, nothing was submitted". The mount keeps asking
# with the same token and gets the one job once the scheduler is back.
# One FUSE worker thread (-s), so the submissions before go through the very
# client (one per thread, fs/sched_link.c) and connection the cp uses.
stop_daemon sched
start_sched --storage "fault:delay_ms=400:$STORAGE"
stop_daemon fs
wait_for "unmounted" 20 sh -c "! mountpoint -q '$MNT'"
parsafs "$MNT" --sched "unix:$SOCK" --storage "$STORAGE" -f -s >>"$LOGS/fs.log" 2>&1 &
DAEMON_PID[fs]=$!
wait_for "mount is up" 20 is_mounted "$MNT"
wait_for "mount answers" 20 test -e "$MNT/status"
spec warm-lost >"$TEST_DIR/warm.conf"
for i in 1 2 3; do
	spec "warm-$i" >"$TEST_DIR/warm-$i.conf"
	cp "$TEST_DIR/warm-$i.conf" "$MNT/queue/warm-$i.conf" || fail "warming cp $i failed"
done
sched_pid=${DAEMON_PID[sched]}
unset "DAEMON_PID[sched]"
(
	for i in $(seq 1 3000); do
		# The socket file goes first, so that libcurl's fresh connect is
		# refused for sure: a dying process closes its listening socket
		# and its connections in an order that varies.
		grep -q 'job [0-9]* (warm-lost) submitted' "$LOGS/sched.log" &&
			rm -f "$SOCK" && exec kill -KILL "$sched_pid"
		sleep 0.01
	done
	exit 1
) &
killer=$!
sleep 0.2
start_ns=$(date +%s%N)
cp "$TEST_DIR/warm.conf" "$MNT/queue/warm.conf" 2>"$TEST_DIR/warm.err" &
cp_pid=$!
timeout 30 tail --pid="$killer" -f /dev/null || fail "the scheduler did not log warm-lost's commit"
wait "$killer" || fail "the scheduler was not killed after it logged warm-lost's commit"
wait "$sched_pid" 2>/dev/null || true
killed_ms=$((($(date +%s%N) - start_ns) / 1000000))
# Down past the grace in which a refused submission gives up.
while [ $((($(date +%s%N) - start_ns) / 1000000 - killed_ms)) -lt 6500 ]; do
	kill -0 "$cp_pid" 2>/dev/null || break
	sleep 0.1
done
# The one answer that may not be given while the job exists.
never_nothing() {
	! grep -q 'nothing was submitted' "$TEST_DIR/warm.err" "$MNT/queue/warm.conf.rejected" 2>/dev/null ||
		fail "a submission the scheduler committed was answered 'nothing was submitted':" \
			"$(cat "$TEST_DIR/warm.err" "$MNT/queue/warm.conf.rejected" 2>/dev/null)"
}
if ! kill -0 "$cp_pid" 2>/dev/null; then
	wait "$cp_pid"
	never_nothing
	fail "cp gave up before the scheduler was back: $(cat "$TEST_DIR/warm.err")"
fi
pass "cp still waits for an answer 6.5 s after the scheduler died"
start_sched
timeout 40 tail --pid="$cp_pid" -f /dev/null || fail "cp did not end within 40 s of the scheduler's return"
if ! wait "$cp_pid"; then
	never_nothing
	fail "cp of a submission whose warm connection died failed: $(cat "$TEST_DIR/warm.err")"
fi
check "a submission committed before the scheduler died is one job" [ "$(jobs_named warm-lost)" = 1 ]
check "and cp's answer names it (jobs/last)" [ "$(readlink "$MNT/jobs/last")" = \
	"$(api http://localhost/v1/jobs | jq '[.jobs[] | select(.name == "warm-lost")][0].id')" ]
check "and no .rejected was left" [ ! -e "$MNT/queue/warm.conf.rejected" ]
stop_daemon fs
stop_daemon sched

# The reduced soak.
PARSA_BIN=$PARSA_BIN timeout 240 bash "$PARSA_SRC/bench/submit-soak" --submissions 2000 --kills 10 \
	--loops 4 >"$TEST_DIR/soak.out" 2>&1 || { sed 's/^/#   /' "$TEST_DIR/soak.out"; fail "the soak failed"; }
sed 's/^/# /' "$TEST_DIR/soak.out"
val() { sed -n "s/^$1: //p" "$TEST_DIR/soak.out"; }
check "soak: 2000 submissions" [ "$(val submissions)" = 2000 ]
check "soak: 10 kills" [ "$(val kills)" = 10 ]
check "soak: most were acknowledged" [ "$(val acknowledged)" -ge 1800 ]
for k in failed_but_committed acknowledged_but_missing wrong_id duplicates; do
	check "soak: $k is 0" [ "$(val "$k")" = 0 ]
done
