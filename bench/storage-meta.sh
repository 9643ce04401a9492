# Sourced by bench/storage (after storage-env.sh): the metadata lines, many
# small files as a checkpoint folder holds them. A tarball of $meta_files
# files (100 bytes each, 100 per folder) made on the local disk is unpacked
# (tar xf, as root: owners, modes and times set), listed (ls -lR) and
# removed (rm -rf) through the NFS mount, through the local-backend mount
# and on the plain folder beside it; each figure in seconds, the median of
# $meta_runs runs, the mounts alternating (nfs local local nfs ...). Before
# ls -lR every cache is cold: the page cache dropped and the mount's own
# caches (1 s attributes, 2 s folder handles) left to expire.
# meta_*_ratio: NFS over the local backend, both through the mount.
meta_src=$dir/meta-src
for ((i = 0; i < meta_files; i++)); do
	((i % 100)) || mkdir -p "$meta_src/d$((i / 100))"
	printf '%0100d' "$i" >"$meta_src/d$((i / 100))/f$i"
done
tar cf "$dir/meta.tar" -C "$meta_src" .
rm -rf "$meta_src"
# seconds COMMAND...: the wall time the command took, in seconds
seconds() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null || { echo "bench/storage: failed: $*" >&2; return 1; }
	t1=$(date +%s%N)
	awk -v ns="$((t1 - t0))" 'BEGIN { printf "%.2f", ns / 1e9 }'
}
# meta_run WHERE: one round of tar xf, ls -lR, rm -rf in WHERE/meta,
# printing "tar ls rm" seconds.
meta_run() {
	local t_tar t_ls t_rm
	mkdir "$1/meta"
	drop
	t_tar=$(seconds tar xf "$dir/meta.tar" -C "$1/meta") || return 1
	drop
	sleep 2.5
	t_ls=$(seconds ls -lR "$1/meta") || return 1
	t_rm=$(seconds rm -rf "$1/meta") || return 1
	echo "$t_tar $t_ls $t_rm"
}
fmedian() { tr ' ' '\n' | sort -g | awk 'NF { v[++n] = $1 } END { print (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) }'; }
declare -A meta_all=()
for ((r = 0; r < meta_runs; r++)); do
	order="nfs local plain"
	((r % 2)) && order="plain local nfs"
	for kind in $order; do
		case $kind in
		nfs) where=$out_nfs ;;
		local) where=$out_local ;;
		plain) where=$dir/plain ;;
		esac
		read -r t_tar t_ls t_rm <<<"$(meta_run "$where")" || exit 1
		echo "meta run $r $kind: tar $t_tar s, ls -lR $t_ls s, rm -rf $t_rm s" >&2
		meta_all[$kind.tar]+=" $t_tar"
		meta_all[$kind.ls]+=" $t_ls"
		meta_all[$kind.rm]+=" $t_rm"
	done
done
echo "meta_files: $meta_files"
for what in tar ls rm; do
	for kind in nfs local plain; do
		echo "meta_${what}_${kind}_s: $(echo "${meta_all[$kind.$what]}" | fmedian)"
	done
done
for what in tar ls rm; do
	echo "meta_${what}_ratio: $(ratio "$(echo "${meta_all[nfs.$what]}" | fmedian)" "$(echo "${meta_all[local.$what]}" | fmedian)")"
done
