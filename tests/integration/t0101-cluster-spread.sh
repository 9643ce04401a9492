#!/bin/bash
# Three hosts (network namespaces), each with its own runner and mount, joined
# to a scheduler over TCP with munge: a fan-out of single-core instances is
# spread over every host and packs each as far as its cores and memory allow;
# a host that joins mid-run gets the queued work; drain, resume and remove;
# a stage that asks for a feature runs only where it is.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/cluster.sh"

cluster_setup
start_cluster_sched
start_head_fs
for h in h1 h2 h3; do
	start_host "$h" --cpus 2 --mem 4G
done
pass "three hosts joined with one command each"
check "hosts/ lists the three" test "$(ls "$MNT/hosts" | tr '\n' ' ')" = "h1 h2 h3 "
check "a host shows its detected or given capacity" grep -q '^capacity: 2 cpus, 4G mem' "$MNT/hosts/h1/status"
wait_for "the host's mount, reaching the scheduler over TCP, shows the cluster" 30 \
	grep -q '^hosts: 3 (3 up' "$(host_mnt h2)/status"
pass "the host's mount, reaching the scheduler over TCP, shows the cluster"

# Instances wait for their own gate file, so the test decides when each ends.
cat >"$TEST_DIR/gate.sh" <<GATE
#!/bin/sh
while [ ! -e "$TEST_DIR/open-\$1" ] && [ ! -e "$TEST_DIR/open-all" ]; do sleep 0.05; done
GATE
chmod 755 "$TEST_DIR/gate.sh"

cat >"$TEST_DIR/fan.conf" <<SPEC
[stage timing]
instances = 8
cpus = 1
mem = 1G
run = hostname > /dev/null; echo "\$PARSA_INDEX" > "\$PARSA_OUT/\$PARSA_INDEX.started"
      "$TEST_DIR/gate.sh" "fan-\$PARSA_INDEX"
      echo "\$PARSA_INDEX,done" > "\$PARSA_OUT/\$PARSA_INDEX.csv"
SPEC
id=$(submit "$TEST_DIR/fan.conf") || fail "submit failed"
wait_for "six instances run (2 cores x 3 hosts)" 30 \
	sh -c "[ \$(ls '$MNT/jobs/$id/out/timing' | grep -c started) -eq 6 ]"
for h in h1 h2 h3; do
	check "host $h runs 2 instances (packed to its cores)" test "$(running_on "$h")" = 2
done
check "two instances wait: the cluster is full" grep -q 'running (6 running, 0 done, 2 queued' "$MNT/jobs/$id/status"
check "why says, host by host, that they are full" grep -q 'h1: needs 1 cpus, 0 of 2 free' "$MNT/jobs/$id/why"

# A new machine joins mid-run: the queued instances go there, nothing restarts.
start_host h4 --cpus 2 --mem 4G
wait_for "the queued instances start on the new host" 30 host_runs h4 2
wait_for "all eight run" 20 sh -c "[ \$(ls '$MNT/jobs/$id/out/timing' | grep -c started) -eq 8 ]"
pass "a host that joined mid-run received work"

# Drain h4: its instances finish, nothing new goes there.
if as_user nobody sh -c "echo drain > '$MNT/hosts/h4/ctl'" 2>/dev/null; then
	fail "an ordinary user could drain a host"
fi
pass "an ordinary user cannot drain a host"
echo drain >"$MNT/hosts/h4/ctl" || fail "root cannot drain h4"
check "h4 is draining" test "$(host_state h4)" = draining
check "the cluster status says so" grep -q 'host h4: draining' "$MNT/status"
check "its instances keep running" test "$(running_on h4)" = 2
touch "$TEST_DIR/open-all"
wait_job "$id" 60 succeeded
check "eight results" test "$(cat "$MNT/jobs/$id/out/timing/"*.csv | wc -l)" -eq 8
for i in 0 1 2 3 4 5 6 7; do
	[ "$(inst_field "$id" timing "$i" attempt)" = 1 ] || fail "instance $i ran more than once"
done
pass "every instance ran exactly once"

rm -f "$TEST_DIR/open-all"
cat >"$TEST_DIR/more.conf" <<SPEC
[stage more]
instances = 8
run = "$TEST_DIR/gate.sh" "more-\$PARSA_INDEX"
SPEC
id2=$(submit "$TEST_DIR/more.conf") || fail "submit failed"
wait_for "six of eight run on the three undrained hosts" 30 grep -q 'running (6 running' "$MNT/jobs/$id2/status"
check "nothing new went to the drained host" test "$(running_on h4)" = 0
check "why says h4 is draining" grep -q 'h4: draining' "$MNT/jobs/$id2/why"
echo resume >"$MNT/hosts/h4/ctl" || fail "resume failed"
wait_for "after resume, h4 takes the last two" 30 host_runs h4 2
touch "$TEST_DIR/open-all"
wait_job "$id2" 60 succeeded
rm -f "$TEST_DIR/open-all"

# remove: only a drained host whose runner has stopped.
if echo remove >"$MNT/hosts/h4/ctl" 2>/dev/null; then
	fail "a host that is not drained was removed"
fi
pass "remove refuses a host that is not drained"
check "its ctl says why: not drained" grep -q "^last refused: 'remove' .*host h4 is not drained: write 'drain' first" "$MNT/hosts/h4/ctl"
echo drain >"$MNT/hosts/h4/ctl"
if echo remove >"$MNT/hosts/h4/ctl" 2>/dev/null; then
	fail "a host whose runner runs was removed"
fi
check "its ctl says why: the runner still runs" grep -q "^last refused: 'remove' .*the runner of host h4 still runs: stop it first" "$MNT/hosts/h4/ctl"
stop_daemon runner-h4
wait_for "h4 is down once its runner left" 20 host_is h4 down
echo remove >"$MNT/hosts/h4/ctl" || fail "remove of a drained, stopped host failed"
wait_for "h4 is gone from hosts/" 10 sh -c "! ls '$MNT/hosts' | grep -qx h4"
pass "a drained host is removed"

# Features: only the host that has it.
stop_daemon runner-h3
start_host_runner h3 --cpus 2 --mem 4G --features avx512,bigmem
wait_for "h3 shows its features" 20 grep -q '^features: avx512 bigmem' "$MNT/hosts/h3/status"
cat >"$TEST_DIR/big.conf" <<SPEC
[stage big]
instances = 4
hosts = feature:bigmem
run = hostname > /dev/null; "$TEST_DIR/gate.sh" "big-\$PARSA_INDEX"
SPEC
id3=$(submit "$TEST_DIR/big.conf") || fail "submit failed"
wait_for "two run, on the bigmem host" 30 grep -q 'running (2 running' "$MNT/jobs/$id3/status"
check "they run on h3" test "$(running_on h3)" = 2
grep -q 'h1: lacks feature bigmem' "$MNT/jobs/$id3/why" || { sed 's/^/#   /' "$MNT/jobs/$id3/why"; fail "why does not say h1 lacks the feature"; }
pass "why says the others lack the feature"
for i in 0 1 2 3; do
	h=$(inst_field "$id3" big "$i" host)
	[ -z "$h" ] || [ "$h" = h3 ] || fail "instance $i of a bigmem stage went to $h"
done
pass "a stage that asks for a feature runs only where it is"
echo cancel >"$MNT/jobs/$id3/ctl"
wait_job "$id3" 30 cancelled
