#!/bin/bash
# The data path on NFS keeps every byte: the random-operation checker
# (tests/tools/fscheck) on a file of a job's out/ on a real nfs-ganesha, with
# one descriptor (t0212: two), and the A-then-B overwrite regression with
# 4 KiB, 64 KiB and 1 MiB writes. A failure prints the seed; FSCHECK_SEED=N
# replays it.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"
. "$(dirname "$0")/../lib/fscheck.sh"
start_nfs
start_sched
start_fs
job_out_dir
random_checks "$OUT" 100000 270 one
end_checks
