#!/bin/bash
# A spec's file name, or any other string a user chooses, cannot forge a line
# of a text view (issue 15 item 3): a name with a control character is refused
# at queue/ (EINVAL, with NAME.rejected) and at the API itself; strings that
# reach views by other ways (foreach items made from file names) are escaped.
. "$(dirname "$0")/../lib/common.sh"
need_root
start_all --cpus 4 --cpu-limit 100

printf '[stage a]\nrun = true\n' >"$TEST_DIR/ok.conf"

# -- queue/: refused before anything is written, the reason in .rejected.
forged=$(printf 'x\nstate: failed\nowner: alice.conf')
if err=$(cp "$TEST_DIR/ok.conf" "$MNT/queue/$forged" 2>&1); then
	fail "a file name with newlines was accepted"
fi
case $err in
*"Invalid argument"*) pass "cp into queue/ of a name with newlines fails with EINVAL" ;;
*) fail "unexpected error for a forged name: $err" ;;
esac
check "the refusal is in NAME.rejected" test -f "$MNT/queue/$forged.rejected"
check "which says why, the name escaped" grep -qF \
	'x\nstate: failed\nowner: alice.conf: the file name holds a control character (\n)' \
	"$MNT/queue/$forged.rejected"
check "the explanation is one line" test "$(wc -l <"$MNT/queue/$forged.rejected")" -eq 1
for c in $'\t' $'\r' $'\x1b' $'\x7f'; do
	name="y${c}z.conf"
	if cp "$TEST_DIR/ok.conf" "$MNT/queue/$name" 2>/dev/null; then
		fail "a name with control byte $(printf '%q' "$c") was accepted"
	fi
	test -f "$MNT/queue/$name.rejected" || fail "no .rejected for $(printf '%q' "$name")"
done
pass "tab, CR, ESC and DEL in a name are refused too"
if readlink "$MNT/jobs/last" >/dev/null 2>&1; then
	fail "a refused name made a job: $(readlink "$MNT/jobs/last")"
fi
pass "no job was made"
# schedules/ takes specs the same way.
if cp "$TEST_DIR/ok.conf" "$MNT/schedules/$forged" 2>/dev/null; then
	fail "schedules/ took a name with newlines"
fi
pass "schedules/ refuses it too"

# -- the API directly: the same refusal, as HTTP 400.
post() {
	curl -s --unix-socket "$SOCK" -o "$TEST_DIR/answer" -w '%{http_code}' \
		-H 'Content-Type: application/json' --data-binary @- http://localhost/v1/jobs
}
code=$(printf '{"name": "x\\nstate: failed\\nowner: alice.conf", "spec": "[stage a]\\nrun = true\\n"}' | post)
check "POST /v1/jobs with a forged name is HTTP 400" test "$code" = 400
check "the answer says why" grep -qF 'holds a control character' "$TEST_DIR/answer"
code=$(printf '{"name": "tab\\there.conf", "spec": "[stage a]\\nrun = true\\n"}' | post)
check "POST with a tab in the name is HTTP 400" test "$code" = 400
code=$(printf '{"name": "x\\nevery: 1h", "spec": "[job]\\nevery = 1h\\n[stage a]\\nrun = true\\n"}' |
	curl -s --unix-socket "$SOCK" -o /dev/null -w '%{http_code}' --data-binary @- \
		http://localhost/v1/schedules)
check "POST /v1/schedules with a forged name is refused" test "$code" = 400
code=$(printf '{"name": "evil\\nstate: up", "cpus": 1, "mem": 1000000, "scratch_total": 0, "scratch_free": 0, "cpu_limit": 90, "mem_limit": 90, "features": [], "mount": "/parsa"}' |
	curl -s --unix-socket "$SOCK" -o "$TEST_DIR/answer" -w '%{http_code}' --data-binary @- \
		http://localhost/v1/hosts)
check "a runner's host name with a newline is refused (HTTP 400)" test "$code" = 400
check "hosts/ has no such host" sh -c "! ls '$MNT/hosts/' | grep -q '^evil'"
if readlink "$MNT/jobs/last" >/dev/null 2>&1; then
	fail "the API made a job of a forged name"
fi
pass "still no job"

# -- a good name with a backslash is taken and shown escaped, unambiguous.
id=$(submit "$TEST_DIR/ok.conf" 'back\slash.conf') || fail "a backslash name was refused"
wait_job "$id" 30 succeeded
check "status shows the backslash escaped" grep -qxF 'spec: back\\slash.conf' "$MNT/jobs/$id/status"

# -- strings that reach views another way: a foreach item is an upstream file
# name, and a stage may make any name. It is escaped in every view.
cat >"$TEST_DIR/items.conf" <<'SPEC'
[stage make]
run = touch "$PARSA_OUT/$(printf 'f\nstate: failed\nowner: mallory')"
      touch "$PARSA_OUT/plain"

[stage use]
after = make
foreach = make/*
run = true
SPEC
id=$(submit "$TEST_DIR/items.conf") || fail "items.conf refused"
wait_job "$id" 60 succeeded
inst=$MNT/jobs/$id/stages/use/instances
forged_inst=
for i in 0 1; do
	if grep -q '^item: make/f' "$inst/$i/status"; then forged_inst=$i; fi
done
test -n "$forged_inst" || fail "no instance has the forged item: $(cat "$inst/0/status" "$inst/1/status")"
check "the item is escaped" grep -qxF 'item: make/f\nstate: failed\nowner: mallory' "$inst/$forged_inst/status"
check "the instance status has one state line" test "$(grep -c '^state:' "$inst/$forged_inst/status")" -eq 1
check "and no owner line" sh -c "! grep -q '^owner:' '$inst/$forged_inst/status'"
for v in status why events stages/use/status; do
	f=$MNT/jobs/$id/$v
	if grep -q '^owner: mallory\|^state: failed' "$f"; then
		fail "$v has a forged line: $(cat "$f")"
	fi
done
pass "no view of the job has a forged line"
check "the job status has one state and one owner line" \
	test "$(grep -c '^state:\|^owner:' "$MNT/jobs/$id/status")" -eq 2
exit 0
