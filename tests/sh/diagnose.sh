#!/bin/sh
# diagnose.sh - the diagnosis (diagnose.c) and headless recovery, replayed
# on the real binary with small, fast models (each run takes a second or
# two): the cause line of a divergence, an early warning well before it, the
# Post-LN stall, a --load recovery with a lower LR, the checkpoint written at
# a divergence, the exit codes, and healthy runs that stay silent.
# Usage: NS_BIN=./normscope sh tests/sh/diagnose.sh
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
# small and fast: 4 blocks of width 32 over 16 bytes, 4 sequences a step
F="--headless -L 4 -d 32 -T 16 -B 4 --warmup 0 --val-every 25"
# fp16, norms in fp16, LR 2e-2 without warmup: the top of the residual
# stream grows until the final norm's variance overflows (near step 180)
FP16="$F --precision fp16 --fp32-norms off --lr 2e-2 --steps 600"

run() { # run NAME ARGS...: stderr in $T/NAME.err, exit status in $T/NAME.rc
    name=$1
    shift
    ns_timeout $TO "$BIN" "$@" >"$T/$name.out" 2>"$T/$name.err" </dev/null
    echo $? >"$T/$name.rc"
}
rc() { cat "$T/$1.rc"; }
has() { grep -qF -- "$2" "$T/$1.err"; }
# the value of column NAME in the last row of a CSV
last_col() {
    awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == c) k = i; next }
                      { v = $k } END { print v }' "$1"
}

# ---- 1. the cause of an fp16 norm-variance divergence, and its fix ----
run fp16 $FP16 --csv "$T/fp16.csv" --save "$T/div.ck"
[ "$(rc fp16)" -eq 3 ] && ok || no "fp16 run: exit $(rc fp16), want 3: $(cat "$T/fp16.err")"
div=$(sed -n 's/.*diverged at step \([0-9]*\) (first non-finite.*/\1/p' "$T/fp16.err")
[ -n "$div" ] && ok || no "fp16 run did not diverge: $(cat "$T/fp16.err")"
# the cause line names the op, the format, the act max and the real limit
has fp16 "cause: forward, final norm variance overflowed in fp16: act max" &&
    has fp16 "(limit 256)" && has fp16 "try: fp32-norms on or precision bf16" && ok ||
    no "no cause line: $(cat "$T/fp16.err")"
# and the growth behind it, with its layer and rate; not warmup: the
# divergence is past the ramp's length (a ramp only delays it: 180 -> 321)
grep -q "diagnosis at step $div: layer [0-9] act max .* doublings/100 steps" "$T/fp16.err" &&
    ! has fp16 "no warmup" && ok || no "growth diagnosis, or warmup blamed: $(cat "$T/fp16.err")"
# the CSV marks the step and names the op (commas as ';')
[ "$(last_col "$T/fp16.csv" state)" = diverged ] &&
    [ "$(last_col "$T/fp16.csv" first_nonfinite)" = "forward; final norm variance" ] && ok ||
    no "CSV state/first_nonfinite: $(tail -1 "$T/fp16.csv" | rev | cut -d, -f1-2 | rev)"
# headroom against 256, not 65504: under 1 doubling before the overflow
h=$(awk -F, -v d="$div" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "l3_headroom") k = i; next }
    $1 == d - 1 { print $k }' "$T/fp16.csv")
awk -v h="$h" 'BEGIN { exit !(h != "" && h < 1) }' && ok || no "headroom before the overflow: $h"

# clipping at 0.1 diverges sooner (step 91 against 141: Adam's step does
# not shrink with the gradient), and the diagnosis says clipping is no fix
run clip $FP16 --clip 0.1
cdiv=$(sed -n 's/.*diverged at step \([0-9]*\) (first non-finite.*/\1/p' "$T/clip.err")
[ -n "$cdiv" ] && [ -n "$div" ] && [ "$cdiv" -lt "$div" ] &&
    has clip "clipping does not bound Adam's step, it can make this sooner" && ok ||
    no "--clip 0.1: diverged at '$cdiv' (unclipped $div): $(cat "$T/clip.err")"

