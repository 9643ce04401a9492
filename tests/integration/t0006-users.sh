#!/bin/bash
# Stages run as the user who submitted them, never as root for anyone else;
# output folders and logs belong to that user; only the owner (or root) controls
# a job; jobs/last is per user.
. "$(dirname "$0")/../lib/common.sh"
need_root
ensure_user parsa-alice parsa-arch
ensure_user parsa-bob parsa-sys
on_cleanup "userdel parsa-alice; userdel parsa-bob; groupdel parsa-arch; groupdel parsa-sys"
start_all --cpus 4 --cpu-limit 100

alice_uid=$(id -u parsa-alice)
bob_uid=$(id -u parsa-bob)
cat >"$TEST_DIR/who.conf" <<'SPEC'
[stage who]
run = id -u > "$PARSA_OUT/uid"
      id -g > "$PARSA_OUT/gid"
      touch "$PARSA_OUT/made-by-stage"
      echo "hello from the stage"
SPEC
chmod 644 "$TEST_DIR/who.conf"

as_user parsa-alice cp "$TEST_DIR/who.conf" "$MNT/queue/who.conf" || fail "alice cannot submit"
id=$(as_user parsa-alice readlink "$MNT/jobs/last") || fail "alice has no jobs/last"
pass "alice submitted job $id"
wait_job "$id" 30 succeeded
check "the stage ran as alice" test "$(cat "$MNT/jobs/$id/out/who/uid")" = "$alice_uid"
check "the stage ran with alice's group" test "$(cat "$MNT/jobs/$id/out/who/gid")" = "$(id -g parsa-alice)"
check "files the stage made belong to alice" test "$(stat -c %u "$MNT/jobs/$id/out/who/made-by-stage")" = "$alice_uid"
check "the output folder belongs to alice" test "$(stat -c %u "$MNT/jobs/$id/out/who")" = "$alice_uid"
check "the job folder belongs to alice" test "$(stat -c %u "$MNT/jobs/$id")" = "$alice_uid"
check "the log holds the stage's output" grep -q 'hello from the stage' "$MNT/jobs/$id/stages/who/instances/0/log"
check "the log belongs to alice" test "$(stat -c %u "$STORAGE/jobs/$id/log/who/0.log")" = "$alice_uid"
check "the team defaults to alice's group" grep -q '^team: parsa-arch' "$MNT/jobs/$id/status"

# bob: sees alice's job, cannot control it, has his own jobs/last.
cat >"$TEST_DIR/wait.conf" <<'SPEC'
[stage wait]
run = sleep 60
SPEC
chmod 644 "$TEST_DIR/wait.conf"
as_user parsa-alice cp "$TEST_DIR/wait.conf" "$MNT/queue/wait.conf" || fail "alice cannot submit"
id2=$(as_user parsa-alice readlink "$MNT/jobs/last")
check "bob can read alice's status" as_user parsa-bob cat "$MNT/jobs/$id2/status"
for cmd in cancel hold "priority 5"; do
	if as_user parsa-bob sh -c "echo '$cmd' > '$MNT/jobs/$id2/ctl'" 2>/dev/null; then
		fail "bob could '$cmd' alice's job"
	fi
done
pass "bob cannot cancel, hold or reprioritise alice's job"
check "alice's job was not touched" sh -c "! grep -q '^state: cancelled' '$MNT/jobs/$id2/status'"
if as_user parsa-bob readlink "$MNT/jobs/last" >/dev/null 2>&1; then
	fail "bob has a jobs/last without having submitted"
fi
pass "jobs/last is per user"
as_user parsa-bob cp "$TEST_DIR/who.conf" "$MNT/queue/who.conf" || fail "bob cannot submit"
id3=$(as_user parsa-bob readlink "$MNT/jobs/last")
check "bob's jobs/last is his job" test "$id3" != "$id2"
wait_job "$id3" 30 succeeded
check "bob's stage ran as bob" test "$(cat "$MNT/jobs/$id3/out/who/uid")" = "$bob_uid"
if as_user parsa-bob touch "$MNT/jobs/$id/out/who/bob-was-here" 2>/dev/null; then
	fail "bob wrote into alice's output folder"
fi
pass "bob cannot write into alice's output"

# A student's spec never becomes a root shell.
check "nothing alice ran ran as root" sh -c "[ \$(cat '$MNT/jobs/$id/out/who/uid') -ne 0 ]"

echo cancel >"$MNT/jobs/$id2/ctl" || fail "root cannot cancel alice's job"
wait_job "$id2" 20 cancelled
pass "root can cancel anyone's job"

# Students share queue/ and file names: a refusal is each user's own.
printf '[stage s]\nrun = true\ncpu = 1\n' >"$TEST_DIR/job.conf"
chmod 644 "$TEST_DIR/job.conf"
as_user parsa-alice cp "$TEST_DIR/job.conf" "$MNT/queue/job.conf" 2>/dev/null && fail "alice's bad spec was accepted"
check "alice has her job.conf.rejected" as_user parsa-alice grep -q "cpu" "$MNT/queue/job.conf.rejected"
as_user parsa-bob cp "$TEST_DIR/who.conf" "$MNT/queue/job.conf" || fail "bob cannot submit job.conf"
check "bob's accepted job.conf leaves alice's report alone" as_user parsa-alice grep -q "cpu" "$MNT/queue/job.conf.rejected"
if as_user parsa-bob rm "$MNT/queue/job.conf.rejected" 2>/dev/null; then fail "bob removed alice's report"; fi
check "alice removes her report" as_user parsa-alice rm "$MNT/queue/job.conf.rejected"
