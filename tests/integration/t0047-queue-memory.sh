#!/bin/bash
# Issue 35 item 6: thousands of new names in queue/ must not grow parsafs for
# good. Each job submitted leaves names in the kernel's cache (jobs/N,
# jobs/N/status, ...) and each such name pins a node in libfuse until the
# kernel forgets it, which an idle kernel never does: 600 s of submissions
# grew the mount from 11 to 49 MB. The mount now has the kernel forget the
# unused names below jobs/ every QUEUE_FORGET_EVERY (512) submissions
# (fs_forget_top_folder). After a warm-up, ROUNDS rounds of 1,200 distinct
# names (4 writers, a quarter of them rejected, six names of each accepted
# job looked at) may add at most 2 MB from the end of the first round to
# the largest RSS after it: what remains is the bounded caches (the last
# 8,192 jobs' owners, about 0.27 MB a round until full, so 1.1 MB over four
# rounds; 1,024 .rejected files) and the allocator's slack. Measured on 2
# cores: 1.1 to 1.5 MB with the fix (CI saw 1.5 MB, so 1.5 MB was too tight
# a bound); 2.2 MB and more without it (about 1.1 MB a round, until the
# kernel happened to reclaim its cache). The optimised build's allocator
# only, as in t0045.
[ -x "${PARSA_FAST_BIN:-}/parsafs" ] && PARSA_BIN=$PARSA_FAST_BIN
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/listing.sh"
need_root
ROUNDS=${QUEUE_MEMORY_ROUNDS:-5}
if nm -D "$PARSA_BIN/parsafs" 2>/dev/null | grep -q '__[at]san_init'; then
	echo "# SKIP: a sanitizer build ($PARSA_BIN) measures its own allocator"
	exit 77
fi
start_sched
start_fs
fspid=${DAEMON_PID[fs]}
printf '[stage s]\nrun = true\n' >"$TEST_DIR/ok.conf"
printf '[stage s]\nrun = true\ncpu = 3\n' >"$TEST_DIR/bad.conf"

# writer ROUND N: N distinct names, every fourth one rejected.
writer() {
	local i id
	for i in $(seq 1 "$2"); do
		if [ $((i % 4)) -eq 0 ]; then
			cp "$TEST_DIR/bad.conf" "$MNT/queue/bad-$1-$i.conf" 2>/dev/null
		else
			cp "$TEST_DIR/ok.conf" "$MNT/queue/job-$1-$i.conf" || return 1
			id=$(readlink "$MNT/jobs/last") || return 1
			cat "$MNT/jobs/$id/"{status,why,events,spec} >/dev/null || return 1
			ls "$MNT/jobs/$id/stages/s" >/dev/null || return 1
		fi
	done
	return 0
}
round() {
	local pids=() w
	for w in 1 2 3 4; do writer "$1-$w" 300 & pids+=($!); done
	for w in "${pids[@]}"; do wait "$w" || fail "round $1: a writer failed"; done
}

round warm
first= peak=0
for r in $(seq 1 "$ROUNDS"); do
	round "$r"
	rss=$(rss_mb "$fspid")
	log "after round $r ($((r * 1200)) names): parsafs $rss MB"
	[ -n "$first" ] || first=$rss
	peak=$(awk -v a="$peak" -v b="$rss" 'BEGIN { print (b > a ? b : a) }')
done
grown=$(awk -v a="$first" -v b="$peak" 'BEGIN { printf "%d\n", (b - a) * 1024 }')
check "rounds 2-$ROUNDS of 1,200 new names add at most $grown kB < 2048 kB to parsafs" test "$grown" -lt 2048
daemon_alive fs || fail "parsafs died"
