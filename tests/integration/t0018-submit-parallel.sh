#!/bin/bash
# Parallel submitters through the mount (issue 16, group commit): eight shell
# loops of cp into queue/ at once, one of them with specs that are refused,
# each good cp makes exactly one job of its own and each bad one none (with
# its .rejected); every acknowledged job survives a SIGKILL of the scheduler
# right after the last cp returned (each close returned after its commit).
. "$(dirname "$0")/../lib/common.sh"
start_sched
start_fs

api() { curl -s --max-time 10 --unix-socket "$SOCK" "$@"; }
loops=8
each=50

# Loop k submits par-k-i (i = 1..each), each spec under its own job name; loop
# 0 also sends a spec with an unknown key between two good ones.
mkdir -p "$TEST_DIR/specs"
for ((k = 0; k < loops; k++)); do
	for ((i = 1; i <= each; i++)); do
		printf '[job]\nname = par-%d-%d\nstart = +1h\n[stage s]\nrun = true\n' "$k" "$i" \
			>"$TEST_DIR/specs/par-$k-$i.conf"
	done
done
printf '[stage s]\nrun = true\ncpu = 2\n' >"$TEST_DIR/specs/bad.conf"

loop() {
	local k=$1 i
	for ((i = 1; i <= each; i++)); do
		cp "$TEST_DIR/specs/par-$k-$i.conf" "$MNT/queue/par-$k.conf" ||
			echo "par-$k-$i" >>"$TEST_DIR/failed"
		if [ "$k" -eq 0 ]; then
			if cp "$TEST_DIR/specs/bad.conf" "$MNT/queue/bad.conf" 2>/dev/null; then
				echo "bad-$i" >>"$TEST_DIR/bad-accepted"
			fi
		fi
	done
}

before=$(api http://localhost/v1/stats | jq .submitted)
start_ns=$(date +%s%N)
pids=()
for ((k = 0; k < loops; k++)); do
	loop "$k" &
	pids+=($!)
done
for p in "${pids[@]}"; do
	timeout 120 tail --pid="$p" -f /dev/null || fail "loop $p did not end in 120 s"
done
ms=$((($(date +%s%N) - start_ns) / 1000000))
log "$((loops * each)) good and $each bad submissions from $loops loops in ${ms} ms"
check "every good cp returned 0" [ ! -s "$TEST_DIR/failed" ]
check "every bad cp failed" [ ! -s "$TEST_DIR/bad-accepted" ]
check "the bad one's reason is in its .rejected" grep -q "unknown key 'cpu'" "$MNT/queue/bad.conf.rejected"

stats=$(api http://localhost/v1/stats)
log "stats: $(printf '%s' "$stats" | jq -c '{submitted, submit_groups}')"
check "the scheduler took $((loops * each)) submissions" \
	[ "$(($(printf '%s' "$stats" | jq .submitted) - before))" -eq $((loops * each)) ]

# Acknowledged means committed: a SIGKILL now loses none of them.
stop_daemon sched KILL
start_sched
names=$(api http://localhost/v1/jobs | jq -r '.jobs[].name' | grep '^par-' | sort)
check "after a SIGKILL and a restart, $((loops * each)) jobs" \
	[ "$(printf '%s\n' "$names" | grep -c .)" -eq $((loops * each)) ]
check "each submission made one job of its own" \
	[ "$(printf '%s\n' "$names" | sort -u | grep -c .)" -eq $((loops * each)) ]
ids=$(api http://localhost/v1/jobs | jq -r '.jobs[] | select(.name | startswith("par-")) | .id')
check "with ids of their own" [ "$(printf '%s\n' "$ids" | sort -u | grep -c .)" -eq $((loops * each)) ]
check "and nothing of the refused ones" \
	[ "$(api http://localhost/v1/jobs | jq '[.jobs[] | select(.name == "bad")] | length')" -eq 0 ]
