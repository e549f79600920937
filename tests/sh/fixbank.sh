#!/bin/sh
# fixbank.sh - a bank of small runs that go wrong, one for each way the
# diagnosis knows; each runs with --on-diverge fix --on-stall fix and must
# (1) name the cause its scenario is about, as the first fix's cause, and
# (2) train on after the fix: exit 0 and a final validation loss under a
# stated bound (the unigram plateau of the built-in corpus is 3.09; each
# bound leaves 0.1 to 0.2 nats of margin over what the fixed run reaches;
# the runs are the same bits on every CPU, the margins are for changes).
# A rule whose advice fails in its own scenario fails here.
# Usage: NS_BIN=./normscope sh tests/sh/fixbank.sh
BIN=${NS_BIN:-./normscope}
# shellcheck source=../lib/posix_lib.sh
. "$(dirname "$0")/../lib/posix_lib.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# shellcheck source=../lib/headroom_lib.sh
. "$(dirname "$0")/../lib/headroom_lib.sh"
pass=0
fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
TO=300 # seconds: generous, for the sanitizer builds
F="--headless -L 4 -d 32 -T 16 -B 4 --warmup 0 --val-every 50 --on-diverge fix --on-stall fix"
FP16="--precision fp16 --fp32-norms off --lr 2e-2"
printf 'at 150: lr x1000\n' >"$T/x1000.script"

# scenario NAME CAUSE TEXT BOUND ARGS...: the first fix names CAUSE (a rule's
# short name), a diagnosis says TEXT, and the run ends with val < BOUND
scenario() {
    name=$1 cause=$2 text=$3 bound=$4
    shift 4
    ns_timeout $TO "$BIN" $F "$@" --csv "$T/$name.csv" --jsonl "$T/$name.jsonl" >/dev/null \
        2>"$T/$name.err" </dev/null
    rc=$?
    err=$T/$name.err
    grep -q "fix 1 of 3 (--on-[a-z]* fix): .*(cause: $cause at step" "$err" &&
        grep -q "diagnosis at step [0-9]*: $text" "$err" && ok ||
        no "$name: first fix's cause is not $cause / '$text': $(grep 'fix\|diagnosis' "$err")"
    val=$(sed -n 's/.*steps in .*; loss [^,]*, val \([0-9.]*\);.*/\1/p' "$err")
    [ "$rc" -eq 0 ] && awk -v v="$val" -v b="$bound" 'BEGIN { exit !(v != "" && v < b) }' && ok ||
        no "$name: exit $rc, val '$val', want under $bound: $(tail -n 3 "$err")"
}

# fp16 with the norms in fp16: the final norm's variance overflows
scenario normvar norm-variance "forward, final norm variance overflowed in fp16" 2.85 \
    $FP16 --steps 600
# the same, clipped at 0.1: sooner (Adam's step is not bounded by clipping)
scenario normclip norm-variance "forward, final norm variance overflowed in fp16" 2.85 \
    $FP16 --clip 0.1 --steps 600
# an LR raised 1000x mid-run: back to before the raise, the LR it tolerated
scenario raise lr "LR raised 0.001 -> 1 at step 150" 2.75 \
    --warmup 20 --lr 1e-3 --steps 400 --script "$T/x1000.script"
# an LR too high from the start: fp32 and bf16 blow up finite, fp16 diverges
scenario fp32hi blowup "blew up, finite: loss" 2.75 --lr 1.0 --steps 400
scenario bf16hi blowup "blew up, finite: loss" 2.75 --precision bf16 --lr 1.0 --steps 400
scenario fp16hi lr-high "LR 1 too high: the top layer's weights move" 2.75 \
    --precision fp16 --lr 1.0 --steps 400
