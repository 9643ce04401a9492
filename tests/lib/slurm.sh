# A real Slurm (Debian's slurm-wlm 22.05) on this machine for the tests that
# hand instances to Slurm: a private munged and key, slurmctld and one slurmd
# per node on loopback, state, spool, logs and pid files under $TEST_DIR, no
# slurmdbd (sacct says accounting is disabled) unless SLURM_ACCOUNTING=1
# (start_slurmdbd: slurmdbd and a private MariaDB). The daemons are in DAEMON_PID,
# so common.sh's trap stops them by pid; the jobs still running are cancelled
# and killed first. Several slurmds share this machine (Debian's slurmd takes
# -N NAME and its node's Port= although it is not built with
# --enable-multiple-slurmd), or one sits in a network namespace
# (SLURM_NODE_NETNS, t0402). Source after common.sh:
#   . "$(dirname "$0")/../lib/slurm.sh"
# Then: [SLURM_MAX_ARRAY=N] [SLURM_MIN_JOB_AGE=S] [SLURM_ACCOUNTING=1] start_slurm [NODES...]
# [SLURM_MAX_JOB_COUNT=N] (default one node "n1"); client commands read $SLURM_CONF. SLURM_CPUS=N makes
# each node claim N CPUs whatever this machine has (config_overrides).

# Private ports no other test or service uses (slurm's defaults are 6817/6818);
# node i's slurmd listens on SLURM_SLURMD_PORT + i.
SLURM_CTLD_PORT=16817
SLURM_SLURMD_PORT=16820
# With SLURM_ACCOUNTING=1: slurmdbd's and its MariaDB's.
SLURM_DBD_PORT=16819
SLURM_DB_PORT=16806
SLURM_LOCK=/tmp/parsa-slurm.lock
SLURM_DIR=$TEST_DIR/slurm
SLURM_NODES=()
# Where slurmctld is reached, and per node its address and network namespace
# (a file under /run/netns): set them before start_slurm to put a slurmd in a
# namespace of tests/lib/cluster.sh (add_host), where cutting its link makes a
# real node failure. Default: everything on 127.0.0.1 in this namespace.
SLURM_CTLD_ADDR=${SLURM_CTLD_ADDR:-127.0.0.1}
declare -A SLURM_NODE_ADDR=()
declare -A SLURM_NODE_NETNS=()
export SLURM_CONF=$SLURM_DIR/slurm.conf

need_slurm() {
	need_root
	local c
	for c in slurmctld slurmd sbatch squeue sinfo scontrol scancel munged; do
		command -v "$c" >/dev/null || {
			echo "# SKIP: needs slurmctld, slurmd, slurm-client and munge ($c is missing; scripts/install-deps.sh)"
			exit 77
		}
	done
}

# slurm_write_conf NODES...: slurm.conf for a controller and the nodes, each
# claiming this machine's CPUs (or $SLURM_CPUS) and 1 GiB less than its memory
# (more than the real memory would drain the node without config_overrides).
slurm_write_conf() {
	local cpus mem i=0 node addr
	cpus=${SLURM_CPUS:-$(nproc)}
	mem=$(($(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo) - 1024))
	[ "$mem" -gt 256 ] || mem=256
	cat >"$SLURM_CONF" <<EOF
ClusterName=parsatest
SlurmctldHost=$(hostname -s)($SLURM_CTLD_ADDR)
MailProg=/bin/true
SlurmctldPort=$SLURM_CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SLURM_DIR/munge.sock
StateSaveLocation=$SLURM_DIR/ctld
SlurmdSpoolDir=$SLURM_DIR/spool-%n
SlurmctldPidFile=$SLURM_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/slurmd-%n.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
$(slurm_accounting_conf)
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Without it a job without --mem takes the whole node's memory.
DefMemPerCPU=100
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
MaxArraySize=${SLURM_MAX_ARRAY:-1001}
MinJobAge=${SLURM_MIN_JOB_AGE:-300}
MaxJobCount=${SLURM_MAX_JOB_COUNT:-10000}
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_min_interval=100000
SlurmctldTimeout=30
SlurmdTimeout=${SLURM_SLURMD_TIMEOUT:-30}
InactiveLimit=0
KillWait=2
Waittime=0
EOF
	for node in "$@"; do
		i=$((i + 1))
		addr=${SLURM_NODE_ADDR[$node]:-127.0.0.1}
		echo "NodeName=$node NodeHostname=$node NodeAddr=$addr Port=$((SLURM_SLURMD_PORT + i)) CPUs=$cpus RealMemory=$mem State=UNKNOWN" >>"$SLURM_CONF"
	done
	echo "PartitionName=debug Nodes=$(IFS=,; echo "$*") Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >>"$SLURM_CONF"
	chmod 644 "$SLURM_CONF"
}

