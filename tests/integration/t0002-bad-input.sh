#!/bin/bash
# Bad input never crashes a daemon and never loses a job: every malformed spec
# makes cp fail and leaves queue/<name>.rejected with file:line errors; writes
# where they make no sense fail with a sensible errno.
. "$(dirname "$0")/../lib/common.sh"
need_root
start_all --cpus 4 --cpu-limit 100
ensure_user parsa-bob parsa-sys
on_cleanup "userdel parsa-bob; groupdel parsa-sys"

specs=$TEST_DIR/specs
mkdir -p "$specs"

# reject NAME PATTERN: cp of specs/NAME into queue/ must fail with EINVAL and
# queue/NAME.rejected must match PATTERN (a grep -E expression).
reject() {
	local name=$1 pattern=$2 err
	if err=$(cp "$specs/$name" "$MNT/queue/$name" 2>&1); then
		fail "$name was accepted"
	fi
	case $err in
	*"Invalid argument"*|*"File too large"*) ;;
	*) fail "$name: cp failed with an unexpected error: $err" ;;
	esac
	test -f "$MNT/queue/$name.rejected" || fail "$name: no queue/$name.rejected"
	grep -Eq -- "$pattern" "$MNT/queue/$name.rejected" ||
		fail "$name: rejection does not match '$pattern': $(cat "$MNT/queue/$name.rejected")"
	pass "$name rejected: $(head -n 1 "$MNT/queue/$name.rejected")"
	rm "$MNT/queue/$name.rejected" || fail "cannot remove $name.rejected"
}

: >"$specs/empty.conf"
reject empty.conf '^empty\.conf(:[0-9]+)?: .*empty'

head -c 3000 /dev/urandom >"$specs/junk.conf"
printf '\0\1\2binary' >>"$specs/junk.conf"
reject junk.conf '^junk\.conf(:[0-9]+)?: .*not a text file'

cat >"$specs/cycle.conf" <<'SPEC'
[stage a]
after = b
run = true

[stage b]
after = a
run = true
SPEC
reject cycle.conf '^cycle\.conf:[0-9]+: .*cycle'

cat >"$specs/unknown.conf" <<'SPEC'
[stage warm]
run = true
cpu = 4
SPEC
reject unknown.conf "^unknown\.conf:3: .*'cpu'.*did you mean 'cpus'"

cat >"$specs/norun.conf" <<'SPEC'
[stage warm]
cpus = 2
SPEC
reject norun.conf '^norun\.conf:1: .*run'

cat >"$specs/negcpus.conf" <<'SPEC'
[stage warm]
run = true
cpus = -1
SPEC
reject negcpus.conf '^negcpus\.conf:3: .*cpus'

cat >"$specs/lots.conf" <<'SPEC'
[stage warm]
run = true
mem = lots
SPEC
reject lots.conf '^lots\.conf:3: .*mem'