# ... named by the relative threshold: the update per unit LR (ratio / LR)
# of the steps before the divergence, a share of the first update's (its
# ratio against the weights before it, r / sqrt(1 - r^2)), both as the
# CSV's rows (until the fix's rewind) give them; and the fix helped
# against the run left alone
rel=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "l3_update_ratio") u = i
                   if ($i == "lr") l = i; if ($i == "skipped") k = i; if ($i == "loss") o = i }; next }
    $1 + 0 <= last { exit } { last = $1 + 0 }
    $k == 0 && $o != "nan" && $u != "" { if (!n) unit = $u / sqrt(1 - $u * $u) / $l
                                          s += $u / $l; n++ }
    END { printf "per unit LR %.3g of its first update\047s %.3g (too high: under 0.1, or a ratio above 0.03)", s / n / unit, unit }' "$T/fp16hi.csv")
grep -q "diagnosis at step [0-9]*: LR 1 too high: .*steps), $rel$" "$T/fp16hi.err" &&
    awk -v r="$rel" 'BEGIN { split(r, w, " "); exit !(w[4] < 0.1) }' &&
    grep -q "the fix helped: loss [0-9.]* at step [0-9]*, while the run left alone diverged" "$T/fp16hi.err" && ok ||
    no "fp16hi: not named by its update per unit LR ('$rel'), or the fix did not help: $(grep 'diagnosis\|help' "$T/fp16hi.err")"
# no norm in fp16: the loss scale collapses, then the loss blows up
scenario scale blowup "blew up, finite: loss" 2.85 --precision fp16 --norm none --lr 3e-2 \
    --steps 600
grep -q "warning at step [0-9]*: loss scale collapsed 65536" "$T/scale.err" && ok ||
    no "scale: no loss-scale warning: $(grep warning "$T/scale.err")"
# no norm, the loss in fp16 at LR 1.2e-2: a token's probability rounds to 0
# and the loss is inf; with the loss in fp32 the same LR trains (val 2.57)
scenario lossinf loss-overflow "forward, loss is inf in fp16: a token's probability rounded to 0 (the least fp16 holds is 5.96e-08: a loss of 16.6 nats); mean loss" \
    2.75 --precision fp16 --fp32-norms off --norm none --lr 1.2e-2 --steps 600
# (the man page: within 50 steps; the hint does not call the LR high: the
# same LR trains with the loss in fp32, and the top layer's update per
# unit LR is what such runs show, where a constant on the update ratio,
# 1e-2 a step here, had said so)
grep -q "fix 1 of 3 .*then fp32-norms on[^(]* (cause: loss-overflow at step \([1-9]\|[1-4][0-9]\)[;)]" \
    "$T/lossinf.err" && grep -q "try: fp32-norms on computes the softmax and the loss in fp32, as autocast does$" \
    "$T/lossinf.err" && ok || no "lossinf: the fix is not fp32-norms on by step 49: $(grep 'fix\|try' "$T/lossinf.err")"
# Sandwich-LN with weights of 1e-6 and eps 1e-12: the norms' backward
# multiplies by 1/sqrt(eps), the gradients pass fp16's max at their true
# size, the dynamic scale halves to 1 and gives up; bf16 trains (val 2.85)
scenario scale1 scale "loss scale collapsed 65536 -> 1 (65536x) within [0-9]* steps (since step [0-9]*), and at 1 the backward, .* still overflowed: gradients at their true size pass fp16's max 65504" \
    3.0 --precision fp16 --norm sandwich --init normal --init-std 1e-6 --eps 1e-12 --steps 600
# (the man page: within its first 20 steps, every step before it skipped)
d=$(sed -n 's/.*fix 1 of 3 .*then precision bf16[^(]* (cause: scale at step \([0-9]*\)[;)].*/\1/p' "$T/scale1.err")
[ -n "$d" ] && [ "$d" -lt 20 ] && [ "$(sed -n '/fix 1 of 3/q; /step [0-9]* skipped: /p' "$T/scale1.err" | wc -l)" -eq $((d - 1)) ] &&
    ! grep -q "no warmup" "$T/scale1.err" && ok ||
    no "scale1: the fix is not bf16, or warmup is blamed: $(grep 'fix\|warmup' "$T/scale1.err")"
# clipping at 1e-7: every step clipped to 5e-8 of its norm, Adam's step
# shrinks toward its epsilon and the run crawls onto the plateau; clipping
# off from there trains on (val 2.60)
# (still 1.2 above the plateau at step 200: learning too slowly, the clip's)
scenario tightclip not-learning "learning too slowly: loss .* the clip 1e-07: 64 of 64 steps clipped, the gradient norm [0-9.]* (mean) cut [0-9.e+]*x; update ratio" \
    2.75 --clip 1e-7 --steps 900