# ---- 2. an early warning at least 20 steps before the divergence ----
w=$(sed -n 's/.*warning at step \([0-9]*\): layer [0-9] headroom.*/\1/p' "$T/fp16.err" | head -1)
[ -n "$w" ] && [ $((div - w)) -ge 20 ] && ok ||
    no "headroom warning at step '$w', divergence at $div: $(cat "$T/fp16.err")"
# warned again as the estimate tightens: each warning has fewer steps left
# than the one before, and the last one's range ends within 20 steps of
# the divergence; a range "at step A or later" (the growth slowing) holds
# it when it begins at most 20 steps after it
headroom_warnings "$T/fp16.err" >"$T/hw"
headroom_tightens "${div:-0}" "$T/hw" && ok ||
    no "headroom warnings (step, range) do not tighten to the divergence $div: $(cat "$T/hw")"
# no norm, fp16: the loss scale collapses long before the divergence
run scale $F --precision fp16 --norm none --lr 3e-2 --steps 400
sw=$(sed -n 's/.*warning at step \([0-9]*\): loss scale collapsed 65536 -> .*/\1/p' "$T/scale.err")
# (it blows up, finite, before a value is inf: that ends the run)
sd=$(sed -n 's/.*diverged at step \([0-9]*\) (first.*/\1/p; s/.*blew up at step \([0-9]*\) (loss.*/\1/p' "$T/scale.err")
[ -n "$sw" ] && [ -n "$sd" ] && [ $((sd - sw)) -ge 20 ] && ok ||
    no "loss-scale warning at '$sw', divergence at '$sd': $(cat "$T/scale.err")"

# no norm, fp16, validation every step: the residual of the held-out
# batches reaches fp16's limit first, and the validation loss is NaN
# before a training step's forward is (validated at 115, diverged at 116)
# (the loss blows up, finite, from step 97: --on-diverge continue goes on)
run valnan $F --precision fp16 --norm none --lr 3e-2 --steps 125 --val-every 1 --val-batches 2 \
    --on-diverge continue
vn=$(sed -n 's/.*warning at step \([0-9]*\): validation loss is nan at step \([0-9]*\) while.*/\1 \2/p' \
    "$T/valnan.err")
vd=$(sed -n 's/.*diverged at step \([0-9]*\): loss nan.*/\1/p' "$T/valnan.err" | head -1)
set -- $vn
grep -q "nan" "$T/valnan.err" && ! grep -q -- "-nan" "$T/valnan.err" && ok ||
    no "NaN spelled with a sign, or not at all: $(grep -i nan "$T/valnan.err")"
[ -n "$vn" ] && [ "$1" = "$2" ] && [ -n "$vd" ] && [ $((vd - $1)) -ge 1 ] && ok ||
    no "validation NaN warning '$vn', divergence at '$vd': $(cat "$T/valnan.err")"
# the step normscope(1) quotes for this run
MAN1=$(dirname "$0")/../../man/normscope.1
mq=$(sed -n 's/^it at step \([0-9]*\), the step before its divergence$/\1/p' "$MAN1")
[ -n "$mq" ] && [ "$mq" = "$1" ] && [ $((vd - 1)) = "$mq" ] && ok ||
    no "normscope(1) quotes the validation NaN at step '$mq'; the run: '$1', divergence '$vd'"
# the summary says the last validation was NaN, not that there was none
has valnan "loss nan, val nan;" && ok || no "summary of the NaN validation: $(tail -n 3 "$T/valnan.err")"
# on the log before the divergence, once
vl=$(grep -n 'warning at step .*: validation loss is nan' "$T/valnan.err" | cut -d: -f1)
dl=$(grep -n 'diverged at step [0-9]*: loss nan' "$T/valnan.err" | head -1 | cut -d: -f1)
[ "$(echo "$vl" | wc -w)" -eq 1 ] && [ -n "$dl" ] && [ "$vl" -lt "$dl" ] && ok ||
    no "validation NaN warning at line '$vl', divergence at line '$dl'"

# ---- --compare: each run has its own diagnosis, named like its events ----
# run a at a tenth of b's LR stays finite; only b's norm variance overflows
run cmpb $F --precision fp16 --fp32-norms off --lr 2e-3 --steps 600 --compare lr=2e-2
cd_=$(sed -n 's/.*run b diverged at step \([0-9]*\) (first.*/\1/p' "$T/cmpb.err")
[ "$(rc cmpb)" -eq 3 ] && [ -n "$cd_" ] && ok || no "--compare b: exit $(rc cmpb): $(cat "$T/cmpb.err")"
bl=$(sed -n 's/.*b: cause: forward, final norm variance overflowed in fp16: act max .* (layer \([0-9]\)).*/\1/p' \
    "$T/cmpb.err")
