#!/bin/bash
# A submission is answered once and truly (issue 15, item 2): the same token
# twice is one job; an answer lost while the scheduler is stopped is asked for
# again and gives the one job; nothing listening fails with nothing
# submitted; and a reduced kill soak (bench/submit-soak: cp and .clone loops
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