grep -q "fix 1 of 3 (--on-stall fix): stayed at step [0-9]*, then clip 0[^(]* (cause: not-learning" "$T/tightclip.err" &&
    grep -q "the fix helped: loss [0-9.]* against [0-9.]* left alone" "$T/tightclip.err" && ok ||
    no "tightclip: the fix is not clip 0: $(grep 'fix' "$T/tightclip.err")"
# deep Post-LN without warmup: the stall, its bottom gradient vanished
scenario deep stall "stalled: loss .* depth: bottom layers' gradient" 2.9 \
    -L 24 --norm post --lr 3e-3 --steps 300
# ... and how far its first update moved the output: out_change at step
# 1 as its CSV has it (about 1 without warmup; DeepNorm's is 0.2-0.3)
oc=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "out_change") c = i }
              NR == 2 { printf "%.2f", $c }' "$T/deep.csv")
grep -q "depth: bottom layers' gradient .*; the first update moved the output by $oc of its size (out_change)" "$T/deep.err" &&
    awk -v x="$oc" 'BEGIN { exit !(x > 0.6) }' && ok ||
    no "deep: the first update's out_change ($oc) is not quoted: $(grep 'diagnosis' "$T/deep.err")"
# Post-LN at LR 0.1 with warmup on: the plateau is the LR's (its update
# ratio), not the placement's: Pre-LN would stall there too
scenario postlr stall "stalled: loss .* the LR 0.1: act max" 2.8 \
    --norm post --lr 0.1 --warmup 100 --steps 500
grep -q "fix 1 of 3 .*then lr x0.1[^(]* (cause: stall" "$T/postlr.err" && ok ||
    no "postlr: the fix is not the LR's: $(grep 'fix' "$T/postlr.err")"
# norm gains of 0 (Post-LN): the bottom layer gets no gradient, and the
# gains are named, not the depth (warmup would not help)
scenario gamma0 stall "stalled: loss .* the norms' gains start at 0: each block outputs 0, and the gradient below it is 0 of" 2.75 \
    --norm post --ln-gamma-init 0 --ln-beta-init 0 --steps 400
! grep -q "warmup on" "$T/gamma0.err" && ok || no "gamma0: warmup suggested: $(grep 'try' "$T/gamma0.err")"
# DyT norms (a = 0.5): the blocks' gradients fall to 1e-4 of the whole
# model's by step ~40 and the run sits on the plateau; the update ratio is
# low but the LR is not the cause: at 10x the LR it stalls the same. A
# LayerNorm from there trains on (val 2.64)
scenario dyt stall "stalled: loss .* no gradient reaches the blocks: the largest (layer [0-9]) is [0-9.e-]* of the whole model's" \
    2.8 --norm-kind dyt --steps 600
grep -q "fix 1 of 3 (--on-stall fix): stayed at step [0-9]*, then kind layernorm[^(]* (cause: stall" "$T/dyt.err" && ok ||
    no "dyt: the fix is not kind layernorm: $(grep 'fix' "$T/dyt.err")"
ns_timeout $TO "$BIN" $F --norm-kind dyt --lr 1e-2 --steps 300 --on-stall stop >/dev/null 2>"$T/dyt10.err" </dev/null
grep -q "diagnosis at step [0-9]*: stalled: loss .* no gradient reaches the blocks" "$T/dyt10.err" &&
    ! grep -q "too low" "$T/dyt10.err" && ok || no "dyt at 10x the LR: $(grep 'diagnosis' "$T/dyt10.err")"

