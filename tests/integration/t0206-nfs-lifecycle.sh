#!/bin/bash
# Job outputs over time on NFS: `purge` deletes a finished job's outputs (its
# owner or root only, never while it runs), `keep` protects them from the
# retention policy (--retention), which deletes the outputs of the other
# finished jobs once they are old enough. Their history says what happened.
# Then the data path's POSIX checks (tests/lib/posix.sh) on this NFS volume.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"
. "$(dirname "$0")/../lib/posix.sh"

start_nfs
start_sched --retention 6s
start_fs
start_runner local --cpus 2 --cpu-limit 100 --mem-limit 100

cat >"$TEST_DIR/w.conf" <<'EOF2'
[stage w]
run = mkdir -p "$PARSA_OUT/ckpt/a" && echo data > "$PARSA_OUT/ckpt/a/state" && echo r > "$PARSA_OUT/result"
EOF2
cat >"$TEST_DIR/slow.conf" <<EOF2
[stage w]
run = while [ ! -e "$TEST_DIR/go" ]; do sleep 0.05; done
EOF2
kept=$(submit "$TEST_DIR/w.conf" kept.conf) || fail "submission failed"
wait_job "$kept" 30 succeeded
echo keep >"$MNT/jobs/$kept/ctl" || fail "keep failed"
purged=$(submit "$TEST_DIR/w.conf" purged.conf) || fail "submission failed"
wait_job "$purged" 30 succeeded
old=$(submit "$TEST_DIR/w.conf" old.conf) || fail "submission failed"
wait_job "$old" 30 succeeded
slow=$(submit "$TEST_DIR/slow.conf") || fail "submission failed"
wait_for "the slow job runs" 20 job_is "$slow" running

exp=$NFS_EXPORT/jobs
check "purge of a running job is refused" sh -c "! echo purge > '$MNT/jobs/$slow/ctl' 2>/dev/null"
ensure_user parsa-nfsc parsa-nfsg
check "another user cannot purge" sh -c "! setpriv --reuid parsa-nfsc --regid parsa-nfsg --init-groups sh -c 'echo purge > $MNT/jobs/$purged/ctl' 2>/dev/null"
echo purge >"$MNT/jobs/$purged/ctl" || fail "purge by the owner failed"
wait_for "purge empties the outputs" 20 test ! -e "$exp/$purged/out/w/result"
check "the stage folder stays, empty" test -d "$exp/$purged/out/w" -a -z "$(ls -A "$exp/$purged/out/w")"
wait_for "the history says so" 10 grep -q "outputs purged by root" "$MNT/jobs/$purged/events"
check "the job's logs stay" test -d "$exp/$purged/log/w"

# Retention (6 s): the old job goes, the kept one stays.
wait_for "retention purges the old job's outputs" 30 test ! -e "$exp/$old/out/w/result"
wait_for "its history says retention did it" 10 grep -q "outputs purged by retention" "$MNT/jobs/$old/events"
check "the kept job's outputs stay" test -e "$exp/$kept/out/w/ckpt/a/state"
check "its history says kept" grep -q "outputs kept" "$MNT/jobs/$kept/events"
check "the running job's outputs are not touched" test -d "$exp/$slow/out/w"
touch "$TEST_DIR/go"
wait_job "$slow" 30 succeeded

# -- the data path on NFS: hard links, set-uid, unlinked open files --
posix_checks "$NFS_EXPORT"
