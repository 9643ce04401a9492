#!/bin/bash
# Teams and limits (issue 15 items 5 and 6): a user may name only a team that
# is one of their groups or that [teams] of parsa.conf grants them, else the
# spec is refused with the teams they may use; [limits] refuse a spec over
# instances_per_job or queued_jobs with the limit and the line that sets it,
# also at foreach expansion; and two users writing the same queue/ name at
# once each get their own job.
. "$(dirname "$0")/../lib/common.sh"
need_root
A=parsa-t16a B=parsa-t16b GA=parsa-t16ga GB=parsa-t16gb
ensure_user $A $GA
ensure_user $B $GB
on_cleanup "userdel $A; userdel $B; groupdel $GA; groupdel $GB"

CONF=$TEST_DIR/parsa.conf
cat >"$CONF" <<CONF
[teams]
$A = vlsi

[limits]
instances_per_job = 50
user.$B.queued_jobs = 1
CONF
chmod 644 "$CONF"
start_sched --config "$CONF"
start_fs
start_runner local --cpus 4 --cpu-limit 100

spec() { # spec FILE TEAM INSTANCES RUN
	{
		[ -n "$2" ] && printf '[job]\nteam = %s\n\n' "$2"
		printf '[stage a]\ninstances = %s\nrun = %s\n' "$3" "$4"
	} >"$TEST_DIR/$1"
	chmod 644 "$TEST_DIR/$1"
}

# -- teams
spec other.conf "$GB" 1 true
if err=$(as_user $A cp "$TEST_DIR/other.conf" "$MNT/queue/other.conf" 2>&1); then
	fail "$A could account a job to $GB"
fi
case $err in
*"Permission denied"*) pass "a team that is not theirs is refused (EACCES)" ;;
*) fail "unexpected error: $err" ;;
esac
check "the refusal lists the teams they may use" grep -q \
	"^other.conf:2: team = $GB: $A may use the teams $GA, vlsi (their groups and \[teams\])" \
	"$MNT/queue/other.conf.rejected"
spec vlsi.conf vlsi 1 true
as_user $A cp "$TEST_DIR/vlsi.conf" "$MNT/queue/vlsi.conf" || fail "the team [teams] grants was refused"
id=$(as_user $A readlink "$MNT/jobs/last")
check "the job is accounted to the granted team" grep -qx 'team: vlsi' "$MNT/jobs/$id/status"
wait_job "$id" 30 succeeded
if as_user $B cp "$TEST_DIR/vlsi.conf" "$MNT/queue/vlsi.conf" 2>/dev/null; then
	fail "$B used $A's granted team"
fi
pass "the grant is $A's only"
id=$(submit "$TEST_DIR/other.conf") || fail "root could not name $GB"
check "root may use any team" grep -qx "team: $GB" "$MNT/jobs/$id/status"
wait_job "$id" 30 succeeded

# -- instances_per_job, at the mount, at the CLI, and at foreach expansion
spec big.conf "" 51 true
if err=$(as_user $A cp "$TEST_DIR/big.conf" "$MNT/queue/big.conf" 2>&1); then
	fail "51 instances passed instances_per_job = 50"
fi
case $err in
*"quota exceeded"*) pass "over instances_per_job: EDQUOT" ;;
*) fail "unexpected error: $err" ;;
esac
check "the refusal names the limit and where it is set" grep -qF \
	"big.conf: 51 instances in one job of user $A, more than instances_per_job = 50 (instances_per_job in [limits] of $CONF:5)" \
	"$MNT/queue/big.conf.rejected"
if out=$(as_user $A parsa submit --sched "unix:$SOCK" "$TEST_DIR/big.conf" 2>&1); then
	fail "parsa submit took 51 instances"
fi
check "parsa submit prints the limit" sh -c "printf '%s' \"\$1\" | grep -qF 'instances_per_job = 50'" _ "$out"
spec fifty.conf "" 50 true
as_user $A cp "$TEST_DIR/fifty.conf" "$MNT/queue/fifty.conf" || fail "50 instances were refused"
wait_job "$(as_user $A readlink "$MNT/jobs/last")" 60 succeeded
id=$(submit "$TEST_DIR/big.conf") || fail "root was held to the default instances_per_job"
pass "root has no default limits"
wait_job "$id" 60 succeeded
cat >"$TEST_DIR/fan.conf" <<'SPEC'
[stage make]
run = for i in $(seq 1 60); do touch "$PARSA_OUT/f$i"; done

