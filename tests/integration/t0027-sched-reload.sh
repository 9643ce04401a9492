#!/bin/bash
# parsa.conf after start: `parsa-sched -n` checks a file as the scheduler
# would read it (0 and "configuration OK", or 1 and each problem with file and
# line); SIGHUP reloads it: a changed [limits] line takes effect for the next
# submission and the log says what changed, the web page moves to its new
# [web] listen (and stops at off), a change that needs a restart is named as
# such and not applied, and a broken file keeps the running settings and logs
# why.
. "$(dirname "$0")/../lib/common.sh"

CONF=$TEST_DIR/parsa.conf
write_conf() { # write_conf QUEUED_JOBS [WEB] [LEASE]
	cat >"$CONF" <<CONF
[sched]
host_timeout = 10s
lease = ${3:-30s}

[web]
listen = ${2:-off}

[limits]
user.$(id -un).queued_jobs = $1
CONF
	chmod 644 "$CONF"
}
# A job that stays queued: no runner is started, so every job counts.
printf '[stage a]\nrun = true\n' >"$TEST_DIR/job.conf"
chmod 644 "$TEST_DIR/job.conf"
submit_api() { parsa submit --sched "unix:$SOCK" "$TEST_DIR/job.conf"; }
log_has() { grep -qF -- "$1" "$LOGS/sched.log"; }

# -- parsa-sched -n
write_conf 1
out=$(parsa-sched -n --config "$CONF" --state "$STATE" --storage "$STORAGE" 2>&1) ||
	fail "-n refused a good file: $out"
check "-n on a good file: configuration OK" sh -c "printf '%s' \"\$1\" | grep -qF 'configuration OK ($CONF)'" _ "$out"
BAD=$TEST_DIR/bad.conf
printf '[sched]\nlisten = 127.0.0.1\n\n[web]\nlisten = 127.0.0.1:http\n' >"$BAD"
chmod 644 "$BAD"
if out=$(parsa-sched -n --config "$BAD" --state "$STATE" --storage "$STORAGE" 2>&1); then
	fail "-n passed a listen address without a port"
fi
check "-n names the file, the line and the fix" sh -c \
	"printf '%s' \"\$1\" | grep -qF '$BAD:2: [sched] listen = 127.0.0.1: expected HOST:PORT'" _ "$out"
check "-n reports every problem, not only the first" sh -c \
	"printf '%s' \"\$1\" | grep -qF '$BAD:5: [web] listen = 127.0.0.1:http' &&
	 printf '%s' \"\$1\" | grep -qF '2 problems in the configuration'" _ "$out"
printf '[limits]\nqueued_jobs = lots\n' >"$BAD"
if out=$(parsa-sched -n --config "$BAD" 2>&1); then
	fail "-n passed queued_jobs = lots"
fi
check "-n on a syntax error: file:line" sh -c \
	"printf '%s' \"\$1\" | grep -qF '$BAD:2: [limits] queued_jobs = lots: expected a number'" _ "$out"
check "-n starts nothing" test ! -e "$SOCK"

# -- SIGHUP
start_sched --config "$CONF"
PID=${DAEMON_PID[sched]}
submit_api >/dev/null || fail "the first job was refused"
if out=$(submit_api 2>&1); then
	fail "a second job passed queued_jobs = 1"
fi
check "queued_jobs = 1 holds before the reload" sh -c "printf '%s' \"\$1\" | grep -qF 'queued_jobs = 1'" _ "$out"

write_conf 2 127.0.0.1:0 45s
kill -HUP "$PID"
wait_for "the reload is logged" 10 log_has "reload: [limits] user.$(id -un).queued_jobs: 1 -> 2"
check "a lease is named as needing a restart" \
	log_has "reload: [sched] lease: 30s -> 45s needs a restart (the scheduler goes on with 30s)"
check "the scheduler runs on" daemon_alive sched
submit_api >/dev/null || fail "the second job was refused after queued_jobs became 2"
pass "the new limit takes effect without a restart"
check "the web page's move is logged" log_has "reload: [web] listen: off -> 127.0.0.1:0"
wait_for "the web page is started by the reload" 10 test -s "$STATE/web.url"
URL=$(cat "$STATE/web.url")
check "it answers on $URL" curl -sf -o /dev/null "$URL"
check "the log says where" log_has "reload: the web page is now on $URL"

printf '[limits]\nuser.%s.queued_jobs = 5\nqueued_jobs = -3\n' "$(id -un)" >"$CONF"
kill -HUP "$PID"
wait_for "the broken file is logged" 10 log_has \
	"reload: $CONF:3: [limits] queued_jobs = -3: expected a number from 1 to 1000000000; the configuration is unchanged"
check "the scheduler runs on after a broken file" daemon_alive sched
if out=$(submit_api 2>&1); then
	fail "a broken file's queued_jobs = 5 was applied"
fi
check "the running limit stays 2" sh -c "printf '%s' \"\$1\" | grep -qF 'queued_jobs = 2'" _ "$out"

chmod 666 "$CONF"
kill -HUP "$PID"
wait_for "an unsafe file is refused on reload" 10 log_has "run: chmod go-w $CONF"
pass "a file others can write is refused on reload as at start"
chmod 644 "$CONF"

write_conf 2 127.0.0.1:0 45s
kill -HUP "$PID"
wait_for "a reload with nothing new" 10 log_has "reload: $CONF: nothing changed"
pass "a reload with nothing new says so"
check "the page runs on where it was" curl -sf -o /dev/null "$URL"

write_conf 3 127.0.0.1 45s
kill -HUP "$PID"
wait_for "a web address -n refuses is refused on reload" 10 log_has \
	"reload: $CONF:6: [web] listen = 127.0.0.1: expected HOST:PORT"
check "with the whole file" log_has "reload: 1 problem: the configuration is unchanged"
check "the page still answers on $URL" curl -sf -o /dev/null "$URL"
if out=$(submit_api 2>&1); then
	fail "queued_jobs = 3 of a refused file was applied"
fi
pass "the refused file's queued_jobs = 3 was not applied"

write_conf 2 off 45s
kill -HUP "$PID"
wait_for "the web page stops at off" 10 log_has "reload: the web page stopped"
check "web.url is gone with it" test ! -e "$STATE/web.url"
if curl -sf -o /dev/null --max-time 5 "$URL"; then
	fail "the page still answers after [web] listen = off"
fi
pass "the page no longer answers"
stop_daemon sched
check "the scheduler stopped cleanly (no sanitizer report)" sh -c "! grep -q 'Sanitizer' '$LOGS/sched.log'"
