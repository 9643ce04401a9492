#!/bin/bash
# Walltime-aware backfill on a 4-core host: A (2 cores, walltime 1h) runs; B
# needs all 4 and waits for A's walltime; C (2 cores, walltime 2h) would
# delay B, so it waits; D (2 cores, walltime 30m) ends before B could start,
# so it goes ahead. When the clock reaches A's walltime, B starts before C.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/time.sh"
start_all_clocked --cpus 4 --cpu-limit 100 --grace 1

cp "$(command -v sleep)" "$TEST_DIR/sleeper"
job() { # NAME CPUS WALLTIME RUN
	printf '[stage %s]\ncpus = %s\nwalltime = %s\nrun = %s\n' "$1" "$2" "$3" "$4" >"$TEST_DIR/$1.conf"
	submit "$TEST_DIR/$1.conf" "$1.conf" || fail "cannot submit $1"
}
a=$(job a 2 1h "\"$TEST_DIR/sleeper\" 600")
wait_for "A runs" 20 job_is "$a" running
b=$(job b 4 1h "touch \"$TEST_DIR/b-ran\"")
c=$(job c 2 2h "test -e \"$TEST_DIR/b-ran\"")
d=$(job d 2 30m "true")
wait_job "$d" 20 succeeded
pass "D, which ends before B could start, went ahead of B"
check "B waits" job_is "$b" queued
check "C, which would delay B, waits too" job_is "$c" queued
check "why says B needs the cores A holds" grep -q "local: needs 4 cpus, 2 of 4 free" "$MNT/jobs/$b/why"
check "why says B is next in line on local when A's walltime ends" \
	grep -q "next in line: local is held for it from .* (in 59m\|next in line: local is held for it from .* (in 1h" "$MNT/jobs/$b/why"
check "why says local is held for B" grep -q "local: fits, but is held for job $b from" "$MNT/jobs/$c/why"

set_clock +1h
wait_job "$a" 20 failed
wait_job "$b" 20 succeeded
wait_job "$c" 20 succeeded
pass "B started when A's walltime ended, and C only after B (C checks that B ran)"