# Pre-LN at LR 3e-2: the attention logits of layer 0 grow 100x with its
# entropy under a tenth of its first (step 118), while the loss falls; the
# a key's fix (the script's, at step 250) turns QK-norm on from there, the
# cause's fix alone (the LR warning's halving is listed for the next), so
# that its check is of QK-norm. It ends under 2.7 (2.52), and 0.1 or more
# below the same run left alone (2.76). A second key (step 450) does not
# turn QK-norm on again: it says it is in force and applies the next
# finding's fix (lr x0.5) alone.
printf 'at 250: fix\nat 450: fix\n' >"$T/fix250.script"
ns_timeout $TO "$BIN" $F --lr 3e-2 --steps 600 --script "$T/fix250.script" >/dev/null 2>"$T/attn.err" </dev/null
rc=$?
ns_timeout $TO "$BIN" $F --lr 3e-2 --steps 600 >/dev/null 2>"$T/attn0.err" </dev/null
val=$(sed -n 's/.*steps in .*; loss [^,]*, val \([0-9.]*\);.*/\1/p' "$T/attn.err")
val0=$(sed -n 's/.*steps in .*; loss [^,]*, val \([0-9.]*\);.*/\1/p' "$T/attn0.err")
grep -q "diagnosis at step [0-9]*: attention logits grew [0-9]*x: layer 0's largest .* its attention entropy" "$T/attn.err" &&
    grep -q "try: QK-norm (qk-norm on) bounds the logits; or a lower LR" "$T/attn.err" &&
    grep -q "fix 1 of 3 (the script): stayed at step 250, then qk-norm on (cause: attn-logits at step [0-9]*; next: .*lr-warn" "$T/attn.err" && ok ||
    no "attn: the cause is not attn-logits, or the fix not QK-norm: $(grep 'diagnosis\|fix 1' "$T/attn.err")"
grep -q "fix (the script): attn-logits's fix (qk-norm on) is already in force: not applied again; its advice: " "$T/attn.err" &&
    grep -q "fix 2 of 3 (the script): stayed at step 450, then lr x0.5 (cause: " "$T/attn.err" &&
    [ "$(grep -c "fix [0-9] of 3 .*then qk-norm on" "$T/attn.err")" -eq 1 ] && ok ||
    no "attn: the second key re-applied QK-norm, or not the next fix alone: $(grep 'fix' "$T/attn.err")"
[ "$rc" -eq 0 ] && awk -v v="$val" -v w="$val0" 'BEGIN { exit !(v != "" && w != "" && v < 2.7 && v <= w - 0.1) }' && ok ||
    no "attn: exit $rc, val '$val', want under 2.7 and 0.1 under the run left alone ('$val0')"
# fp16 at a loss scale of 1e-6: every gradient underflows to 0; the
# cause is the underflow (its counts, the gradient norm 0), not an LR too
# low, the start is not called sane, and the loss scale's fix helps
# against the run left alone (which stays at 5.7)
scenario underflow underflow "not learning: loss .* gradients lost to underflow: the gradient norm is 0 on [0-9]* of [0-9]* steps, [0-9]* values a step rounded to 0 in fp16 at loss scale 1e-06" \
    2.9 --precision fp16 --loss-scale 1e-6 --steps 400
grep -q "fix 1 of 3 (--on-stall fix): stayed at step [0-9]*, then loss-scale dynamic (cause: underflow" "$T/underflow.err" &&
    grep -q "the fix helped: loss [0-9.]* against 5\.[0-9]* left alone" "$T/underflow.err" &&
    grep -q "did it start sane? no: the first update's gradient norm is 0" "$T/underflow.err" &&
    ! grep -q "too low" "$T/underflow.err" && ok ||
    no "underflow: $(grep 'fix\|diagnosis\|sane' "$T/underflow.err")"

# LR 1e-5: the loss falls, but 2 nats above the plateau at step 200 (a
# healthy run is below it by step 100), the update ratio 4e-5: learning
# too slowly, the LR's; x10 helps against the run left alone
scenario slowlr not-learning "learning too slowly: loss .* still [0-9.]* above the plateau .* the LR 1e-05 is too low" \
    4.6 --lr 1e-5 --steps 400
grep -q "the fix helped: loss [0-9.]* against [0-9.]* left alone" "$T/slowlr.err" && ok ||
    no "slowlr: $(grep 'fix' "$T/slowlr.err")"

