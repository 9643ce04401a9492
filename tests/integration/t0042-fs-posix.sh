#!/bin/bash
# The data path on local storage behaves as ext4 does: hard links, set-uid
# cleared by another user's write, unlink while open, fifos and sockets,
# fallocate, long names and symlinks, symlink and 64-bit mtimes; in a job's
# out/ and in data/ (the cases: tests/lib/posix_cases.sh).
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/fscheck.sh"
. "$(dirname "$0")/../lib/posix_cases.sh"
need_root
command -v rsync >/dev/null || { echo "# SKIP: needs rsync"; exit 77; }
start_sched
start_fs
job_out_dir
posix_checks "$OUT/posix" local "local out/"
posix_checks "$MNT/data/posix" local "local data/"
end_checks
