#!/bin/bash
# The Debian packages as a lab installs them: build them from this tree
# (dpkg-buildpackage in a copy under /tmp, Release, no tests), lintian without
# an error, `apt-get install ./*.deb`, nothing enabled or started by the
# install, --version of every installed program, the installed units and man
# pages checked, the lab's pipeline run with the installed programs (not the
# build folder), a backup with the installed `parsa admin backup`, an upgrade
# to the same packages repacked as the next version (the admin's edit of the
# conffile kept), remove (settings and state kept), then purge: no file of
# theirs and no daemon left behind. Needs root; skips (77) on a
# machine where parsa is installed or /etc/parsa or /var/lib/parsa exist, so
# that it never touches a real installation.
set -u
PARSA_SRC=${PARSA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
PACKAGES="parsa parsa-sched parsa-runner"
PROGRAMS="parsa parsa-sched parsa-runner parsa-supervise parsafs"
n=0
installed=0
group_made=0

log() { printf '# %s\n' "$*"; }
pass() { n=$((n + 1)); printf 'ok %d - %s\n' "$n" "$*"; }
fail() {
	printf 'not ok %d - %s\n' $((n + 1)) "$*"
	for f in "$W"/state/logs/*.log; do
		[ -f "$f" ] && { echo "# --- $f"; tail -n 20 "$f" | sed 's/^/# /'; }
	done
	exit 1
}
skip() { echo "1..0 # SKIP $*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "needs root (apt-get install)"
for tool in dpkg-buildpackage dh lintian scdoc apt-get systemd-analyze rsync; do
	command -v "$tool" >/dev/null || skip "$tool is missing: run scripts/install-deps.sh"
done
for p in $PACKAGES; do
	if dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q installed; then
		skip "package $p is installed on this machine: not touching it"
	fi
done
for d in /etc/parsa /var/lib/parsa; do
	[ -e "$d" ] && skip "$d exists: a parsa of this machine's, not touching it"
done

W=$(mktemp -d "${TMPDIR:-/tmp}/parsa-package.XXXXXX")
chmod 755 "$W"
getent group parsa-admin >/dev/null || group_made=1

# The daemons that run from the installed programs (others' tests may run
# parsa daemons from build folders meanwhile: those are not ours).
installed_daemons() {
	local pid exe
	for pid in $(pgrep -x 'parsa|parsa-sched|parsa-runner|parsafs|parsa-supervise'); do
		exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
		case $exe in /usr/bin/parsa*) echo "$pid $exe" ;; esac
	done
}

cleanup() {
	local rc=$? pid
	if [ -x /usr/bin/parsa ] && [ -d "$W/mnt" ]; then
		timeout 30 /usr/bin/parsa down --mount "$W/mnt" >/dev/null 2>&1
	fi
	grep -q " $W/mnt fuse" /proc/mounts && fusermount3 -u -z "$W/mnt"
	for pid in $(installed_daemons | awk '{ print $1 }'); do
		kill -9 "$pid" 2>/dev/null
	done
	if [ $installed -eq 1 ]; then
		DEBIAN_FRONTEND=noninteractive timeout 120 apt-get purge -y -qq $PACKAGES >/dev/null 2>&1
	fi
	[ $group_made -eq 1 ] && getent group parsa-admin >/dev/null && groupdel parsa-admin
	rm -rf "$W"
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# Build, from a copy: dpkg-buildpackage writes next to the source folder.
t0=$(date +%s)
rsync -a --exclude '/build*/' --exclude '/.git' --exclude '/obj-*/' \
	--exclude '/debian/.debhelper/' "$PARSA_SRC/" "$W/src/"
(cd "$W/src" && DEB_BUILD_OPTIONS="nocheck noautodbgsym parallel=2" timeout 400 \
	dpkg-buildpackage -b -us -uc >"$W/build.log" 2>&1) ||
	{ tail -n 30 "$W/build.log" | sed 's/^/# /'; fail "dpkg-buildpackage -b -us -uc"; }
pass "dpkg-buildpackage -b -us -uc in $(($(date +%s) - t0)) s"
debs=()
for p in $PACKAGES; do
	f=$(ls "$W/${p}_"*.deb 2>/dev/null | head -n 1)
	[ -n "$f" ] || fail "no package $p was built"
	debs+=("$f")
done
version=$(dpkg-deb -f "${debs[0]}" Version)
upstream=${version%-*}
pass "built ${debs[*]##*/}"

# lintian leaves temporary files behind in TMPDIR: ours.
lint=$(TMPDIR=$W lintian --tag-display-limit 0 "$W"/parsa_*.changes 2>&1)
if grep -q '^E: ' <<<"$lint"; then
	fail "lintian reports errors: $(grep '^E: ' <<<"$lint" | tr '\n' ' ')"
fi
pass "lintian: no error ($(grep -c '^W: ' <<<"$lint") warnings)"
for deb in "${debs[@]}"; do
	dpkg-deb -f "$deb" Depends | grep -q 'libc6' || fail "$(basename "$deb"): Depends not from shlibs"
done
pass "dependencies come from shlibs"

# Install as the lab does. Recommends (munge) are left out: the pipeline
# runs on the unix socket.
DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq --no-install-recommends \
	"${debs[@]}" >"$W/apt.log" 2>&1 || { tail -n 20 "$W/apt.log"; fail "apt-get install ./*.deb"; }
installed=1
pass "apt-get install ${debs[*]##*/}"

for p in $PROGRAMS; do
	[ -x "/usr/bin/$p" ] || fail "/usr/bin/$p is not installed"
	v=$("/usr/bin/$p" --version 2>&1 | head -n 1)
	case $v in "$p $upstream"*) ;; *) fail "/usr/bin/$p --version says '$v', expected $p $upstream" ;; esac