# an LR excursion (0.3 at step 200, 1e-3 again at 215): the run is left
# worse than before it (3.2 at step 500 where it was 2.8); named 64 steps
# after, against the loss before it, with the snapshot to go back to; the
# fix asked for at step 300 goes back to step 200 and ends well below the
# run left alone (val 3.21)
printf 'at 200: lr 0.3\nat 215: lr 1e-3\nat 300: fix\n' >"$T/exc.script"
ns_timeout $TO "$BIN" $F --steps 500 --script "$T/exc.script" >/dev/null 2>"$T/exc.err" </dev/null
rc=$?
val=$(sed -n 's/.*steps in .*; loss [^,]*, val \([0-9.]*\);.*/\1/p' "$T/exc.err")
[ "$rc" -eq 0 ] && grep -q "diagnosis at step 279: the changes at steps 200-215 (lr 0.001 -> 0.3, lr 0.3 -> 0.001) left the run worse: loss [0-9.]* at step 279, [0-9.]* above [0-9.]* before them" "$T/exc.err" &&
    grep -q "fix 1 of 3 (the script): went back to step 200, then lr 0.001 (cause: excursion at step 279" "$T/exc.err" &&
    grep -q "the fix helped: .*going back is all of the fix" "$T/exc.err" &&
    awk -v v="$val" 'BEGIN { exit !(v != "" && v < 2.7) }' && ok ||
    no "excursion: exit $rc, val '$val': $(grep 'diagnosis\|fix' "$T/exc.err")"
# (the rest of this and of the twin's tests below: the plain run only,
# the sanitizer runs take the fixes above)
if [ -z "${NS_SANITIZED:-}" ]; then
# the smaller one (LR 0.05), at a batch whose noise lets 0.14 nats show
printf 'at 200: lr 0.05\nat 215: lr 1e-3\n' >"$T/exc2.script"
ns_timeout $TO "$BIN" --headless -L 4 -d 32 -T 32 -B 8 --val-every 50 --steps 300 \
    --script "$T/exc2.script" >/dev/null 2>"$T/exc2.err" </dev/null
grep -q "diagnosis at step 279: the changes at steps 200-215 (lr 0.001 -> 0.05, lr 0.05 -> 0.001) left the run worse" "$T/exc2.err" &&
    grep -q "is it learning? no: loss [0-9.]*, [0-9.]* above [0-9.]* before the change at step 200" "$T/exc2.err" && ok ||
    no "the LR 0.05 excursion: $(grep 'diagnosis\|learning' "$T/exc2.err")"
# a change the run learns on through (LR 5e-4 at step 200) is not named
printf 'at 200: lr 5e-4\n' >"$T/ben.script"
ns_timeout $TO "$BIN" --headless -L 4 -d 32 -T 32 -B 8 --val-every 50 --steps 300 \
    --script "$T/ben.script" >/dev/null 2>"$T/ben.err" </dev/null
! grep -q "diagnosis\|warning at" "$T/ben.err" && grep -q "^normscope: verdict: healthy" "$T/ben.err" && ok ||
    no "an LR lowered at step 200: $(grep 'diagnosis\|warning\|verdict' "$T/ben.err")"
fi

# ---- the headroom warnings close in on the divergence ----
# each has fewer steps left than the one before; the last one's range
# holds the divergence within 20 steps (headroom_lib.sh)
for name in normvar normclip; do
    d=$(sed -n 's/.*fix 1 of 3 .*(cause: norm-variance at step \([0-9]*\)[;)].*/\1/p' "$T/$name.err")
    headroom_warnings "$T/$name.err" >"$T/$name.hw"
    headroom_tightens "${d:-0}" "$T/$name.hw" && ok ||
        no "$name: headroom warnings (step, range) do not close in on $d: $(cat "$T/$name.hw")"
done

# ---- what a fix leaves in the outputs ----
# the row after the fix says so; the settings columns show the change
row=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "state") k = i; if ($i == "fp32_norms") p = i }; next }
    $k == "fixed" { print $1, $p }' "$T/normvar.csv")