cat >"$specs/foreach.conf" <<'SPEC'
[stage warm]
run = true
[stage timing]
foreach = warm/*
run = true
SPEC
reject foreach.conf '^foreach\.conf:[0-9]+: .*after'

# A NUL byte: the spec parser's file:line answer with its fix, as `parsa
# check` gives it, not the JSON decoder's (issue 35).
printf '[stage s]\nrun = echo a\0b\n' >"$specs/nul.conf"
reject nul.conf '^nul\.conf:2: is not a text file .*a spec is UTF-8 text'
check "parsa submit says the same" sh -c "parsa submit '$specs/nul.conf' 2>&1 | grep -q 'nul.conf:2: is not a text file'"

# A job name with an ESC: the rejection quotes it escaped, no raw control
# byte reaches the reader's terminal.
printf '[job]\nname = x\033[31mred\n[stage s]\nrun = true\n' >"$specs/esc.conf"
cp "$specs/esc.conf" "$MNT/queue/esc.conf" 2>/dev/null && fail "esc.conf was accepted"
check "the rejection quotes the ESC as \\x1b" grep -qF 'name = x\x1b[31mred' "$MNT/queue/esc.conf.rejected"
check "and holds no control byte" sh -c "! LC_ALL=C grep -q '[[:cntrl:]]' '$MNT/queue/esc.conf.rejected'"
rm -f "$MNT/queue/esc.conf.rejected"

# A run line past 198 characters: that one error, no false "has no run".
{ echo '[stage f]'; printf 'run = %0200d\n' 0; } >"$specs/longrun.conf"
reject longrun.conf '^longrun\.conf:2: line too long'
check "a too long run line is one error" sh -c "cp '$specs/longrun.conf' '$MNT/queue/longrun.conf' 2>/dev/null; test \$(wc -l <'$MNT/queue/longrun.conf.rejected') -eq 1"
rm -f "$MNT/queue/longrun.conf.rejected"

# 100 MB: refused past the 1 MiB limit, and nothing is submitted.
before=$(ls "$MNT/jobs" | grep -c '^[0-9]' || true)
if err=$(head -c 100M /dev/zero | tr '\0' 'x' | cp /dev/stdin "$MNT/queue/huge.conf" 2>&1); then
	fail "a 100 MB spec was accepted"
fi
case $err in *"File too large"*) pass "a 100 MB spec fails with EFBIG" ;; *) fail "100 MB spec: $err" ;; esac
rm -f "$MNT/queue/huge.conf.rejected"
after=$(ls "$MNT/jobs" | grep -c '^[0-9]' || true)
check "no job was created by rejected specs" test "$before" -eq "$after"

# A stage larger than any host: accepted, waits, and why says so.
cat >"$specs/big.conf" <<'SPEC'
[stage huge]
cpus = 64
run = true
SPEC
id=$(submit "$specs/big.conf") || fail "big.conf was refused"
pass "a stage larger than any host is accepted (job $id)"
wait_for "why explains the oversized stage" 10 grep -qi 'cpus' "$MNT/jobs/$id/why"
log "why: $(tr '\n' '|' <"$MNT/jobs/$id/why")"
check "the oversized job stays queued" job_is "$id" queued

# Read-only files, even for root.
for f in spec status status.json why events; do
	if echo x >"$MNT/jobs/$id/$f" 2>/dev/null; then fail "wrote into read-only $f"; fi
done
pass "writes to spec, status, status.json, why, events fail"
if err=$(bash -c "echo frobnicate > '$MNT/jobs/$id/ctl'" 2>&1); then fail "unknown ctl command accepted"; fi
case $err in *"Invalid argument"*) pass "an unknown ctl command fails with EINVAL" ;; *) fail "unknown ctl: $err" ;; esac

# Several lines in one write are all or nothing: a bad line among them
# applies none. Bash's printf writes a line at a time: then the lines before
# the bad one were applied, and the ctl's read says exactly which.
if python3 -c "import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY); os.write(fd, b'hold\nbogus\n')" \
	"$MNT/jobs/$id/ctl" 2>/dev/null; then fail "hold + bogus accepted"; fi
check "hold + bogus in one write: the job is not held" grep -q '^held: no' "$MNT/jobs/$id/status"
log "ctl after it: $(tr '\n' '|' <"$MNT/jobs/$id/ctl")"
check "the ctl's read says which line was refused and that nothing applied" \
	grep -q "^last refused: 'bogus' (line 2) by uid 0 refused: unknown command 'bogus'.*none of the 2 lines of the write was applied" "$MNT/jobs/$id/ctl"
if printf 'hold\nbogus\n' >"$MNT/jobs/$id/ctl" 2>/dev/null; then fail "printf hold + bogus accepted"; fi
check "printf's hold + bogus, a write each: the ctl says hold was applied" \
	grep -q "^last refused: 'bogus' .*after this open applied 'hold'" "$MNT/jobs/$id/ctl"
echo release >"$MNT/jobs/$id/ctl" || fail "release failed"

# truncate -s 0 of a ctl file is the no-op `echo x > ctl`'s O_TRUNC is;
# another size is EINVAL.
check "truncate -s 0 jobs/ID/ctl" truncate -s 0 "$MNT/jobs/$id/ctl"
check "truncate -s 0 hosts/H/ctl" truncate -s 0 "$MNT/hosts/local/ctl"
check "truncate -s 5 jobs/ID/ctl fails" sh -c "truncate -s 5 '$MNT/jobs/$id/ctl' 2>&1 | grep -q 'Invalid argument'"

# Another user may read but not control the job.
check "another user can read the status" as_user parsa-bob cat "$MNT/jobs/$id/status"
check "another user cannot cancel" sh -c "! setpriv --reuid $(id -u parsa-bob) --regid $(id -g parsa-bob) --init-groups sh -c 'echo cancel > $MNT/jobs/$id/ctl' 2>/dev/null"
check "the job is still queued after the refused cancel" job_is "$id" queued

# Nonsense operations.
check "mkdir in jobs/ fails" sh -c "! mkdir '$MNT/jobs/foo' 2>/dev/null"
check "mkdir in queue/ fails" sh -c "! mkdir '$MNT/queue/dir' 2>/dev/null"
check "rm of a status file fails" sh -c "! rm -f '$MNT/jobs/$id/status' 2>/dev/null"
check "rmdir of a job fails" sh -c "! rmdir '$MNT/jobs/$id' 2>/dev/null"
check "an unknown job is ENOENT" sh -c "cat '$MNT/jobs/999999/status' 2>&1 | grep -q 'No such file'"
check "an unknown host is ENOENT" sh -c "cat '$MNT/hosts/nohost/status' 2>&1 | grep -q 'No such file'"

echo cancel >"$MNT/jobs/$id/ctl" || fail "the owner cannot cancel"
wait_job "$id" 20 cancelled
pass "the owner cancels the oversized job"

for d in sched fs runner-local; do
	daemon_alive "$d" || fail "daemon $d died during bad input"
done
pass "every daemon survived the bad input"
