#!/bin/bash
# Limits the runner enforces on each instance, with real daemons: (i) an
# instance that touches 300 MB with mem = 100M is killed and fails with the
# out-of-memory reason while a neighbour of another job lives on; (ii) two
# cpus = 1 instances running at once are pinned to different cores, as
# $PARSA_CPU_LIST says and /proc/self/status confirms; (iii) with --gpus 2,
# three gpus = 1 instances get devices 0 and 1, at most two at once (skipped
# while the scheduler refuses the gpus key).
. "$(dirname "$0")/../lib/common.sh"
command -v python3 >/dev/null || { echo "# SKIP: needs python3"; exit 77; }
start_all --cpus 2 --gpus 2 --cpu-limit 100 --mem-limit 100

# ---- (i) memory: past mem is killed, the neighbour is not ----
cat >"$TEST_DIR/neighbour.conf" <<'SPEC'
[stage nap]
run = sleep 3; echo slept > "$PARSA_OUT/slept"
SPEC
cat >"$TEST_DIR/hungry.conf" <<'SPEC'
[stage hungry]
mem = 100M
run = python3 -c 'b = bytearray(300 << 20); import time; time.sleep(5)'
SPEC
nap=$(submit "$TEST_DIR/neighbour.conf") || fail "submit failed"
wait_for "the neighbour runs" 20 grep -q '^state: running' "$MNT/jobs/$nap/stages/nap/instances/0/status"
hungry=$(submit "$TEST_DIR/hungry.conf") || fail "submit failed"
wait_job "$hungry" 30 failed
inst=$MNT/jobs/$hungry/stages/hungry/instances/0/status
log "hungry instance: $(tr '\n' '|' <"$inst")"
check "its status gives the out-of-memory reason" grep -Eq '^reason: out of memory: used [0-9.]+[KMG] of mem = 100M$' "$inst"
check "its events too" grep -Eq 'out of memory: used [0-9.]+[KMG] of mem = 100M' "$MNT/jobs/$hungry/events"
check "it was stopped by SIGKILL" grep -q '^signal: 9$' "$inst"
check "the neighbour still runs" grep -q '^state: running' "$MNT/jobs/$nap/stages/nap/instances/0/status"
wait_job "$nap" 20 succeeded
check "and ran to its end" test -f "$MNT/jobs/$nap/out/nap/slept"

# ---- (ii) cores: two cpus = 1 instances at once, each on a core of its own ----
cat >"$TEST_DIR/pinned.conf" <<'SPEC'
[stage pinned]
cpus = 1
instances = 2
run = echo "$PARSA_CPU_LIST" > "$PARSA_OUT/$PARSA_INDEX.list"
      sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status > "$PARSA_OUT/$PARSA_INDEX.allowed"
      # Both at once: wait (10 s at most) until the other has started too.
      i=0; while [ "$(ls "$PARSA_OUT" | grep -c '\.list$')" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
      ls "$PARSA_OUT" | grep -c '\.list$' > "$PARSA_OUT/$PARSA_INDEX.together"
SPEC
pinned=$(submit "$TEST_DIR/pinned.conf") || fail "submit failed"
wait_job "$pinned" 30 succeeded
out=$MNT/jobs/$pinned/out/pinned
for i in 0 1; do
	check "instance $i ran beside the other" grep -qx 2 "$out/$i.together"
	check "instance $i: \$PARSA_CPU_LIST ($(cat "$out/$i.list")) is its Cpus_allowed_list" \
		cmp -s "$out/$i.list" "$out/$i.allowed"
	check "instance $i: one core" grep -Eqx '[0-9]+' "$out/$i.list"
done
check "the two are pinned to different cores" test "$(cat "$out/0.list")" != "$(cat "$out/1.list")"

# ---- (iii) GPUs: --gpus 2, three gpus = 1 instances ----
cat >"$TEST_DIR/gpus.conf" <<'SPEC'
[stage train]
gpus = 1
instances = 3
run = echo "$CUDA_VISIBLE_DEVICES $PARSA_GPUS" > "$PARSA_OUT/$PARSA_INDEX.gpu"
      echo "$(date +%s%N) 1" > "$PARSA_OUT/$PARSA_INDEX.times"
      sleep 2
      echo "$(date +%s%N) -1" >> "$PARSA_OUT/$PARSA_INDEX.times"
SPEC
if ! gpus=$(submit "$TEST_DIR/gpus.conf"); then
	if grep -q "gpus" "$MNT/queue/gpus.conf.rejected" 2>/dev/null; then
		# skip: the scheduler does not take the gpus key yet (being written on main)
		log "skip (iii): the scheduler refuses the spec key gpus: $(head -1 "$MNT/queue/gpus.conf.rejected")"
		exit 0
	fi
	fail "submit failed: $(cat "$MNT/queue/gpus.conf.rejected" 2>/dev/null)"
fi
wait_job "$gpus" 40 succeeded
out=$MNT/jobs/$gpus/out/train
for i in 0 1 2; do
	check "instance $i got one GPU, 0 or 1, in both variables ($(cat "$out/$i.gpu"))" grep -Eqx '([01]) \1' "$out/$i.gpu"
done
# At most two at once, and those running together on distinct devices.
peak=$(cat "$out"/*.times | sort -n -k1,1 -k2,2n | awk '{ n += $2; if (n > m) m = n } END { print m }')
check "at most two ran at once (peak $peak)" test "$peak" -le 2
overlap_same=0
for i in 0 1 2; do
	for j in 0 1 2; do
		[ "$i" -lt "$j" ] || continue
		read -r si _ < <(head -1 "$out/$i.times"); read -r ei _ < <(tail -1 "$out/$i.times")
		read -r sj _ < <(head -1 "$out/$j.times"); read -r ej _ < <(tail -1 "$out/$j.times")
		if [ "$si" -lt "$ej" ] && [ "$sj" -lt "$ei" ] && cmp -s "$out/$i.gpu" "$out/$j.gpu"; then
			overlap_same=1
		fi
	done
done
check "instances running together had distinct devices" test "$overlap_same" -eq 0
check "both devices were used" test "$(cut -d' ' -f1 "$out"/*.gpu | sort -u | wc -l)" -eq 2
