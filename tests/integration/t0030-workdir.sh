#!/bin/bash
# Where an instance starts: the folder `cp` or `parsa submit` was run from
# (as a Slurm job does), when it exists on the host; the stage's output
# folder on a host without it; `workdir = out` and `workdir = /folder` in
# [job] say otherwise, and a workdir the spec names that is missing fails the
# instance with the reason. As an ordinary user, from a folder of theirs.
. "$(dirname "$0")/../lib/common.sh"
need_root
start_all --cpus 2 --cpu-limit 100
ensure_user parsa-wd parsa-wd

lab=$TEST_DIR/home/lab
mkdir -p "$lab"
chmod 755 "$TEST_DIR" "$TEST_DIR/home"
cat >"$lab/sim.sh" <<'SH'
#!/bin/sh
echo "sim $1 in $(pwd)" > "$PARSA_OUT/result"
SH
chmod 755 "$lab/sim.sh"
cat >"$lab/sweep.conf" <<'SPEC'
[stage sim]
run = ./sim.sh 7
SPEC
chown -R parsa-wd:parsa-wd "$lab"

# cp from the user's folder: ./sim.sh is found there.
(cd "$lab" && as_user parsa-wd cp sweep.conf "$MNT/queue/") || fail "cp as parsa-wd"
id=$(as_user parsa-wd readlink "$MNT/jobs/last")
wait_job "$id" 30 succeeded
check "cp: the instance ran in the folder cp ran in" test "$(cat "$MNT/jobs/$id/out/sim/result")" = "sim 7 in $lab"
check "status says where and why" grep -qx "workdir: $lab (where it was submitted from; a host without it: the output folder)" "$MNT/jobs/$id/status"

# parsa submit from the same folder.
out=$(cd "$lab" && as_user parsa-wd parsa submit --sched "unix:$SOCK" sweep.conf) || fail "parsa submit: $out"
id=$(printf '%s\n' "$out" | grep -o '[0-9]\+' | head -1)
wait_job "$id" 30 succeeded
check "parsa submit: the same folder" test "$(cat "$MNT/jobs/$id/out/sim/result")" = "sim 7 in $lab"

# A folder gone (or never there) on the host: the output folder.
gone=$TEST_DIR/home/gone
mkdir -p "$gone"
chown parsa-wd:parsa-wd "$gone"
cat >"$gone/late.conf" <<SPEC
[stage wait]
run = while [ ! -e "$TEST_DIR/go" ]; do sleep 0.1; done

[stage where]
after = wait
run = pwd > "\$PARSA_OUT/where"
SPEC
chmod 644 "$gone/late.conf"
(cd "$gone" && as_user parsa-wd cp late.conf "$MNT/queue/") || fail "cp late.conf"
id=$(as_user parsa-wd readlink "$MNT/jobs/last")
rm -rf "$gone"
touch "$TEST_DIR/go"
chmod 644 "$TEST_DIR/go"
wait_job "$id" 30 succeeded
check "a folder the host lacks: the output folder" test "$(cat "$MNT/jobs/$id/out/where/where")" = "$MNT/jobs/$id/out/where"

# workdir = out, and a workdir the spec names.
printf '[job]\nworkdir = out\n\n[stage s]\nrun = pwd > "$PARSA_OUT/where"\n' >"$lab/out.conf"
printf '[job]\nworkdir = %s\n\n[stage s]\nrun = pwd > "$PARSA_OUT/where"\n' "$TEST_DIR/home" >"$lab/named.conf"
printf '[job]\nworkdir = /nonexistent/parsa-wd\n\n[stage s]\nrun = true\n' >"$lab/missing.conf"
chmod 644 "$lab"/*.conf
(cd "$lab" && as_user parsa-wd cp out.conf named.conf missing.conf "$MNT/queue/") || fail "cp the workdir specs"
declare -A ids
for name in out named missing; do
	ids[$name]=$(for d in "$MNT"/jobs/[0-9]*; do grep -qx "name: $name" "$d/status" 2>/dev/null && basename "$d"; done | sort -n | tail -1)
	[ -n "${ids[$name]}" ] || fail "no job named $name"
done
wait_job "${ids[out]}" 30 succeeded
check "workdir = out: the output folder" test "$(cat "$MNT/jobs/${ids[out]}/out/s/where")" = "$MNT/jobs/${ids[out]}/out/s"
wait_job "${ids[named]}" 30 succeeded
check "workdir = /folder: that folder" test "$(cat "$MNT/jobs/${ids[named]}/out/s/where")" = "$TEST_DIR/home"
wait_job "${ids[missing]}" 30 failed
check "a missing workdir the spec names fails with the reason" \
	grep -q "cannot start: workdir /nonexistent/parsa-wd: No such file or directory" "$MNT/jobs/${ids[missing]}/stages/s/instances/0/status"
pass "instances start where they were submitted from, or where the spec says"
