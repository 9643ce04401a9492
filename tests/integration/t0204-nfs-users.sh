#!/bin/bash
# Two users on NFS: what they create is theirs on the server (AUTH_SYS with
# their uid/gid), the server and the mount enforce permissions, and a job's
# outputs are deleted by its owner or root only, whatever the modes inside.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"

start_nfs
start_sched
start_fs
ensure_user parsa-nfsa parsa-nfsg
ensure_user parsa-nfsb parsa-nfsg
ua=$(id -u parsa-nfsa)
ga=$(id -g parsa-nfsa)
printf '[stage s]\nrun = true\n' >"$TEST_DIR/s.conf"
chmod 644 "$TEST_DIR/s.conf"
as_user parsa-nfsa cp "$TEST_DIR/s.conf" "$MNT/queue/a.conf" || fail "a's submission failed"
ja=$(as_user parsa-nfsa readlink "$MNT/jobs/last")
out=$MNT/jobs/$ja/out/s
exp=$NFS_EXPORT/jobs/$ja/out/s

as_user parsa-nfsa sh -c "echo mine > '$out/a.txt' && mkdir '$out/d' && echo x > '$out/d/x'" || fail "a cannot write its own outputs"
check "a's file is a's on the server" test "$(stat -c %u:%g "$exp/a.txt")" = "$ua:$ga"
check "a's folder is a's on the server" test "$(stat -c %u:%g "$exp/d")" = "$ua:$ga"
check "b cannot write into a's folder" sh -c "! setpriv --reuid parsa-nfsb --regid parsa-nfsg --init-groups sh -c 'echo no > $out/b.txt' 2>/dev/null"
as_user parsa-nfsa chmod 600 "$out/a.txt"
check "b cannot read a's private file" sh -c "! setpriv --reuid parsa-nfsb --regid parsa-nfsg --init-groups cat $out/a.txt 2>/dev/null"
check "a can" test "$(as_user parsa-nfsa cat "$out/a.txt")" = mine

# Modes that let anybody in do not let others delete a job's outputs.
as_user parsa-nfsa chmod 777 "$out" "$out/d"
check "b may add to an open folder" as_user parsa-nfsb sh -c "echo b > '$out/b.txt'"
check "b's file is b's on the server" test "$(stat -c %u "$exp/b.txt")" = "$(id -u parsa-nfsb)"
check "b cannot delete a's outputs" sh -c "! setpriv --reuid parsa-nfsb --regid parsa-nfsg --init-groups rm -f $out/d/x 2>/dev/null"
check "b cannot rename them" sh -c "! setpriv --reuid parsa-nfsb --regid parsa-nfsg --init-groups mv $out/d $out/e 2>/dev/null"
check "a's file is still there" test -e "$exp/d/x"
check "a can delete" as_user parsa-nfsa rm -r "$out/d"
check "root can delete" rm "$out/b.txt"
check "b cannot purge a's job" sh -c "! setpriv --reuid parsa-nfsb --regid parsa-nfsg --init-groups sh -c 'echo purge > $MNT/jobs/$ja/ctl' 2>/dev/null"

# data/: sticky, like /tmp.
as_user parsa-nfsa sh -c "echo input > '$MNT/data/a-input'" || fail "a cannot write into data/"
check "data/ files belong to their writer" test "$(stat -c %u "$NFS_EXPORT/data/a-input")" = "$ua"
check "b cannot delete a's data/ file" sh -c "! setpriv --reuid parsa-nfsb --regid parsa-nfsg --init-groups rm -f $MNT/data/a-input 2>/dev/null"
check "b can read it" test "$(as_user parsa-nfsb cat "$MNT/data/a-input")" = input
check "a can delete it" as_user parsa-nfsa rm "$MNT/data/a-input"
