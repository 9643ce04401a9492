#!/bin/bash
# The web page and /metrics against a real `parsa up` that ran the lab's
# pipeline and a failing job: headless Chromium loads every page (the DOM names
# the jobs, stages, states and the failed instance's reason; a screenshot of
# each goes to the test's output), no page refers to anything off this
# machine, promtool accepts /metrics and its counters moved by what ran, and
# `parsa jobs`, `history`, `usage` and the mount's usage file give the page's
# numbers.
. "$(dirname "$0")/../lib/common.sh"

need_root
for tool in chromium promtool; do
	if ! command -v "$tool" >/dev/null; then
		echo "# SKIP: $tool is not installed (scripts/install-deps.sh installs it)"
		exit 77
	fi
done

# Screenshots outlive the test folder: the build's test-output/.
OUT=${PARSA_TEST_OUTPUT:-$PARSA_BIN/../test-output}/$TEST_NAME
rm -rf "$OUT"
mkdir -p "$OUT"
HOST=t17host

on_cleanup "parsa down --mount '$MNT' --state '$STATE'"
MOUNTS+=("$MNT")
parsa up --detach --mount "$MNT" --state "$STATE" --storage "$STORAGE" --name "$HOST" \
	--cpus 4 --cpu-limit 100 --mem-limit 100 --web 127.0.0.1:0 >"$LOGS/up.log" 2>&1 ||
	fail "parsa up --detach failed: $(tail -5 "$LOGS/up.log")"
URL=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["web"] or "")' "$STATE/up.json")
check "up.json records the page's URL on loopback" sh -c "echo '$URL' | grep -Eq '^http://127\.0\.0\.1:[0-9]+/$'"
check "the banner prints it" grep -q "web: *$URL" "$LOGS/up.log"
check "the page answers" curl -sf -o /dev/null "$URL"

metric() { # metric FILE NAME{LABELS}: its value (0 when absent)
	awk -v m="$2" '$1 == m { v = $2 } END { print v + 0 }' "$1"
}

curl -sf "${URL}metrics" >"$OUT/metrics-before.txt" || fail "GET /metrics failed"
check "promtool accepts /metrics (before)" sh -c "promtool check metrics <'$OUT/metrics-before.txt' >'$OUT/promtool-before.txt' 2>&1"

id=$(submit "$PARSA_SRC/examples/lab-pipeline.conf") || fail "cp into queue/ failed"
printf '[stage boom]\nrun = echo about to fail; exit 3\n' >"$TEST_DIR/boom.conf"
bad=$(submit "$TEST_DIR/boom.conf") || fail "cp of the failing job failed"
wait_job "$id" 120 succeeded
wait_job "$bad" 60 failed
pass "the pipeline succeeded and the failing job failed"

curl -sf "${URL}metrics" >"$OUT/metrics-after.txt" || fail "GET /metrics failed"
check "promtool accepts /metrics without a warning (after)" \
	sh -c "promtool check metrics <'$OUT/metrics-after.txt' >'$OUT/promtool-after.txt' 2>&1 && ! test -s '$OUT/promtool-after.txt'"
delta() { # delta SERIES: after - before
	echo $(($(metric "$OUT/metrics-after.txt" "$1") - $(metric "$OUT/metrics-before.txt" "$1")))
}
check "18 attempts succeeded (1 warm, 16 timing, 1 gather)" \
	test "$(delta 'parsa_instance_attempts_ended_total{result="succeeded"}')" -eq 18
