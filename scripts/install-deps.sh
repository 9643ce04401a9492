#!/bin/sh
# Installs every Debian 12 package parsa needs to build, run and test, and to
# build its own packages (debhelper, lintian; scdoc for the man pages,
# systemd for systemd-analyze verify of the units). What a machine needs to
# *run* parsa is much less: docs/operators.md, "What each machine needs".
# Safe to run again; needs root (or sudo).
set -eu

packages="build-essential cmake pkg-config
  libfuse3-dev fuse3 libsqlite3-dev sqlite3 libinih-dev libjansson-dev
  libmicrohttpd-dev libcurl4-openssl-dev libnfs-dev libnfs-utils libinotifytools0-dev
  libmunge-dev munge libssl-dev faketime
  nfs-ganesha nfs-ganesha-vfs rpcbind rsync
  curl iproute2 procps psmisc util-linux passwd python3
  scdoc man-db bash-completion systemd debhelper dpkg-dev lintian adduser
  chromium prometheus
  slurmctld slurmd slurm-client slurmdbd mariadb-server"

if [ "$(id -u)" -ne 0 ]; then
	exec sudo "$0" "$@"
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# The tests need promtool from Debian's prometheus package, not its server,
# and slurm-wlm's programs, not its services (nor munge's):
# no service may start while the packages install (policy-rc.d says so to
# invoke-rc.d and deb-systemd-invoke), and the server stays disabled after.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	own_policy=1
	trap 'rm -f "$policy"' EXIT
fi
# The services of these packages that this script, not the machine's owner,
# would leave enabled (see below).
fresh_units=
for unit in slurmctld.service slurmd.service slurmdbd.service mariadb.service munge.service; do
	if ! command -v systemctl >/dev/null ||
		! systemctl is-enabled "$unit" >/dev/null 2>&1; then
		fresh_units="$fresh_units $unit"
	fi
done
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $packages >/dev/null
if [ "$own_policy" -eq 1 ]; then
	rm -f "$policy"
	trap - EXIT
fi
if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
	systemctl disable --now prometheus.service >/dev/null 2>&1 || true
fi
# The Slurm tests start their own munged, slurmctld and slurmds on private
# ports, keys and folders (tests/lib/slurm.sh), and so do the cluster tests
# their munged: the services these packages enable at install are disabled
# and stopped, unless they were enabled before this script ran (a machine
# that is a Slurm node, or uses munge for parsa, keeps them).
if command -v systemctl >/dev/null; then
	for unit in $fresh_units; do
		systemctl disable "$unit" >/dev/null 2>&1 || true
		if [ -d /run/systemd/system ]; then
			systemctl stop "$unit" >/dev/null 2>&1 || true
		fi
	done
fi
# A FUSE mount needs the device; containers sometimes lack the node.
if [ ! -e /dev/fuse ]; then
	mknod -m 666 /dev/fuse c 10 229 || true
fi
