# A real NFS server for the storage tests: rpcbind (unless one runs already)
# and nfs-ganesha with the VFS FSAL exporting a folder of the test, on
# loopback. Only one ganesha can hold its ports, so the server is taken under
# a machine-wide lock (another build's tests, bench/storage) for the test's
# life. Source after common.sh:  . "$(dirname "$0")/../lib/nfs.sh"
# Then: start_nfs [EXPORT_DIR]; the volume is $NFS_URL.

NFS_PORT=12049
MNT_PORT=12048
NFS_LOCK=/tmp/parsa-ganesha.lock
NFS_DIR=$TEST_DIR/nfs
NFS_EXPORT=${NFS_EXPORT:-$TEST_DIR/export}
NFS_URL=

need_nfs() {
	need_root
	command -v ganesha.nfsd >/dev/null && command -v rpcbind >/dev/null || {
		echo "# SKIP: needs nfs-ganesha, nfs-ganesha-vfs and rpcbind (scripts/install-deps.sh)"
		exit 77
	}
}

# nfs_url [OPTIONS]: the volume URL of the export, with the fixed ports (no
# portmapper round trip) and OPTIONS (e.g. timeout=3) added.
nfs_url() {
	local extra=${1:-}
	printf 'nfs://127.0.0.1%s?nfsport=%d&mountport=%d%s' "$NFS_EXPORT" "$NFS_PORT" "$MNT_PORT" \
		"${extra:+&$extra}"
}

port_open() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

write_ganesha_conf() {
	cat >"$NFS_DIR/ganesha.conf" <<EOF
NFS_CORE_PARAM {
	NFS_Port = $NFS_PORT; MNT_Port = $MNT_PORT; NLM_Port = 12047; Rquota_Port = 12046;
	Protocols = 3, 4; Enable_NLM = false; Enable_RQUOTA = false; Bind_addr = 127.0.0.1;
}
NFSV4 { Graceless = true; }
NFS_KRB5 { Active_krb5 = false; }
EXPORT {
	Export_Id = 1;
	Path = $NFS_EXPORT;
	Pseudo = $NFS_EXPORT;
	Access_Type = RW;
	Squash = No_Root_Squash;
	Transports = TCP;
	Protocols = 3;
	SecType = sys;
	FSAL { Name = VFS; }
}
EOF
}

# start_ganesha: (re)start the server on the written configuration.
start_ganesha() {
	ganesha.nfsd -F -f "$NFS_DIR/ganesha.conf" -L "$LOGS/ganesha.log" -p "$NFS_DIR/ganesha.pid" \
		>>"$LOGS/ganesha.out" 2>&1 &
	DAEMON_PID[ganesha]=$!
	wait_for "ganesha listens" 30 port_open "$NFS_PORT"
	wait_for "ganesha exports $NFS_EXPORT" 30 nfs-ls "$(nfs_url)"
}

# start_nfs [EXPORT_DIR]
start_nfs() {
	need_nfs
	[ $# -ge 1 ] && NFS_EXPORT=$1
	mkdir -p "$NFS_DIR" "$NFS_EXPORT"
	chmod 755 "$NFS_EXPORT"
	# Wait for any other user of the ports (the lock is dropped when we exit).
	exec {NFS_LOCK_FD}>"$NFS_LOCK"
	flock -w 900 "$NFS_LOCK_FD" || fail "the NFS ports stayed taken (lock $NFS_LOCK)"
	if ! port_open 111; then
		rpcbind -w -f >>"$LOGS/rpcbind.log" 2>&1 &
		DAEMON_PID[rpcbind]=$!
		wait_for "rpcbind listens" 20 port_open 111
	fi
	port_open "$NFS_PORT" && fail "port $NFS_PORT is taken by something else"
	write_ganesha_conf
	start_ganesha
	NFS_URL=$(nfs_url "${NFS_OPTIONS:-timeout=5}")
	STORAGE=$NFS_URL
}

# kill_ganesha [SIGNAL]: stop the server (KILL by default), wait until it is gone.
kill_ganesha() {
	stop_daemon ganesha "${1:-KILL}"
	wait_for "ganesha gone" 20 bash -c "! (exec 3<>/dev/tcp/127.0.0.1/$NFS_PORT) 2>/dev/null"
}
