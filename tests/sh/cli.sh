#!/bin/sh
# cli.sh - the real binary from the outside: flags, bad input, outputs,
# determinism and checkpoints. Usage: NS_BIN=./normscope sh tests/sh/cli.sh
# Prints "N passed, N failed"; exits non-zero on any failure.
BIN=${NS_BIN:-./normscope}
# shellcheck source=../lib/posix_lib.sh
. "$(dirname "$0")/../lib/posix_lib.sh"
T=$(mktemp -d /tmp/ns_cli.XXXXXX)
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
SMALL="-L 2 -d 16 -H 2 -T 16 -B 4 --val-every 5 --val-batches 2 -q"

# expect_bad CODE NEEDLE ARGS...: exit CODE, exactly one stderr line containing NEEDLE
expect_bad() {
    code=$1 needle=$2
    shift 2
    "$BIN" "$@" >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    lines=$(wc -l <"$T/err")
    if [ "$rc" -ne "$code" ]; then no "$*: exit $rc, want $code"; return; fi
    if [ "$lines" -ne 1 ]; then no "$*: $lines lines on stderr, want 1"; cat "$T/err" >&2; return; fi
    if ! grep -q -- "$needle" "$T/err"; then no "$*: stderr lacks '$needle': $(cat "$T/err")"; return; fi
    ok
}

# --- help and version ---
"$BIN" --help >"$T/help" 2>&1 && ok || no "--help exit status"
"$BIN" --version | grep -Eq '^normscope [0-9]+\.[0-9]+\.[0-9]+$' && ok || no "--version"
# every long flag in --help is in the man page, and every flag of the man page in --help
MAN=$(dirname "$0")/../../man/normscope.1
grep -o -- '--[a-z0-9-]*' "$T/help" | sort -u >"$T/help_flags"
grep -o 'Fl -[a-z0-9-]*' "$MAN" | sed 's/^Fl /-/' | sort -u >"$T/man_flags"
if [ -s "$T/help_flags" ] && diff "$T/help_flags" "$T/man_flags" >"$T/flagdiff"; then ok; else no "flags in --help and man page differ:"; cat "$T/flagdiff" >&2; fi

# --- bad flags: exit 2, one line naming the flag and the range ---
expect_bad 2 "--layers" --headless -L 0
expect_bad 2 "1..64" --headless -L 65
expect_bad 2 "--dim" --headless --dim 15
expect_bad 2 "--heads" --headless --dim 64 --heads 3
expect_bad 2 "post, pre, sandwich" --headless --norm sideways
expect_bad 2 "--norm-kind" --headless --norm-kind batchnorm
expect_bad 2 "--lr" --headless --lr abc
expect_bad 2 "--lr" --headless --lr nan
expect_bad 2 "--lr" --headless --lr 1e-3x
expect_bad 2 "--betas" --headless --betas 0.9
expect_bad 2 "--steps" --headless --steps -1
expect_bad 2 "--context" --headless -T 4
expect_bad 2 "--batch" --headless -B 513
expect_bad 2 "--seed" --headless --seed -3
expect_bad 2 "unknown option" --headless --frobnicate
expect_bad 2 "needs a value" --headless --lr
expect_bad 2 "takes no value" --headless=yes
expect_bad 2 "cosine" --headless --schedule cosine --steps 0
expect_bad 2 "noam" --headless --schedule noam --warmup 0

# --- bad data ---
: >"$T/empty"
printf 'short' >"$T/short"
expect_bad 2 "No such file" --headless --data "$T/missing"
expect_bad 2 "empty" --headless --data "$T/empty"
expect_bad 2 "directory" --headless --data "$T"
expect_bad 2 "too short" --headless --data "$T/short"