done
pass "--version of $PROGRAMS: $upstream"
dpkg-query -W -f '${Conffiles}\n' parsa | grep -q ' /etc/parsa/parsa.conf ' ||
	fail "/etc/parsa/parsa.conf is not a conffile"
pass "/etc/parsa/parsa.conf is a conffile"
[ -d /var/lib/parsa ] || fail "the postinst did not make /var/lib/parsa"
getent group parsa-admin >/dev/null || fail "the postinst did not make the group parsa-admin"
pass "the postinst made /var/lib/parsa and the group parsa-admin"

# Nothing enabled, nothing started.
for u in parsa parsa-sched parsa-runner parsafs; do
	ls /etc/systemd/system/*.wants/$u.service >/dev/null 2>&1 && fail "$u.service was enabled by the install"
done
[ -z "$(installed_daemons)" ] || fail "the install started daemons: $(installed_daemons)"
[ -e /var/lib/parsa/sched.sock ] && fail "a scheduler runs in /var/lib/parsa after the install"
pass "no unit enabled, no daemon started by the install"

for u in parsa parsa-sched parsa-runner parsafs; do
	out=$(systemd-analyze verify "/lib/systemd/system/$u.service" 2>&1) ||
		fail "systemd-analyze verify $u.service: $out"
	[ -z "$out" ] || fail "systemd-analyze verify $u.service: $out"
done
pass "systemd-analyze verify of the installed units"
for page in parsa.1 parsafs.8 parsa-sched.8 parsa-runner.8 parsa-supervise.8 parsa.conf.5 parsa-spec.5; do
	f=$(man -w "${page##*.}" "${page%.*}" 2>/dev/null)
	[ -n "$f" ] || fail "man: no page $page"
	out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$f" 2>&1 >/dev/null)
	[ -z "$out" ] || fail "man --warnings -l $f: $out"
done
pass "the installed man pages format without a warning"
# man-db's trigger indexes them (man -k, apropos); bash-completion, which the
# package recommends, loads the completion on the first <Tab> after parsa.
apropos -M /usr/share/man parsa 2>/dev/null | grep -q '^parsa (1)' ||
	fail "man -k parsa does not find parsa(1) in /usr/share/man: $(apropos -M /usr/share/man parsa 2>&1)"
pass "man -k parsa finds the installed pages"
if [ -r /usr/share/bash-completion/bash_completion ]; then
	out=$(bash -c '. /usr/share/bash-completion/bash_completion; _completion_loader parsa; complete -p parsa' 2>&1)
	case $out in
	"complete -F "*" parsa") pass "bash-completion loads parsa's completion: $out" ;;
	*) fail "bash-completion does not load parsa's completion: $out" ;;
	esac
fi

# The lab's pipeline with the installed programs only (limits of 100%: this
# tests the package, not admission, and the machine may be busy).
mkdir -p "$W/mnt"
env -u PARSA_SCHED PARSA_SYSTEM_STATE= PATH=/usr/sbin:/usr/bin:/sbin:/bin \
	timeout 60 /usr/bin/parsa up --detach --mount "$W/mnt" --state "$W/state" \
		--cpu-limit 100 --mem-limit 100 >"$W/up.out" 2>&1 ||
	{ cat "$W/up.out"; fail "/usr/bin/parsa up --detach"; }
grep -q "parsa down --mount $W/mnt" "$W/up.out" || fail "the banner does not say how to stop it: $(cat "$W/up.out")"
for d in parsa-sched parsafs parsa-runner; do
	installed_daemons | grep -q " /usr/bin/$d\$" || fail "$d does not run from /usr/bin: $(installed_daemons)"
done
pass "parsa up runs the installed parsa-sched, parsafs and parsa-runner"
cp "$PARSA_SRC/examples/lab-pipeline.conf" "$W/mnt/queue/" || fail "submit through the mount"
id=$(readlink "$W/mnt/jobs/last")
state=$(timeout 120 cat "$W/mnt/jobs/$id/wait")
[ "$state" = succeeded ] || fail "the lab pipeline (job $id) ended '$state': $(cat "$W/mnt/jobs/$id/status")"
[ -s "$W/mnt/jobs/$id/out/gather/results.csv" ] || fail "no results.csv"
pass "the lab pipeline succeeded with the installed programs (job $id)"
out=$(/usr/bin/parsa admin backup --state "$W/state" "$W/backup.db" 2>&1) || fail "parsa admin backup: $out"
pass "installed parsa admin backup: $out"
timeout 60 /usr/bin/parsa down --mount "$W/mnt" >/dev/null 2>&1 || fail "/usr/bin/parsa down"
[ -z "$(installed_daemons)" ] || fail "daemons left after parsa down: $(installed_daemons)"
pass "parsa down stopped every installed daemon"

# An upgrade over the installed packages (the same ones repacked as the next
# version): the admin's edit of the conffile stays, nothing is started.
echo "; edited by the admin" >>/etc/parsa/parsa.conf
next="$version+next1"
up=()
mkdir -p "$W/repack"
for deb in "${debs[@]}"; do
	d=$W/repack/$(basename "$deb" .deb)
	dpkg-deb -R "$deb" "$d" || fail "dpkg-deb -R $deb"
	sed -i "s/^Version: .*/Version: $next/; s/(= $version)/(= $next)/" "$d/DEBIAN/control"
	dpkg-deb -b "$d" "$d.deb" >/dev/null || fail "dpkg-deb -b $d"
	up+=("$d.deb")
