#!/bin/bash
# One command from a fresh Debian 12 machine to the lab's pipeline done:
# install the packages, build, start parsa on this machine (`parsa up`), submit
# examples/lab-pipeline.conf through the mount, wait for it and print where the
# results are. It installs the build (`cmake --install`: /usr/local as root,
# ~/.local for a user) so that `parsa` is on the PATH, as the tutorial and the
# banner of `parsa up` type it. parsa keeps running afterwards; `parsa down`
# stops it.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
if [ "$(id -u)" -eq 0 ]; then
	prefix=/usr/local
else
	prefix=$HOME/.local
fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX="$prefix" >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
cmake --install build >/dev/null
# man -k and apropos read man-db's index, which an install does not update:
# the system's for /usr/local, the user's own for ~/.local.
if [ "$(id -u)" -eq 0 ]; then
	mandb -q 2>/dev/null || true
else
	mandb -q --user-db 2>/dev/null || true
fi
parsa=$prefix/bin/parsa
if [ "$(command -v parsa || true)" != "$parsa" ]; then
	path_hint="parsa is installed in $prefix/bin, which is not first on your PATH; add it with:
  export PATH=$prefix/bin:\$PATH"
	export PATH=$prefix/bin:$PATH
else
	path_hint=
fi

if [ "$(id -u)" -eq 0 ]; then
	mnt=${PARSA_MOUNT:-/parsa}
else
	mnt=${PARSA_MOUNT:-$HOME/parsa}
fi
if ! grep -q " $mnt fuse" /proc/mounts; then
	"$parsa" up --detach --mount "$mnt"
fi

cp examples/lab-pipeline.conf "$mnt/queue/"
id=$(readlink "$mnt/jobs/last")
echo "submitted job $id; following $mnt/jobs/$id/status until it ends"
state=$(cat "$mnt/jobs/$id/wait")
cat "$mnt/jobs/$id/status"
if [ "$state" != succeeded ]; then
	echo "job $id ended $state; see $mnt/jobs/$id/events and $mnt/jobs/$id/stages/*/log" >&2
	exit 1
fi
echo
echo "results: $mnt/jobs/$id/out/gather/results.csv"
head -n 5 "$mnt/jobs/$id/out/gather/results.csv"
echo "parsa is still up on $mnt; stop it with: parsa down --mount $mnt"
if [ -n "$path_hint" ]; then
	echo "$path_hint"
fi