check "1 attempt failed" test "$(delta 'parsa_instance_attempts_ended_total{result="failed"}')" -eq 1
check "2 submissions" test "$(delta parsa_submissions_total)" -eq 2
check "the jobs by state" test "$(metric "$OUT/metrics-after.txt" 'parsa_jobs{state="failed"}')" -eq 1
check "root's team has a fair-share usage" awk '$1 ~ /^parsa_team_fair_share_cpu_seconds\{team="root"\}$/ && $2 > 0 { ok = 1 } END { exit !ok }' "$OUT/metrics-after.txt"
check "the passes are counted" test "$(metric "$OUT/metrics-after.txt" parsa_scheduling_pass_duration_seconds_count)" -gt 0
check "the host is up" test "$(metric "$OUT/metrics-after.txt" "parsa_host_up{host=\"$HOST\"}")" -eq 1
check "the build info names the version" grep -q '^parsa_build_info{version="[0-9.]*"} 1$' "$OUT/metrics-after.txt"
check "no label names a job or an instance" sh -c "! grep -Eq '\\{[^}]*(job|instance)=' '$OUT/metrics-after.txt'"

# Chromium: its own profile, every name but 127.0.0.1 unresolvable, any
# proxied request to a closed port; its whole process group killed after each run.
CHROME=(chromium --headless --no-sandbox --disable-gpu --no-first-run --no-default-browser-check
	--disable-background-networking --disable-component-update --disable-sync --disable-extensions
	--disable-default-apps --user-data-dir="$TEST_DIR/chromium"
	--host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1" --proxy-server="http://127.0.0.1:9"
	--proxy-bypass-list="127.0.0.1" --virtual-time-budget=3000)
chrome() { # chrome OUTFILE ARGS...: one run, at most 60 s
	local out=$1 pid rc
	shift
	setsid timeout -k 5 60 "${CHROME[@]}" "$@" >"$out" 2>>"$LOGS/chromium.log" &
	pid=$!
	on_cleanup "kill -KILL -- -$pid"
	wait "$pid"
	rc=$?
	kill -KILL -- "-$pid" 2>/dev/null || true
	return "$rc"
}

# page NAME PATH WORDS...: its DOM has every word; a screenshot beside it.
page() {
	local name=$1 path=$2 word
	shift 2
	chrome "$OUT/$name.html" --dump-dom "$URL$path" || fail "chromium could not load $path"
	for word in "$@"; do
		grep -qF -- "$word" "$OUT/$name.html" || fail "$path: the page lacks '$word'"
	done
	chrome /dev/null --screenshot="$OUT/$name.png" --window-size=1400,1000 "$URL$path" ||
		fail "chromium could not take a screenshot of $path"
	test -s "$OUT/$name.png" || fail "$path: no screenshot"
	# Nothing it loads or links to is off this machine.
	if curl -sf "$URL$path" | grep -Eio '(src|href|action)="[a-z]*:?//[^"]*"' | grep -v '127\.0\.0\.1'; then
		fail "$path refers to another machine"
	fi
	pass "page $path: ${*:-loads}"
}
page home / lab-pipeline boom "$HOST" succeeded failed "fair share" free
page jobs /jobs lab-pipeline boom warm timing gather succeeded failed
page job /jobs/"$id" lab-pipeline warm timing gather succeeded "<svg" 'class="gantt"' "$HOST" results.csv
page job-failed /jobs/"$bad" boom failed "exit code 3" 'class="c-failed"'
page instance-log /jobs/"$bad"/stages/boom/instances/0/log "about to fail" "exit code 3" "$HOST" failed
page host /hosts/"$HOST" "$HOST" "CPU %" "memory %" ">100%<" ">now<" "outside parsa (orange line)" 'class="whole"'
check "the host's charts have clock times along the bottom" grep -Eq '>[0-9]{2}:[0-9]{2}</text>' "$OUT/host.html"
page usage /usage "cpu-hours" root
page schedules /schedules "Recurring pipelines"
page jobs-failed "/jobs?state=failed" boom
check "a failed job's cell counts its failure, never 100%" grep -q '0/1 ok, 1 failed' "$OUT/jobs.html"
check "and the pipeline's its instances" grep -q '18/18 ok' "$OUT/jobs.html"
check "a stage box says how many are ok" grep -q 'failed: 0/1 ok, 1 failed' "$OUT/job-failed.html"
check "the state filter leaves the pipeline out" sh -c "! grep -q '>lab-pipeline<' '$OUT/jobs-failed.html'"
chrome "$OUT/jobs-page.html" --dump-dom "${URL}jobs?limit=1" || fail "chromium could not load a page of one job"
check "a page of one job links to the older ones" grep -q 'rel="next"' "$OUT/jobs-page.html"
# What the log page's script polls: the log from an offset, where to go on, whether it grows.
raw="${URL}jobs/$bad/stages/boom/instances/0/log?raw=1"
curl -sf -D "$OUT/log-headers.txt" "$raw&offset=0" >"$OUT/log-raw.txt" || fail "GET the raw log failed"
check "the raw log is the mount's log" cmp -s "$OUT/log-raw.txt" "$MNT/jobs/$bad/stages/boom/instances/0/log"
check "it says where the next read starts" grep -qi "^X-Parsa-Next: $(stat -c %s "$OUT/log-raw.txt")" "$OUT/log-headers.txt"
check "and that an ended instance's log no longer grows" grep -qi '^X-Parsa-Live: 0' "$OUT/log-headers.txt"
check "from the end there is nothing more" test -z "$(curl -sf "$raw&offset=$(stat -c %s "$OUT/log-raw.txt")")"
check "the mount's paths answer as text" sh -c "curl -sf '${URL}jobs/$id/status' | grep -q '^state: succeeded'"
for path in jobs/$id/why jobs/$id/events jobs/$id/spec jobs/$id/stages/timing/status \
	jobs/$id/stages/timing/instances/3/status hosts/$HOST/status; do
	# A host's status is live (its heartbeat's age in tenths of a second), so the
	# two reads may straddle a change: the same bytes once in five tries is the proof.
	same=0
	for _ in 1 2 3 4 5; do
		curl -sf "$URL$path" >"$OUT/file.txt" || fail "GET /$path failed"
		# Through cat: cmp trusts a file's size, and the mount's views say 0 until read.
		if cat "$MNT/$path" | cmp -s "$OUT/file.txt" -; then
			same=1
			break
		fi
	done
	[ "$same" = 1 ] ||
		fail "/$path is not the mount's $path: $(cat "$MNT/$path" | diff "$OUT/file.txt" - | head -5)"
