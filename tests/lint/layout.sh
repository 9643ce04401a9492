#!/bin/bash
# The house rules that keep the code easy to walk (issue 37), checked on the
# tree (git ls-files): no C file over 800 lines; the engine's lock used only
# inside sched/engine/ and its internals header nowhere else but the engine's
# unit tests; no "/v1/ URL written in C outside the HTTP contract in lib/
# (and the server's table). Prints each breach with its files.
set -u
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root" || exit 1
n=0 bad=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); bad=$((bad + 1)); echo "not ok $n - $1"; }

files=$(git ls-files '*.c' '*.h' 2>/dev/null) ||
	files=$(find . -path ./build -prune -o -path './build-*' -prune -o \( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||')
long=$(for f in $files; do l=$(wc -l <"$f"); [ "$l" -gt 800 ] && echo "$f ($l lines)"; done)
[ -z "$long" ] && ok "no C file over 800 lines" || notok "C files over 800 lines: $(echo $long)"

lock=$(grep -ln 'engine_lock\|engine_unlock' $files | grep -v '^sched/engine/')
[ -z "$lock" ] && ok "engine_lock only inside sched/engine/" || notok "engine_lock outside sched/engine/: $(echo $lock)"

# White-box unit tests of the engine may read its internals; nothing else.
internal=$(grep -ln '#include "engine_internal.h"' $files | grep -v '^sched/engine/\|^tests/unit/')
[ -z "$internal" ] && ok "engine_internal.h only inside sched/engine/ (and its unit tests)" ||
	notok "engine_internal.h included outside sched/engine/: $(echo $internal)"

urls=$(grep -ln '"/v1/' $files | grep -v '^lib/' | grep -v '^sched/api/api\.c$')
[ -z "$urls" ] && ok "no \"/v1/ outside lib/ and the server's route table" ||
	notok "\"/v1/ written outside lib/: $(echo $urls)"

echo "1..$n"
[ "$bad" -eq 0 ]