done
DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq --no-install-recommends \
	"${up[@]}" >"$W/upgrade.log" 2>&1 || { tail -n 20 "$W/upgrade.log"; fail "upgrade to $next"; }
for p in $PACKAGES; do
	[ "$(dpkg-query -W -f '${Version}' "$p")" = "$next" ] || fail "$p was not upgraded to $next"
done
grep -q 'edited by the admin' /etc/parsa/parsa.conf || fail "the upgrade replaced the edited parsa.conf"
[ -z "$(installed_daemons)" ] || fail "the upgrade started daemons: $(installed_daemons)"
/usr/bin/parsa --version >/dev/null || fail "parsa after the upgrade"
pass "upgrade to $next: the edited conffile kept, nothing started"

# Remove keeps the admin's settings and the state; purge leaves no file of theirs.
dpkg -L $PACKAGES >"$W/files" 2>/dev/null || fail "dpkg -L"
DEBIAN_FRONTEND=noninteractive timeout 120 apt-get remove -y -qq $PACKAGES >"$W/remove.log" 2>&1 ||
	{ cat "$W/remove.log"; fail "apt-get remove"; }
[ ! -e /usr/bin/parsa ] || fail "apt-get remove left /usr/bin/parsa"
grep -q 'edited by the admin' /etc/parsa/parsa.conf 2>/dev/null || fail "apt-get remove did not keep the edited parsa.conf"
[ -d /var/lib/parsa ] || fail "apt-get remove did not keep /var/lib/parsa"
pass "apt-get remove keeps the edited /etc/parsa/parsa.conf and /var/lib/parsa"
DEBIAN_FRONTEND=noninteractive timeout 120 apt-get purge -y -qq $PACKAGES >"$W/purge.log" 2>&1 ||
	{ cat "$W/purge.log"; fail "apt-get purge"; }
installed=0
left=
while read -r f; do
	# Shared folders (/usr/bin, /lib/systemd/system...) stay; anything of ours goes.
	if [ -d "$f" ]; then
		case $f in *parsa*) [ -e "$f" ] && left="$left $f" ;; esac
	elif [ -e "$f" ] || [ -L "$f" ]; then
		left="$left $f"
	fi
done <"$W/files"
for f in /etc/parsa /var/lib/parsa /run/parsa/runner-%var%lib%parsa*; do
	[ -e "$f" ] && left="$left $f"
done
[ -z "$left" ] || fail "left after purge:$left"
grep -q "parsa: purge: removing /var/lib/parsa" "$W/purge.log" ||
	fail "the purge did not say it removed /var/lib/parsa: $(cat "$W/purge.log")"
[ -z "$(installed_daemons)" ] || fail "daemons left after purge: $(installed_daemons)"
pass "purged: none of the $(wc -l <"$W/files") paths of dpkg -L, /etc/parsa, /var/lib/parsa is left"
echo "1..$n"
