#!/bin/bash
# The data path on NFS keeps every byte: the random-operation checker
# (tests/tools/fscheck) on files of a job's out/ on a real nfs-ganesha, one
# with one descriptor and one with two at the same time (a read through one
# sees every write through the other that returned before it), and the
# A-then-B overwrite regression with 4 KiB, 64 KiB and 1 MiB writes. 50,000
# operations each (FSCHECK_OPS=N for a longer run; 100,000 took a minute). A
# failure prints the seed; FSCHECK_SEED=N replays it.
# The optimised build when the suite made one (scripts/test.sh sets
# PARSA_FAST_BIN): it is what users run, and under ASan each NFS reply over
# 128 KiB is a fresh mmap with its page faults (150 s instead of 55 here). The
# rest of the suite runs the NFS data path through the sanitizer build.
[ -x "${PARSA_FAST_BIN:-}/parsafs" ] && PARSA_BIN=$PARSA_FAST_BIN
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"
. "$(dirname "$0")/../lib/fscheck.sh"
start_nfs
start_sched
start_fs
log "programs: $PARSA_BIN"
job_out_dir
random_checks "$OUT" "${FSCHECK_OPS:-50000}" 270
end_checks
