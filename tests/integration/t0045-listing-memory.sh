#!/bin/bash
# Issue 15 item 4: listing a long jobs/ must not grow either daemon for good.
# With 5,000 jobs: the 2nd to 20th listings add under 1 MB to parsa-sched
# and to parsafs (a leak or a kept peak grows with each listing), and all 20
# under 2 MB: the 10 MB of 50,000 jobs scaled to 1 MB (the mount keeps the
# last listing's owners, 24 bytes a job, for the stats that follow it, and
# frees them once stale: fs/job_cache.c). bench/listing-memory runs the
# full 50,000. The README's build's allocator only: skipped under the
# sanitizers, whose allocators keep freed memory in quarantine by design.
# The optimised build when the suite made one (scripts/test.sh), since the
# sanitizers' allocators keep freed memory in quarantine by design.
[ -x "${PARSA_FAST_BIN:-}/parsafs" ] && PARSA_BIN=$PARSA_FAST_BIN
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/listing.sh"
need_root
JOBS=${LISTING_JOBS:-5000}
if nm -D "$PARSA_BIN/parsa-sched" 2>/dev/null | grep -q '__[at]san_init'; then
	echo "# SKIP: a sanitizer build ($PARSA_BIN) measures its own allocator"
	exit 77
fi
listing_memory "$JOBS" 20 >"$TEST_DIR/figures"
sed 's/^/# /' "$TEST_DIR/figures"
figure() { sed -n "s/^$1: //p" "$TEST_DIR/figures"; }
grown_kb() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%d\n", (b - a) * 1024 }'; }
for d in sched fs; do
	later=$(grown_kb "$(figure ${d}_rss_first_mb)" "$(figure ${d}_rss_after_mb)")
	total=$(grown_kb "$(figure ${d}_rss_before_mb)" "$(figure ${d}_rss_after_mb)")
	check "listings 2-20 of $JOBS jobs add $later kB < 1024 kB to $d" test "$later" -lt 1024
	check "20 listings of $JOBS jobs add $total kB < 2048 kB to $d" test "$total" -lt 2048
done
