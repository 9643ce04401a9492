#!/bin/bash
# The tools students use, on a job's output folder on NFS, compared with the
# same operations on a local folder: cp -r, rsync -a, tar x, mv, ln -s, ln,
# chmod, truncate, appends, sparse files, a file over 4 GiB, a folder of
# 100,000 entries, find, du; then many readers of one checkpoint at once.
. "$(dirname "$0")/../lib/common.sh"
. "$(dirname "$0")/../lib/nfs.sh"

command -v rsync >/dev/null || { echo "# SKIP: needs rsync"; exit 77; }
start_nfs
start_sched
start_fs
# No runner: the job stays queued and its output folders exist.
printf '[stage s]\nrun = true\n' >"$TEST_DIR/s.conf"
id=$(submit "$TEST_DIR/s.conf") || fail "submission failed"
NFSW=$MNT/jobs/$id/out/s/work
LOCW=$TEST_DIR/local/work
mkdir -p "$LOCW"

# A source tree: nested folders, small and large files, a symlink, modes.
SRC=$TEST_DIR/src
mkdir -p "$SRC/sub/deeper" "$SRC/empty"
head -c 100000 /dev/urandom >"$SRC/f1"
head -c 3000000 /dev/urandom >"$SRC/sub/f2"
printf 'x' >"$SRC/sub/deeper/tiny"
: >"$SRC/zero"
printf '#!/bin/sh\necho hi\n' >"$SRC/run.sh"
chmod 755 "$SRC/run.sh"
chmod 444 "$SRC/sub/f2"
ln -s sub/f2 "$SRC/link"
touch -d '2024-01-02 03:04:05' "$SRC/f1"
touch -d '2023-05-06 07:08:09' "$SRC/run.sh"
tar -C "$SRC" -cf "$TEST_DIR/src.tar" .

# tools DIR: the same operations wherever DIR is; any failure fails the test.
tools() {
	local w=$1 i
	mkdir -p "$w" || return 1
	cp -r "$SRC" "$w/cp" || return 1
	rsync -a "$SRC/" "$w/rsync/" || return 1
	mkdir "$w/tar" && tar -C "$w/tar" -xf "$TEST_DIR/src.tar" || return 1
	mv "$w/cp/sub" "$w/cp/sub-moved" && mv "$w/cp/f1" "$w/cp/f1-moved" || return 1
	ln -s ../rsync/f1 "$w/cp/link1" && ln "$w/rsync/zero" "$w/rsync/zero-link" || return 1
	chmod 640 "$w/cp/f1-moved" && chmod -R g+w "$w/tar" || return 1
	truncate -s 1000 "$w/rsync/f1" && truncate -s 3M "$w/grown" || return 1
	for i in $(seq 1 200); do echo "line $i" >>"$w/append" || return 1; done
	printf 'x' | dd of="$w/sparse" bs=1 seek=10M status=none || return 1
	truncate -s 5G "$w/big" || return 1
	printf 'tail' | dd of="$w/big" bs=1 seek=$((4 * 1024 * 1024 * 1024 + 12345)) conv=notrunc status=none ||
		return 1
	mkdir "$w/many" && (cd "$w/many" && for i in $(seq 1 100000); do : >"e$i" || exit 1; done) || return 1
	rm -rf "$w/rsync/sub" && rm "$w/tar/zero" || return 1
}

# listing DIR: names, types, sizes, modes and link targets (not folder sizes).
listing() {
	(cd "$1" && { find . ! -type d -printf '%P|%y|%s|%m|%l\n'; find . -type d -printf '%P|%m\n'; } | sort)
}

tools "$LOCW" || fail "the operations failed on a local folder"
start=$(date +%s)
tools "$NFSW" || fail "the operations failed on the NFS volume"
log "the operations took $(($(date +%s) - start)) s on NFS"
pass "every operation succeeded on the NFS volume"

listing "$LOCW" >"$TEST_DIR/local.list"
listing "$NFSW" >"$TEST_DIR/nfs.list"
diff "$TEST_DIR/local.list" "$TEST_DIR/nfs.list" >"$TEST_DIR/list.diff" ||
	fail "the trees differ: $(head -20 "$TEST_DIR/list.diff")"
pass "names, types, sizes, modes and links match the local folder"
sums() { (cd "$1" && find . -type f ! -name big ! -path './many/*' -exec md5sum {} + | sort -k2); }
check "every file's content matches" diff <(sums "$LOCW") <(sums "$NFSW")
check "the folder has 100,000 entries" test "$(ls "$NFSW/many" | wc -l)" -eq 100000
check "the big file is 5 GiB" test "$(stat -c %s "$NFSW/big")" -eq $((5 * 1024 * 1024 * 1024))
check "past 4 GiB reads back" test "$(dd if="$NFSW/big" bs=1 skip=$((4 * 1024 * 1024 * 1024 + 12345)) count=4 status=none)" = tail
check "sparse files stay sparse" test "$(du -k "$NFSW/big" | cut -f1)" -lt 1024
# run.sh: copied by rsync -a and left alone after (rsync/f1 is truncated, rsync/sub removed).
check "mtimes survive rsync -a" test "$(stat -c %Y "$NFSW/rsync/run.sh")" = "$(stat -c %Y "$SRC/run.sh")"
check "mtimes survive tar x" test "$(stat -c %Y "$NFSW/tar/f1")" = "$(stat -c %Y "$SRC/f1")"
check "du agrees on apparent sizes" test "$(du -s --apparent-size -B1 "$LOCW/cp" | cut -f1)" = "$(du -s --apparent-size -B1 "$NFSW/cp" | cut -f1)"
check "the appended file has every line" test "$(wc -l <"$NFSW/append")" -eq 200
check "the files are on the export" cmp -s "$SRC/sub/f2" "$NFS_EXPORT/jobs/$id/out/s/work/cp/sub-moved/f2"

# Many readers of one checkpoint at once.
head -c $((64 * 1024 * 1024)) /dev/urandom >"$TEST_DIR/ckpt"
cp "$TEST_DIR/ckpt" "$NFSW/ckpt" || fail "cp of the checkpoint failed"
want=$(md5sum <"$TEST_DIR/ckpt")
pids=()
for i in 1 2 3 4 5 6 7 8; do
	md5sum <"$NFSW/ckpt" >"$TEST_DIR/reader.$i" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a reader failed"; done
for i in 1 2 3 4 5 6 7 8; do
	[ "$(cat "$TEST_DIR/reader.$i")" = "$want" ] || fail "reader $i read something else"
done
pass "8 readers at once read the same checkpoint"

# What was written is on the server when fsync says so.
dd if="$TEST_DIR/ckpt" of="$NFSW/synced" bs=1M count=8 conv=fsync status=none || fail "dd conv=fsync failed"
check "fsync'ed data is on the export" cmp -s <(head -c $((8 * 1024 * 1024)) "$TEST_DIR/ckpt") "$NFS_EXPORT/jobs/$id/out/s/work/synced"
rm -rf "$NFSW/cp" "$NFSW/tar" || fail "rm -rf failed"
check "rm -rf removed them from the export" test ! -e "$NFS_EXPORT/jobs/$id/out/s/work/cp" -a ! -e "$NFS_EXPORT/jobs/$id/out/s/work/tar"