set -- $row
snap=$(sed -n 's/.*fix 1 of 3 (--on-diverge fix): went back to step \([0-9]*\)[ ,].*/\1/p' "$T/normvar.err")
[ -n "$snap" ] && [ "${1:-}" = $((snap + 1)) ] && [ "${2:-}" = on ] && [ "$(echo "$row" | wc -l)" -eq 1 ] && ok ||
    no "normvar: the 'fixed' row '$row', the fix went back to '$snap'"
# and the JSON line of that step
[ "$(grep -c '"state":"fixed"' "$T/normvar.jsonl")" -eq 1 ] &&
    grep '"state":"fixed"' "$T/normvar.jsonl" | grep -q "\"step\":$((snap + 1))," && ok ||
    no "normvar: the JSONL's fixed line: $(grep -c '"state":"fixed"' "$T/normvar.jsonl")"
# a finite blow-up's rows are "exploded" until the fix
n=$(grep -c ',exploded,' "$T/fp32hi.csv")
[ "$n" -ge 1 ] && ok || no "fp32hi: no exploded row"

# ---- the script's fix command: as the a key, from a script ----
printf 'at 20: lr x1000\nat 100: fix\n' >"$T/fix.script"
ns_timeout $TO "$BIN" --headless -L 4 -d 32 -T 16 -B 4 --warmup 0 --val-every 50 --steps 300 \
    --on-diverge continue --script "$T/fix.script" >/dev/null 2>"$T/cmd.err" </dev/null
rc=$?
val=$(sed -n 's/.*steps in .*; loss [^,]*, val \([0-9.]*\);.*/\1/p' "$T/cmd.err")
[ "$rc" -eq 0 ] && grep -q "fix 1 of 3 (the script): went back to step 0[^,]*, then lr 0.001[^(]* (cause: lr at" \
    "$T/cmd.err" && awk -v v="$val" 'BEGIN { exit !(v != "" && v < 2.9) }' && ok ||
    no "the fix command: exit $rc, val '$val': $(grep 'fix\|steps in' "$T/cmd.err")"

# ---- at most 3 fixes: an LR raised 1000x every 40 steps beats them ----
printf 'every 40: lr x1000\n' >"$T/every.script"
ns_timeout $TO "$BIN" $F --lr 1e-3 --steps 600 --script "$T/every.script" >/dev/null \
    2>"$T/most.err" </dev/null
rc=$?
[ "$rc" -eq 3 ] && grep -q "fix 3 of 3" "$T/most.err" && ! grep -q "fix 4 of" "$T/most.err" &&
    grep -q "fix (--on-diverge fix): 3 applied already, the most; stopping with the diagnosis" "$T/most.err" &&
    grep -q "blew up at step [0-9]* (loss .*, finite); stopping" "$T/most.err" &&
    grep -q "^normscope: cause: LR raised" "$T/most.err" && ok ||
    no "3 fixes at most: exit $rc: $(grep 'fix\|blew\|cause' "$T/most.err")"
# each fix is judged: it blew up again before the step its check named,
# and the verdict names the last one that did not help
for k in 1 2 3; do
    at=$(sed -n "s/.*fix $k is checked at step \([0-9]*\)[: ].*/\1/p" "$T/most.err")
    sed -n "/fix $k is checked/,\$p" "$T/most.err" | grep -m1 "the fix did not help" |
        grep -q "blew up at step [0-9]*, before its check at step ${at:-x}$" && ok ||
        no "fix $k (checked at '$at'): not said to have failed: $(grep 'help' "$T/most.err")"
done
grep -q "^normscope: verdict: not healthy (fix 3 did not help: blew up at step [0-9]*; " \
    "$T/most.err" && ! grep -q "the fix helped" "$T/most.err" && ok ||
    no "3 fixes at most: the verdict: $(grep 'verdict\|helped' "$T/most.err")"

# ---- a fix is judged against the run left alone ----
# DyT stalls; the fix is LayerNorm at half the LR, but the script puts
# DyT back at step 300: at the check the fixed run is no better than the
# run left alone (stepped beside it from the fix's step, on the same
# batches, the script's commands reaching both): the fix is undone, the
# run goes on as left alone, and is not stopped (it never diverged)
printf 'every 100: kind dyt\n' >"$T/dytback.script"
ns_timeout $TO "$BIN" $F --norm-kind dyt --steps 900 --script "$T/dytback.script" >/dev/null \
    2>"$T/nohelp.err" </dev/null