[ -n "$bl" ] && grep -q "b: diagnosis at step $cd_: layer $bl act max" "$T/cmpb.err" &&
    has cmpb "b: warning at step" && ok || no "run b's diagnosis: $(cat "$T/cmpb.err")"
! grep -q "a: warning at\|a: diagnosis\|a: cause\|^normscope: cause" "$T/cmpb.err" && ok ||
    no "run a reported: $(grep 'a: \|^normscope: cause' "$T/cmpb.err")"
run cmpok $F --warmup 20 --steps 200 --compare norm=post
[ "$(rc cmpok)" -eq 0 ] && ! grep -q "warning\|diagnosis\|cause:" "$T/cmpok.err" && ok ||
    no "--compare healthy: exit $(rc cmpok): $(cat "$T/cmpok.err")"

# ---- 3. the deep Post-LN stall, within 200 steps; Pre-LN does not ----
POST="$F -L 24 --lr 3e-3 --steps 300 --on-stall stop"
run stall $POST --norm post --csv "$T/stall.csv"
st=$(sed -n 's/.*stalled at step \([0-9]*\); stopping.*/\1/p' "$T/stall.err")
[ "$(rc stall)" -eq 4 ] && [ -n "$st" ] && [ "$st" -le 200 ] && ok ||
    no "Post-LN stall: exit $(rc stall), at step '$st': $(cat "$T/stall.err")"
has stall "on the unigram plateau 3.0" && has stall "Pre-LN first" && ok ||
    no "stall diagnosis: $(cat "$T/stall.err")"
[ "$(last_col "$T/stall.csv" state)" = stalled ] && ok || no "CSV state of the stall"
run prestall $POST --norm pre --csv "$T/pre.csv"
[ "$(rc prestall)" -eq 0 ] && ! grep -q "stalled\|diagnosis\|warning at" "$T/prestall.err" &&
    ! cut -d, -f2- "$T/pre.csv" | grep -q stalled && ok ||
    no "Pre-LN reported: exit $(rc prestall): $(cat "$T/prestall.err")"

# --compare: run b (Post-LN) stalls and stops the run; a (Pre-LN) is not named
run cmpstall $POST --norm pre --compare norm=post --csv "$T/cmpstall.csv"
[ "$(rc cmpstall)" -eq 4 ] && has cmpstall "b: stalled at step" &&
    has cmpstall "b: cause: stalled: loss" && ! has cmpstall "a: cause" && ok ||
    no "--compare Post-LN b stall: exit $(rc cmpstall): $(cat "$T/cmpstall.err")"
[ "$(last_col "$T/cmpstall.csv" b_state)" = stalled ] &&
    [ "$(last_col "$T/cmpstall.csv" state)" != stalled ] && ok || no "CSV states of the b stall"

# ---- the README's example prints what the README quotes ----
README=$(dirname "$0")/../../README.md
run readme --headless -L 4 -d 32 -T 16 -B 4 --precision fp16 --fp32-norms off --lr 2e-2 \
    --warmup 0 --save "$T/readme.ck"
