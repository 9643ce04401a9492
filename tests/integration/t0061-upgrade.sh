#!/bin/bash
# Upgrades: the database of every earlier release (tests/fixtures/parsa-*.db,
# written by tests/fixtures/make-db.sh) opens with this scheduler and shows
# every job as the scheduler of that release did (tests/lib/views.sh: every
# value it showed is there unchanged; new keys and later events may be added);
# and the version handshake:
# a client of another protocol is refused with a message naming the versions
# to install, while this release's clients and foreign ones (curl) pass.
export TZ=UTC
. "$(dirname "$0")/../lib/common.sh"
. "$PARSA_SRC/tests/lib/views.sh"

fixtures=("$PARSA_SRC"/tests/fixtures/parsa-*.db)
[ -e "${fixtures[0]}" ] || fail "no fixture database in tests/fixtures"
for db in "${fixtures[@]}"; do
	release=$(basename "$db" .db)
	cp "$db" "$STATE/parsa.db"
	start_sched
	dump_views "$SOCK" "$TEST_DIR/$release.views" || fail "$release: dump the views"
	same_views "${db%.db}.views" "$TEST_DIR/$release.views" ||
		fail "$release: the jobs read differently with this scheduler"
	jobs=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["jobs"]))' "$TEST_DIR/$release.views")
	[ "$jobs" -gt 0 ] || fail "$release: no job in the fixture"
	pass "$release: $jobs jobs read the same with $(parsa-sched --version)"
	stop_daemon sched
	rm -f "$STATE"/parsa.db*
done

start_sched
ours=$(parsa-sched --version | awk '{ print $2 }')
protocol=$(parsa-sched --version | sed -n 's/.*(protocol \([0-9]*\)).*/\1/p')
code=$(curl -s -o "$TEST_DIR/refused" -w '%{http_code}' --unix-socket "$SOCK" \
	-A "parsa-runner/99.0.0 (protocol $((protocol + 1)))" http://localhost/v1/status)
[ "$code" = 426 ] || fail "a runner of protocol $((protocol + 1)) got HTTP $code, expected 426"
msg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["error"])' "$TEST_DIR/refused")
case $msg in
*"parsa-runner 99.0.0"*"parsa-sched $ours"*"upgrade the scheduler first"*) ;;
*) fail "the refusal does not name the versions: $msg" ;;
esac
pass "a newer runner is refused: $msg"
code=$(curl -s -o "$TEST_DIR/refused" -w '%{http_code}' --unix-socket "$SOCK" \
	-A "parsafs/0.0.1 (protocol 0)" http://localhost/v1/status)
[ "$code" = 426 ] || fail "a mount of protocol 0 got HTTP $code, expected 426"
grep -q 'parsafs 0.0.1' "$TEST_DIR/refused" && grep -q 'upgrade this host' "$TEST_DIR/refused" ||
	fail "the refusal of an older mount: $(cat "$TEST_DIR/refused")"
pass "an older mount is refused: $(cat "$TEST_DIR/refused")"
code=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" \
	-A "parsa-runner/$ours (protocol $protocol)" http://localhost/v1/status)
[ "$code" = 200 ] || fail "this release's runner got HTTP $code"
code=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" http://localhost/v1/status)
[ "$code" = 200 ] || fail "curl without a parsa User-Agent got HTTP $code"
pass "this release's clients and curl are served"
start_fs
start_runner local
parsa status >/dev/null || fail "parsa status against this scheduler"
pass "this release's mount, runner and CLI work with it"

# The runner, mount and CLI of the release before, when the caller has a build
# of it (PARSA_PREVIOUS_BIN, e.g. a Release build of the previous tag): a job
# submitted through the old mount runs on the old runner under this scheduler.
if [ -z "${PARSA_PREVIOUS_BIN:-}" ]; then
	log "PARSA_PREVIOUS_BIN not set: the previous release's runner and mount not tried"
else
	prev=$("$PARSA_PREVIOUS_BIN/parsa" --version)
	mkdir -p "$TEST_DIR/oldmnt" "$SCRATCH/old" "$STATE/runner-old"
	opts=()
	[ "$(id -u)" -eq 0 ] && opts=(-o allow_other)
	"$PARSA_PREVIOUS_BIN/parsafs" "$TEST_DIR/oldmnt" --sched "unix:$SOCK" --storage "$STORAGE" -f \
		"${opts[@]}" >>"$LOGS/fs-old.log" 2>&1 &
	DAEMON_PID[fs-old]=$!
	MOUNTS+=("$TEST_DIR/oldmnt")
	wait_for "the old mount answers" 20 test -e "$TEST_DIR/oldmnt/status"
	stop_daemon runner-local
	"$PARSA_PREVIOUS_BIN/parsa-runner" --sched "unix:$SOCK" --name old --mount "$TEST_DIR/oldmnt" \
		--scratch "$SCRATCH/old" --state "$STATE/runner-old" --cpu-limit 100 \
		>>"$LOGS/runner-old.log" 2>&1 &
	DAEMON_PID[runner-old]=$!
	wait_for "the old runner registered" 20 test -e "$MNT/hosts/old/status"
	cat >"$TEST_DIR/old.conf" <<'SPEC'
[stage s]
run = echo from-the-old-runner > "$PARSA_OUT/out"
SPEC
	cp "$TEST_DIR/old.conf" "$TEST_DIR/oldmnt/queue/" || fail "submit through the old mount"
	id=$(readlink "$TEST_DIR/oldmnt/jobs/last")
	state=$(timeout 60 cat "$TEST_DIR/oldmnt/jobs/$id/wait")
	[ "$state" = succeeded ] || fail "job $id through $prev's mount and runner: $state"
	# Its jobs/ is the listing it asks for (view=owners without format=json).
	ls "$TEST_DIR/oldmnt/jobs" | grep -qx "$id" || fail "$prev's mount does not list job $id in jobs/"
	grep -q from-the-old-runner "$MNT/jobs/$id/out/s/out" || fail "job $id's output"
	"$PARSA_PREVIOUS_BIN/parsa" status "$id" >/dev/null || fail "$prev's parsa status"
	pass "$prev's mount, runner and CLI work with $(parsa-sched --version)"
fi
