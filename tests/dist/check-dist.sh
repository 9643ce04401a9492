#!/bin/bash
# What `cmake --install` ships, checked in the build tree: every systemd unit
# passes systemd-analyze verify (with the build's programs and man pages),
# every man page formats without a warning, every program answers --version
# with the project's version and --help, and the bash completion offers every
# command `parsa --help` lists. Usage: check-dist.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
src=$2
fails=0
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $*"; }

version=$(sed -n 's/^project(parsa VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
export MANPATH=$build/dist/man

for unit in "$build"/dist/verify/*.service; do
	out=$(systemd-analyze verify "$unit" 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && [ -z "$out" ]; then
		ok "systemd-analyze verify $(basename "$unit")"
	else
		notok "systemd-analyze verify $(basename "$unit") (rc $rc): $out"
	fi
done
runner=$build/dist/systemd/parsa-runner.service
grep -qx 'KillMode=process' "$runner" && grep -qx 'Delegate=yes' "$runner" &&
	ok "parsa-runner.service: KillMode=process, Delegate=yes" ||
	notok "parsa-runner.service lacks KillMode=process or Delegate=yes"

pages=0
for page in "$build"/dist/man/man*/*; do
	pages=$((pages + 1))
	out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
	[ -z "$out" ] && ok "man --warnings -l $(basename "$page")" ||
		notok "man --warnings -l $(basename "$page"): $out"
done
[ "$pages" -eq 7 ] && ok "seven man pages" || notok "$pages man pages, expected 7"

for p in parsa parsa-sched parsa-runner parsa-supervise parsafs; do
	v=$("$build/bin/$p" --version 2>&1 | head -n 1)
	case $v in
	"$p $version"*) ok "$p --version: $v" ;;
	*) notok "$p --version: '$v', expected '$p $version'" ;;
	esac
	"$build/bin/$p" --help >/dev/null 2>&1 && ok "$p --help" || notok "$p --help fails"
done

# The example /etc/parsa/parsa.conf parses and sets nothing: a command reads
# it and fails only on the missing scheduler.
confdir=$(mktemp -d /tmp/parsa-check-dist-conf.XXXXXX)
conf=$confdir/parsa.conf
cp "$src/dist/parsa.conf" "$conf"
chmod 0644 "$conf"
out=$(PARSA_CONFIG=$conf PARSA_SCHED=unix:/nonexistent/sched.sock "$build/bin/parsa" status 2>&1)
rm -rf "$confdir"
case $out in
*parsa.conf:*) notok "the example parsa.conf does not parse: $out" ;;
*/nonexistent/sched.sock*) ok "the example parsa.conf parses" ;;
*) notok "parsa status with the example parsa.conf: $out" ;;
esac

# The completion offers what parsa --help lists.
commands=$("$build/bin/parsa" --help | awk '/^  [a-z]+ / { print $1 }')
offered=$(bash -c '. "$1"; COMP_WORDS=(parsa ""); COMP_CWORD=1; _parsa; printf "%s\n" "${COMPREPLY[@]}"' _ \
	"$src/dist/bash-completion/parsa")
missing=
for c in $commands; do
	grep -qx "$c" <<<"$offered" || missing="$missing $c"
done
[ -n "$commands" ] && [ -z "$missing" ] && ok "completion offers every command" ||
	notok "completion misses:$missing"
offered=$(bash -c '. "$1"; COMP_WORDS=(parsa up --de); COMP_CWORD=2; _parsa; printf "%s\n" "${COMPREPLY[@]}"' _ \
	"$src/dist/bash-completion/parsa")
[ "$offered" = --detach ] && ok "completion of up --de is --detach" || notok "completion of up --de: '$offered'"
jobs=$(mktemp -d /tmp/parsa-check-dist.XXXXXX)
mkdir -p "$jobs/jobs/7" "$jobs/jobs/12" "$jobs/jobs/last"
offered=$(PARSA_MOUNT=$jobs bash -c '. "$1"; COMP_WORDS=(parsa status 1); COMP_CWORD=2; _parsa; printf "%s\n" "${COMPREPLY[@]}"' _ \
	"$src/dist/bash-completion/parsa")
rm -rf "$jobs"
[ "$offered" = 12 ] && ok "completion of job ids from the mount" || notok "completion of job ids: '$offered'"

# The texts that must say the same (issue 38): where each program finds the
# scheduler, in one order; that every daemon can log to a file; the ports.
order='$PARSA_SCHED, else [cluster] sched'
for prog in parsa parsafs parsa-runner; do
	# parsa's commands each say it (parsa submit --help).
	if [ "$prog" = parsa ]; then
		help=$("$build/bin/parsa" submit --help 2>&1 | tr -s ' \n' '  ')
	else
		help=$("$build/bin/$prog" --help 2>&1 | tr -s ' \n' '  ')
	fi
	case $help in *"$order"*) ok "$prog --help: --sched's default in the one order" ;;
	*) notok "$prog --help does not say '$order'" ;; esac
done
for page in parsa.1 parsafs.8 parsa-runner.8; do
	grep -q '\*\$PARSA_SCHED\*, else \*\[cluster\] sched\*' "$src/man/$page.scd" &&
		ok "$page: the same order" || notok "$page does not give the order \$PARSA_SCHED, [cluster] sched"
done
grep -q 'else `\$PARSA_SCHED`, else `\[cluster\] sched`' "$src/docs/operators.md" &&
	ok "operators.md: the same order" || notok "operators.md does not give the order"
for prog in parsa-sched parsafs parsa-runner; do
	"$build/bin/$prog" --help 2>&1 | grep -q -- '--log-file PATH' &&
		ok "$prog --help offers --log-file" || notok "$prog --help lacks --log-file"
done
"$build/bin/parsa-sched" --help 2>&1 | grep -q -- '--syslog' && ok "parsa-sched --help names --syslog" ||
	notok "parsa-sched --help lacks --syslog"
for port in 'TCP 7070' 'TCP 2049' 'TCP/UDP 111' '`/metrics`'; do
	sed -n '/^### Ports/,/^## /p' "$src/docs/operators.md" | grep -q "^| $port\|$port" &&
		ok "operators.md's ports table has $port" || notok "operators.md's ports table lacks $port"
done

echo "1..$n"
[ $fails -eq 0 ]
