#!/bin/bash
# [job] notify: exec:/path runs as the job's owner on the head node with the
# final status on stdin; mail:user@host goes through sendmail (here a stand-in
# given with parsa-sched --sendmail); a notification that fails is logged and
# written to the job's events, and the job is not affected.
. "$(dirname "$0")/../lib/common.sh"
need_root
ensure_user parsa-carol parsa-notify
on_cleanup "userdel parsa-carol; groupdel parsa-notify"
mkdir -m 1777 "$TEST_DIR/notified"
# Each writes a temporary file and renames it: the test reads it whole.
cat >"$TEST_DIR/tell.sh" <<SCRIPT
#!/bin/sh
{ id -u; echo "job \$PARSA_JOB \$PARSA_JOB_STATE"; cat; } >"$TEST_DIR/notified/.\$PARSA_JOB"
mv "$TEST_DIR/notified/.\$PARSA_JOB" "$TEST_DIR/notified/\$PARSA_JOB"
SCRIPT
cat >"$TEST_DIR/sendmail" <<SCRIPT
#!/bin/sh
{ echo "args: \$*"; id -u; cat; } >"$TEST_DIR/notified/.mail-\$PARSA_JOB"
mv "$TEST_DIR/notified/.mail-\$PARSA_JOB" "$TEST_DIR/notified/mail-\$PARSA_JOB"
SCRIPT
chmod 755 "$TEST_DIR/tell.sh" "$TEST_DIR/sendmail"
start_sched --sendmail "$TEST_DIR/sendmail"
start_fs
start_runner local --cpus 2 --cpu-limit 100

carol=$(id -u parsa-carol)
cat >"$TEST_DIR/told.conf" <<SPEC
[job]
notify = exec:$TEST_DIR/tell.sh | mail:carol@example.org | exec:/nonexistent/tell

[stage a]
run = true
SPEC
chmod 644 "$TEST_DIR/told.conf"
as_user parsa-carol cp "$TEST_DIR/told.conf" "$MNT/queue/" || fail "carol cannot submit"
id=$(as_user parsa-carol readlink "$MNT/jobs/last") || fail "no jobs/last for carol"
wait_job "$id" 20 succeeded
wait_for "the program was run" 20 test -s "$TEST_DIR/notified/$id"
check "it ran as the job's owner" test "$(head -1 "$TEST_DIR/notified/$id")" = "$carol"
check "it knows the job and its state" grep -q "^job $id succeeded" "$TEST_DIR/notified/$id"
check "its stdin is the final status" grep -q '^state: succeeded' "$TEST_DIR/notified/$id"
wait_for "the mail went to sendmail" 20 test -s "$TEST_DIR/notified/mail-$id"
check "sendmail got the address" grep -q '^args: -i -- carol@example.org' "$TEST_DIR/notified/mail-$id"
check "sendmail ran as the owner" grep -qx "$carol" "$TEST_DIR/notified/mail-$id"
check "the mail says what ended" grep -q "^Subject: parsa: job $id (told) succeeded" "$TEST_DIR/notified/mail-$id"
wait_for "a failed notification is logged" 20 \
	grep -q "job $id: notify exec:/nonexistent/tell failed (the job is not affected)" "$LOGS/sched.log"
check "the job is still a success" job_is "$id" succeeded
wait_for "the job's events tell its owner" 20 \
	grep -q "notification exec:/nonexistent/tell failed: exit code 127" "$MNT/jobs/$id/events"

sed 's/^run = true/run = exit 3/' "$TEST_DIR/told.conf" >"$TEST_DIR/broken.conf"
chmod 644 "$TEST_DIR/broken.conf"
as_user parsa-carol cp "$TEST_DIR/broken.conf" "$MNT/queue/" || fail "carol cannot submit"
id=$(as_user parsa-carol readlink "$MNT/jobs/last")
wait_job "$id" 20 failed
wait_for "a failed job is told too" 20 test -s "$TEST_DIR/notified/$id"
check "with its state" grep -q '^state: failed' "$TEST_DIR/notified/$id"