quoted=$(awk '/--fp32-norms off --lr 2e-2 --warmup 0 --save run.ckpt/ { on = 1; next }
    on && /^    \.\.\./ { sub(/^    \.\.\./, ""); sub(/ \.\.\.$/, ""); sub(/run\.ckpt/, "RUNCK"); print; next }
    on { exit }' "$README")
nq=0
echo "$quoted" | {
    bad=0
    while IFS= read -r q; do
        [ -n "$q" ] || continue
        sed "s|$T/readme.ck|RUNCK|" "$T/readme.err" | grep -qF -- "$q" || { echo "FAIL: README quotes '$q'" >&2; bad=1; }
    done
    exit $bad
} && [ "$(echo "$quoted" | wc -l)" -eq 3 ] && ok || no "the README's diagnosis example: $(cat "$T/readme.err")"

# ---- 4. the checkpoint written at the divergence, and a --load recovery ----
# the last snapshot before the divergence (one every 50 steps)
snap=$(( (${div:-1} - 1) / 50 * 50 ))
[ -s "$T/div.ck" ] && has fp16 "the run diverged; wrote the snapshot of step $snap" && ok ||
    no "no checkpoint at the divergence: $(cat "$T/fp16.err")"
# unchanged it diverges at the same step; the --load flags apply from the snapshot
run same $FP16 --load "$T/div.ck" --csv "$T/same.csv"
[ "$(rc same)" -eq 3 ] && has same "diverged at step $div " && ok ||
    no "unchanged resume: exit $(rc same): $(cat "$T/same.err")"
# ... and is warned at once, as an in-run rewind is: the checkpoint carries
# the diagnosis (version 6), which knows where the run diverged
has same "warning at step $((snap + 1)): resumed from step $snap with nothing changed: it will diverge again at step $div" &&
    ok || no "unchanged resume not warned: $(cat "$T/same.err")"
run fixed $FP16 --load "$T/div.ck" --lr 0.01 --steps $((snap + 20)) --csv "$T/fixed.csv"
! has fixed "resumed from" && ok || no "resume with a lower LR warned: $(cat "$T/fixed.err")"
has fixed "lr=0.01 from step $snap (the checkpoint had 0.02)" && ok ||
    no "--load --lr 0.01: exit $(rc fixed): $(cat "$T/fixed.err")"
awk -F, -v s="$snap" 'NR == 2 { exit !($1 == s + 1 && $4 > 0.0099 && $4 < 0.0101) }' "$T/fixed.csv" && ok ||
    no "the resumed run's first row: $(sed -n 2p "$T/fixed.csv" | cut -d, -f1-4)"
# the diagnosis' own fix (bf16 has fp32's range) trains on to step 300 finite
run bf16 $FP16 --load "$T/div.ck" --precision bf16 --steps 300 --csv "$T/bf16.csv"
[ "$(rc bf16)" -eq 0 ] && [ "$(last_col "$T/bf16.csv" precision)" = bf16 ] &&
    [ "$(last_col "$T/bf16.csv" step)" -eq 300 ] && ! grep -q diverged "$T/bf16.csv" && ok ||
    no "--load --precision bf16 did not train on to step 300: $(cat "$T/bf16.err")"
# precision and warmup apply too; a setting no command changes is refused
run eps $FP16 --load "$T/div.ck" --eps 1e-3
[ "$(rc eps)" -eq 2 ] && [ "$(wc -l <"$T/eps.err")" -eq 1 ] && has eps "--eps" && ok ||
    no "--load --eps: exit $(rc eps): $(cat "$T/eps.err")"
run shape $FP16 --load "$T/div.ck" -L 5
[ "$(rc shape)" -eq 2 ] && has shape "--layers" && ok || no "--load -L 5: $(cat "$T/shape.err")"

# ---- 5. --on-diverge continue ending in NaN exits 3, the CSV says so ----
run cont $F --lr 10 --precision fp16 --loss-scale off --steps 30 --on-diverge continue \
    --csv "$T/cont.csv"
n=$(grep -c ',diverged,' "$T/cont.csv")
[ "$(rc cont)" -eq 3 ] && [ "$n" -gt 0 ] && has cont "$n diverged steps were not applied" && ok ||
    no "--on-diverge continue: exit $(rc cont), $n diverged rows: $(cat "$T/cont.err")"

# ---- 6. resumed after a rewind with nothing changed ----
rwat=$((${div:-0} + 10)) # a rewind after the divergence (the run goes on, steps not applied)
printf 'at %d: rewind\n' "$rwat" >"$T/rw.script"
run rw $FP16 --steps $((rwat + 10)) --on-diverge continue --script "$T/rw.script"
has rw "resumed from step $snap with nothing changed: it will diverge again at step $div" && ok ||
    no "no resumed warning: $(cat "$T/rw.err")"
printf 'at %d: lr 0.01\nat %d: rewind\n' "$rwat" "$rwat" >"$T/rw2.script"
run rw2 $FP16 --steps $((rwat + 10)) --on-diverge continue --script "$T/rw2.script"
! has rw2 "resumed from" && ok || no "resumed warning after a change: $(cat "$T/rw2.err")"

# ---- w then b: warmup turned on, then a rewind, ramps the replay's LR ----
# (the ramp started at the abandoned step, which the replay would reach
# only after its ramp had ended: the LR stayed at its peak)
printf 'at 170: warmup on\nat 170: rewind\n' >"$T/wb.script"
run wb $FP16 --steps 200 --script "$T/wb.script" --csv "$T/wb.csv"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i == "lr") k = i; if ($i == "warmup") w = i }; next }
    $1 <= prev { replay = 1 } { prev = $1 }
    replay && !seen { seen = 1; ok = $k < 0.002 && $w == "on" }
    END { exit !ok }' "$T/wb.csv" && ok ||
    no "w then b: the replay's first LR is not ramped: $(grep -A1 'rewound' "$T/wb.err")"

