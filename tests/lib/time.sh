# Shared by the time tests (t03NN): a clock file that parsa-sched and
# parsa-runner read with --clock-file (lib/clock.h), so a test moves their
# time instead of waiting. Source it after common.sh.

CLOCK=$TEST_DIR/clock
: >"$CLOCK"

# set_clock TEXT: "+1h", "-90s", "2030-01-07T06:59:58" (local time, which then
# flows on), or "" for the system clock. Replaced in one rename: the daemons
# may read it at any moment.
set_clock() {
	printf '%s\n' "$1" >"$CLOCK.tmp" && mv -f "$CLOCK.tmp" "$CLOCK"
}

# start_all_clocked [RUNNER FLAGS...]: scheduler, mount and runner "local",
# the daemons on the test's clock.
start_all_clocked() {
	start_sched --clock-file "$CLOCK"
	start_fs
	start_runner local --clock-file "$CLOCK" "$@"
}

# A job that runs at once and ends: once it has, the scheduler has made
# passes since it was submitted (so it has looked at everything else too).
settle_passes() {
	local probe id
	probe=$TEST_DIR/probe-$RANDOM.conf
	printf '[stage p]\nrun = true\n' >"$probe"
	id=$(submit "$probe") || fail "cannot submit a probe job"
	wait_job "$id" 30 succeeded
}

# The scheduler's pass count (GET /v1/stats).
passes() {
	curl -sf --unix-socket "$SOCK" http://localhost/v1/stats | sed -n 's/.*"passes": *\([0-9]*\).*/\1/p'
}

passes_at_least() {
	local n
	n=$(passes)
	[ -n "$n" ] && [ "$n" -ge "$1" ]
}

# wait_passes: two more passes start and end (the timer makes one a second),
# so everything submitted or changed before was looked at. For when no host
# can run settle_passes' probe job.
wait_passes() {
	local n0
	n0=$(passes)
	[ -n "$n0" ] || fail "cannot read the scheduler's pass count"
	wait_for "two scheduling passes" 10 passes_at_least $((n0 + 2))
}