[stage use]
after = make
foreach = make/*
run = true
SPEC
chmod 644 "$TEST_DIR/fan.conf"
as_user $A cp "$TEST_DIR/fan.conf" "$MNT/queue/fan.conf" ||
	fail "fan.conf refused at submission (its instances are not known yet)"
id=$(as_user $A readlink "$MNT/jobs/last")
wait_job "$id" 60 failed
check "the foreach stage fails with the limit" grep -q \
	"^reason: stage use: foreach = make/\* matched 60 entries: .*more than instances_per_job = 50" \
	"$MNT/jobs/$id/status"
check "and made no instance" test "$(sed -n 's/^instances: //p' "$MNT/jobs/$id/stages/use/status")" = 0

# -- queued_jobs for one user: B may hold one unfinished job.
spec sleep.conf "" 1 "sleep 60"
as_user $B cp "$TEST_DIR/sleep.conf" "$MNT/queue/sleep.conf" || fail "$B's first job was refused"
first=$(as_user $B readlink "$MNT/jobs/last")
if err=$(as_user $B cp "$TEST_DIR/sleep.conf" "$MNT/queue/sleep.conf" 2>&1); then
	fail "$B's second job passed queued_jobs = 1"
fi
check "the refusal names user.$B.queued_jobs and its line" grep -qF \
	"user $B has 1 unfinished jobs, and queued_jobs = 1 (user.$B.queued_jobs in [limits] of $CONF:6)" \
	"$MNT/queue/sleep.conf.rejected"
code=$(printf '{"name": "api.conf", "spec": "[stage a]\\nrun = true\\n"}' |
	as_user $B curl -s --unix-socket "$SOCK" -o "$TEST_DIR/answer" -w '%{http_code}' \
		--data-binary @- http://localhost/v1/jobs)
check "the API answers HTTP 429 for it" test "$code" = 429
as_user $A cp "$TEST_DIR/sleep.conf" "$MNT/queue/sleep.conf" || fail "$A is held to $B's limit"
pass "the limit is $B's only"
echo cancel >"$MNT/jobs/$first/ctl"
echo cancel >"$MNT/jobs/$(as_user $A readlink "$MNT/jobs/last")/ctl"
wait_job "$first" 30 cancelled
spec ok.conf "" 1 true
as_user $B cp "$TEST_DIR/ok.conf" "$MNT/queue/ok.conf" || fail "$B cannot submit once the first ended"
wait_job "$(as_user $B readlink "$MNT/jobs/last")" 30 succeeded

# -- two users writing the same name at once: one's open file blocks nobody.
spec job.conf "" 1 'echo $USER'
SYNC=$TEST_DIR/sync
mkdir -m 1777 "$SYNC"
as_user $A sh -c "exec 3>'$MNT/queue/job.conf'; echo ready >'$SYNC/a-open'; \
	while [ ! -e '$SYNC/b-done' ]; do sleep 0.05; done; cat '$TEST_DIR/job.conf' >&3" &
holder=$!
on_cleanup "kill $holder 2>/dev/null"
wait_for "$A holds queue/job.conf" 10 test -e "$SYNC/a-open"
listing=$(as_user $A ls "$MNT/queue/")
check "$A sees the name being written" sh -c "printf '%s\\n' \"\$1\" | grep -qx job.conf" _ "$listing"
listing=$(as_user $B ls "$MNT/queue/")
check "$B does not see $A's name" sh -c "! printf '%s\n' \"\$1\" | grep -qx job.conf" _ "$listing"
as_user $B cp "$TEST_DIR/job.conf" "$MNT/queue/job.conf" || fail "$B was blocked by $A's open job.conf"
b_job=$(as_user $B readlink "$MNT/jobs/last")
touch "$SYNC/b-done"
wait "$holder" || fail "$A's submission of job.conf failed"
a_job=$(as_user $A readlink "$MNT/jobs/last")
check "two jobs" test "$a_job" != "$b_job"
check "$A's job is $A's" grep -qx "owner: $A" "$MNT/jobs/$a_job/status"
check "$B's job is $B's" grep -qx "owner: $B" "$MNT/jobs/$b_job/status"
wait_job "$a_job" 30 succeeded
wait_job "$b_job" 30 succeeded
exit 0