# ---- a finite blow-up: its own state, exit 3, and a cause with numbers ----
run blow $F --lr 1.0 --steps 400 --csv "$T/blow.csv"
[ "$(rc blow)" -eq 3 ] && has blow "blew up at step" && has blow "cause: blew up, finite: loss" &&
    has blow "update ratio" && has blow "try: rewind to before the rise and lower the LR" && ok ||
    no "blow-up: exit $(rc blow): $(cat "$T/blow.err")"
[ "$(last_col "$T/blow.csv" state)" = exploded ] && ok || no "blow-up: CSV state $(last_col "$T/blow.csv" state)"
# under --on-diverge continue it trains on, marked, and still exits 3
run blowc $F --lr 1.0 --steps 100 --on-diverge continue --csv "$T/blowc.csv"
[ "$(rc blowc)" -eq 3 ] && [ "$(last_col "$T/blowc.csv" step)" -eq 100 ] &&
    [ "$(grep -c ',exploded,' "$T/blowc.csv")" -gt 10 ] && ok ||
    no "blow-up, continue: exit $(rc blowc), last step $(last_col "$T/blowc.csv" step)"
# the loss plateau at a high LR is a stall, and its cause is the LR
run lrstall $F --lr 0.1 --steps 300 --on-stall stop
[ "$(rc lrstall)" -eq 4 ] && has lrstall "cause: stalled: loss" && has lrstall "; the LR 0.1: act max" &&
    ! has lrstall "Pre-LN first" && ok || no "LR plateau: exit $(rc lrstall): $(cat "$T/lrstall.err")"

# ---- a slow crossing of the plateau is learning, not a stall ----
# gamma-init 8 on the default model sits in the plateau's band from step
# ~150 while its loss falls more than 0.05 nats a 100 steps: without the
# flatness test it was called stalled at step 244, "cause unknown"
run slow --headless --threads 1 --ln-gamma-init 8 --steps 260 --csv "$T/slow.csv"
fell=$(awk -F, 'NR > 1 { l[$1] = $2 } END { for (e = 200; e <= 260; e++) { a = b = 0
        for (i = e - 47; i <= e; i++) { a += l[i]; b += l[i - 100] }
        a /= 48; b /= 48; if (a - 3.086 > 0.4 || a - 3.086 < -0.15) { print "off"; exit }
        f = b - a; if (e == 200 || f < lo) lo = f; if (e == 200 || f > hi) hi = f }
        printf "%.3f %.3f\n", lo, hi }' "$T/slow.csv")