rc=$?
at=$(sed -n 's/.*fix 1 is checked at step \([0-9]*\) against the run left alone, stepped beside it from step [0-9]* on the same batches.*/\1/p' "$T/nohelp.err")
[ "$rc" -eq 0 ] && [ -n "$at" ] &&
    grep -q "the fix did not help: it \(lost\|made no difference\): loss [0-9.]* against [0-9.]* left alone at step $at (means of 16 steps on the same batches; noise [0-9.]*); undone" "$T/nohelp.err" &&
    grep -q "step $at: the run left alone since step [0-9]* takes over" "$T/nohelp.err" &&
    ! grep -q "the fix helped" "$T/nohelp.err" && ok ||
    no "a fix no better than the run left alone: exit $rc, at '$at': $(grep 'fix\|help\|verdict' "$T/nohelp.err")"
# a fix that helped says so against the run left alone, and the verdict
# can be healthy again
grep -q "^normscope: the fix helped: loss [0-9.]* at step [0-9]*, while the run left alone \(diverged\|blew up\) at step [0-9]*$" "$T/bf16hi.err" &&
    grep -q "^normscope: verdict: healthy" "$T/bf16hi.err" && ok ||
    no "bf16hi: the fix is not said to have helped: $(grep 'help\|verdict' "$T/bf16hi.err")"
# no norms at LR 1e-2, the best LR of that model: its act max rises from
# 0.27 to the unit scale a norm would set, its scale settling, not growth:
# no warning, healthy. At 2e-2 the growth warning's fix (lr x0.5), asked
# for at step 100, is no better than the run left alone: undone, the run
# ends as the run never fixed does, bit for bit (the same validation loss)
if [ -z "${NS_SANITIZED:-}" ]; then
NN="--headless -L 4 -d 32 -T 16 -B 4 --warmup 0 --val-every 50 --norm none --steps 400"
printf 'at 100: fix\n' >"$T/fix100.script"
# (over three seeds, and not by the act max alone: its update per unit
# LR stays above 0.1 of its first update's, 0.15-0.17, though its update
# ratio, 1e-2 a step, is twice the constant that once judged it)
# (the seed is sh's $1, not an xargs -I pattern: that would also be
# replaced inside $T, whose random name may hold the same letter)
printf '%s\n' 1 2 3 | BIN=$BIN T=$T NN=$NN xargs -P 2 -n 1 sh -c \
    '"$BIN" $NN --lr 1e-2 --seed "$1" >/dev/null 2>"$T/nn1-$1.err" </dev/null' sh
for s in 1 2 3; do
    ! grep -q "too high for this run\|warning at" "$T/nn1-$s.err" && grep -q "^normscope: verdict: healthy" "$T/nn1-$s.err" &&
        sed -n "s/.*is the LR within what the run tolerates? ok: update ratio [0-9.]* a step over 64 points, per unit LR \([0-9.]*\) of its first update's [0-9.]* (too high: under 0.1, or a ratio above 0.03).*/\1/p" "$T/nn1-$s.err" |
        awk '{ x = $1 } END { exit !(x >= 0.1) }' && ok ||
        no "no norms at 1e-2, seed $s: $(grep 'warning\|verdict\|LR within' "$T/nn1-$s.err")"
