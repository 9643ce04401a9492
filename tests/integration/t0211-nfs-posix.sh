#!/bin/bash
# The data path on NFS behaves as POSIX says: as ext4 does where NFSv3 can
# (hard links, set-uid cleared, unlink while open, fifos, sockets, long
# names, symlink mtimes), and otherwise fails with the errno that says why
# (fallocate EOPNOTSUPP, an mtime past 2^32 EOVERFLOW); in a job's out/ and
# in data/ (the cases: tests/lib/posix_cases.sh).
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"
. "$(dirname "$0")/../lib/fscheck.sh"
. "$(dirname "$0")/../lib/posix_cases.sh"
command -v rsync >/dev/null || { echo "# SKIP: needs rsync"; exit 77; }
start_nfs
start_sched
start_fs
job_out_dir
posix_checks "$OUT/posix" nfs "nfs out/"
posix_checks "$MNT/data/posix" nfs "nfs data/"
end_checks