done
pass "the page's text files are the mount's, byte for byte"
check "out/ lists what the stage wrote" grep -q '<code>ckpt-0007/</code>' "$OUT/job.html"
chmod 0750 "$MNT/jobs/$id/out/warm" || fail "chmod of out/warm through the mount failed"
curl -sf "${URL}jobs/$id" >"$OUT/job-private.html" || fail "GET /jobs/$id failed"
check "a folder its owner closed to others is not listed" \
	sh -c "grep -q 'lets only some read it' '$OUT/job-private.html' && ! grep -q 'ckpt-0007/' '$OUT/job-private.html'"
chmod 0755 "$MNT/jobs/$id/out/warm"
check "the page changes nothing: POST is refused" \
	test "$(curl -s -o /dev/null -w '%{http_code}' -X POST "${URL}jobs/$id")" = 405
cp "$OUT/home.png" "$OUT/dashboard.png"

# The CLI and the mount give the page's numbers.
parsa jobs --all --json >"$OUT/jobs.json" || fail "parsa jobs --json failed"
check "parsa jobs --json lists both jobs" python3 -c "
import json,sys; j=json.load(open(sys.argv[1])); ids={x['id'] for x in j['jobs']}
sys.exit(0 if {$id,$bad} <= ids else 1)" "$OUT/jobs.json"
check "as many jobs as the page counts" sh -c "python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"total\"])' '$OUT/jobs.json' | grep -qx 2 && grep -q '>2 jobs' '$OUT/jobs.html'"
parsa usage --json >"$OUT/usage.json" || fail "parsa usage --json failed"
check "parsa usage --json: the page's job counts" python3 -c "
import json,sys; t=json.load(open(sys.argv[1]))['total']
sys.exit(0 if (t['jobs'], t['succeeded'], t['failed']) == (2, 1, 1) else 1)" "$OUT/usage.json"
parsa jobs >"$OUT/jobs.txt" || fail "parsa jobs failed"
check "parsa jobs (yours, ended in the last day) shows both" \
	sh -c "grep -q '^ *$id lab-pipeline .* succeeded ' '$OUT/jobs.txt' && grep -q '^ *$bad boom .* failed ' '$OUT/jobs.txt'"
