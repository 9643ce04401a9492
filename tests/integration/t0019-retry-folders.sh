#!/bin/bash
# retry makes a failed job's missing folders again: after `rm -rf out/S` of a
# failed job, `echo retry > ctl` makes out/S again (the submitter's, as at
# submission) before the instance starts, the job's events say so, and the
# instance runs in it and the job succeeds.
. "$(dirname "$0")/../lib/common.sh"
start_all --cpus 4 --cpu-limit 100

# As a user of its own when we are root, so that the owner of the folder made
# again can be checked.
who=()
owner=$(id -un)
if [ "$(id -u)" -eq 0 ]; then
	ensure_user parsa-rita parsa-retry
	who=(as_user parsa-rita)
	owner=parsa-rita
	chmod 755 "$TEST_DIR"
fi

cat >"$TEST_DIR/flaky.conf" <<SPEC
[stage t]
run = test -e "$TEST_DIR/fixed" || exit 3
      echo done > "\$PARSA_OUT/done"
SPEC
"${who[@]}" cp "$TEST_DIR/flaky.conf" "$MNT/queue/flaky.conf" || fail "submit failed"
id=$("${who[@]}" readlink "$MNT/jobs/last") || fail "no jobs/last"
wait_job "$id" 60 failed
pass "the job failed"

"${who[@]}" rm -rf "$MNT/jobs/$id/out/t" || fail "cannot remove out/t"
check "out/t is gone" test ! -e "$MNT/jobs/$id/out/t"
touch "$TEST_DIR/fixed"
"${who[@]}" sh -c "echo retry > '$MNT/jobs/$id/ctl'" || fail "retry failed"
wait_job "$id" 60 succeeded
pass "after the retry the job succeeded"
check "its instance ran in out/t made again" grep -q done "$MNT/jobs/$id/out/t/done"
check "out/t made again is the submitter's" test "$(stat -c %U "$STORAGE/jobs/$id/out/t")" = "$owner"
check "the events say it was made again" grep -q 'missing folders made again: out/t' \
	"$MNT/jobs/$id/events"
