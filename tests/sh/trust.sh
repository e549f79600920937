#!/bin/sh
# trust.sh - another user's files in a shared place change nothing of mine:
# a second local user (the attacker, nobody) plants links and files in a
# sticky world-writable directory, and a run of a third (the victim,
# daemon) refuses them in one line, before training, and leaves its own
# files as they were. Needs root (to act as two users: runuser); without
# it, says so and checks nothing.
# Usage: NS_BIN=./normscope sh tests/sh/trust.sh
# Prints "N passed, N failed"; exits non-zero on any failure.
BIN=${NS_BIN:-./normscope}
pass=0
fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
ATT=nobody
VIC=daemon
if [ "$(id -u)" -ne 0 ] || ! command -v runuser >/dev/null 2>&1 ||
    ! id "$ATT" >/dev/null 2>&1 || ! id "$VIC" >/dev/null 2>&1; then
    echo "trust.sh: skipped: needs root, runuser and the users $ATT and $VIC to act as two users"
    echo "0 passed, 0 failed"
    exit 0
fi
T=$(mktemp -d /tmp/ns_trust.XXXXXX)
trap 'rm -rf "$T"' EXIT
chmod 711 "$T"
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
