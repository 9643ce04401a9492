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
  scdoc man-db systemd debhelper dpkg-dev lintian adduser"

if [ "$(id -u)" -ne 0 ]; then
	exec sudo "$0" "$@"
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $packages >/dev/null
# A FUSE mount needs the device; containers sometimes lack the node.
if [ ! -e /dev/fuse ]; then
	mknod -m 666 /dev/fuse c 10 229 || true
fi
