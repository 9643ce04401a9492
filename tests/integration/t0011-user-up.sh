#!/bin/bash
# `parsa up` as an ordinary user (a user FUSE mount through fusermount3): the
# lab pipeline runs as that user, and `parsa down` cleans up.
. "$(dirname "$0")/../lib/common.sh"
need_root
command -v fusermount3 >/dev/null || { echo "# SKIP: no fusermount3"; exit 77; }
ensure_user parsa-carol parsa-arch
on_cleanup "userdel parsa-carol; groupdel parsa-arch"
# Debian's /dev/fuse is 0666; some containers make it 0600.
mode=$(stat -c %a /dev/fuse)
if [ "$mode" != 666 ]; then
	chmod 666 /dev/fuse
	on_cleanup "chmod $mode /dev/fuse"
fi

home=$TEST_DIR/carol
mkdir -p "$home"
chown parsa-carol: "$home"
umnt=$home/parsa
ustate=$home/state
carol() { as_user parsa-carol env HOME="$home" PATH="$PATH" "$@"; }
on_cleanup "setpriv --reuid $(id -u parsa-carol) --regid $(id -g parsa-carol) --init-groups env HOME='$home' '$PARSA_BIN/parsa' down --mount '$umnt' --state '$ustate'; fusermount3 -uz '$umnt'"

carol parsa up --detach --mount "$umnt" --state "$ustate" --cpus 2 --cpu-limit 100 --mem-limit 100 >"$LOGS/up.log" 2>&1 ||
	fail "parsa up as a user failed: $(tail -5 "$LOGS/up.log")"
pass "parsa up --detach as an ordinary user"
check "the daemons run as the user" sh -c "[ \$(ps -o user= -p \$(pgrep -f -- '$ustate' | head -n 1)) = parsa-carol ]"

carol cp "$PARSA_SRC/examples/lab-pipeline.conf" "$umnt/queue/" || fail "submit as the user failed"
id=$(carol readlink "$umnt/jobs/last")
state=$(carol timeout 120 cat "$umnt/jobs/$id/wait") || fail "wait failed"
[ "$state" = succeeded ] || fail "the pipeline ended $state"
pass "the lab pipeline ran under the user's own parsa"
check "results belong to the user" test "$(stat -c %U "$ustate/storage/jobs/$id/out/gather/results.csv")" = parsa-carol
check "results have 16 samples" test "$(carol sh -c "wc -l < $umnt/jobs/$id/out/gather/results.csv")" -eq 17

carol parsa down --mount "$umnt" --state "$ustate" >>"$LOGS/up.log" 2>&1 || fail "parsa down as the user failed"
check "parsa down unmounts" sh -c "! grep -q ' $umnt fuse' /proc/mounts"
if pgrep -f -- "$ustate" >/dev/null; then
	fail "parsa down left processes: $(pgrep -af -- "$ustate")"
fi
pass "parsa down stops every daemon"
