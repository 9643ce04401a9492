#!/bin/bash
# `parsa up --storage nfs://...`: the one-machine set-up with its job folders
# on an NFS export; the example pipeline runs and its results are on the server.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"

start_nfs
on_cleanup "parsa down --mount '$MNT' --state '$STATE'"
MOUNTS+=("$MNT")
parsa up --detach --mount "$MNT" --state "$STATE" --storage "$NFS_URL" --cpus 4 --cpu-limit 100 --mem-limit 100 \
	>"$LOGS/up.log" 2>&1 || fail "parsa up --storage $NFS_URL failed: $(tail -5 "$LOGS/up.log")"
check "the mount is ready" test -e "$MNT/status"
check "data/ is there" test -d "$MNT/data"
id=$(submit "$PARSA_SRC/examples/lab-pipeline.conf") || fail "submission failed"
wait_job "$id" 120 succeeded
check "the results are on the export" test "$(wc -l <"$NFS_EXPORT/jobs/$id/out/gather/results.csv")" -eq 17
check "the state folder holds no job folders" test ! -e "$STATE/storage/jobs/$id"
parsa down --mount "$MNT" --state "$STATE" >>"$LOGS/up.log" 2>&1 || fail "parsa down failed"
check "parsa down unmounts" sh -c "! grep -q ' $MNT fuse' /proc/mounts"