set -- $fell
[ "$(rc slow)" -eq 0 ] && ! has slow "stall" && [ $# -eq 2 ] &&
    awk -v lo="$1" -v hi="$2" 'BEGIN { exit !(lo > 0.05 && hi <= 0.3) }' && ok ||
    no "a slow crossing of the plateau (fell $fell in 100 steps): exit $(rc slow): $(cat "$T/slow.err")"

# ---- an LR raised 10x at step 60 is named, with the LR to go back to ----
printf 'at 60: lr x10\n' >"$T/lr.script"
run lr $F --precision fp16 --fp32-norms off --lr 2e-3 --steps 400 --script "$T/lr.script"
[ "$(rc lr)" -eq 3 ] && has lr "LR raised 0.002 -> 0.02 at step 60" &&
    has lr "try: rewind and set lr 0.002" && ok || no "LR raise not named: $(cat "$T/lr.err")"

# ---- vanishing updates: norm gains of 0 leave the bottom layer still ----
run gain0 $F --norm post --ln-gamma-init 0 --ln-beta-init 0 --steps 150
has gain0 "layer 0 update ratio 0 (top layer" && ok || no "no vanishing update: $(cat "$T/gain0.err")"
run gain1 $F --norm post --steps 150
! has gain1 "it has stopped learning" && ok || no "vanishing update on a healthy run: $(cat "$T/gain1.err")"

# ---- the spike warning: an LR raised 1000x at step 150 spikes at once ----
printf 'at 150: lr x1000\n' >"$T/spike.script"
run spike $F --warmup 20 --steps 200 --script "$T/spike.script"
grep -q "warning: gradient norm spike at step 15[0-9]: .* sd, .*x the median of .*), then" "$T/spike.err" &&
    ok || no "no spike warning after lr x1000: $(cat "$T/spike.err")"

# ---- a rewind to step 0 replays an untrained start: no spike ----
# (the spike windows held the abandoned steps' losses, near a third of it)
printf 'at 200: rewind\n' >"$T/rw0.script"
run rw0 $F --warmup 20 --steps 260 --snapshot-every 0 --script "$T/rw0.script"
has rw0 "rewound from step 200 to the snapshot at step 0" && ! has rw0 "spike" && ok ||
    no "spike warning after a rewind to step 0: $(cat "$T/rw0.err")"

# ---- a stall the run learns its way out of: fp16 at lr 3e-2 sits on the
# plateau past 200 steps (diagnosed), then leaves it; the log says the
# stall is over once the window's mean is 0.15 nats below the plateau,
# and the run ends there, below it ----
run over $F --precision fp16 --lr 3e-2 --steps 400
st=$(sed -n 's/.*diagnosis at step \([0-9]*\): stalled: loss [0-9.]* on the unigram plateau.*/\1/p' "$T/over.err" | head -1)
pl=$(sed -n 's/.*on the unigram plateau \([0-9.]*\) for.*/\1/p' "$T/over.err" | head -1)
off=$(sed -n "s/.*off the plateau at step \([0-9]*\): mean loss [0-9.]*, [0-9.]* below it; the stall diagnosed at step $st is over/\1/p" "$T/over.err")
[ -n "$st" ] && [ -n "$off" ] && [ "$off" -gt "$st" ] && ok || no "a stall then learning: stall at '$st', over at '$off': $(cat "$T/over.err")"
[ "$(grep -c 'off the plateau' "$T/over.err")" -eq 1 ] && ok || no "the stall's end said more than once"
fin=$(sed -n 's/.*; loss \([0-9.]*\), val.*/\1/p' "$T/over.err")
awk -v f="$fin" -v p="$pl" 'BEGIN { exit !(f != "" && p != "" && f < p - 0.15) }' && ! has over "cause: stalled" && ok ||
    no "after the stall: final loss $fin against the plateau $pl, or still called stalled"

# ---- healthy runs: no warning, no spike, no diagnosis ----
run healthy $F --warmup 20 --steps 200
run healthy16 $F --precision fp16 --lr 1e-3 --steps 200
for h in healthy healthy16; do
    [ "$(rc $h)" -eq 0 ] && ! grep -q "warning\|diagnosis\|cause:" "$T/$h.err" && ok ||
        no "$h: exit $(rc $h): $(cat "$T/$h.err")"
done

# ---- the verdict: "healthy" only after every check answered ----
# (each a small run of a second or two; the numbers are the same bits on
# every CPU, the bounds leave margin)
G="--headless -L 4 -d 32 -T 32 -B 8"
# the control: every check answered ok, each with its numbers
run vok $G --steps 300
[ "$(rc vok)" -eq 0 ] && has vok "verdict: healthy (every check answered ok)" &&
    has vok "is it learning? ok: loss" && has vok "does validation follow training? ok: val" &&
    has vok "is the LR within what the run tolerates? ok: update ratio" &&
    ! grep -q "warning\|diagnosis" "$T/vok.err" && ok || no "healthy verdict: $(cat "$T/vok.err")"
# too short to answer: not said healthy, the open questions say why; its
# one validation (the last step's) is answered against the training loss
# there, the CSV's mean of its 16 steps, saying it is on 1 validation
run vshort $G --steps 30 --csv "$T/vshort.csv"
has vshort "verdict: not known to be healthy" && has vshort "LR within what the run tolerates? not yet known:" &&
    ! has vshort "verdict: healthy" && ok || no "30 steps: $(cat "$T/vshort.err")"
want=$(awk -F, 'NR > 1 && $1 > 14 { t += $2 } NR > 1 && $1 == 30 { v = $3 }
    END { g = v - t / 16; a = g < 0 ? -g : g; s = g > 0 ? "above" : "below"
          w = g > 0.1 ? "more than" : "not more than"
          printf("val %.3f at step 30, %.3f %s train %.3f there (%s 0.1 above), on 1 validation", v, a, s, t / 16, w) }' "$T/vshort.csv")
has vshort "does validation follow training? ok: $want" && ok ||
    no "30 steps, one validation: want '$want': $(grep 'validation' "$T/vshort.err")"
# not learning: LR 1e-6, the loss barely moves from ln 256
run vlow $G --lr 1e-6 --steps 300
[ "$(rc vlow)" -eq 0 ] && has vlow "diagnosis at step 200: not learning: loss" &&
    has vlow "the LR 1e-06 is too low" && has vlow "is it learning? no:" &&
    has vlow "verdict: not healthy" && ok || no "LR 1e-6: $(cat "$T/vlow.err")"
# overfitting: 2000 bytes of data, validation rises from its minimum while
# train falls; the minimum's step is the CSV's lowest val_loss
head -c 2000 assets/corpus.txt >"$T/small.txt"
run vfit --headless -L 2 -d 64 -T 32 -B 16 --lr 3e-3 --data "$T/small.txt" --steps 300 \
    --val-every 25 --csv "$T/vfit.csv"
mn=$(awk -F, 'NR > 1 && $3 != "" && (m == "" || $3 < m) { m = $3; s = $1 } END { print s }' "$T/vfit.csv")
[ -n "$mn" ] && grep -q "diagnosis at step [0-9]*: overfitting: validation .* its minimum [0-9.]* at step $mn," \
    "$T/vfit.err" && has vfit "does validation follow training? no:" && ok ||
    no "overfitting (minimum at '$mn'): $(grep -v 'validation loss' "$T/vfit.err")"
# LR 3e-2 over 8 blocks: the update ratio and the act max past the
# thresholds, warned while every value is finite; LR 1e-2 over 4 blocks,
# which trains well, is not warned
run vhigh $G -L 8 --lr 3e-2 --steps 300
[ "$(rc vhigh)" -eq 0 ] && grep -q "warning at step [0-9]*: LR 0.03 too high for this run" "$T/vhigh.err" &&
    has vhigh "is the LR within what the run tolerates? no:" && ok || no "LR 3e-2: $(cat "$T/vhigh.err")"
run vmid $G --lr 1e-2 --steps 300
! grep -q "too high for this run" "$T/vmid.err" && has vmid "is the LR within what the run tolerates? ok:" && ok ||
    no "LR 1e-2: $(cat "$T/vmid.err")"
# one repeated byte: the data's entropy is 0, a loss near 0 is the optimum,
# no stall even under --on-stall stop
head -c 3000 /dev/zero | tr '\0' a >"$T/one.txt"
run vone --headless -L 2 -d 32 -T 32 --data "$T/one.txt" --steps 300 --on-stall stop
[ "$(rc vone)" -eq 0 ] && ! has vone "stalled" && has vone "plateau 0.000" && ok ||
    no "one repeated byte: exit $(rc vone): $(cat "$T/vone.err")"

# ---- a resumed run carries its diagnosis: 200 + 200 steps say what 400 do ----
R="$F --lr 3e-3 --val-every 100"
run full $R --steps 400
run half $R --steps 200 --save "$T/half.ck"
run rest --headless --load "$T/half.ck" --steps 400
sed -n '/verdict:/,$p' "$T/full.err" >"$T/full.v"
sed -n '/verdict:/,$p' "$T/rest.err" >"$T/rest.v"
[ -s "$T/full.v" ] && cmp -s "$T/full.v" "$T/rest.v" && grep -q "at step 1: fell" "$T/rest.v" && ok ||
    no "the resumed run's checks differ: $(diff "$T/full.v" "$T/rest.v")"
# a version-5 checkpoint (no diagnosis) loads, and says what is not known
run v5 --headless --load "$(dirname "$0")/../fixtures/v5.ckpt" --steps 6
[ "$(rc v5)" -eq 0 ] && has v5 "did it start sane? not known: resumed after step 3 from a checkpoint without the diagnosis' state" &&
    has v5 "fell" && ! has v5 "at step 1:" && ok || no "v5 resume: $(cat "$T/v5.err")"
# a malformed diagnosis is refused with the reason: its length past the file
cp "$T/half.ck" "$T/bad.ck"
at=$(grep -obUa NSDIAG "$T/half.ck" | head -1 | cut -d: -f1) # its length is the 4 bytes before
printf '\377\377\377\177' | dd of="$T/bad.ck" bs=1 seek=$((at - 4)) conv=notrunc 2>/dev/null
run bad --headless --load "$T/bad.ck" --steps 201
[ "$(rc bad)" -eq 2 ] && has bad "diagnosis' state says" && ok || no "bad diagnosis length: $(cat "$T/bad.err")"

# ---- sparse update ratios: the lab's LR 0.3 run, its stream blanked to every
# 10th step's update ratio (the probe's update_every=10), followed: the LR
# check is answered "no" from those points, as the lab's, saying how many ----
run lr03 $F --lr 0.3 --steps 300 --jsonl "$T/lr03.jsonl"
awk '{ if (match($0, /"step":[0-9]+/) && substr($0, RSTART + 7, RLENGTH - 7) % 10)
           gsub(/"l[0-9]+_update_ratio":[^,}]*,/, "")
       print }' "$T/lr03.jsonl" >"$T/sparse.jsonl"
