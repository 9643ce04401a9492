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

# expect_fscheck PREFIX SECONDS ARGS...: run fscheck; each of its ok / not ok
# lines becomes a check of ours, its comments are shown indented. A run that
# ends badly without saying why (a crash, the time-out) is a failure too.
expect_fscheck() {
	local prefix=$1 secs=$2 rc line bad=0
	shift 2
	timeout -k 5 "$secs" "$FSCHECK" "$@" >"$TEST_DIR/fscheck.out" 2>&1
	rc=$?
	while IFS= read -r line; do
		case $line in
		"not ok "*) soft_fail "$prefix: ${line#not ok * - }"; bad=1 ;;
		"ok "*) pass "$prefix: ${line#ok * - }" ;;
		"1.."*) ;;
		*) printf '#   %s\n' "$line" ;;
		esac
	done <"$TEST_DIR/fscheck.out"
	if [ "$rc" -ne 0 ] && [ "$bad" -eq 0 ]; then
		case $rc in
		124) soft_fail "$prefix: fscheck did not end within ${secs}s" ;;
		*) soft_fail "$prefix: fscheck exited $rc" ;;
		esac
	fi
	return "$rc"
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

# random_checks DIR OPS SECONDS [WHICH]: the random checker on a file in DIR,
# OPS operations with one descriptor and OPS with two (each within SECONDS),
# with a seed of FSCHECK_SEED or the time; then the overwrite regression with
# 4 KiB, 64 KiB and 1 MiB writes. WHICH (one, two) runs only that half: on NFS
# through the sanitizer build each half takes a test of its own.
random_checks() {
	local dir=$1 ops=$2 secs=$3 which=${4:-both} seed=${FSCHECK_SEED:-$(date +%s)} start
	if [ "$which" != two ]; then
		start=$(date +%s)
		expect_fscheck "random, one descriptor" "$secs" random --seed "$seed" --ops "$ops" "$dir/random1"
		log "random, one descriptor: $(($(date +%s) - start)) s"
		rm -f "$dir/random1"
	fi
	if [ "$which" != one ]; then
		start=$(date +%s)
		expect_fscheck "random, two descriptors" "$secs" random --seed "$((seed + 1))" --ops "$ops" \
			--two-fds "$dir/random2"
		log "random, two descriptors: $(($(date +%s) - start)) s"
		rm -f "$dir/random2"
	fi
	[ "$which" = two ] && return
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
