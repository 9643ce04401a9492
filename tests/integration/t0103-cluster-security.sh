#!/bin/bash
# Who may do what on a cluster reached over TCP: two users in two teams, where
# one tries to cancel the other's job (refused, by the mount and by the
# scheduler) and an admin may; fair share decides who gets the next free slot;
# munge credentials that are missing, forged, made with another key, expired,
# replayed or bound to another request are refused; config files and keys that
# others could change or read are refused with the fix in the message.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cluster.sh"

ensure_user parsa-alice parsa-arch
ensure_user parsa-bob parsa-sys
ensure_user parsa-carol parsa-admin
on_cleanup "userdel parsa-alice; userdel parsa-bob; userdel parsa-carol; groupdel parsa-arch; groupdel parsa-sys; groupdel parsa-admin"

cluster_setup
echo "admin_group = parsa-admin" >>"$TEST_DIR/parsa.conf"
start_cluster_sched
start_head_fs
for h in h1 h2 h3; do
	start_host "$h" --cpus 1 --mem 4G
done

cat >"$TEST_DIR/gate.sh" <<GATE
#!/bin/sh
while [ ! -e "$TEST_DIR/open-\$1" ] && [ ! -e "$TEST_DIR/open-all" ]; do sleep 0.05; done
GATE
chmod 755 "$TEST_DIR/gate.sh"
# spec NAME INSTANCES RUN: a one-stage spec readable by the test users.
spec() {
	printf '[stage s]\ninstances = %s\nrun = %s\n' "$2" "$3" >"$TEST_DIR/$1.conf"
	chmod 644 "$TEST_DIR/$1.conf"
}
submit_as() {
	as_user "$1" cp "$TEST_DIR/$2.conf" "$MNT/queue/$2.conf" || fail "$1 cannot submit $2"
	as_user "$1" readlink "$MNT/jobs/last"
}

# -- fair share: alice's team has used the cluster, bob's has not.
spec used 3 'sleep 1'
a0=$(submit_as parsa-alice used)
wait_job "$a0" 60 succeeded
check "the cluster status shows alice's team's usage" grep -q '^team parsa-arch: usage [1-9]' "$MNT/status"
spec busy 3 "\"$TEST_DIR/gate.sh\" busy"
a1=$(submit_as parsa-alice busy)
wait_for "alice's busy job fills the three slots" 30 grep -q 'running (3 running' "$MNT/jobs/$a1/status"
spec alice-next 3 "true"
spec bob-next 3 "\"$TEST_DIR/gate.sh\" bob"
a2=$(submit_as parsa-alice alice-next)
b1=$(submit_as parsa-bob bob-next)
check "bob's job is younger than alice's" test "$b1" -gt "$a2"

# -- bob may not cancel alice's job; an admin may.
if as_user parsa-bob sh -c "echo cancel > '$MNT/jobs/$a1/ctl'" 2>/dev/null; then
	fail "bob cancelled alice's job through the mount"
fi
pass "bob cannot cancel alice's job through the mount"

# Straight to the scheduler over TCP with bob's own munge credential, even
# pretending to act for root: refused by the scheduler itself.
# cred USER METHOD TARGET BODY: a munge credential bound to that request.
cred() {
	local user=$1 method=$2 target=$3 body=$4 hash payload
	hash=$(printf '%s' "$body" | sha256sum | cut -d' ' -f1)
	payload=$(printf 'parsa-api-1\n%s\n%s\n%s' "$method" "$target" "$hash")
	if [ "$user" = root ]; then
		munge -S "${5:-$MUNGE_SOCK}" -s "$payload"
	else
		as_user "$user" munge -S "${5:-$MUNGE_SOCK}" -s "$payload"
	fi
}
# api CRED METHOD TARGET BODY [HEADER]: prints "STATUS BODY".
api() {
	curl -s -o "$TEST_DIR/answer" -w '%{http_code}' -X "$2" ${1:+-H "Authorization: MUNGE $1"} \
		${5:+-H "$5"} ${4:+--data-binary "$4"} "http://$CL_SCHED$3"
	printf ' %s\n' "$(cat "$TEST_DIR/answer")"
}
body='{"command":"cancel"}'
got=$(api "$(cred parsa-bob POST "/v1/jobs/$a1/ctl" "$body")" POST "/v1/jobs/$a1/ctl" "$body" "X-Parsa-Uid: 0")
case $got in 403*"only they, root or the admin group"*) pass "the scheduler refuses bob's cancel over TCP: $got" ;;
	*) fail "bob's cancel over TCP: $got" ;; esac
check "alice's job still runs" grep -q '^state: running' "$MNT/jobs/$a1/status"

spec doomed 1 "\"$TEST_DIR/gate.sh\" doomed"
a3=$(submit_as parsa-alice doomed)
if ! as_user parsa-carol sh -c "echo cancel > '$MNT/jobs/$a3/ctl'" 2>"$TEST_DIR/carol.err"; then
	# Seen once in a full suite (EACCES at the open), never alone: what each
	# side saw then, for the next run that fails.
	log "carol: $(cat "$TEST_DIR/carol.err"); id: $(id parsa-carol); admin group: $(getent group parsa-admin)"
	log "as carol: $(as_user parsa-carol stat -c '%A %u:%g %n' "$MNT/jobs/$a3" "$MNT/jobs/$a3/ctl" 2>&1 | tr '\n' ' ')"
	log "as root: $(stat -c '%A %u:%g %n' "$MNT/jobs/$a3/ctl" 2>&1)"
	fail "carol (admin group) cannot cancel alice's job"