check "parsa jobs counts what succeeded and what failed (never 1/1 for a failure)" \
	sh -c "grep -q '^ *$id lab-pipeline .* 18/18 ok ' '$OUT/jobs.txt' && grep -q '^ *$bad boom .* 0/1 ok, 1 failed ' '$OUT/jobs.txt'"
parsa history --all --csv >"$OUT/history.csv" || fail "parsa history --csv failed"
check "parsa history --csv: the failed job with its reason" grep -q "^$bad,boom,root,.*,failed,.*exit code 3" "$OUT/history.csv"
check "parsa history --csv: the pipeline's peak memory" grep -Eq "^$id,lab-pipeline,root,[^,]*,succeeded,[^,]*,[0-9.]+,[0-9.]+,[0-9.]+,[0-9]+," "$OUT/history.csv"
parsa history --all >"$OUT/history.txt" || fail "parsa history failed"
check "parsa history: a line per finished job" test "$(grep -cE "^ *($id|$bad) " "$OUT/history.txt")" -eq 2
parsa usage --csv --since 30d >"$OUT/usage-cli.csv" || fail "parsa usage --csv failed"
curl -sf "${URL}usage?format=csv&since=30d" >"$OUT/usage-page.csv" || fail "GET /usage?format=csv failed"
check "parsa usage --csv is the page's CSV" cmp -s "$OUT/usage-cli.csv" "$OUT/usage-page.csv"
check "usage counts one succeeded and one failed job" grep -q '^root,[0-9.]*,2,1,1,0,' "$OUT/usage-cli.csv"
curl -sf "${URL}usage?format=periods-csv&since=30d&period=day" >"$OUT/usage-days.csv" || fail "GET the per-day CSV failed"
check "the per-day CSV has today's row of root" grep -q "^$(date +%Y-%m-%d),root,[0-9.]*$" "$OUT/usage-days.csv"
parsa usage >"$OUT/usage-cli.txt" || fail "parsa usage failed"
cat "$MNT/usage" >"$OUT/usage-mount.txt" || fail "cannot read MOUNT/usage"
check "cat MOUNT/usage is parsa usage" cmp -s "$OUT/usage-cli.txt" "$OUT/usage-mount.txt"
hours=$(awk -F, '$1 == "root" { print $2 }' "$OUT/usage-cli.csv")
check "the page shows the same cpu-hours ($hours)" grep -q ">$hours<" "$OUT/usage.html"

parsa down --mount "$MNT" --state "$STATE" >>"$LOGS/up.log" 2>&1 || fail "parsa down failed"
check "the page stops with parsa down" sh -c "! curl -sf -o /dev/null --max-time 5 '$URL'"
check "and its address goes with it" test ! -e "$STATE/web.url"

# Jobs no longer in memory: a scheduler on the same state that keeps finished
# jobs for a second loads neither at start; their pages read them back.
start_sched --keep-finished 1s --web 127.0.0.1:0
check "the restarted scheduler holds no finished job" grep -q ': 0 jobs in memory' "$LOGS/sched.log"
URL=$(cat "$STATE/web.url")
curl -sf "${URL}jobs/$id" >"$OUT/old-job.html" || fail "the page of a job out of memory failed"
for word in lab-pipeline warm timing gather succeeded 'class="gantt"'; do
	grep -qF -- "$word" "$OUT/old-job.html" || fail "the page of job $id read back lacks '$word'"
done
pass "the page of a job out of memory is the same page"
check "its failed instance's log, read back" sh -c "curl -sf '${URL}jobs/$bad/stages/boom/instances/0/log' | grep -q 'about to fail'"
check "the lists still count both" sh -c "curl -sf '${URL}jobs' | grep -q '>2 jobs'"
log "screenshots and pages in $OUT"
