#!/bin/sh
# trust.sh - files from someone else change nothing of mine. A lesson file
# (a classmate's, from a shared directory) holds settings only: one that
# names a file to read or write, or asks for more sweep jobs than the
# machine has cores, is refused by --check-lesson and at load, with
# FILE:LINE, and writes nothing. Then a second local user (the attacker,
# nobody) plants links and files in a sticky world-writable directory,
# and a run of a third (the victim, daemon) refuses them in one line,
# before training, and leaves its own files as they were; that part needs
# root (to act as two users: runuser), and says so when it cannot run.
# Usage: NS_BIN=./normscope sh tests/sh/trust.sh
# Prints "N passed, N failed"; exits non-zero on any failure.
BIN=${NS_BIN:-./normscope}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
pass=0
fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
ATT=nobody
VIC=daemon
T=$(mktemp -d /tmp/ns_trust.XXXXXX)
trap 'rm -rf "$T"' EXIT
chmod 711 "$T"

# --- a lesson names a file: refused at the check and at load, nothing written ---
echo thesis >"$T/victim.txt"
for f in "--csv $T/victim.txt" "--jsonl $T/victim.txt" "--save $T/victim.txt" "--data /etc/passwd" \
    "--load $T/victim.txt" "--script $T/victim.txt" "--sweep-out $T/victim.txt"; do
    printf 'title: a classmate'"'"'s lesson\n# line 2\nflags: -L 1 -d 16 -H 2 -T 8 -B 2 --steps 2\nflags: %s\n' \
        "$f" >"$T/l.lesson"
    flag=${f%% *}
    "$BIN" --check-lesson "$T/l.lesson" >"$T/out" 2>&1
    rc=$?
    [ "$rc" -eq 2 ] && [ "$(wc -l <"$T/out")" -eq 1 ] &&
        grep -qF -- "$T/l.lesson:4: flags: $flag is not a lesson's flag" "$T/out" &&
        ok || no "--check-lesson of a lesson with $f: exit $rc, $(cat "$T/out")"
    "$BIN" --headless --lesson "$T/l.lesson" >"$T/out" 2>&1
    rc=$?
    [ "$rc" -eq 2 ] && grep -qF -- "$T/l.lesson:4: flags: $flag is not a lesson's flag" "$T/out" &&
        [ "$(cat "$T/victim.txt")" = thesis ] && ok || no "running a lesson with $f: exit $rc, $(cat "$T/out")"
done
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
printf 'title: t\nflags: --jobs %s\nsweep: lr=1e-3,2e-3\n' "$((cores + 1))" >"$T/l.lesson"
"$BIN" --check-lesson "$T/l.lesson" >"$T/out" 2>&1
[ $? -eq 2 ] && grep -qF "$T/l.lesson:2: flags: --jobs $((cores + 1)) is more than this machine's $cores cores" "$T/out" &&
    ok || no "a lesson's --jobs past the cores: $(cat "$T/out")"
printf 'title: t\nflags: --jobs %s -L 1 -d 16 -H 2 -T 8 -B 2 --steps 2\nsweep: lr=1e-3,2e-3\n' "$cores" >"$T/l.lesson"
"$BIN" --check-lesson "$T/l.lesson" >"$T/out" 2>&1 && ok || no "a lesson's --jobs at the cores: $(cat "$T/out")"

# --- a control character in a file name: refused in one line, shown escaped ---
nl=$(printf 'x\ntouch PWN')
esc=$(printf 'x\033]0;pwned\007')
for f in "--csv" "--sweep-out" "--save"; do
    for v in "$nl" "$esc"; do
        (cd "$T" && "$BIN" --headless --steps 1 --sweep lr=1e-3,2e-3 --list "$f" "$v" >/dev/null 2>"$T/err")
        rc=$?
        [ "$rc" -eq 2 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && ! grep -q "$(printf '\033')" "$T/err" &&
            grep -q "without control characters" "$T/err" && ok || no "$f with a control character: exit $rc, $(od -c "$T/err" | head -3)"
    done
done
[ ! -e "$T/PWN" ] && ok || no "a newline in a path ran a command"

if [ "$(id -u)" -ne 0 ] || ! command -v runuser >/dev/null 2>&1 ||
    ! id "$ATT" >/dev/null 2>&1 || ! id "$VIC" >/dev/null 2>&1; then
    echo "trust.sh: the two-user checks skipped: they need root, runuser and the users $ATT and $VIC"
    echo "$pass passed, $fail failed"
    [ "$fail" -eq 0 ]
    exit
fi
cp "$BIN" "$T/normscope" && chmod 755 "$T/normscope" || { no "copy the binary"; exit 1; }
# the victim's home and a shared drop directory, like /tmp
H=$T/home
S=$T/shared
mkdir "$H" "$S" && chown "$VIC" "$H" && chmod 700 "$H" && chmod 1777 "$S"
as_att() { runuser -u "$ATT" -- "$@"; }
as_vic() { runuser -u "$VIC" -- "$@"; }
as_vic sh -c "echo thesis >'$H/thesis.txt'"
SMALL="--headless -q -L 1 -d 16 -H 2 -T 8 -B 2 --steps 2"

# run_vic FLAG PATH: the victim writes FLAG PATH; exit status in $rc, stderr in $T/err
run_vic() {
    as_vic "$T/normscope" $SMALL "$1" "$2" >/dev/null 2>"$T/err"
    rc=$?
}
unchanged() { [ "$(cat "$H/thesis.txt")" = thesis ]; }

# --- an output through the attacker's link: refused at the start, in one line ---
for flag in --csv --jsonl --save; do
    rm -f "$S/out"
    as_att ln -s "$H/thesis.txt" "$S/out"
    run_vic "$flag" "$S/out"
    [ "$rc" -ne 0 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "symbolic link of another user" "$T/err" &&
        grep -q -- "$flag" "$T/err" && ok || no "$flag through a planted link: exit $rc, $(cat "$T/err")"
    unchanged && ok || no "$flag through a planted link changed the victim's file"
done

# --- an output the attacker owns there: the final rename could not replace it ---
rm -f "$S/out"
as_att sh -c "echo mine >'$S/out'"
run_vic --csv "$S/out"
[ "$rc" -ne 0 ] && [ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "file of another user" "$T/err" && ok ||
    no "--csv over the attacker's file: exit $rc, $(cat "$T/err")"
[ "$(cat "$S/out")" = mine ] && ok || no "the attacker's file was changed"

# --- the victim's own link there is followed, as anywhere ---
rm -f "$S/out"
as_vic sh -c "echo old >'$H/run.csv'" && as_vic ln -s "$H/run.csv" "$S/out"
run_vic --csv "$S/out"
[ "$rc" -eq 0 ] && [ "$(head -c 9 "$H/run.csv")" = "step,loss" ] && ok ||
    no "--csv through the victim's own link: exit $rc, $(cat "$T/err")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
