#!/bin/bash
# Issue 15 item 4: listing a long jobs/ must not grow either daemon for good.
# 20 listings of 5,000 jobs add under 1 MB (the 10 MB of 50,000 jobs, scaled)
# to parsa-sched and to parsafs, 2 s after the last. bench/listing-memory
# runs the full 50,000. Needs the README's build's allocator: skipped under
# the sanitizers, whose allocators keep freed memory in quarantine by design.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/listing.sh"
need_root
JOBS=${LISTING_JOBS:-5000}
LIMIT_KB=$((10240 * JOBS / 50000))
if nm -D "$PARSA_BIN/parsa-sched" 2>/dev/null | grep -q '__[at]san_init'; then
	echo "# SKIP: a sanitizer build ($PARSA_BIN) measures its own allocator"
	exit 77
fi
listing_memory "$JOBS" 20 >"$TEST_DIR/figures"
sed 's/^/# /' "$TEST_DIR/figures"
figure() { sed -n "s/^$1: //p" "$TEST_DIR/figures"; }
grown_kb() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%d\n", (b - a) * 1024 }'; }
sched_kb=$(grown_kb "$(figure sched_rss_before_mb)" "$(figure sched_rss_after_mb)")
fs_kb=$(grown_kb "$(figure fs_rss_before_mb)" "$(figure fs_rss_after_mb)")
check "20 listings of $JOBS jobs add ${sched_kb} kB < ${LIMIT_KB} kB to parsa-sched" test "$sched_kb" -lt "$LIMIT_KB"
check "20 listings of $JOBS jobs add ${fs_kb} kB < ${LIMIT_KB} kB to parsafs" test "$fs_kb" -lt "$LIMIT_KB"