done
ns_timeout $TO "$BIN" $NN --lr 2e-2 >/dev/null 2>"$T/nn.err" </dev/null
ns_timeout $TO "$BIN" $NN --lr 2e-2 --script "$T/fix100.script" >/dev/null 2>"$T/nnfix.err" </dev/null
rc=$?
v0=$(sed -n 's/.*steps in .*; loss [^,]*, val \([0-9.]*\);.*/\1/p' "$T/nn.err")
v1=$(sed -n 's/.*steps in .*; loss [^,]*, val \([0-9.]*\);.*/\1/p' "$T/nnfix.err")
[ "$rc" -eq 0 ] && [ -n "$v0" ] && [ "$v0" = "$v1" ] &&
    grep -q "the fix did not help: it \(lost\|made no difference\): loss [0-9.]* against [0-9.]* left alone" "$T/nnfix.err" &&
    grep -q "verdict: healthy (every check answered ok; fix 1 ([^)]*) \(lost\|made no difference\): .* left alone at step [0-9]*; undone)" "$T/nnfix.err" &&
    ! grep -q "the fix helped" "$T/nnfix.err" && ok ||
    no "no norms at 2e-2: exit $rc, val '$v0' left alone, '$v1' after the undone fix: $(grep 'fix\|help\|verdict' "$T/nnfix.err")"
# under --compare the twin slot is taken: the fix says what it is judged against
ns_timeout $TO "$BIN" --headless -L 4 -d 32 -T 16 -B 4 --warmup 0 --val-every 50 --steps 300 \
    --on-diverge continue --compare lr=2e-3 --script "$T/fix.script" >/dev/null 2>"$T/cmp.err" </dev/null
grep -q "fix 1 is checked at step [0-9]*: its loss (mean of 16 steps) must be below [0-9.]*, the run's own before the fix (not against the run left alone: --compare's run b takes the twin's place)" "$T/cmp.err" && ok ||
    no "--compare's fix: $(grep 'fix' "$T/cmp.err")"
fi

# Post-LN, clipped: an LR excursion (0.003 -> 0.3 for 5 steps) spikes the
# loss above its first update's, and it comes back (seed 4 spikes at step
# 79 on its own already, and the two are one spike). The diagnosis names a
# blow-up that recovered, with numbers that are the CSV's (the peak is its
# largest loss, the "from" and "back to" the means of 16 steps before and
# at the end), and the finite check answers no, never "no blow-up".
printf 'at 150: lr 0.3\nat 155: lr 3e-3\n' >"$T/spike.script"
spike_seeds="1 2 3 4"
[ -n "${NS_SANITIZED:-}" ] && spike_seeds=1
for s in $spike_seeds; do
    ns_timeout $TO "$BIN" --headless -L 6 -d 32 -T 16 -B 4 --norm post --clip 1 --lr 3e-3 \
        --warmup 0 --steps 300 --seed "$s" --script "$T/spike.script" --csv "$T/spike$s.csv" \
        >/dev/null 2>"$T/spike$s.err" </dev/null
    line=$(grep "diagnosis at step [0-9]*: blew up and recovered: loss spike at step" \
        "$T/spike$s.err" | tail -n 1)
    nums=$(echo "$line" | sed -n 's/.*spike at step \([0-9]*\), peak \([0-9.]*\) at step \([0-9]*\), above the first update.s \([0-9.]*\); from \([0-9.]*\) (16 steps before); [a-z :]* \([0-9.]*\) at step \([0-9]*\),.*/\1 \2 \3 \4 \5 \6 \7/p')
    awk -F, -v n="$nums" 'BEGIN { split(n, v, " ") }
        NR > 1 { l[$1] = $2 }
        END {
            if (v[7] == "") exit 1
            mx = 0; for (i = v[1]; i <= v[7] - 64; i++) if (l[i] > mx) mx = l[i]
            f = 0; for (i = v[1] - 16; i < v[1]; i++) f += l[i]
            b = 0; for (i = v[7] - 15; i <= v[7]; i++) b += l[i]
            d = 0.0015
            exit !(l[v[3]] == mx && (mx - v[2]) ^ 2 < d * d && (l[1] - v[4]) ^ 2 < d * d &&
                   v[2] > v[4] && (f / 16 - v[5]) ^ 2 < d * d && (b / 16 - v[6]) ^ 2 < d * d)
        }' "$T/spike$s.csv" && ok || no "spike seed $s: not named or not the CSV's: '$line'"
    grep -q "is every value finite? no: the loss blew up, finite, at step [0-9]*: .*; it came back" "$T/spike$s.err" &&
        ! grep -q "no blow-up" "$T/spike$s.err" && ok ||
        no "spike seed $s: the finite check: $(grep 'finite?' "$T/spike$s.err")"
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