run sparse --follow "$T/sparse.jsonl" --headless
grep -q '_update_ratio' "$T/sparse.jsonl" && [ "$(grep -c '_update_ratio' "$T/sparse.jsonl")" -le 31 ] &&
    has lr03 "is the LR within what the run tolerates? no: update ratio" &&
    cat "$T/sparse.out" "$T/sparse.err" |
    grep -q "is the LR within what the run tolerates? no: update ratio .* over [67] points" &&
    ok || no "sparse LR check: $(grep 'LR within' "$T/lr03.err" "$T/sparse.out" "$T/sparse.err")"

# ---- a checkpoint whose values no finite run wrote is refused ----
# a NaN weight, an inf first moment, a negative second moment, each with
# the CRC recomputed so that only the value check can catch it
PY=$(command -v /usr/bin/python3 || command -v python3)
if [ -n "$PY" ]; then
    "$BIN" --headless -q -L 2 -d 16 -H 2 -T 8 -B 2 --steps 5 --save "$T/ok.ck" 2>/dev/null
    "$PY" - "$T/ok.ck" <<'EOF'
import struct, sys, zlib
p = open(sys.argv[1], 'rb').read()
at = 16 + struct.unpack_from('<I', p, 12)[0]  # magic, version, header length, header
n = struct.unpack_from('<Q', p, at)[0]         # parameters: weights, m, v, then the CRC
for name, arr, i, val in [("w", 0, 3, float('nan')), ("m", 1, n - 1, float('inf')),
                          ("v", 2, 7, -1.0)]:
    b = bytearray(p[:-4])
    struct.pack_into('<f', b, at + 8 + 4 * (arr * n + i), val)
    b += struct.pack('<I', zlib.crc32(bytes(b)) & 0xffffffff)
    open(sys.argv[1] + "." + name, 'wb').write(b)
EOF
    for x in "w:the weights of tensor 'wte' hold nan at element 3" \
        "m:the first moments of tensor 'headb' hold inf at element 255" \
        "v:the second moments of tensor 'wte' hold a negative value at element 7"; do
        k=${x%%:*} want=${x#*:}
        "$BIN" --headless -q --load "$T/ok.ck.$k" --steps 8 2>"$T/ck.err"
        r=$?
        [ "$r" -eq 2 ] && grep -qF "$want" "$T/ck.err" && [ "$(wc -l <"$T/ck.err")" -eq 1 ] && ok ||
            no "forged checkpoint $k: exit $r: $(cat "$T/ck.err")"
    done
    "$BIN" --headless -q --load "$T/ok.ck" --steps 8 2>"$T/ck.err" && ok ||
        no "the unforged checkpoint: $(cat "$T/ck.err")"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
