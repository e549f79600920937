#!/bin/sh
# twin.sh - the two-run rule from the outside, headless: a script of every
# toggle and cycle under --compare, unprefixed (both runs), "a:" and "b:",
# one per step. The CSV records each run's settings in force at every step
# (run a's columns, then run b's with the b_ prefix), which is what each
# run's labels are made from. After each line: an unprefixed one leaves
# the two runs equal in that setting (computed once from run a), "a:" and
# "b:" change only their run, and no setting in which the runs differed is
# ever swapped between them.
# Usage: NS_BIN=./normscope sh tests/sh/twin.sh
# Prints "N passed, N failed"; exits non-zero on any failure.
BIN=${NS_BIN:-./normscope}
T=$(mktemp -d /tmp/ns_twin.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
SMALL="-L 2 -d 16 -H 2 -T 16 -B 4 --val-every 0 -q"

# step N's row holds the settings after the line "at N-1"; the expectation
# per line: TARGET COLUMN (both, a or b; the CSV column it changes)
cat >"$T/script" <<'EOF'
at 1: norm toggle
at 2: b: norm next
at 3: norm next
at 4: kind next
at 5: a: kind next
at 6: kind next
at 7: warmup toggle
at 8: b: warmup toggle
at 9: warmup toggle
at 10: precision next
at 11: b: precision next
at 12: precision next
at 13: fp32-norms toggle
at 14: a: fp32-norms toggle
at 15: fp32-norms toggle
at 16: b: fp32-norms toggle
at 17: clip toggle
at 18: a: clip toggle
at 19: clip toggle
at 20: loss-scale toggle
at 21: b: loss-scale toggle
at 22: norm pre
at 23: b: norm post
at 24: norm toggle
EOF
cat >"$T/expect" <<'EOF'
2 both norm
3 b norm
4 both norm
5 both norm_kind
6 a norm_kind
7 both norm_kind
8 both warmup
9 b warmup
10 both warmup
11 both precision
12 b precision
13 both precision
14 both fp32_norms
15 a fp32_norms
16 both fp32_norms
17 b fp32_norms
18 both clip
19 a clip
20 both clip
23 both norm
24 b norm
25 both norm
EOF
"$BIN" --headless $SMALL --steps 26 --precision fp16 --fp32-norms off --compare fp32-norms=on \
    --script "$T/script" --csv "$T/out.csv" 2>"$T/err"
rc=$?
[ "$rc" -eq 0 ] && ok || no "the scripted --compare run exited $rc: $(cat "$T/err")"
[ "$(wc -l <"$T/out.csv")" -eq 27 ] && ok || no "the CSV has $(wc -l <"$T/out.csv") lines, want 27"

# one line per check: "ok" or the reason
awk -F, -v expect="$T/expect" '
NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
{ for (i = 1; i <= NF; i++) v[$1, i] = $i; last = $1 }
END {
    split("norm norm_kind warmup clip precision fp32_norms", names, " ")
    while ((getline line < expect) > 0) {
        split(line, e, " ")
        s = e[1]; tg = e[2]; c = e[3]
        a = col[c]; b = col["b_" c]
        if (!a || !b) { print "no column " c " or b_" c; continue }
        pa = v[s - 1, a]; pb = v[s - 1, b]; na = v[s, a]; nb = v[s, b]
        if (tg == "both")
            print (na == nb ? "ok" : "step " s ": both left " c " unequal: a " na ", b " nb)
        if (tg == "a")
            print (nb == pb && na != pa ? "ok" : "step " s ": a: changed " c " a " pa "->" na ", b " pb "->" nb)
        if (tg == "b")
            print (na == pa && nb != pb ? "ok" : "step " s ": b: changed " c " a " pa "->" na ", b " pb "->" nb)
    }
    # never a swap, in any recorded setting, at any step
    swaps = 0
    for (s = 2; s <= last; s++)
        for (k in names) {
            a = col[names[k]]; b = col["b_" names[k]]
            if (v[s-1, a] != v[s-1, b] && v[s, a] == v[s-1, b] && v[s, b] == v[s-1, a]) {
                print "step " s ": " names[k] " swapped: a " v[s-1, a] "->" v[s, a] ", b " v[s-1, b] "->" v[s, b]
                swaps++
            }
        }
    if (!swaps) print "ok"
}' "$T/out.csv" >"$T/checks"
[ "$(wc -l <"$T/checks")" -eq 23 ] && ok || no "$(wc -l <"$T/checks") checks ran, want 23"
while IFS= read -r line; do
    if [ "$line" = ok ]; then ok; else no "$line"; fi
done <"$T/checks"

# each change is an event naming its run, and says so once per run
"$BIN" --headless -L 2 -d 16 -H 2 -T 16 -B 4 --val-every 0 --steps 3 --compare norm=post \
    --script "$T/script" 2>"$T/err2" >/dev/null
grep -q '^normscope: a: norm pre -> post' "$T/err2" && ok || no "no event naming run a: $(cat "$T/err2")"
grep -q '^normscope: b: norm post -> pre' "$T/err2" && ok || no "no event naming run b: $(cat "$T/err2")"

# a note names the run it is about: none when about both, "b: " in b's
printf 'at 1: note about both\nat 1: a: note about a\nat 1: b: note about b\nat 2: pause a question for both?\n' >"$T/notes"
"$BIN" --headless -L 2 -d 16 -H 2 -T 16 -B 4 --val-every 0 --steps 3 --compare norm=post \
    --script "$T/notes" 2>"$T/err4" >/dev/null
grep -qx 'normscope: about both' "$T/err4" && grep -qx 'normscope: a: about a' "$T/err4" &&
    grep -qx 'normscope: b: about b' "$T/err4" && grep -qx 'normscope: a question for both?' "$T/err4" &&
    [ "$(grep -c 'about\|question' "$T/err4")" -eq 4 ] && ok || no "notes' runs: $(grep 'about\|question' "$T/err4")"

# a run prefix other than a: or b: is refused, naming the line
printf 'at 2: c: lr 1e-3\n' >"$T/bad"
"$BIN" --headless $SMALL --steps 3 --compare norm=post --script "$T/bad" 2>"$T/err3" >/dev/null
rc=$?
[ "$rc" -eq 2 ] && grep -q "$T/bad:1:" "$T/err3" && ok || no "a bad run prefix: exit $rc: $(cat "$T/err3")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
