#!/bin/bash
# docs/tutorial.md as written: every command of its transcripts, in its order,
# as an ordinary user from a folder of theirs (with examples/ in it, as the
# tutorial's "from the repository's folder"), against a fresh parsa with a
# two-core host; each succeeds (or fails where the tutorial shows it fail),
# and every `cat .../wait` says what the tutorial shows. The commands come
# from the document itself (tests/tools/tutorial_script.py), so a tutorial
# that stops working fails here.
. "$(dirname "$0")/../lib/common.sh"
need_root
command -v python3 >/dev/null || { echo "# SKIP: needs python3"; exit 77; }
# The tutorial's machine is "vm", with two cores.
start_sched
start_fs
start_runner vm --cpus 2 --cpu-limit 100
ensure_user parsa-tut parsa-tut

home=$TEST_DIR/tut
mkdir -p "$home"
cp -r "$PARSA_SRC/examples" "$home/"
python3 "$PARSA_SRC/tests/tools/tutorial_script.py" "$PARSA_SRC/docs/tutorial.md" \
	>"$home/tutorial.sh" || fail "cannot turn the tutorial into commands"
chown -R parsa-tut:parsa-tut "$home"
chmod 755 "$TEST_DIR"
log "$(grep -c '^eval ' "$home/tutorial.sh") commands from docs/tutorial.md"
(cd "$home" && HOME=$home PARSA_MNT=$MNT PARSA_SCHED=unix:$SOCK TUT_OUT=$home/.out \
	as_user parsa-tut bash ./tutorial.sh) >"$TEST_DIR/tutorial.tap" 2>&1
rc=$?
sed 's/^/# /' "$TEST_DIR/tutorial.tap" | grep -v '^# ok ' || true
check "every command of the tutorial did what it shows ($(grep -c '^ok ' "$TEST_DIR/tutorial.tap") checks)" test "$rc" -eq 0
pass "docs/tutorial.md runs as written"