# --- outputs ---
"$BIN" --headless $SMALL --steps 12 --csv "$T/a.csv" --jsonl "$T/a.jsonl" 2>"$T/err"
[ $? -eq 0 ] && ok || no "small headless run: $(cat "$T/err")"
# the columns older files have keep their names and places (newer ones
# come after them, each group's); read by name elsewhere
head -1 "$T/a.csv" | grep -q '^step,loss,val_loss,lr,grad_norm,tokens_per_s,norm,norm_kind,warmup,clip,precision,fp32_norms,loss_scale,skipped,ln_gamma_init,' &&
    head -1 "$T/a.csv" | grep -q ',l0_grad_attn,l0_grad_ffn,l0_grad_ln,l0_act_max,l0_resid_max,l0_resid_rms,l0_update_ratio,l0_overflow,l0_underflow,l0_headroom,' &&
    ok || no "csv header: $(head -1 "$T/a.csv")"
[ "$(wc -l <"$T/a.csv")" -eq 13 ] && ok || no "csv rows"
# the run's columns, then each layer's, the same for every layer, then
# state and first_nonfinite (the layout read off the header, not counted here)
head -1 "$T/a.csv" | tr ',' '\n' >"$T/cols"
[ "$(sed -n 's/^l0_//p' "$T/cols")" = "$(sed -n 's/^l1_//p' "$T/cols")" ] &&
    [ -n "$(sed -n 's/^l1_//p' "$T/cols")" ] && ok || no "csv: layer 1's columns are not layer 0's"
head -1 "$T/a.csv" | grep -q ',l1_[a-z_]*,state,first_nonfinite$' && ok || no "csv state columns last"
awk -F, 'NR == 1 { n = NF } NR > 1 && NF != n { bad = 1 } END { exit bad }' "$T/a.csv" && ok ||
    no "csv rows have the header's column count"
awk -F, 'NR==6 && $3=="" {exit 1} NR==5 && $3!="" {exit 1}' "$T/a.csv" && ok || no "val_loss only every --val-every steps"
[ "$(wc -l <"$T/a.jsonl")" -eq 12 ] && ok || no "jsonl rows"
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
assert rows[0]["step"]==1 and "l1_update_ratio" in rows[-1] and rows[4]["val_loss"] is not None' "$T/a.jsonl" && ok || no "jsonl parses"
fi
expect_bad 1 "--csv" --headless $SMALL --steps 2 --csv "$T/nodir/x.csv"
expect_bad 1 "--csv" --headless $SMALL --steps 2 --csv /dev/full
expect_bad 1 "--jsonl" --headless $SMALL --steps 2 --jsonl "$T"
# a read-only directory: error, and the old file there is untouched
mkdir "$T/ro" && echo old >"$T/ro/x.csv" && chmod a-w "$T/ro"
if [ "$(id -u)" -ne 0 ]; then
    expect_bad 1 "--csv" --headless $SMALL --steps 2 --csv "$T/ro/x.csv"
