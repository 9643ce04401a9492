#!/bin/bash
# Daemons started by hand say where their log goes: --log-file PATH on
# parsa-sched, parsafs and parsa-runner appends there (0640) instead of
# stderr, a job's life shows in the three files, and a log file that cannot
# be opened stops the daemon at once with the path and the reason.
. "$(dirname "$0")/../lib/common.sh"

own=$TEST_DIR/own-logs
mkdir -p "$own"
start_sched --log-file "$own/sched.log"
FS_FLAGS="--log-file $own/fs.log" start_fs
start_runner local --log-file "$own/runner.log"

printf '[stage a]\nrun = echo hi > "$PARSA_OUT/hi"\n' >"$TEST_DIR/hi.conf"
id=$(submit "$TEST_DIR/hi.conf") || fail "submit failed"
wait_job "$id" 30 succeeded

check "the scheduler's log is in its --log-file" grep -q "parsa-sched: listening on $SOCK" "$own/sched.log"
check "with the job's submission" grep -q "parsa-sched: job $id (hi) submitted" "$own/sched.log"
check "the mount's log is in its --log-file" grep -q "parsafs: mounted $MNT" "$own/fs.log"
check "the runner's log is in its --log-file" grep -q "parsa-runner: registered host local" "$own/runner.log"
check "with the instance's start and end" grep -q "job $id stage a index 0 (instance [0-9]*) exited with 0" "$own/runner.log"
check "nothing of it on the scheduler's stderr" test ! -s "$LOGS/sched.log"
check "nothing of it on the runner's stderr" test ! -s "$LOGS/runner-local.log"
check "the log files are 0640" test "$(stat -c %a "$own/sched.log")" = 640
check "a new database says so, not that it was upgraded" grep -q "a new database, schema version [0-9]*$" "$own/sched.log"
check "no migration step is logged for it" sh -c "! grep -q 'schema version [0-9]* -> ' '$own/sched.log'"

out=$(timeout 20 parsa-sched --state "$TEST_DIR/other-state" --log-file "$TEST_DIR/no/such/dir/s.log" 2>&1)
rc=$?
check "parsa-sched stops with 2 on a log file it cannot open" test "$rc" -eq 2
check "and names it and why" grep -q "parsa-sched: --log-file: cannot open the log file $TEST_DIR/no/such/dir/s.log: No such file or directory" <<<"$out"
out=$(timeout 20 parsa-runner --sched "unix:$SOCK" --name other --state "$TEST_DIR/other-runner" \
	--log-file "$TEST_DIR/no/such/dir/r.log" 2>&1)
rc=$?
check "parsa-runner stops on a log file it cannot open" test "$rc" -ne 0 -a "$rc" -ne 124
check "and names it" grep -q "parsa-runner: --log-file: cannot open the log file $TEST_DIR/no/such/dir/r.log" <<<"$out"
check "no host 'other' registered" test ! -e "$MNT/hosts/other"
pass "--log-file puts each daemon's log where it says"
