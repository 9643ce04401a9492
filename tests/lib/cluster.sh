# A cluster on one machine for the cluster tests: each host is a network
# namespace with a veth pair to a bridge in the root namespace; the scheduler
# listens on the bridge's address (TCP, munge) and on its unix socket; one
# munged with a key made here serves every host (namespaces share the
# filesystem, so its socket is everybody's). Each host runs its own parsafs
# mount and parsa-runner. Namespaces, links and daemons are removed by the
# common.sh trap, even on failure. Source after common.sh:
#   . "$(dirname "$0")/../lib/cluster.sh"

need_root
if ! ip netns add "parsa-probe-$$" 2>/dev/null; then
	echo "# SKIP: network namespaces are not available here (ip netns add failed)"
	exit 77
fi
ip netns del "parsa-probe-$$"
command -v munged >/dev/null || fail "munged is not installed (run scripts/install-deps.sh)"

# Names the kernel limits to 15 characters: a tag per test run.
CL_TAG=$(printf '%04x' $(($$ % 65536)))
CL_BR=pbr$CL_TAG
CL_NET=10.77.$(($$ % 200 + 20))
CL_HEAD=$CL_NET.1
CL_PORT=7070
CL_SCHED=$CL_HEAD:$CL_PORT
CL_HOSTS=$TEST_DIR/hosts
MUNGE_DIR=$TEST_DIR/munge
MUNGE_SOCK=$MUNGE_DIR/munge.sock
export PARSA_MUNGE_SOCKET=$MUNGE_SOCK
declare -A CL_HOST_IP=()
CL_NEXT_IP=10
mkdir -p "$CL_HOSTS" "$MUNGE_DIR"
chmod 755 "$MUNGE_DIR"

# make_key FILE: a munge key only its owner (root) can read, as munged wants.
make_key() {
	dd if=/dev/urandom of="$1" bs=1024 count=1 status=none
	chmod 0400 "$1"
}

# start_munged NAME KEY [FAKETIME]: a munged on $MUNGE_DIR/NAME.sock; with
# FAKETIME (e.g. -1h) its clock is shifted (libfaketime), so the credentials it
# makes have expired for the real one.
start_munged() {
	local name=$1 key=$2 shift=${3:-} preload=
	local sock=$MUNGE_DIR/$name.sock
	if [ -n "$shift" ]; then
		preload=$(find /usr/lib -name 'libfaketime.so.1' 2>/dev/null | head -1)
		[ -n "$preload" ] || fail "libfaketime is not installed (scripts/install-deps.sh)"
	fi
	env ${preload:+LD_PRELOAD=$preload FAKETIME=$shift} munged --foreground \
		--socket="$sock" --key-file="$key" --pid-file="$MUNGE_DIR/$name.pid" \
		--log-file="$MUNGE_DIR/$name.log" --seed-file="$MUNGE_DIR/$name.seed" --force \
		>>"$LOGS/$name.log" 2>&1 &
	DAEMON_PID[$name]=$!
	wait_for "$name answers" 20 test -S "$sock"
}

# cluster_setup: the bridge and the cluster's munged.
cluster_setup() {
	ip link add "$CL_BR" type bridge || fail "cannot create bridge $CL_BR"
	on_cleanup "ip link del '$CL_BR'"
	ip addr add "$CL_HEAD/24" dev "$CL_BR"
	ip link set "$CL_BR" up
	make_key "$MUNGE_DIR/munge.key"
	start_munged munge "$MUNGE_DIR/munge.key"
	# The config every daemon of this cluster reads: root's, not writable by others.
	cat >"$TEST_DIR/parsa.conf" <<CONF
[cluster]
sched = $CL_SCHED
munge_socket = $MUNGE_SOCK
munge_key = $MUNGE_DIR/munge.key
CONF
	chmod 0644 "$TEST_DIR/parsa.conf"
}

cl_ns() { echo "parsa-$CL_TAG-$1"; }

# in_host NAME COMMAND...: run COMMAND in host NAME's network namespace only
# (not `ip netns exec`, whose private mount namespace would hide the mounts).
in_host() {
	local host=$1
	shift
	nsenter --net="/run/netns/$(cl_ns "$host")" -- "$@"
}

# add_host NAME: a namespace with its own address on the bridge.
add_host() {
	local host=$1 ns veth ip
	ns=$(cl_ns "$host")
	veth=pv$CL_TAG$host
	ip=$CL_NET.$CL_NEXT_IP
	CL_NEXT_IP=$((CL_NEXT_IP + 1))
	CL_HOST_IP[$host]=$ip
	ip netns add "$ns" || fail "cannot create namespace $ns"
	on_cleanup "ip netns del '$ns'"
	ip link add "$veth" type veth peer name eth0 netns "$ns" || fail "cannot create $veth"
	# Explicitly: TCP connections orphaned by the cleanup can keep a deleted
	# namespace, and with it this link, alive for minutes.
	on_cleanup "ip link del '$veth'"
	ip link set "$veth" master "$CL_BR" up
	in_host "$host" ip addr add "$ip/24" dev eth0
	in_host "$host" ip link set eth0 up
	in_host "$host" ip link set lo up
}

