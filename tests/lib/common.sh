# Shared by every integration test: a private work folder, daemons started and
# tracked by pid, a trap that unmounts and kills everything on any exit, and
# wait_for with a deadline that also fails when a daemon has died.
# Source it first thing:  . "$(dirname "$0")/../lib/common.sh"

set -u

PARSA_SRC=${PARSA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PARSA_BIN=${PARSA_BIN:-$PARSA_SRC/build/bin}
export PATH="$PARSA_BIN:$PATH"

TEST_NAME=$(basename "$0" .sh)
TEST_DIR=$(mktemp -d "/tmp/parsa-$TEST_NAME.XXXXXX")
chmod 755 "$TEST_DIR"
MNT=$TEST_DIR/mnt
STATE=$TEST_DIR/state
STORAGE=$TEST_DIR/storage
LOGS=$TEST_DIR/logs
SCRATCH=$TEST_DIR/scratch
SOCK=$STATE/sched.sock
export PARSA_SCHED=unix:$SOCK
# Never the machine's parsa (an installed package's /var/lib/parsa): a user's
# command without PARSA_SCHED falls back to this folder's socket, which no
# test makes (lib/defaults.h).
export PARSA_SYSTEM_STATE=$TEST_DIR/no-system-parsa
# Nor the machine's /etc/parsa/parsa.conf: a test passes --config FILE when it
# wants one (lib/config.h).
export PARSA_CONFIG=
mkdir -p "$MNT" "$STATE" "$STORAGE" "$LOGS" "$SCRATCH"

# name -> pid of each daemon this test started
declare -A DAEMON_PID=()
MOUNTS=()
CLEANUP_CMDS=()
# the users and groups ensure_user made ours, removed last at exit
TEST_USERS=()
TEST_GROUPS=()
TEST_FAILED=0
TEST_COUNT=0

log() { printf '# %s\n' "$*"; }

fail() {
	printf 'not ok - %s\n' "$*"
	TEST_FAILED=$((TEST_FAILED + 1))
	dump_logs
	exit 1
}

pass() {
	TEST_COUNT=$((TEST_COUNT + 1))
	printf 'ok %d - %s\n' "$TEST_COUNT" "$*"
}

# check DESCRIPTION COMMAND...: a non-fatal assertion
check() {
	local what=$1
	shift
	if "$@"; then
		pass "$what"
	else
		fail "$what"
	fi
}

dump_logs() {
	local f
	for f in "$LOGS"/*.log "$STATE"/logs/*.log; do
		[ -f "$f" ] || continue
		printf '# ---- %s (last 40 lines)\n' "$f"
		tail -n 40 "$f" | sed 's/^/#   /'
	done
}

is_mounted() {
	grep -q " $1 fuse" /proc/mounts 2>/dev/null
}

cleanup() {
	local rc=$? name pid m i
	trap - EXIT INT TERM
	for i in "${!CLEANUP_CMDS[@]}"; do
		timeout 30 bash -c "${CLEANUP_CMDS[$i]}" >/dev/null 2>&1 || true
	done
	# Runners first so they stop launching, then the mount, then the scheduler.
	for name in "${!DAEMON_PID[@]}"; do
		case $name in runner*) stop_daemon "$name" ;; esac
	done
	for m in "${MOUNTS[@]}"; do
		if is_mounted "$m"; then
			fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		fi
	done
	# Servers the others use (the NFS server of tests/lib/nfs.sh) go last.
	for name in "${!DAEMON_PID[@]}"; do
		case $name in ganesha|rpcbind) ;; *) stop_daemon "$name" ;; esac
	done
	for name in ganesha rpcbind; do
		stop_daemon "$name"
	done
	# Stage instances run in their own sessions; anything still holding the test
	# folder on its command line is ours.
	pkill -KILL -f -- "$TEST_DIR" 2>/dev/null || true
	for m in "${MOUNTS[@]}"; do
		for i in 1 2 3 4 5; do
			is_mounted "$m" || break
			umount -l "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true
			sleep 0.2
		done
	done
	# Runners keep their instances' state under /run (named after their state folder).
	rm -rf /run/parsa/runner-"${TEST_DIR//\//%}"* 2>/dev/null || true
	# Last, once nothing of ours runs as them: a userdel in on_cleanup fails while
	# an instance of the user still runs, and then its group stays too.
	for name in "${TEST_USERS[@]}"; do
		id "$name" >/dev/null 2>&1 && userdel -f "$name" >/dev/null 2>&1
	done
	for name in "${TEST_GROUPS[@]}"; do
		getent group "$name" >/dev/null && groupdel "$name" >/dev/null 2>&1
	done
	if [ "$rc" -eq 0 ] && [ "$TEST_FAILED" -eq 0 ]; then
		printf '1..%d\n' "$TEST_COUNT"
		rm -rf "$TEST_DIR" 2>/dev/null || true
	elif [ "$rc" -ne 77 ]; then
		printf '# test folder kept: %s\n' "$TEST_DIR"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# on_cleanup COMMAND: run COMMAND (a bash string) first thing at exit.
on_cleanup() {
	CLEANUP_CMDS+=("$1")
}

# stop_daemon NAME [SIGNAL]: TERM (or SIGNAL), wait up to 10 s, then KILL.
stop_daemon() {
	local name=$1 sig=${2:-TERM} pid i
	pid=${DAEMON_PID[$name]:-}
	[ -n "$pid" ] || return 0
	kill -"$sig" "$pid" 2>/dev/null || true
	for i in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	unset "DAEMON_PID[$name]"
}

daemon_alive() {
	local pid=${DAEMON_PID[$1]:-}
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

# wait_for DESCRIPTION SECONDS COMMAND...: poll COMMAND every 50 ms until it
# succeeds; fail the test at the deadline or as soon as a daemon has died.
wait_for() {
	local what=$1 secs=$2 deadline name
	shift 2
	deadline=$(($(date +%s%N) + secs * 1000000000))
	while :; do
		if "$@" 2>/dev/null; then
			return 0
		fi
		for name in "${!DAEMON_PID[@]}"; do
			daemon_alive "$name" || fail "$what: daemon '$name' died (see $LOGS/$name.log)"
		done
		[ "$(date +%s%N)" -lt "$deadline" ] || fail "$what: not within ${secs}s"
		sleep 0.05
	done
}

start_sched() {
	parsa-sched --state "$STATE" --socket "$SOCK" --storage "$STORAGE" --log-stderr "$@" \
		>>"$LOGS/sched.log" 2>&1 &
	DAEMON_PID[sched]=$!
	wait_for "scheduler answers" 20 curl -sf --unix-socket "$SOCK" -o /dev/null http://localhost/v1/status
}

# start_fs [MOUNTPOINT]: mount parsafs (allow_other when root), with the
# flags in $FS_FLAGS (e.g. FS_FLAGS="--storage-patience 3").
start_fs() {
	local mnt=${1:-$MNT} opts=()
	mkdir -p "$mnt"
	[ "$(id -u)" -eq 0 ] && opts=(-o allow_other)
	# shellcheck disable=SC2086 # FS_FLAGS is words
	parsafs "$mnt" --sched "unix:$SOCK" --storage "$STORAGE" ${FS_FLAGS:-} -f "${opts[@]}" \
		>>"$LOGS/fs.log" 2>&1 &
	DAEMON_PID[fs]=$!
	MOUNTS+=("$mnt")
	wait_for "mount is up" 20 is_mounted "$mnt"
	wait_for "mount answers" 20 test -e "$mnt/status"
}

# start_runner NAME [FLAGS...]: a runner for host NAME against this mount.
# Its limits are 100% unless FLAGS give others (the last flag wins): then
# no load outside the test (a build, another test run) holds its work back;
# only the tests of admission by outside load pass --cpu-limit 90.
start_runner() {
	local name=$1
	shift
	mkdir -p "$SCRATCH/$name" "$STATE/runner-$name"
	parsa-runner --sched "unix:$SOCK" --name "$name" --mount "$MNT" \
		--scratch "$SCRATCH/$name" --state "$STATE/runner-$name" \
		--cpu-limit 100 --mem-limit 100 "$@" \
		>>"$LOGS/runner-$name.log" 2>&1 &
	DAEMON_PID[runner-$name]=$!
	wait_for "host $name registered" 20 test -e "$MNT/hosts/$name/status"
}

# start_all [RUNNER FLAGS...]: scheduler, mount and one runner "local".
start_all() {
	start_sched
	start_fs
	start_runner local "$@"
}

# outside_cores HOST: the cores HOST's runner sees kept busy outside parsa
# (from hosts/HOST/status: "live cpu: 12% (parsa 0%, outside 12%: 0.24 cores)").
outside_cores() {
	sed -n 's/^live cpu:.*outside [0-9]*%: \([0-9.]*\) cores.*/\1/p' "$MNT/hosts/$1/status"
}

# need_quiet_host SECONDS [HOST]: a test of admission by outside load
# measures against the load it starts itself, so it needs a machine on which
# nothing else keeps a core busy. Wait up to SECONDS for fewer than 0.3 cores
# busy outside parsa (the daemons' own start-up settles first); on a machine
# that stays busier (a build, a second test run, a CI neighbour), skip with
# the reason rather than fail.
need_quiet_host() {
	local secs=$1 host=${2:-local} deadline busy=
	deadline=$(($(date +%s%N) + secs * 1000000000))
	while [ "$(date +%s%N)" -lt "$deadline" ]; do
		busy=$(outside_cores "$host")
		python3 -c "import sys; sys.exit(not float('${busy:-9}') < 0.3)" && return 0
		sleep 0.2
	done
	echo "# SKIP: the machine is too busy to measure admission by outside load" \
		"(${busy:-?} cores busy outside parsa for ${secs}s)"
	exit 77
}

# up_pid KEY [STATE]: the pid `parsa up` recorded for a daemon in
# STATE/up.json (KEY: sched_pid, fs_pid or runner_pid; STATE: $STATE).
up_pid() {
	sed -n "s/.*\"$1\": *\([0-9]*\).*/\1/p" "${2:-$STATE}/up.json" | head -n 1
}

alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

# replaced KEY OLD [STATE]: up has started that daemon again (a live new pid).
replaced() {
	local now
	now=$(up_pid "$1" "${3:-$STATE}")
	[ -n "$now" ] && [ "$now" != "$2" ] && alive "$now"
}

# job_state ID: the state line of a job's status file
job_state() {
	sed -n 's/^state: //p' "$MNT/jobs/$1/status"
}

job_is() {
	[ "$(job_state "$1")" = "$2" ]
}

# stays_queued ID TENTHS WHAT: hold-back is a negative property, so sample it:
# the job must read queued for TENTHS tenths of a second; then pass WHAT.
stays_queued() {
	local id=$1 tenths=$2 what=$3 i
	for i in $(seq 1 "$tenths"); do
		job_is "$id" queued || fail "$what: job $id left queued ($(job_state "$id"))"
		sleep 0.1
	done
	pass "$what"
}

# submit FILE [NAME]: cp into queue/ and print the new job id (from jobs/last).
submit() {
	local file=$1 name=${2:-$(basename "$1")}
	cp "$file" "$MNT/queue/$name" || return 1
	readlink "$MNT/jobs/last"
}

# wait_job ID SECONDS [STATE]: wait until the job ends, then check its state.
wait_job() {
	local id=$1 secs=$2 want=${3:-succeeded} got
	got=$(timeout "$secs" cat "$MNT/jobs/$id/wait") || fail "job $id did not end within ${secs}s (state: $(job_state "$id"))"
	got=$(printf '%s' "$got" | tr -d '\n')
	[ "$got" = "$want" ] || {
		log "job $id status:"; sed 's/^/#   /' "$MNT/jobs/$id/status"
		log "job $id events:"; sed 's/^/#   /' "$MNT/jobs/$id/events"
		fail "job $id ended $got, expected $want"
	}
}

# as_user USER COMMAND...: run a command as another local user (for permission tests).
as_user() {
	local user=$1
	shift
	setpriv --reuid "$(id -u "$user")" --regid "$(id -g "$user")" --init-groups -- "$@"
}

need_root() {
	if [ "$(id -u)" -ne 0 ]; then
		echo "# SKIP: needs root"
		exit 77
	fi
}

# ensure_user NAME GROUP: a local test user in its own team group, removed at
# exit. Tests share names (parsa-carol is in parsa-notify for one, in
# parsa-admin for another): one left by an earlier test is moved to GROUP.
ensure_user() {
	local user=$1 group=$2
	getent group "$group" >/dev/null || groupadd "$group"
	if ! id "$user" >/dev/null 2>&1; then
		useradd -M -N -g "$group" -s /bin/sh "$user"
	elif [ "$(id -gn "$user")" != "$group" ]; then
		usermod -g "$group" "$user"
	fi
	TEST_USERS+=("$user")
	TEST_GROUPS+=("$group")
}
