#!/usr/bin/env python3
"""Turn docs/tutorial.md into a shell script that does what it shows, in its
order, for t0031: every `$ command` of a transcript runs (with /parsa as the
test's mount), a `$ cat FILE` of a local file that does not exist yet writes
the shown text to FILE first (that is how the tutorial shows a spec), a code
block after "Write `FILE`:" is written to FILE, and each command is checked (all in one shell, as a reader types them):
its exit status is 0 unless the transcript shows it failing (`cp: failed`),
and `cat .../wait` prints the state the transcript shows. One TAP line per
command; the script's exit status is the number of failed checks."""
import re
import shlex
import sys

MOUNT = re.compile(r'(?<![\w.~])/parsa(?=/|\s|$|")')


def blocks(lines):
    """(preceding prose, [code lines]) for each fenced block."""
    prose, code, inside = [], None, False
    for line in lines:
        if line.startswith('```'):
            if inside:
                yield ' '.join(prose[-3:]), code
                prose, code, inside = [], None, False
            else:
                code, inside = [], True
            continue
        if inside:
            code.append(line)
        elif line.strip():
            prose.append(line.strip())


def mounted(text):
    return MOUNT.sub('${PARSA_MNT}', text)


def heredoc(path, text_lines):
    body = '\n'.join(mounted(l) for l in text_lines)
    return f"cat > {shlex.quote(path)} <<'PARSA_TUTORIAL_EOF'\n{body}\nPARSA_TUTORIAL_EOF\n" \
        if '${PARSA_MNT}' not in body else \
        f"cat > {shlex.quote(path)} <<PARSA_TUTORIAL_EOF\n" + \
        body.replace('\\', '\\\\').replace('$', '\\$').replace('\\${PARSA_MNT}', '${PARSA_MNT}') + \
        "\nPARSA_TUTORIAL_EOF\n"


def main():
    lines = open(sys.argv[1], encoding='utf-8').read().split('\n')
    out = ['#!/bin/bash', 'n=0; bad=0',
           'check() { n=$((n + 1)); if [ "$1" = 0 ]; then echo "ok $n - $2"; '
           'else bad=$((bad + 1)); echo "not ok $n - $2"; sed "s/^/#   /" "$3"; fi; }']
    for prose, code in blocks(lines):
        if not code:
            continue
        m = re.search(r'Write `([\w.-]+)`:?$', prose)
        if not code[0].startswith('$ '):
            if m:
                out.append(heredoc(m.group(1), code))
            continue
        i = 0
        while i < len(code):
            cmd = code[i][2:]
            shown = []
            i += 1
            while i < len(code) and not code[i].startswith('$ '):
                shown.append(code[i])
                i += 1
            file = re.fullmatch(r'cat ([\w.-]+)', cmd.strip())
            if file and shown:
                # The tutorial shows a file it asks you to write: write it
                # (unless an earlier step made it).
                name = file.group(1)
                out.append(f'if [ ! -e {shlex.quote(name)} ]; then')
                out.append(heredoc(name, shown))
                out.append('fi')
            run = mounted(cmd)
            label = cmd.strip().replace('\\', '\\\\').replace('"', '\\"').replace('`', '\\`').replace('$', '\\$')
            fails = bool(shown) and shown[0].startswith('cp: failed')
            # In this shell, so that id=$(...) holds for the next commands; a
            # command that waits gets a bound.
            if re.match(r'cat \S*/wait\b', run):
                run = 'timeout 120 ' + run
            out.append(f'eval {shlex.quote(run)} >"$TUT_OUT" 2>&1 </dev/null; rc=$?')
            if fails:
                out.append(f'[ "$rc" -ne 0 ]; check $? "fails as shown: {label}" "$TUT_OUT"')
            else:
                out.append(f'check "$rc" "{label}" "$TUT_OUT"')
            # What a listing, a count or a grep shows is the same whatever the
            # machine: the names (all of them, or those shown before "..."),
            # the lines.
            if shown and not fails and re.match(r'(ls|wc|grep) ', cmd):
                names = ' '.join(shown).split()
                some = '...' in names
                want = ' '.join(sorted(n for n in names if n != '...'))
                kind = 'include' if some else 'are'
                out.append(f'want={shlex.quote(want)}; got=$(tr -s " \\t" "\\n\\n" <"$TUT_OUT" | LC_ALL=C sort | tr "\\n" " " | sed "s/ *$//")')
                if some:
                    out.append('missing=$(comm -23 <(tr " " "\\n" <<<"$want" | LC_ALL=C sort) <(tr " " "\\n" <<<"$got" | LC_ALL=C sort)); '
                               f'[ -z "$missing" ]; check $? "its output {kind} what the tutorial shows" "$TUT_OUT"')
                else:
                    out.append(f'[ "$got" = "$want" ]; check $? "its output {kind} what the tutorial shows: $want" "$TUT_OUT"')
            if re.search(r'/wait\b', cmd) and shown and not fails:
                want = shown[0].strip()
                out.append(f'[ "$(head -1 "$TUT_OUT")" = {shlex.quote(want)} ]; '
                           f'check $? "it says {want}" "$TUT_OUT"')
    out.append('echo "1..$n"')
    out.append('exit "$bad"')
    print('\n'.join(out))


main()