# cut_host NAME / heal_host NAME: the host's cable out and back in.
cut_host() { ip link set "pv$CL_TAG$1" down; }
heal_host() { ip link set "pv$CL_TAG$1" up; }

# start_cluster_sched [FLAGS...]: the scheduler on its unix socket and on TCP.
start_cluster_sched() {
	parsa-sched --config "$TEST_DIR/parsa.conf" --state "$STATE" --socket "$SOCK" \
		--storage "$STORAGE" --listen "$CL_SCHED" --log-stderr "$@" >>"$LOGS/sched.log" 2>&1 &
	DAEMON_PID[sched]=$!
	wait_for "scheduler answers" 20 curl -sf --unix-socket "$SOCK" -o /dev/null http://localhost/v1/status
}

host_mnt() { echo "$CL_HOSTS/$1/mnt"; }

# start_host_fs NAME: the host's own mount, reaching the scheduler over TCP.
start_host_fs() {
	local host=$1 mnt
	mnt=$(host_mnt "$host")
	mkdir -p "$mnt"
	# nsenter directly (it execs), not in_host: $! must be the daemon itself.
	# A host of the cluster has no $PARSA_SCHED (it would win over the
	# config's [cluster] sched): it finds the head through the config.
	nsenter --net="/run/netns/$(cl_ns "$host")" -- env -u PARSA_SCHED parsafs "$mnt" --config "$TEST_DIR/parsa.conf" --storage "$STORAGE" -f \
		-o allow_other >>"$LOGS/fs-$host.log" 2>&1 &
	DAEMON_PID[fs-$host]=$!
	MOUNTS+=("$mnt")
	wait_for "mount of $host is up" 20 is_mounted "$mnt"
	wait_for "mount of $host answers" 20 test -e "$mnt/status"
}

# start_host_runner NAME [FLAGS...]: the host's runner, joining with one command.
start_host_runner() {
	local host=$1
	shift
	mkdir -p "$CL_HOSTS/$host/scratch" "$CL_HOSTS/$host/state"
	nsenter --net="/run/netns/$(cl_ns "$host")" -- env -u PARSA_SCHED \
		parsa-runner --config "$TEST_DIR/parsa.conf" --name "$host" \
		--mount "$(host_mnt "$host")" --scratch "$CL_HOSTS/$host/scratch" \
		--state "$CL_HOSTS/$host/state" --cpu-limit 100 --mem-limit 100 --grace 2 "$@" \
		>>"$LOGS/runner-$host.log" 2>&1 &
	DAEMON_PID[runner-$host]=$!
}

# start_host NAME [RUNNER FLAGS...]: a new machine joins: namespace, mount, runner.
start_host() {
	local host=$1
	add_host "$host"
	start_host_fs "$host"
	start_host_runner "$@"
	wait_for "host $host registered" 20 grep -q '^state: up' "$MNT/hosts/$host/status"
}

# host_state NAME: up, draining or down, as hosts/NAME/status says.
host_state() {
	sed -n 's/^state: //p' "$MNT/hosts/$1/status"
}

# inst_field JOB STAGE INDEX KEY: one line of an instance's status.
inst_field() {
	sed -n "s/^$4: //p" "$MNT/jobs/$1/stages/$2/instances/$3/status"
}

# running_on HOST: how many instances hosts/HOST/status lists.
running_on() {
	sed -n 's/^running: //p' "$MNT/hosts/$1/status"
}

# Conditions for wait_for (a "$(...)" in its arguments would be read once).
inst_is() { [ "$(inst_field "$1" "$2" "$3" "$4")" = "$5" ]; }
host_is() { [ "$(host_state "$1")" = "$2" ]; }
host_runs() { [ "$(running_on "$1")" = "$2" ]; }

# start_head_fs: the head node's own mount on $MNT, through the unix socket,
# with the cluster's config (its admin group decides the ctl files' group).
start_head_fs() {
	mkdir -p "$MNT"
	parsafs "$MNT" --config "$TEST_DIR/parsa.conf" --sched "unix:$SOCK" --storage "$STORAGE" -f \
		-o allow_other >>"$LOGS/fs.log" 2>&1 &
	DAEMON_PID[fs]=$!
	MOUNTS+=("$MNT")
	wait_for "mount is up" 20 is_mounted "$MNT"
	wait_for "mount answers" 20 test -e "$MNT/status"
}
