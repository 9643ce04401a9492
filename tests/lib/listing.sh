# Memory of a long jobs/ listing (issue 15 item 4), shared by
# tests/integration/t0045-listing-memory.sh and bench/listing-memory. Source
# after common.sh.

# rss_mb PID: the resident set of PID in MB (one decimal)
rss_mb() {
	awk '/^VmRSS:/ { printf "%.1f\n", $2 / 1024 }' "/proc/$1/status"
}

# list_jobs JOBS TIMES: TIMES os.listdir of jobs/, each checked to hold JOBS jobs
list_jobs() {
	python3 - "$MNT/jobs" "$1" "$2" <<'PY' || fail "listing jobs/"
import os, sys
path, want, times = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(times):
    got = sum(1 for name in os.listdir(path) if name.isdigit())
    if got != want:
        sys.exit("listing %d: %d jobs, expected %d" % (i, got, want))
PY
}

# listing_memory JOBS LISTINGS: JOBS finished jobs in the database, a
# scheduler and a mount, then LISTINGS listings of jobs/. Prints key: value lines: jobs, submit_s, list_s, and the resident MB
# of each daemon before the first listing (sched_rss_before_mb,
# fs_rss_before_mb), after it (..._first_mb) and 2 s after the last
# (..._after_mb).
listing_memory() {
	local jobs=$1 listings=$2 sb fb sf ff t0 t1 make=$PARSA_BIN/../tests/make-history
	# Finished jobs of the last 20 days, all of which jobs/ lists, written
	# through the store (tests/tools/make_history.c): 50,000 in seconds,
	# where submitting them one by one takes minutes.
	mkdir -p "$STATE"
	[ -x "$make" ] || fail "no $make (cmake --build builds it with the tests)"
	"$make" "$STATE/parsa.db" "$jobs" 1 20 >/dev/null || fail "making $jobs jobs"
	start_sched
	start_fs
	# One view read, so both daemons have served a request of each kind.
	cat "$MNT/jobs/1/status" >/dev/null || fail "jobs/1/status"
	sb=$(rss_mb "${DAEMON_PID[sched]}")
	fb=$(rss_mb "${DAEMON_PID[fs]}")
	t0=$(date +%s%N)
	list_jobs "$jobs" 1
	sf=$(rss_mb "${DAEMON_PID[sched]}")
	ff=$(rss_mb "${DAEMON_PID[fs]}")
	list_jobs "$jobs" $((listings - 1))
	t1=$(date +%s%N)
	sleep 2
	echo "jobs: $jobs"
	echo "list_s: $(awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.1f\n", ns / 1e9 }')"
	echo "sched_rss_before_mb: $sb"
	echo "sched_rss_first_mb: $sf"
	echo "sched_rss_after_mb: $(rss_mb "${DAEMON_PID[sched]}")"
	echo "fs_rss_before_mb: $fb"
	echo "fs_rss_first_mb: $ff"
	echo "fs_rss_after_mb: $(rss_mb "${DAEMON_PID[fs]}")"
}