fi
wait_job "$a3" 30 cancelled
check "the events say who cancelled it" grep -q 'cancelled by parsa-carol' "$MNT/jobs/$a3/events"

# -- three slots free up: bob's team, which used less, takes them all, although
# alice's next job is older. Bob's instances then hold the slots (their gate).
touch "$TEST_DIR/open-busy"
wait_job "$a1" 30 succeeded
wait_for "bob's three instances run" 30 grep -q 'running (3 running' "$MNT/jobs/$b1/status"
check "alice's older job waits: nothing of it was placed" grep -q '(0 running, 0 done, 3 queued' "$MNT/jobs/$a2/status"
touch "$TEST_DIR/open-bob"
wait_job "$b1" 30 succeeded
wait_job "$a2" 30 succeeded

# -- credentials.
got=$(api "" GET /v1/status "")
case $got in 401*"need a munge credential"*) pass "no credential: $got" ;; *) fail "no credential: $got" ;; esac
c=$(cred root GET /v1/status "")
got=$(api "$c" GET /v1/status "")
case $got in 200*) pass "a good credential works" ;; *) fail "good credential: $got" ;; esac
got=$(api "$c" GET /v1/status "")
case $got in 401*replayed*) pass "the same credential again is refused: $got" ;; *) fail "replay: $got" ;; esac
c=$(cred root GET /v1/status "")
got=$(api "$c" GET /v1/hosts "")
case $got in 401*"another request"*) pass "a credential for another request is refused" ;; *) fail "rebinding: $got" ;; esac
c=$(cred root GET /v1/status "")
# Every base64 character maps to another one (a '+' or '/' left as it was made
# this pass now and then).
forged=${c:0:40}$(printf '%s' "${c:40:1}" | tr 'A-Za-z0-9+/' 'B-ZAb-za1-90/+')${c:41}
[ "$forged" != "$c" ] || fail "the forgery changed nothing"
got=$(api "$forged" GET /v1/status "")
case $got in 401*) pass "a forged credential is refused: $got" ;; *) fail "forged: $got" ;; esac
make_key "$MUNGE_DIR/other.key"
start_munged other "$MUNGE_DIR/other.key"
got=$(api "$(cred root GET /v1/status "" "$MUNGE_DIR/other.sock")" GET /v1/status "")
case $got in 401*"another munge key"*) pass "a credential made with another key is refused: $got" ;; *) fail "wrong key: $got" ;; esac
start_munged past "$MUNGE_DIR/munge.key" -1h
got=$(api "$(cred root GET /v1/status "" "$MUNGE_DIR/past.sock")" GET /v1/status "")
case $got in 401*expired*) pass "an expired credential is refused: $got" ;; *) fail "expired: $got" ;; esac
reg='{"name":"evil","cpus":64}'
got=$(api "$(cred parsa-bob POST /v1/hosts "$reg")" POST /v1/hosts "$reg")
case $got in 403*) pass "a user cannot register a host: $got" ;; *) fail "user registering a host: $got" ;; esac

# -- unsafe config files and keys.
cp "$TEST_DIR/parsa.conf" "$TEST_DIR/loose.conf"
chmod 666 "$TEST_DIR/loose.conf"
if out=$(timeout 20 parsa-sched --config "$TEST_DIR/loose.conf" --state "$TEST_DIR/other-state" 2>&1); then
	fail "parsa-sched started with a world-writable config"
fi
case $out in *"$TEST_DIR/loose.conf"*"chmod go-w"*) pass "a world-writable config is refused: ${out##*: }" ;;
	*) fail "loose config: $out" ;; esac
if out=$(timeout 20 parsa-runner --config "$TEST_DIR/loose.conf" --name x 2>&1); then
	fail "parsa-runner started with a world-writable config"
fi
case $out in *"chmod go-w"*) pass "the runner refuses it too" ;; *) fail "runner, loose config: $out" ;; esac
cp "$MUNGE_DIR/munge.key" "$TEST_DIR/open.key"
chmod 644 "$TEST_DIR/open.key"
sed "s|^munge_key = .*|munge_key = $TEST_DIR/open.key|" "$TEST_DIR/parsa.conf" >"$TEST_DIR/openkey.conf"
chmod 644 "$TEST_DIR/openkey.conf"
if out=$(timeout 20 parsa-sched --config "$TEST_DIR/openkey.conf" --state "$TEST_DIR/other-state" \
	--listen 127.0.0.1:1 2>&1); then
	fail "parsa-sched started with a readable munge key"
fi
case $out in *"$TEST_DIR/open.key"*"chmod 0400"*) pass "a munge key others can read is refused" ;;
	*) fail "open key: $out" ;; esac
