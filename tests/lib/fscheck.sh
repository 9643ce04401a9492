# The data-path tests' shared part (t0041/t0210 random, t0042/t0211 POSIX):
# where tests/tools/fscheck is, checks that go on after a failure so one run
# lists every case that is wrong, and the random and overwrite checks on a
# folder. Source after common.sh:  . "$(dirname "$0")/../lib/fscheck.sh"

FSCHECK=${FSCHECK:-$PARSA_BIN/../tests/fscheck}
[ -x "$FSCHECK" ] || fail "no $FSCHECK (cmake --build builds it with the tests)"

# These checks are independent cases of a conformance list: a failing one is
# reported and counted, and the test fails at its end (end_checks), so the
# list says all that is wrong at once instead of the first thing only.
SOFT_FAILED=0

soft_fail() {
	TEST_COUNT=$((TEST_COUNT + 1))
	SOFT_FAILED=$((SOFT_FAILED + 1))
	printf 'not ok %d - %s\n' "$TEST_COUNT" "$*"
}

# expect DESCRIPTION COMMAND...: like check, but goes on when it fails.
expect() {
	local what=$1
	shift
	if "$@"; then
		pass "$what"
	else
		soft_fail "$what"
	fi
}

# expect_eq DESCRIPTION GOT WANT: an equality, with both values in the report.
expect_eq() {
	if [ "$2" = "$3" ]; then
		pass "$1"
	else
		soft_fail "$1 (got '$2', want '$3')"
	fi
}

# fscheck_run OUT SECONDS ARGS...: run fscheck within SECONDS, its output into
# the file OUT; returns its exit status (124: the time-out).
fscheck_run() {
	local out=$1 secs=$2
	shift 2
	timeout -k 5 "$secs" "$FSCHECK" "$@" >"$out" 2>&1
}

# fscheck_report PREFIX SECONDS OUT RC: each ok / not ok line of a run's output
# becomes a check of ours, its comments are shown indented. A run that ended
# badly without saying why (a crash, the time-out) is a failure too.
fscheck_report() {
	local prefix=$1 secs=$2 out=$3 rc=$4 line bad=0
	while IFS= read -r line; do
		case $line in
		"not ok "*) soft_fail "$prefix: ${line#not ok * - }"; bad=1 ;;
		"ok "*) pass "$prefix: ${line#ok * - }" ;;
		"1.."*) ;;
		*) printf '#   %s\n' "$line" ;;
		esac
	done <"$out"
	if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
		case $rc in
		124) soft_fail "$prefix: fscheck did not end within ${secs}s" ;;
		*) soft_fail "$prefix: fscheck exited $rc" ;;
		esac
	fi
	return "$rc"
}

# expect_fscheck PREFIX SECONDS ARGS...: run fscheck and report its checks.
expect_fscheck() {
	local prefix=$1 secs=$2 rc=0
	shift 2
	fscheck_run "$TEST_DIR/fscheck.out" "$secs" "$@" || rc=$?
	fscheck_report "$prefix" "$secs" "$TEST_DIR/fscheck.out" "$rc"
}

# end_checks: the test fails if any expect did (after its cleanup, as usual).
end_checks() {
	if [ "$SOFT_FAILED" -gt 0 ]; then
		printf '# %d of %d checks failed\n' "$SOFT_FAILED" "$TEST_COUNT"
		TEST_FAILED=$SOFT_FAILED
		dump_logs
		exit 1
	fi
}

# random_checks DIR OPS SECONDS: the random checker on two files in DIR at the
# same time, OPS operations with one descriptor on the first and OPS with two
# on the second (each within SECONDS), with a seed of FSCHECK_SEED or the time;
# then the overwrite regression with 4 KiB, 64 KiB and 1 MiB writes. The two
# checkers at once are also two clients of the mount interleaving their
# requests, and on 2 cores they take the time of one (each is a round trip per
# operation, about half the machine).
random_checks() {
	local dir=$1 ops=$2 secs=$3 seed=${FSCHECK_SEED:-$(date +%s)} start one two rc1=0 rc2=0
	start=$(date +%s)
	# timeout itself in the background: its pid is what cleanup stops, and it
	# passes the signal on to its fscheck.
	timeout -k 5 "$secs" "$FSCHECK" random --seed "$seed" --ops "$ops" "$dir/random1" \
		>"$TEST_DIR/random1.out" 2>&1 &
	one=$!
	timeout -k 5 "$secs" "$FSCHECK" random --seed "$((seed + 1))" --ops "$ops" --two-fds \
		"$dir/random2" >"$TEST_DIR/random2.out" 2>&1 &
	two=$!
	on_cleanup "kill $one $two 2>/dev/null"
	wait "$one" || rc1=$?
	wait "$two" || rc2=$?
	log "random, one and two descriptors at once: $(($(date +%s) - start)) s"
	fscheck_report "random, one descriptor" "$secs" "$TEST_DIR/random1.out" "$rc1"
	fscheck_report "random, two descriptors" "$secs" "$TEST_DIR/random2.out" "$rc2"
	rm -f "$dir/random1" "$dir/random2"
	expect_fscheck "overwrite 4 KiB x 1024" 60 overwrite 4K 1024 "$dir/over4k"
	expect_fscheck "overwrite 64 KiB x 256" 60 overwrite 64K 256 "$dir/over64k"
	expect_fscheck "overwrite 1 MiB x 64" 60 overwrite 1M 64 "$dir/over1m"
	rm -f "$dir/over4k" "$dir/over64k" "$dir/over1m"
}

# job_out_dir: submit a job that stays queued (no runner); its output folder,
# a normal read-write folder on the storage, is then $OUT.
job_out_dir() {
	local id
	printf '[stage s]\nrun = true\n' >"$TEST_DIR/s.conf"
	id=$(submit "$TEST_DIR/s.conf") || fail "submission failed"
	OUT=$MNT/jobs/$id/out/s
	wait_for "the job's output folder exists" 10 test -d "$OUT"
}