# slurm_accounting_conf: slurm.conf's accounting lines: none, or with
# SLURM_ACCOUNTING=1 the slurmdbd of start_slurmdbd and jobacct_gather/linux
# (a step's CPU time and MaxRSS, sampled every second; a step over its memory
# killed: OverMemoryKill) and an .extern step per job (PrologFlags=Contain).
slurm_accounting_conf() {
	if [ "${SLURM_ACCOUNTING:-0}" = 1 ]; then
		# AccountingStoragePass: the munge socket for talking to slurmdbd
		# (AuthInfo's is not used there).
		printf '%s\n' AccountingStorageType=accounting_storage/slurmdbd AccountingStorageHost=127.0.0.1 \
			"AccountingStoragePort=$SLURM_DBD_PORT" "AccountingStoragePass=$SLURM_DIR/munge.sock" \
			JobAcctGatherType=jobacct_gather/linux \
			JobAcctGatherFrequency=task=1 JobAcctGatherParams=OverMemoryKill PrologFlags=Contain
	else
		printf '%s\n' AccountingStorageType=accounting_storage/none JobAcctGatherType=jobacct_gather/none
	fi
}

# start_slurmdbd: a private MariaDB (its own datadir, socket and loopback
# port, no grant tables: nothing but slurmdbd reaches it) and slurmdbd on
# loopback, the test's cluster added; by pid, as the other daemons. For
# SLURM_ACCOUNTING=1 (start_slurm calls it); skips without the packages.
start_slurmdbd() {
	local db=$SLURM_DIR/mysql c
	for c in slurmdbd sacctmgr sacct mariadbd mariadb-install-db mariadb-admin; do
		command -v "$c" >/dev/null || {
			echo "# SKIP: needs slurmdbd and mariadb-server ($c is missing; scripts/install-deps.sh)"
			exit 77
		}
	done
	mkdir -p "$db"
	mariadb-install-db --no-defaults --datadir="$db/data" --user=root --skip-test-db \
		--auth-root-authentication-method=normal >>"$LOGS/mariadb-install.log" 2>&1 ||
		fail "mariadb-install-db failed (see $LOGS/mariadb-install.log)"
	mariadbd --no-defaults --datadir="$db/data" --socket="$db/sock" --port="$SLURM_DB_PORT" \
		--bind-address=127.0.0.1 --user=root --skip-grant-tables --pid-file="$db/pid" \
		--log-error="$LOGS/mariadb.log" --innodb-buffer-pool-size=32M --skip-log-bin >>"$LOGS/mariadb.out" 2>&1 &
	DAEMON_PID[mariadb]=$!
	wait_for "mariadb answers" 60 mariadb-admin --no-defaults --socket="$db/sock" ping
	printf '%s\n' AuthType=auth/munge "AuthInfo=socket=$SLURM_DIR/munge.sock" DbdAddr=127.0.0.1 DbdHost=localhost \
		"DbdPort=$SLURM_DBD_PORT" SlurmUser=root DebugLevel=info "LogFile=$LOGS/slurmdbd.log" \
		"PidFile=$SLURM_DIR/slurmdbd.pid" StorageType=accounting_storage/mysql StorageHost=127.0.0.1 \
		"StoragePort=$SLURM_DB_PORT" StorageUser=root StorageLoc=slurm_acct_db >"$SLURM_DIR/slurmdbd.conf"
	chmod 600 "$SLURM_DIR/slurmdbd.conf"
	slurmdbd -D >>"$LOGS/slurmdbd.out" 2>&1 &
	DAEMON_PID[slurmdbd]=$!
	wait_for "slurmdbd takes the cluster" 60 sacctmgr -i add cluster parsatest
}

# slurm_nodes_idle: every node of the test is idle (or mixed) in sinfo.
slurm_nodes_idle() {
	local node st
	for node in "${SLURM_NODES[@]}"; do
		st=$(sinfo --noheader -n "$node" -o '%T' 2>/dev/null | head -1)
		case $st in idle|mixed|allocated) ;; *) return 1 ;; esac
	done
}