fi
[ "$(cat "$T/ro/x.csv")" = old ] && ok || no "old file changed"
chmod u+w "$T/ro"
ls "$T"/*.tmp.* >/dev/null 2>&1 && no "temp files left behind" || ok

# --- determinism: same seed, same bytes apart from tokens_per_s ---
"$BIN" --headless $SMALL --steps 12 --csv "$T/b.csv" 2>/dev/null
ns_cut_out 6 "$T/a.csv" >"$T/a.cut"
ns_cut_out 6 "$T/b.csv" >"$T/b.cut"
cmp -s "$T/a.cut" "$T/b.cut" && ok || no "same seed gave different CSV"
"$BIN" --headless $SMALL --steps 12 --seed 9 --csv "$T/c.csv" 2>/dev/null
ns_cut_out 6 "$T/c.csv" >"$T/c.cut"
cmp -s "$T/a.cut" "$T/c.cut" && no "different seeds gave the same CSV" || ok

# --- --threads: the same bytes apart from tokens_per_s (a model big
# enough that the kernels really split), bad counts refused ---
MID="-L 2 -d 64 -H 4 -T 32 -B 8 --val-every 5 --val-batches 2 -q --steps 12"
for prec in fp32 bf16; do
    "$BIN" --headless $MID --precision $prec --threads 1 --csv "$T/t1.csv" 2>/dev/null
    "$BIN" --headless $MID --precision $prec --threads 2 --csv "$T/t2.csv" 2>/dev/null
    ns_cut_out 6 "$T/t1.csv" >"$T/t1.cut"
    ns_cut_out 6 "$T/t2.csv" >"$T/t2.cut"
    [ -s "$T/t1.cut" ] && cmp -s "$T/t1.cut" "$T/t2.cut" && ok || no "--threads 2 changed the $prec CSV"
done
"$BIN" --headless $MID --threads 3 --compare norm=post --csv "$T/t3.csv" 2>/dev/null
"$BIN" --headless $MID --threads 1 --compare norm=post --csv "$T/t4.csv" 2>/dev/null
bcol=$(head -1 "$T/t3.csv" | tr , '\n' | grep -n '^b_tokens_per_s$' | cut -d: -f1)
ns_cut_out "6,${bcol:-6}" "$T/t3.csv" >"$T/t3.cut"
ns_cut_out "6,${bcol:-6}" "$T/t4.csv" >"$T/t4.cut"
[ -s "$T/t3.cut" ] && cmp -s "$T/t3.cut" "$T/t4.cut" && ok || no "--threads 3 changed the --compare CSV"
"$BIN" --headless $SMALL --steps 2 --threads 2 2>&1 >/dev/null | grep -q . && no "-q printed" || ok
"$BIN" --headless -L 2 -d 16 -H 2 -T 16 -B 4 --steps 2 --threads 2 2>&1 | grep -q 'threads=2; memory ' && ok || no "summary lacks threads=2"
expect_bad 2 "--threads" --headless --threads 0
expect_bad 2 "1..64" --headless --threads 65
expect_bad 2 "--threads" --headless --threads x
expect_bad 2 "--threads" --headless --threads 2.5

# --- checkpoints: 20 steps == 10 + save + load + 10 ---
"$BIN" --headless $SMALL --steps 20 --csv "$T/full.csv" 2>/dev/null
"$BIN" --headless $SMALL --steps 10 --save "$T/ck" 2>/dev/null && ok || no "--save"
"$BIN" --headless -q --load "$T/ck" --steps 20 --csv "$T/resumed.csv" 2>"$T/err" && ok || no "--load: $(cat "$T/err")"
sed -n '12,21p' "$T/full.csv" | ns_cut_out 6 >"$T/full.tail"
sed -n '2,11p' "$T/resumed.csv" | ns_cut_out 6 >"$T/resumed.tail"
[ -s "$T/resumed.tail" ] && cmp -s "$T/full.tail" "$T/resumed.tail" && ok || no "resumed run differs from the straight run"
expect_bad 2 "checkpoint has --layers 2" --headless --load "$T/ck" -L 3 --steps 30
expect_bad 2 "nothing to do" --headless --load "$T/ck" --steps 5
head -c 1000 "$T/ck" >"$T/ck.trunc"
expect_bad 2 "truncated" --headless --load "$T/ck.trunc" --steps 30
cp "$T/ck" "$T/ck.flip"
printf 'X' | dd of="$T/ck.flip" bs=1 seek=3000 conv=notrunc 2>/dev/null
expect_bad 2 "checksum" --headless --load "$T/ck.flip" --steps 30
expect_bad 2 "magic" --headless --load "$T/a.csv" --steps 30
# the data a checkpoint trained on is in it: left out, the run is refused;
# other bytes given with --data are said in one line and used
head -c 20000 "$(dirname "$0")/../../man/normscope-lessons.7" >"$T/d1"
head -c 20000 "$(dirname "$0")/../../man/normscope.1" >"$T/d2"
"$BIN" --headless $SMALL --steps 10 --data "$T/d1" --save "$T/ckd" 2>/dev/null && ok || no "--save with --data"
expect_bad 2 "the run trained on $T/d1 (20000 bytes); give --data $T/d1" --headless -q --load "$T/ckd" --steps 12
"$BIN" --headless -q --load "$T/ckd" --steps 12 --data "$T/d1" 2>"$T/err" && [ ! -s "$T/err" ] && ok || no "--load with its own --data: $(cat "$T/err")"
cp "$T/d1" "$T/d1.moved"
"$BIN" --headless -q --load "$T/ckd" --steps 12 --data "$T/d1.moved" 2>"$T/err" && [ ! -s "$T/err" ] && ok || no "--load with the same bytes under another name: $(cat "$T/err")"
"$BIN" --headless -q --load "$T/ckd" --steps 12 --data "$T/d2" 2>"$T/err" && [ "$(wc -l <"$T/err")" -eq 1 ] &&
    grep -q "from step 10 it trains on $T/d2 (20000 bytes), not on $T/d1 (20000 bytes) as before" "$T/err" && ok ||
    no "--load with other --data: $(cat "$T/err")"
"$BIN" --headless -q --load "$T/ck" --steps 12 --data "$T/d2" 2>"$T/err" &&
    grep -q "not on the built-in corpus (" "$T/err" && ok || no "--load of a built-in run with --data: $(cat "$T/err")"
# --warmup N on a resumed warmup-0 run: a fresh ramp of N steps from there
"$BIN" --headless $SMALL --steps 10 --warmup 0 --save "$T/ckw" 2>/dev/null
for w in 100 40; do
    "$BIN" --headless -q --load "$T/ckw" --steps 12 --warmup $w --csv "$T/w.csv" 2>"$T/err" &&
        awk -F, -v w=$w 'NR==2 {ok = $1 == 11 && $4 > 0.9e-3 / w && $4 < 1.1e-3 / w} NR==3 {ok = ok && $4 > 1.9e-3 / w && $4 < 2.1e-3 / w} END {exit !ok}' "$T/w.csv" &&
        ok || no "--load --warmup $w: $(cat "$T/err"); $(cut -d, -f1,4 "$T/w.csv" | tr '\n' ' ')"
done
"$BIN" --headless $SMALL --steps 10 --warmup 0 --schedule invsqrt --save "$T/cki" 2>/dev/null
expect_bad 2 "under --schedule invsqrt the ramp's length also sets the decay" --headless -q --load "$T/cki" --steps 12 --warmup 40
# an LR a mid-run change took past --lr's range loads, and is said
printf 'at 2: lr 100\n' >"$T/lr100"
"$BIN" --headless $SMALL --steps 4 --script "$T/lr100" --on-diverge continue --save "$T/ck100" 2>/dev/null
"$BIN" --headless -q --load "$T/ck100" --steps 5 2>"$T/err"
[ "$(wc -l <"$T/err")" -eq 1 ] && grep -q "lr 100 is above --lr's range (at most 10)" "$T/err" && ok || no "--load of lr 100: $(cat "$T/err")"
# a flag that does nothing with the settings in force: one warning line,
# the run goes on; judged on a resumed run's settings, not the defaults
"$BIN" --headless $SMALL --steps 2 --loss-scale 128 2>"$T/err" && [ "$(wc -l <"$T/err")" -eq 1 ] &&
    grep -q "^normscope: warning: --loss-scale 128 does nothing with --precision fp32 (it applies with bf16 or fp16" "$T/err" &&
    ok || no "--loss-scale in fp32: $(cat "$T/err")"
"$BIN" --headless $SMALL --steps 2 --precision fp16 --save "$T/ck16" 2>/dev/null
"$BIN" --headless -q --load "$T/ck16" --steps 3 --loss-scale 128 2>"$T/err" && [ ! -s "$T/err" ] &&
    ok || no "--loss-scale on a resumed fp16 run: $(cat "$T/err")"
"$BIN" --headless -q --load "$T/ck" --steps 12 --loss-scale 128 --precision bf16 2>"$T/err" && [ ! -s "$T/err" ] &&
    ok || no "--loss-scale with --precision bf16 on a resumed fp32 run: $(cat "$T/err")"
expect_bad 2 "--lr does nothing with --follow" --follow "$T/none.nsj" --headless --lr 0.1
# a diverged run's --save says how close its snapshot is to the limit and
# offers an earlier one clear of it (or the roomiest), each number the
# CSV's least l*_headroom at that step; the offer is true: that command
# saves that step
FP16="--headless -q -L 4 -d 32 -T 16 -B 4 --precision fp16 --fp32-norms off --lr 2e-2 --warmup 0"
"$BIN" $FP16 --save "$T/ckdiv" --csv "$T/div.csv" 2>"$T/err"
line=$(grep "wrote the snapshot of step" "$T/err")
set -- $(echo "$line" | sed -n 's/.*snapshot of step \([0-9]*\), headroom \([0-9.e+-]*\) (layer \([0-9]*\)); step \([0-9]*\) had \([0-9.e+-]*\) (the same run with --steps \([0-9]*\) saves it)$/\1 \2 \3 \4 \5 \6/p')
least() { # least headroom of CSV row step $1, "%.2g"
    awk -F, -v s="$1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^l[0-9]+_headroom$/) h[i] = 1; next }
        $1 == s { lo = ""; for (i in h) if (lo == "" || $i + 0 < lo) lo = $i + 0; printf "%.2g\n", lo }' "$T/div.csv"
}
if [ $# -eq 6 ] && [ "$(least "$1")" = "$2" ] && [ "$(least "$4")" = "$5" ] && [ "$4" -eq "$6" ] &&
    [ "$4" -lt "$1" ] && awk -v h="$2" -v h2="$5" 'BEGIN { exit !(h < 2 && h2 > h) }'; then
    ok
    "$BIN" $FP16 --steps "$4" --save "$T/ckearly" 2>/dev/null &&
        "$BIN" --headless -q --load "$T/ckearly" --steps $(($4 + 1)) --csv "$T/early.csv" 2>/dev/null &&
        [ "$(sed -n 2p "$T/early.csv" | cut -d, -f1)" -eq $(($4 + 1)) ] && ok || no "the offered --steps $4 does not save step $4"
else
    no "the diverged --save line: $line (CSV least headroom at those steps: $(least "${1:-0}") $(least "${4:-0}"))"
fi
# saving over an existing checkpoint into a missing directory fails cleanly
expect_bad 1 "--save" --headless $SMALL --steps 2 --save "$T/nodir/ck"

# --- a run that takes no step (a script stopping it at step 0) says so:
# its summary's loss is "-", a's and b's, never a made-up 0.0000 ---
printf 'at 0: stop\n' >"$T/stop0"
"$BIN" --headless -L 2 -d 16 -H 2 -T 16 -B 4 --steps 5 --script "$T/stop0" --compare norm=post 2>"$T/err"
[ $? -eq 0 ] && ok || no "script stop at 0: exit status"
grep -q '^normscope: 0 steps in .*; loss -, val -;' "$T/err" && ok || no "no step, loss -: $(cat "$T/err")"
grep -q '^normscope: b (norm=post): loss -, val -$' "$T/err" && ok || no "b: no step, loss -: $(cat "$T/err")"

# --- a script that changes a setting and stops at the same step: the
# events of both runs are reported, b's too, after the loop ended ---
printf 'at 2: lr 0.01\nat 2: stop\n' >"$T/stop2"
"$BIN" --headless -L 2 -d 16 -H 2 -T 16 -B 4 --steps 5 --script "$T/stop2" --compare norm=post 2>"$T/err"
grep -q '^normscope: a: peak LR 0.001 -> 0.01$' "$T/err" && grep -q '^normscope: b: peak LR 0.001 -> 0.01$' "$T/err" &&
    ok || no "the drain after a script stop: a's and b's events: $(cat "$T/err")"

# --- without a terminal the live view refuses and points to --headless ---
expect_bad 2 "headless" $SMALL

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
