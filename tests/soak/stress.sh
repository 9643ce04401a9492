#!/bin/bash
# The mount and the scheduler under the mix of issue 15: three loops of cp into
# queue/, two submitting through queue/.clone, two writing, reading and
# removing .rejected files, three readers of the views of jobs/last, one
# lister of jobs/ and one reader of instance views, all at once for SECONDS
# (default 600) against the build in PARSA_BIN.
#
# Fails if a daemon died, if the mount answered ENOTCONN, or if a sanitizer
# wrote a report (ASAN_OPTIONS/UBSAN_OPTIONS/TSAN_OPTIONS point log_path into
# the test folder; TSan reads tests/soak/tsan.supp). Prints key: value lines at
# the end: seconds, submitted, rejected, reads, listings.
#   PARSA_BIN=build-tsan/bin tests/soak/stress.sh 300
. "$(dirname "$0")/../lib/common.sh"
need_root

SECONDS_TO_RUN=${1:-${STRESS_SECONDS:-600}}
SAN=$LOGS/san
export ASAN_OPTIONS="log_path=$SAN/asan:detect_leaks=1:abort_on_error=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="log_path=$SAN/ubsan:print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export TSAN_OPTIONS="log_path=$SAN/tsan:halt_on_error=0:second_deadlock_stack=1:suppressions=$PARSA_SRC/tests/soak/tsan.supp${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
mkdir -p "$SAN"
start_all

OPS=$TEST_DIR/ops
mkdir -p "$OPS"
printf '[stage a]\nrun = true\n' >"$TEST_DIR/ok.conf"
printf '[stage a]\nrun = true\ncpu = 2\n' >"$TEST_DIR/bad.conf"
chmod 644 "$TEST_DIR/ok.conf" "$TEST_DIR/bad.conf"
END_AT=$(($(date +%s) + SECONDS_TO_RUN))

# repeat NAME STEP ARGS...: STEP ARGS until the end, counting the rounds in
# ops/NAME.n and keeping the errors the steps saw in ops/NAME.err. An error is
# expected now and then (a job read while it is made); a dead mount is not.
running() { [ "$(date +%s)" -lt "$END_AT" ]; }
repeat() {
	local name=$1 n=0
	shift
	while running; do
		"$@" "$n" 2>>"$OPS/$name.err"
		n=$((n + 1))
	done
	echo "$n" >"$OPS/$name.n"
}

step_cp() {
	cp "$TEST_DIR/ok.conf" "$MNT/queue/cp$1-$2.conf"
}

step_clone() {
	local id
	exec 3<>"$MNT/queue/.clone" && cat "$TEST_DIR/ok.conf" >&3 && read -r id <&3
	exec 3>&-
}

step_rejected() {
	local f=$MNT/queue/bad$1-$(($2 % 4)).conf
	# A shell redirect cannot see the refusal: the .rejected tells it.
	{ cat "$TEST_DIR/bad.conf" >"$f"; } 2>/dev/null
	cat "$f.rejected" >/dev/null
	ls "$MNT/queue" >/dev/null
	rm -f "$f.rejected"
}

step_last() {
	local id v
	id=$(readlink "$MNT/jobs/last")
	for v in status status.json why events stages/a/status; do
		cat "$MNT/jobs/$id/$v" >/dev/null
	done
}

step_list() {
	ls "$MNT/jobs" >/dev/null
}

step_instance() {
	local id v
	id=$(readlink "$MNT/jobs/last")
	for v in status status.json; do
		cat "$MNT/jobs/$id/stages/a/instances/0/$v" >/dev/null
	done
	ls "$MNT/jobs/$id/stages/a/instances" >/dev/null
}

pids=()
for i in 1 2 3; do repeat "cp$i" step_cp "$i" & pids+=($!); done
for i in 1 2; do repeat "clone$i" step_clone & pids+=($!); done
for i in 1 2; do repeat "rej$i" step_rejected "$i" & pids+=($!); done
for i in 1 2 3; do repeat "last$i" step_last & pids+=($!); done
repeat list step_list & pids+=($!)
repeat inst step_instance & pids+=($!)
on_cleanup "kill ${pids[*]}"
log "stress: ${#pids[@]} loops for ${SECONDS_TO_RUN}s against $PARSA_BIN"

while running; do
	for name in "${!DAEMON_PID[@]}"; do
		daemon_alive "$name" || fail "daemon '$name' died during the stress (see $LOGS/$name.log)"
	done
	is_mounted "$MNT" || fail "the mount went away during the stress"
	sleep 1
done
# A loop that hangs past the end is a hung mount.
for pid in "${pids[@]}"; do
	timeout 60 tail --pid="$pid" -f /dev/null || fail "a stress loop still runs 60 s after the end"
done
for name in "${!DAEMON_PID[@]}"; do
	daemon_alive "$name" || fail "daemon '$name' died during the stress (see $LOGS/$name.log)"
done
pass "every daemon is alive after ${SECONDS_TO_RUN}s of stress"

if grep -l 'Transport endpoint is not connected' "$OPS"/*.err 2>/dev/null; then
	fail "the mount answered ENOTCONN"
fi
pass "no ENOTCONN from the mount"

sum() { cat "$@" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }
submitted=$(sum "$OPS"/cp*.n "$OPS"/clone*.n)
# The stress did something: a mount that refuses everything is no pass.
check "submissions went through" test "$(ls "$MNT/jobs" | grep -c '^[0-9]')" -gt 0

# Sanitizers write their reports as the daemons exit: stop them first.
for name in "${!DAEMON_PID[@]}"; do
	case $name in runner*) stop_daemon "$name" ;; esac
done
fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
stop_daemon fs
stop_daemon sched
if ls "$SAN"/* >/dev/null 2>&1; then
	for f in "$SAN"/*; do
		printf '# ---- %s\n' "$f"
		head -n 60 "$f" | sed 's/^/#   /'
	done
	fail "a sanitizer wrote a report (see $SAN)"
fi
pass "no sanitizer report"
echo "seconds: $SECONDS_TO_RUN"
echo "submitted: $submitted"
echo "rejected: $(sum "$OPS"/rej*.n)"
echo "reads: $(sum "$OPS"/last*.n "$OPS"/inst.n)"
echo "listings: $(sum "$OPS"/list.n)"