# start_slurmd NODE: (re)start NODE's slurmd in the foreground, by pid.
start_slurmd() {
	local node=$1
	mkdir -p "$SLURM_DIR/spool-$node"
	local ns=${SLURM_NODE_NETNS[$node]:-}
	# nsenter execs: $! is slurmd itself.
	${ns:+nsenter --net="$ns" --} slurmd -D -N "$node" -f "$SLURM_CONF" \
		>>"$LOGS/slurmd-$node.out" 2>&1 &
	DAEMON_PID[slurmd-$node]=$!
}

# slurm_write_cleanup: the script the trap runs first, while slurmctld still
# answers. Stopping slurmd leaves its slurmstepds and their jobs running, so
# every job is cancelled and waited for; whatever still runs with this test's
# SLURM_CONF in its environment and is a stepd or a job's process (sbatch
# exports the caller's environment) is then killed by pid.
slurm_write_cleanup() {
	cat >"$SLURM_DIR/cleanup.sh" <<'EOF'
ids=$(squeue --noheader -o %A 2>/dev/null)
[ -n "$ids" ] && scancel --full $ids 2>/dev/null
for i in $(seq 1 50); do
	[ -z "$(squeue --noheader -o %A 2>/dev/null)" ] && break
	sleep 0.1
done
for env in /proc/[0-9]*/environ; do
	pid=${env#/proc/}
	pid=${pid%/environ}
	[ "$pid" = "$$" ] && continue
	vars=$(tr '\0' '\n' <"$env" 2>/dev/null) || continue
	printf '%s\n' "$vars" | grep -qxF "SLURM_CONF=$SLURM_CONF" || continue
	if printf '%s\n' "$vars" | grep -q '^SLURM_JOB_ID=' ||
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = slurmstepd ]; then
		kill -KILL "$pid" 2>/dev/null
	fi
done
exit 0
EOF
}

# start_slurm [NODES...]: munged, slurmctld and a slurmd per node; returns
# once sinfo shows every node idle.
start_slurm() {
	need_slurm
	[ $# -ge 1 ] || set -- n1
	SLURM_NODES=("$@")
	mkdir -p "$SLURM_DIR/ctld"
	chmod 755 "$SLURM_DIR"
	# One Slurm at a time on these ports: another test, another build's tests.
	exec {SLURM_LOCK_FD}>"$SLURM_LOCK"
	flock -w 900 "$SLURM_LOCK_FD" || fail "the Slurm ports stayed taken (lock $SLURM_LOCK)"
	local p
	for p in "$SLURM_CTLD_PORT" "$SLURM_DBD_PORT" "$SLURM_DB_PORT" $(seq $((SLURM_SLURMD_PORT + 1)) $((SLURM_SLURMD_PORT + $#))); do
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && fail "port $p is taken by something else"
	done
	dd if=/dev/urandom of="$SLURM_DIR/munge.key" bs=1024 count=1 status=none
	chmod 0400 "$SLURM_DIR/munge.key"
	munged --foreground --socket="$SLURM_DIR/munge.sock" --key-file="$SLURM_DIR/munge.key" \
		--pid-file="$SLURM_DIR/munged.pid" --log-file="$LOGS/munged.log" \
		--seed-file="$SLURM_DIR/munged.seed" --force >>"$LOGS/munged.out" 2>&1 &
	DAEMON_PID[munged]=$!
	wait_for "munged answers" 20 test -S "$SLURM_DIR/munge.sock"
	slurm_write_conf "$@"
	if [ "${SLURM_ACCOUNTING:-0}" = 1 ]; then
		start_slurmdbd
	fi
	slurm_write_cleanup
	on_cleanup "SLURM_CONF='$SLURM_CONF' bash '$SLURM_DIR/cleanup.sh'"
	slurmctld -D -i -f "$SLURM_CONF" >>"$LOGS/slurmctld.out" 2>&1 &
	DAEMON_PID[slurmctld]=$!
	wait_for "slurmctld answers" 30 squeue --noheader
	for p in "$@"; do
		start_slurmd "$p"
	done
	wait_for "slurm nodes $* idle" 60 slurm_nodes_idle
}

# slurm_as USER COMMAND...: a Slurm client command as USER (sbatch submits as
# whoever calls it).
slurm_as() {
	local user=$1
	shift
	setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups \
		env SLURM_CONF="$SLURM_CONF" "$@"
}

# slurm_job_state ID: the job's state (long form) from scontrol, "" once gone.
slurm_job_state() {
	scontrol show job -o "$1" 2>/dev/null | sed -n 's/.* JobState=\([A-Z_]*\) .*/\1/p' | head -1
}

# slurm_job_is ID STATE: for wait_for.
slurm_job_is() {
	[ "$(slurm_job_state "$1")" = "$2" ]
}
