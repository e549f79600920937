#!/bin/sh
# lessons.sh - every lesson, run headless from the real binary, and its
# effect asserted in numbers measured in that run (never taken from the
# lesson file). A lesson whose effect is gone fails the build.
# Usage: NS_BIN=./normscope sh tests/sh/lessons.sh [NAME...]
# Prints "N passed, N failed"; exits non-zero on any failure.
BIN=${NS_BIN:-./normscope}
MAN7=$(dirname "$0")/../../man/normscope-lessons.7
LESSONS=$(dirname "$0")/../../assets/lessons
. "$(dirname "$0")/../lib/claims_lib.sh"
# NS_LESSONS_DIR: keep the runs' files there (to look at them afterwards)
if [ -n "${NS_LESSONS_DIR:-}" ]; then
    T=$NS_LESSONS_DIR
    mkdir -p "$T" || exit 2
else
    T=$(mktemp -d /tmp/ns_lessons.XXXXXX)
    trap 'rm -rf "$T"' EXIT
fi
pass=0
fail=0
ok() { pass=$((pass + 1)); echo "  ok: $*"; }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
# check DESCRIPTION AWK-CONDITION: the condition over variables set with -v
check() {
    desc=$1
    shift
    if awk "$@" 'BEGIN { exit !(COND) }' 2>/dev/null; then ok "$desc"; else no "$desc"; fi
}

# col FILE NAME: the 1-based index of a CSV column
col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
# at FILE COLUMN ROW: the value in data row ROW (1-based) of a column
at() { c=$(col "$1" "$2"); awk -F, -v c="$c" -v r="$3" 'NR == r + 1 { print $c }' "$1"; }
# last FILE COLUMN: the last non-empty value of a column
last() { c=$(col "$1" "$2"); awk -F, -v c="$c" 'NR > 1 && $c != "" { v = $c } END { print v }' "$1"; }
# cmp DESC A OP B [SLACK]: numeric comparison, reported with the numbers
cmpv() {
    if awk -v a="$2" -v b="$4" -v s="${5:-0}" "BEGIN { exit !(a + 0 $3 b + s) }"; then
        ok "$1 ($2 $3 $4${5:+ + $5})"
    else
        no "$1 ($2 $3 $4${5:+ + $5})"
    fi
}

want() { [ $# -eq 0 ] && return 0; for w in $ONLY; do [ "$w" = "$1" ] && return 0; done; return 1; }
ONLY="$*"
# run NAME FUNCTION: one lesson's checks, and their wall time (the CI budget)
run() {
    name=$1
    shift
    [ -z "$ONLY" ] || want "$name" || return 0
    echo "== lesson $name"
    t0=$(date +%s)
    "$@"
    echo "-- lesson $name: $(($(date +%s) - t0)) s"
}

# The warmup lesson over five seeds, the default and 1-4 (one under the
# sanitizers; the texts' ranges were measured on seed 5 too): the lesson as
# written (w<seed>.csv); what its rescue is judged against, run a left
# alone (wa<seed>.csv: the lesson's flags, no rewind, no warmup, no twin, to
# the same step 700); and run a with warmup turned on at step 200 without
# the rewind (wl<seed>.csv, to step 400). lesson_claims.py holds the texts'
# numbers against these files. Each run is a job of its own, the longest
# first, so that both cores stay busy.
lesson_warmup() {
    seeds="1337 1 2 3 4"
    [ -n "${NS_SANITIZED:-}" ] && seeds=1337
    printf 'at 200: warmup on\n' >"$T/wl.script"
    cat >"$T/w.sh" <<'JOB'
s=${1#*.}
case $1 in
w.*) "$BIN" $TH --headless --lesson warmup --seed "$s" --csv "$T/w$s.csv" 2>"$T/w$s.err" ;;
wa.*) "$BIN" $TH --headless -q $FLAGS --seed "$s" --csv "$T/wa$s.csv" 2>"$T/wa$s.err" ;;
wl.*) "$BIN" $TH --headless -q $FLAGS --steps 400 --script "$T/wl.script" --seed "$s" --csv "$T/wl$s.csv" 2>"$T/wl$s.err" ;;
esac
echo $? >"$T/${1%.*}$s.rc"
JOB
    FLAGS=$(lesson_flags warmup)
    # shellcheck disable=SC2046
    each_seed "$T/w.sh" $(for k in w wa wl; do for s in $seeds; do echo "$k.$s"; done; done)
    for s in $seeds; do
        [ "$(cat "$T/w$s.rc" "$T/wa$s.rc" "$T/wl$s.rc" | tr -d '\n')" = 000 ] || { no "warmup seed $s: $(cat "$T/w$s.err" "$T/wa$s.err" "$T/wl$s.err")"; continue; }
        # row 200 is step 200 of the first pass (before the rewind)
        [ "$(at "$T/w$s.csv" step 200)" = 200 ] && [ "$(at "$T/w$s.csv" step 201)" = 1 ] &&
            [ "$(last "$T/w$s.csv" step)" = 700 ] && [ "$(last "$T/wa$s.csv" step)" = 700 ] &&
            ok "seed $s: rewound to step 0 after step 200, replayed to 700; left alone, to 700" || no "seed $s: rewind at step 200"
        a=$(at "$T/w$s.csv" val_loss 200)
        cmpv "seed $s, no warmup: Post-LN's validation loss >= Pre-LN's + 0.3 at step 200" "$a" ">=" "$(at "$T/w$s.csv" b_val_loss 200)" 0.3
        a=$(last "$T/w$s.csv" val_loss)
        cmpv "seed $s, with warmup: Post-LN within 0.30 of Pre-LN at the end" "$a" "<=" "$(last "$T/w$s.csv" b_val_loss)" 0.30
        cmpv "seed $s, with warmup: Post-LN trains (below 2.6)" "$a" "<" 2.6
        # the rescue against the run left alone, at the same step
        cmpv "seed $s, left alone: Post-LN still on the plateau at step 700" "$(last "$T/wa$s.csv" val_loss)" ">" 2.9
        cmpv "seed $s: the rescue ends >= 0.5 below the run left alone" "$a" "<=" "$(last "$T/wa$s.csv" val_loss)" -0.5
        cmpv "seed $s: warmup on at step 200 without the rewind: on the plateau at step 400" "$(last "$T/wl$s.csv" val_loss)" ">" 2.9
    done
    for n in 150 200; do
        q=$(sed -n "s/^at $n: pause //p" "$LESSONS/warmup.lesson")
        grep -qF -- "normscope: $q" "$T/w1337.err" && ok "asks at step $n: $q" || no "warmup: not asked at step $n: '$q'"
    done
}

# question_for LESSON COND N: the question a lesson file asks at step N
# when COND holds ("if COND: at N: pause ..."), from the file itself
question_for() { sed -n "s/^if $2: at $3: pause //p" "$LESSONS/$1.lesson"; }
# asks ERRFILE LESSON COND N [OTHER-COND]: the run whose stderr is ERRFILE
# asked that question (a headless run prints it), and not OTHER-COND's
asks() {
    q=$(question_for "$2" "$3" "$4")
    [ -n "$q" ] && grep -qF -- "normscope: $q" "$1" && ok "$2 ($3) asks: $q" \
        || no "$2: the question for $3 ('$q') was not asked: $(grep '^normscope: ' "$1")"
    [ -z "${5:-}" ] && return 0
    q=$(question_for "$2" "$5" "$4")
    [ -n "$q" ] && ! grep -qF -- "normscope: $q" "$1" && ok "$2 ($3) does not ask $5's question" \
        || no "$2 ($3): asked the question for $5: '$q'"
}

# The depth lesson at its three depths over five seeds, the default and
# 1-4 (one under the sanitizers; the texts' ranges were measured on seed 5
# too): d<L>_<seed>.csv, whose numbers lesson_claims.py holds against the
# texts'. Here the directions the questions at step 150 and the end rest
# on, on every seed. A job per run, the deepest first.
lesson_depth() {
    seeds="1337 1 2 3 4"
    [ -n "${NS_SANITIZED:-}" ] && seeds=1337
    cat >"$T/d.sh" <<'JOB'
L=${1%.*}
s=${1#*.}
"$BIN" $TH --headless --lesson depth -L "$L" --seed "$s" --csv "$T/d${L}_$s.csv" >/dev/null 2>"$T/d${L}_$s.err"
echo $? >"$T/d${L}_$s.rc"
JOB
    # shellcheck disable=SC2046
    each_seed "$T/d.sh" $(for L in 24 6 2; do for s in $seeds; do echo "$L.$s"; done; done)
    for s in $seeds; do
        [ "$(cat "$T/d24_$s.rc" "$T/d6_$s.rc" "$T/d2_$s.rc" | tr -d '\n')" = 000 ] || { no "depth seed $s: $(cat "$T"/d*_"$s".err)"; continue; }
        a2=$(last "$T/d2_$s.csv" val_loss); b2=$(last "$T/d2_$s.csv" b_val_loss)
        a6=$(last "$T/d6_$s.csv" val_loss); b6=$(last "$T/d6_$s.csv" b_val_loss)
        a24=$(last "$T/d24_$s.csv" val_loss); b24=$(last "$T/d24_$s.csv" b_val_loss)
        d2=$(awk -v a="$a2" -v b="$b2" 'BEGIN { d = a - b; print d < 0 ? -d : d }')
        cmpv "seed $s, 2 layers: |Post - Pre| validation gap small" "$d2" "<" 0.1
        cmpv "seed $s, 6 layers: Post-LN no worse than Pre-LN + 0.15" "$a6" "<=" "$b6" 0.15
        cmpv "seed $s, 24 layers: Post-LN at least 0.3 above Pre-LN" "$a24" ">=" "$b24" 0.3
        # what each depth's question at step 150 says of its run
        for L in 2 6 24; do
            q=$(question_for depth "layers=$L" 150)
            a=$(at "$T/d${L}_$s.csv" val_loss 150); b=$(at "$T/d${L}_$s.csv" b_val_loss 150)
            case $L:$q in
            24:*"Post-LN is stuck on the plateau, Pre-LN trains"*)
                cmpv "seed $s, -L 24 at step 150: Post-LN on the plateau (val)" "$a" ">" 2.9
                cmpv "seed $s, -L 24 at step 150: Pre-LN trains, 0.3 below" "$b" "<=" "$a" -0.3 ;;
            2:*"both train, Post-LN ahead for now"*)
                cmpv "seed $s, -L 2 at step 150: Post-LN trains" "$a" "<" 2.9
                cmpv "seed $s, -L 2 at step 150: Pre-LN trains" "$b" "<" 2.9
                cmpv "seed $s, -L 2 at step 150: Post-LN ahead" "$a" "<" "$b" ;;
            6:*"Post-LN trains and is ahead"*)
                cmpv "seed $s, -L 6 at step 150: Post-LN trains" "$a" "<" 2.9
                cmpv "seed $s, -L 6 at step 150: Post-LN ahead" "$a" "<" "$b" ;;
            *) no "-L $L: the question '$q' is not one this test knows how to check: measure it and add it" ;;
            esac
        done
    done
    # the question at step 150 follows -L: each depth asks its own, and no
    # other depth's
    for L in 2 6 24; do
        q=$(question_for depth "layers=$L" 150)
        [ -n "$q" ] && grep -qF -- "$q" "$T/d${L}_1337.err" && ok "-L $L asks its question: $q" || no "-L $L: question '$q' not asked: $(grep '^normscope: ' "$T/d${L}_1337.err")"
        n=$(grep '^normscope: .*?$' "$T/d${L}_1337.err" | grep -vc '^normscope: [ab]: ')
        cmpv "-L $L: one question asked, no other depth's" "$n" "==" 1
    done
    # a depth the file has no question for gets one that claims nothing
    "$BIN" --headless --lesson depth -L 3 --steps 151 >/dev/null 2>"$T/d3.err"
    q=$(sed -n 's/^if layers!=[0-9,]*: at 150: pause //p' "$LESSONS/depth.lesson")
    # the lines about both runs (no "a:" or "b:"): the notes and the question
    grep -qF -- "$q" "$T/d3.err" && ! grep "^normscope: " "$T/d3.err" | grep -v '^normscope: [ab]: \| steps in ' | grep -q "[0-9] layers" \
        && ok "-L 3: the depth-neutral question" || no "-L 3: $(grep '^normscope: ' "$T/d3.err")"
}

# The keys the texts tell a teacher to press do what the texts say. A key
# sends its settings row's command (settings.c; the key table's tests check
# the binding): f "precision next", i "fp32-norms toggle", P "norm next",
# and Tab makes the next ones act on run a alone (a script's "a:").
# key_run LESSON SCRIPT-LINE: one step of the lesson after the command
key_run() {
    printf 'at 0: %s\n' "$2" >"$T/k.script"
    "$BIN" --headless -q --lesson "$1" --steps 1 --no-pause --script "$T/k.script" --csv "$T/k.csv" 2>"$T/k.err" \
        || no "$1 with '$2': $(cat "$T/k.err")"
}
lesson_keys() {
    f=$LESSONS/fp16-layernorm.lesson
    to=$(sed -n 's/.*f (fp16 to \([a-z0-9]*\), both runs).*/\1/p' "$f")
    key_run fp16-layernorm "precision next"
    [ -n "$to" ] && [ "$(at "$T/k.csv" precision 1)" = "$to" ] && [ "$(at "$T/k.csv" b_precision 1)" = "$to" ] \
        && ok "fp16-layernorm: f goes from fp16 to $to in both runs, as its text says" \
        || no "fp16-layernorm: the text says f goes to '$to'; the run: $(at "$T/k.csv" precision 1), b $(at "$T/k.csv" b_precision 1)"
    key_run fp16-layernorm "fp32-norms toggle"
    grep -q "i (fp32 norms on, both runs)" "$f" && grep -q "turns fp32 norms on in run a and leaves them on in run b" "$MAN7" \
        && [ "$(at "$T/k.csv" fp32_norms 1)" = on ] && [ "$(at "$T/k.csv" b_fp32_norms 1)" = on ] \
        && ok "fp16-layernorm: i turns fp32 norms on in both runs, as the lesson and the page say" \
        || no "fp16-layernorm: i gave a $(at "$T/k.csv" fp32_norms 1), b $(at "$T/k.csv" b_fp32_norms 1); the texts' claim changed or is wrong"
    f=$LESSONS/deep-stable.lesson
    key_run deep-stable "a: norm next"
    grep -q "Press Tab (the keys act on run a alone), then P to move run a on to Pre-LN" "$f" \
        && [ "$(at "$T/k.csv" norm 1)" = pre ] && [ "$(at "$T/k.csv" b_norm 1)" = deepnorm ] \
        && ok "deep-stable: Tab then P moves run a alone, to Pre-LN" \
        || no "deep-stable: Tab, P gave a $(at "$T/k.csv" norm 1), b $(at "$T/k.csv" b_norm 1)"
    key_run deep-stable "norm next"
    grep -q "without Tab, P gives" "$f" && [ "$(at "$T/k.csv" norm 1)" = pre ] && [ "$(at "$T/k.csv" b_norm 1)" = pre ] \
        && ok "deep-stable: P alone gives both runs a's next placement" \
        || no "deep-stable: P alone gave a $(at "$T/k.csv" norm 1), b $(at "$T/k.csv" b_norm 1)"
}

# prof FILE PREFIX: at step 1 of a run ("" run a, b_ run b), its MLP
# gradient norm at the bottom and the top layer, layer 0's attention
# gradient and the mean of the other layers', and layer 0 and 1's norm
# input rms: "bot top attn0 attn_rest nin0 nin1"
prof() {
    awk -F, -v p="$2" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        NR == 2 { L = 0; while ((p "l" L "_grad_ffn") in c) L++
            for (l = 1; l < L; l++) r += $c[p "l" l "_grad_attn"]
            print $c[p "l0_grad_ffn"], $c[p "l" L - 1 "_grad_ffn"], $c[p "l0_grad_attn"], r / (L - 1),
                $c[p "l0_norm_in_rms"], $c[p "l1_norm_in_rms"] }' "$1"
}
# field N WORDS...: the Nth word
field() { n=$1; shift; eval "echo \${$n}"; }
# ratio A B: A / B
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { print a / b }'; }

# The lesson's claims are about the architecture, not one draw of the
# weights: each holds for every one of six seeds, the default (the one a
# class sees) and 1 to 5; one under the sanitizers, which check memory,
# not the claim. Step 1 only, no validation: 24 runs of one step.
lesson_gradient_profile() {
    seeds="1337 1 2 3 4 5"
    [ -n "${NS_SANITIZED:-}" ] && seeds=1337
    # a job per run: gp_<seed>_<L>.csv at -L 12, 3 and 24, gpn_<seed>.csv
    # with --init normal; the default seed's go to step 2 (the question at
    # step 1 is asked before step 2)
    cat >"$T/gp.sh" <<'JOB'
s=${1#*.}
n=1
[ "$s" = 1337 ] && n=2
case $1 in
n.*) f=gpn_$s; set -- --init normal ;;
*) f=gp_${s}_${1%.*}; set -- -L "${1%.*}" ;;
esac
"$BIN" $TH --headless --lesson gradient-profile "$@" --seed "$s" --steps $n --val-every 0 --csv "$T/$f.csv" 2>"$T/$f.err"
echo $? >"$T/$f.rc"
JOB
    # shellcheck disable=SC2046
    each_seed "$T/gp.sh" $(for k in 24 12 3 n; do for s in $seeds; do echo "$k.$s"; done; done)
    for f in $(for s in $seeds; do echo "gp_${s}_24 gp_${s}_12 gp_${s}_3 gpn_$s"; done); do
        [ "$(cat "$T/$f.rc")" = 0 ] || { no "gradient-profile $f: $(cat "$T/$f.err")"; return; }
    done
    # the question follows --init: the Xavier one is about the two profiles
    asks "$T/gp_1337_12.err" gradient-profile init=xavier 1
    asks "$T/gpn_1337.err" gradient-profile init!=xavier 1 init=xavier
    for s in $seeds; do
        a=$(prof "$T/gp_${s}_12.csv" ""); b=$(prof "$T/gp_${s}_12.csv" b_)
        a3=$(prof "$T/gp_${s}_3.csv" ""); b3=$(prof "$T/gp_${s}_3.csv" b_)
        a24=$(prof "$T/gp_${s}_24.csv" ""); b24=$(prof "$T/gp_${s}_24.csv" b_)
        n=$(prof "$T/gpn_$s.csv" "")
        echo "  seed $s: 12 layers a: $a | b: $b; top at 3/24 layers a: $(field 2 $a3)/$(field 2 $a24) b: $(field 2 $b3)/$(field 2 $b24)"
        r=$(ratio "$(field 2 $a)" "$(field 1 $a)")
        cmpv "seed $s, 12 layers: Post-LN's MLP profile level, top over bottom >= 0.8" "$r" ">=" 0.8
        cmpv "seed $s, 12 layers: Post-LN's MLP profile level, top over bottom <= 1.5" "$r" "<=" 1.5
        cmpv "seed $s, 12 layers: Pre-LN's falls, bottom over top" "$(ratio "$(field 1 $b)" "$(field 2 $b)")" ">=" 2.5
        # Xiong et al. 2020: Pre-LN's last layer as 1/sqrt(L), sqrt(24/3) = 2.83; Post-LN's independent of L
        r=$(ratio "$(field 2 $b3)" "$(field 2 $b24)")
        cmpv "seed $s: Pre-LN's top MLP gradient, 3 layers over 24 (1/sqrt(L): 2.83), >= 2.4" "$r" ">=" 2.4
        cmpv "seed $s: Pre-LN's top MLP gradient, 3 layers over 24, <= 4.2" "$r" "<=" 4.2
        cmpv "seed $s: Post-LN's top MLP gradient does not fall from 3 to 24 layers" "$(field 2 $a24)" ">=" "$(field 2 $a3)"
        cmpv "seed $s: at 24 layers Post-LN's top MLP gradient >= 2.5 times Pre-LN's" \
            "$(ratio "$(field 2 $a24)" "$(field 2 $b24)")" ">=" 2.5
        # layer 0's attention: its norm divides by the embedding's scale
        cmpv "seed $s: Post-LN layer 0's norm input rms (the embedding, std 0.02) < 0.1" "$(field 5 $a)" "<" 0.1
        cmpv "seed $s: Post-LN layer 1's norm input rms > 0.5" "$(field 6 $a)" ">" 0.5
        cmpv "seed $s: Post-LN layer 0's attention gradient >= 3 times the others' mean" \
            "$(ratio "$(field 3 $a)" "$(field 4 $a)")" ">=" 3
        # std 0.02: flat and much smaller
        r=$(ratio "$(field 2 $n)" "$(field 1 $n)")
        cmpv "seed $s, std 0.02: Post-LN's top over bottom flat, >= 0.95" "$r" ">=" 0.95
        cmpv "seed $s, std 0.02: Post-LN's top over bottom flat, <= 1.05" "$r" "<=" 1.05
        cmpv "seed $s, std 0.02: Post-LN's top MLP gradient at most a fifth of Xavier's" \
            "$(ratio "$(field 2 $a)" "$(field 2 $n)")" ">=" 5
    done
    # the cause of layer 0's: an embedding of rms about 1 makes it like the others
    "$BIN" --headless -q --lesson gradient-profile --init-std 0.7 --steps 1 --val-every 0 --csv "$T/gps.csv" 2>"$T/gps.err" ||
        { no "gradient-profile --init-std 0.7: $(cat "$T/gps.err")"; return; }
    a=$(prof "$T/gps.csv" "")
    cmpv "--init-std 0.7: Post-LN layer 0's attention gradient within 1.5 times the others' mean" \
        "$(ratio "$(field 3 $a)" "$(field 4 $a)")" "<=" 1.5
}

# lesson_flags NAME: a built-in lesson's flags lines, as a run without
# the lesson takes them (its run left alone: no script, no twin)
lesson_flags() { sed -n 's/^flags: //p' "$LESSONS/$1.lesson"; }

# each_seed SCRIPT SEEDS...: SCRIPT (sh, with $1 the seed, and BIN, T,
# FLAGS and TH in its environment) once per seed, two at a time with a
# thread each (one seed: all threads): the runs never depend on the thread
# count, and CI has two cores
each_seed() {
    f=$1
    shift
    th=
    [ $# -gt 1 ] && th="--threads 1"
    printf '%s\n' "$@" | BIN=$BIN T=$T FLAGS=${FLAGS:-} TH=$th xargs -P2 -n1 sh "$f"
}

# The claims hold over seeds 1-5 and the default (one seed under the
# sanitizers): each seed's lesson run goes to its divergence (f<seed>.csv,
# between step 53 and 417), then run a alone at the lesson's flags in bf16
# goes 10 steps past that step (fb<seed>.csv). lesson_claims.py holds the
# texts' numbers against these files.
lesson_fp16_layernorm() {
    seeds="1337 2 3 4 5 1" # the longest first, so both cores stay busy
    [ -n "${NS_SANITIZED:-}" ] && seeds=1337
    cat >"$T/f.sh" <<'JOB'
s=$1
"$BIN" $TH --headless --lesson fp16-layernorm --seed "$s" --csv "$T/f$s.csv" >/dev/null 2>"$T/f$s.err"
echo $? >"$T/f$s.rc"
n=$(tail -1 "$T/f$s.csv" | cut -d, -f1)
"$BIN" $TH --headless -q $FLAGS --precision bf16 --seed "$s" --steps $((n + 10)) --val-every 0 --csv "$T/fb$s.csv" 2>"$T/fb$s.err"
echo $? >"$T/fb$s.rc"
JOB
    FLAGS=$(lesson_flags fp16-layernorm)
    # shellcheck disable=SC2086
    each_seed "$T/f.sh" $seeds
    for s in $seeds; do
        rc=$(cat "$T/f$s.rc")
        [ "$rc" = 3 ] && ok "seed $s: fp16 with norms in fp16 diverges (exit 3)" || no "seed $s: fp16-layernorm exit $rc, want 3"
        named=$(grep -o "diverged at step [0-9]* (first non-finite: forward, [^)]*norm variance)" "$T/f$s.err" | head -1)
        [ -n "$named" ] && ok "seed $s: the report names a norm's variance: $named" || no "seed $s: first non-finite not a norm variance: $(tail -2 "$T/f$s.err")"
        top=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^l[0-9]+_resid_max$/) c = i } END { print $c }' "$T/f$s.csv")
        cmpv "seed $s: run a's top block residual max at the divergence passed 256" "$top" ">" 256
        bad=$(awk -F, -v c="$(col "$T/f$s.csv" b_loss)" 'NR > 1 && ($c == "nan" || $c == "inf") { n++ } END { print n + 0 }' "$T/f$s.csv")
        cmpv "seed $s: run b (fp32 norms) stays finite to that step" "$bad" "==" 0
        la=$(tail -1 "$T/f$s.csv" | cut -d, -f2)
        case $la in
        *nan* | *inf* | "") no "seed $s: the loss at the divergence is '$la', the page says finite" ;;
        *) ok "seed $s: the loss at the divergence is finite ($la): the inf is inside a norm" ;;
        esac
        n=$(tail -1 "$T/f$s.csv" | cut -d, -f1)
        rc=$(cat "$T/fb$s.rc")
        [ "$rc" = 0 ] && [ "$(last "$T/fb$s.csv" step)" = $((n + 10)) ] && ok "seed $s: bf16 with norms in bf16 trains 10 steps past $n" ||
            no "seed $s: bf16 run exit $rc, at step $(last "$T/fb$s.csv" step): $(tail -1 "$T/fb$s.err")"
        # the question in bf16: the top act max does grow
        r=$(ratio "$(at "$T/fb$s.csv" l5_act_max 40)" "$(at "$T/fb$s.csv" l5_act_max 1)")
        cmpv "seed $s: bf16: the top layer's act max by step 40, times its step-1 value" "$r" ">" 10
    done
    # the step normscope-lessons(7) quotes for the default seed: exact, the
    # same bits on every CPU
    quoted=$(sed -n 's/.*on the default seed at step \([0-9]*\) (the same on$/\1/p' "$MAN7")
    cmpv "the default seed's run a diverges at the step the lessons page quotes ($quoted)" "$(last "$T/f1337.csv" step)" "==" "${quoted:-0}"
    # the page's slide command is the default seed's run (it stops where
    # run a diverged, exit 3), and the loss it draws is finite to the end,
    # as its caption says
    slide=$(grep -o '^\$ normscope --headless --lesson fp16-layernorm [^|]*' "$MAN7" | head -1)
    [ "$slide" = '$ normscope --headless --lesson fp16-layernorm --csv fp16-layernorm.csv' ] \
        && ok "the page's slide command is the run checked here" || no "the page's fp16-layernorm slide command changed: '$slide'; check what it draws"
    # the lesson in bf16 to its question: the title and the question follow --precision
    "$BIN" --headless --lesson fp16-layernorm --precision bf16 --compare precision=bf16 --steps 41 --csv "$T/fbl.csv" >/dev/null 2>"$T/fbl.err" ||
        no "bf16 lesson run: $(tail -1 "$T/fbl.err")"
    qn=$(sed -n 's/^if precision=fp16: at \([0-9]*\): pause .*/\1/p' "$LESSONS/fp16-layernorm.lesson")
    asks "$T/f1337.err" fp16-layernorm precision=fp16 "$qn"
    asks "$T/fbl.err" fp16-layernorm precision!=fp16 "$qn" precision=fp16
    tf=$(sed -n 's/^if precision!=fp16: title: //p' "$LESSONS/fp16-layernorm.lesson")
    [ -n "$tf" ] && grep -qxF -- "lesson fp16-layernorm: $tf" "$T/fbl.err" && ! grep -q '^lesson.*overflows' "$T/fbl.err" &&
        grep -q '^lesson fp16-layernorm: fp16: .*overflows$' "$T/f1337.err" &&
        ok "the title follows --precision: '$tf'" || no "fp16-layernorm's title under bf16: $(grep '^lesson ' "$T/fbl.err")"
}

# Over seeds 1-5 and the default (one under the sanitizers), 70 steps:
# they hold run b's most underflows (near step 60) and the question at 50.
# lesson_claims.py holds the texts' numbers (per step, every step) against
# l<seed>.csv; here each seed's run finished.
lesson_loss_scaling() {
    seeds="1337 1 2 3 4 5"
    [ -n "${NS_SANITIZED:-}" ] && seeds=1337
    cat >"$T/l.sh" <<'JOB'
"$BIN" $TH --headless --lesson loss-scaling --seed "$1" --steps 70 --csv "$T/l$1.csv" 2>"$T/l$1.err"
echo $? >"$T/l$1.rc"
JOB
    # shellcheck disable=SC2086
    each_seed "$T/l.sh" $seeds
    for s in $seeds; do
        [ "$(cat "$T/l$s.rc")" = 0 ] && [ "$(last "$T/l$s.csv" step)" = 70 ] && ok "seed $s: loss-scaling ran 70 steps" ||
            no "seed $s: loss-scaling: $(tail -2 "$T/l$s.err")"
    done
}

# Over seeds 1-5 and the default (one under the sanitizers): Post-LN with
# gain 0 to step 200 (z<seed>.csv), and the text's other experiment, Pre-LN
# with gain 0, to step 30 (zp<seed>.csv; the default seed's to its question
# at 100). lesson_claims.py holds the texts' numbers against them.
lesson_gamma_zero() {
    seeds="1337 1 2 3 4 5"
    [ -n "${NS_SANITIZED:-}" ] && seeds=1337
    cat >"$T/z.sh" <<'JOB'
n=30
[ "$1" = 1337 ] && n=101
"$BIN" $TH --headless --lesson gamma-zero --norm pre --seed "$1" --steps $n --csv "$T/zp$1.csv" 2>"$T/zp$1.err"
echo $? >"$T/zp$1.rc"
"$BIN" $TH --headless --lesson gamma-zero --seed "$1" --steps 200 --csv "$T/z$1.csv" 2>"$T/z$1.err"
echo $? >"$T/z$1.rc"
JOB
    # shellcheck disable=SC2086
    each_seed "$T/z.sh" $seeds
    # the question follows --norm: under Pre-LN the residual path keeps the
    # layers alive, and the question asked there claims nothing else
    asks "$T/z1337.err" gamma-zero norm=post 100
    asks "$T/zp1337.err" gamma-zero norm!=post 100 norm=post
    for s in $seeds; do
        [ "$(cat "$T/z$s.rc")" = 0 ] && [ "$(cat "$T/zp$s.rc")" = 0 ] || { no "seed $s: gamma-zero: $(tail -1 "$T/z$s.err") $(tail -1 "$T/zp$s.err")"; continue; }
        dead=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^l[1-4]_(act_max|grad_attn|grad_ffn|grad_ln)$/) c[i] = 1; next }
            { for (i in c) if ($i != 0) n++ } END { print n + 0 }' "$T/z$s.csv")
        cmpv "seed $s, gain 0: layers 1-4's act max and gradients exactly 0 at every one of 200 steps (nonzero values)" "$dead" "==" 0
        alive=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^b_l[1-4]_act_max$/) c[i] = 1; next }
            NR == 2 { for (i in c) if ($i > 0.1) n++ } END { print n + 0 }' "$T/z$s.csv")
        cmpv "seed $s, gain 1: those layers are active from step 1" "$alive" "==" 4
    done
}

lesson_deep_stable() {
    "$BIN" --headless --lesson deep-stable --csv "$T/s.csv" 2>"$T/s.err" || { no "deep-stable: $(cat "$T/s.err")"; return; }
    "$BIN" --headless --lesson deep-stable --compare norm=rezero --csv "$T/sr.csv" 2>"$T/sr.err" || { no "deep-stable rezero: $(cat "$T/sr.err")"; return; }
    "$BIN" --headless --lesson deep-stable --compare norm=pre --csv "$T/sp.csv" 2>"$T/sp.err" || { no "deep-stable pre: $(cat "$T/sp.err")"; return; }
    # the question follows the twin: DeepNorm's is not asked of the others
    asks "$T/s.err" deep-stable b.norm=deepnorm 150
    asks "$T/sr.err" deep-stable b.norm!=deepnorm 150 b.norm=deepnorm
    asks "$T/sp.err" deep-stable b.norm!=deepnorm 150 b.norm=deepnorm
    # the mechanism, on five seeds (one under the sanitizers): how far the
    # first update moves the output; the texts' numbers are lesson_claims.py's
    # (oc<seed>.csv), here that DeepNorm's is the smaller by a factor of 3
    seeds="1 2 3 4 5"
    [ -n "$NS_SANITIZED" ] && seeds=1
    for s in $seeds; do
        "$BIN" --headless -q --lesson deep-stable --steps 1 --seed "$s" --csv "$T/oc$s.csv" 2>"$T/oc.err" ||
            { no "deep-stable seed $s: $(cat "$T/oc.err")"; return; }
        a=$(at "$T/oc$s.csv" out_change 1); b=$(at "$T/oc$s.csv" b_out_change 1)
        cmpv "seed $s, step 1: Post-LN's out_change over 3 times DeepNorm's" "$a" ">" "$(awk -v b="$b" 'BEGIN { print 3 * b }')"
    done
    post=$(last "$T/s.csv" val_loss)
    cmpv "24 layers: Post-LN stays on the plateau" "$post" ">" 2.9
    for f in s:DeepNorm sr:ReZero sp:Pre-LN; do
        v=$(last "$T/${f%%:*}.csv" b_val_loss)
        cmpv "24 layers: ${f#*:} trains, at least 0.3 below Post-LN" "$v" "<=" "$post" -0.3
    done
}

# Over seeds 1-5 and the default (one under the sanitizers): the lesson
# (r<seed>.csv) and run a left alone, its flags without the switch and
# without the twin (ra<seed>.csv), what the switch is judged against.
# lesson_claims.py holds the texts' numbers against them.
lesson_rmsnorm_swap() {
    seeds="1337 1 2 3 4 5"
    [ -n "${NS_SANITIZED:-}" ] && seeds=1337
    cat >"$T/r.sh" <<'JOB'
"$BIN" $TH --headless -q --lesson rmsnorm-swap --seed "$1" --csv "$T/r$1.csv" 2>"$T/r$1.err"
echo $? >"$T/r$1.rc"
"$BIN" $TH --headless -q $FLAGS --seed "$1" --csv "$T/ra$1.csv" 2>"$T/ra$1.err"
echo $? >"$T/ra$1.rc"
JOB
    FLAGS=$(lesson_flags rmsnorm-swap)
    # shellcheck disable=SC2086
    each_seed "$T/r.sh" $seeds
    for s in $seeds; do
        [ "$(cat "$T/r$s.rc")" = 0 ] && [ "$(cat "$T/ra$s.rc")" = 0 ] || { no "seed $s: rmsnorm-swap: $(tail -1 "$T/r$s.err") $(tail -1 "$T/ra$s.err")"; continue; }
        [ "$(at "$T/r$s.csv" norm_kind 300)" = layernorm ] && [ "$(at "$T/r$s.csv" norm_kind 301)" = rmsnorm ] &&
            [ "$(last "$T/ra$s.csv" norm_kind)" = layernorm ] && [ "$(last "$T/ra$s.csv" step)" = "$(last "$T/r$s.csv" step)" ] &&
            ok "seed $s: run a switched to RMSNorm at step 300; left alone, it stayed on LayerNorm to the same end" ||
            no "seed $s: norm_kind $(at "$T/r$s.csv" norm_kind 300) -> $(at "$T/r$s.csv" norm_kind 301), left alone $(last "$T/ra$s.csv" norm_kind)"
        # before the switch the two are the same run, bit for bit
        [ "$(at "$T/r$s.csv" loss 300)" = "$(at "$T/ra$s.csv" loss 300)" ] && ok "seed $s: to step 300 the lesson's run a is the run left alone" ||
            no "seed $s: at step 300 the lesson's run a has loss $(at "$T/r$s.csv" loss 300), left alone $(at "$T/ra$s.csv" loss 300)"
    done
}

# Attention logit growth, over seeds 1-5 and the lesson's own (one seed
# under the sanitizers): the files al<seed>.csv, whose numbers
# tests/lib/lesson_claims.py holds against every number the texts quote.
# Here: the lesson ran as written (run a turns QK-norm on at step 300,
# run b has it from the start), asked its questions, and run a's logits
# grew while b's did not, on every seed.
lesson_attn_logits() {
    seeds="1 2 3 4 5 1337"
    [ -n "${NS_SANITIZED:-}" ] && seeds=1337
    echo "$seeds" >"$T/al.seeds"
    cat >"$T/al.sh" <<'JOB'
"$BIN" $TH --headless --lesson attn-logits --seed "$1" --csv "$T/al$1.csv" 2>"$T/al$1.err" >/dev/null
echo $? >"$T/al$1.rc"
JOB
    # shellcheck disable=SC2086
    each_seed "$T/al.sh" $seeds
    for s in $seeds; do
        [ "$(cat "$T/al$s.rc")" = 0 ] || { no "attn-logits seed $s: $(tail -2 "$T/al$s.err")"; return; }
        [ "$(at "$T/al$s.csv" qk_norm 300)" = off ] && [ "$(at "$T/al$s.csv" qk_norm 301)" = on ] &&
            [ "$(at "$T/al$s.csv" b_qk_norm 1)" = on ] && ok "seed $s: run a turned QK-norm on at step 300, b had it from step 1" ||
            no "seed $s: qk_norm a $(at "$T/al$s.csv" qk_norm 300) -> $(at "$T/al$s.csv" qk_norm 301), b $(at "$T/al$s.csv" b_qk_norm 1)"
        # the largest attention logit over the layers, run a over run b, at step 200
        r=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i ~ /^l[0-9]+_attn_logit_max$/) a[i] = 1; if ($i ~ /^b_l[0-9]+_attn_logit_max$/) b[i] = 1 }; next }
            $1 == 200 { for (i in a) if ($i > x) x = $i; for (i in b) if ($i > y) y = $i; print x / y; exit }' "$T/al$s.csv")
        cmpv "seed $s: run a's largest attention logit at step 200, times run b's" "$r" ">=" 50
    done
    # run a left alone (the lesson's flags: no switch at 300, no twin), what
    # the switch is judged against (ala<seed>.csv, lesson_claims.py)
    cat >"$T/ala.sh" <<'JOB'
"$BIN" $TH --headless -q $FLAGS --seed "$1" --csv "$T/ala$1.csv" 2>"$T/ala$1.err"
echo $? >"$T/ala$1.rc"
JOB
    FLAGS=$(lesson_flags attn-logits)
    # shellcheck disable=SC2086
    each_seed "$T/ala.sh" $seeds
    for s in $seeds; do
        [ "$(cat "$T/ala$s.rc")" = 0 ] && [ "$(last "$T/ala$s.csv" qk_norm)" = off ] &&
            [ "$(at "$T/ala$s.csv" val_loss 300)" = "$(at "$T/al$s.csv" val_loss 300)" ] &&
            ok "seed $s: run a left alone kept QK-norm off, and to step 300 is the lesson's run a" ||
            no "seed $s: run a left alone: $(tail -1 "$T/ala$s.err"), qk_norm $(last "$T/ala$s.csv" qk_norm)"
    done
    for q in $(sed -n 's/^at \([0-9]*\): pause .*/\1/p' "$LESSONS/attn-logits.lesson"); do
        text=$(sed -n "s/^at $q: pause //p" "$LESSONS/attn-logits.lesson")
        grep -qF -- "$text" "$T/al1337.err" && ok "asks at step $q: $text" || no "attn-logits: not asked at step $q: '$text'"
    done
}

# A sweep lesson: the grid through --sweep's own path (DIR/sweep.spec, one
# results.csv row per cell, the table on stdout), its notes on the results
# checked against the grid, and the papers' claims read from the grid as
# tests/sh/sweep.sh reads them from a --sweep.
lesson_stability_map() {
    S=$T/map
    "$BIN" --headless --lesson stability-map --sweep-out "$S" >"$T/map.table" 2>"$T/map.err" \
        || { no "stability-map run: $(tail -3 "$T/map.err")"; return; }
    grep -q '^lesson stability-map: ' "$T/map.err" && ok "the lesson's notes on stderr" || no "no lesson notes"
    [ -f "$S/sweep.spec" ] && grep -qx 'spec: norm=post,pre layers=2,6,18 lr=1e-3,3e-3,1e-2' "$S/sweep.spec" \
        && ok "a sweep's directory (sweep.spec)" || no "no sweep.spec in $S"
    [ "$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["last_step"] == 300 && ($c["status"] == "ok" || $c["status"] == "stalled")' "$S/results.csv" | wc -l)" -eq 18 ] &&
        ok "18 runs of 300 steps, all ok or stalled" \
        || no "results: $(tail -n +2 "$S/results.csv" | wc -l) rows: $(cat "$S/results.csv")"
    head -1 "$T/map.table" | grep -Eq '^layers +lr +norm +runs +n +final +sd +ci95 +div +stall +expl +fail ' && [ "$(wc -l <"$T/map.table")" -eq 19 ] \
        && ok "the table: a header and 18 cells" || no "table: $(cat "$T/map.table")"
    g2=$(claim_gap "$S/results.csv" 2 1 1e-3)
    g18=$(claim_gap "$S/results.csv" 18 1 1e-3)
    d="Post-LN - Pre-LN gap at lr 1e-3 grows from 2 to 18 layers by > 0.2 nats ($g2 -> $g18)"
    awk -v a="$g2" -v b="$g18" 'BEGIN { exit !(a != "none" && b != "none" && b - a > 0.2) }' && ok "$d" || no "$d"
    bpost=$(claim_best "$S/results.csv" post 1 6)
    bpre=$(claim_best "$S/results.csv" pre 1 6)
    cmpv "6 layers: the largest lr that trains, Pre-LN's above Post-LN's" "$bpre" ">" "$bpost"
    cmpv "6 layers: Post-LN trains at some lr" "$bpost" ">" 0
    # every cell of normscope-lessons(7)'s table, to the hundredth it
    # quotes (the same bits on every CPU), S where the run stalled
    table=$(awk '/^\.It Sy layers Ta Sy post 1e-3/ { on = 1; next } on && /^\.El/ { exit }
        on && /^\.It / { sub(/^\.It /, ""); gsub(/ Ta /, "|"); print }' "$MAN7")
    bad=$(echo "$table" | awk -F'|' -v csv="$S/results.csv" '
        BEGIN { FS = "|"; split("post post post pre pre pre", nm, " "); split("1e-3 3e-3 1e-2 1e-3 3e-3 1e-2", lr, " ")
            while ((getline line < csv) > 0) { n = split(line, f, ","); if (!h) { for (i = 1; i <= n; i++) c[f[i]] = i; h = 1; continue }
                k = f[c["layers"]] SUBSEP f[c["norm"]] SUBSEP sprintf("%g", f[c["lr"]]); v[k] = f[c["val_loss"]]; st[k] = f[c["stalled"]] } }
        { for (j = 1; j <= 6; j++) { q = $(j + 1); s = q ~ / S$/; sub(/ S$/, "", q); k = $1 SUBSEP nm[j] SUBSEP sprintf("%g", lr[j]); cells++
              if (!(k in v) || sprintf("%.2f", v[k]) != q || (s != (st[k] == "1"))) { print $1 " " nm[j] " " lr[j] ": page " $(j + 1) ", run " v[k] (st[k] == "1" ? " S" : ""); badn++ } } }
        END { if (cells != 18) print "table has " cells " cells, not 18" }')
    [ -z "$bad" ] && ok "the page's table of 18 cells matches the run to the hundredth" || no "stability-map table: $bad"
    # its notes on the results, said once the 18 runs ended (with its own
    # flags: the "if own" lines), and true of this grid: the stalls where
    # the second says, Pre-LN nowhere, Post-LN ahead at 2 layers
    grep -q '^at the start: Before the grid fills' "$T/map.err" &&
        grep -q '^18 of 18 ended: Post-LN stalls at 6 layers with 1e-2 and at 18 layers at every rate' "$T/map.err" &&
        ! grep -q '^18 of 18 ended: Your flags' "$T/map.err" && ok "its own flags: its notes on the results" ||
        no "the notes said: $(grep -E '^(at the|18 of)' "$T/map.err")"
    stalls=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["stalled"] == 1 { printf "%s/%s/%g\n", $c["norm"], $c["layers"], $c["lr"] }' "$S/results.csv" | sort | tr '\n' ' ')
    [ "$stalls" = "post/18/0.001 post/18/0.003 post/18/0.01 post/6/0.01 " ] &&
        ok "the note's stalls: Post-LN at 6 layers and 1e-2, at 18 at every lr; Pre-LN none" || no "stalled: $stalls"
    ahead=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["layers"] == 2 { v[$c["norm"] "/" $c["lr"]] = $c["val_loss"]; lr[$c["lr"]] = 1 }
        END { for (r in lr) n += v["post/" r] < v["pre/" r]; print n }' "$S/results.csv")
    [ "$ahead" = 3 ] && ok "the note's 2 layers: Post-LN ahead at every lr" || no "2 layers: Post-LN ahead at $ahead of 3 lrs"
    # The grid is one seed's (the default); its 6-layer boundary, where a
    # seed could tip a cell, on seeds 1-5 too (one under the sanitizers):
    # Post-LN trains at 3e-3 and stalls at 1e-2 on each (10 runs of 6 layers)
    sd=1..5
    [ -n "${NS_SANITIZED:-}" ] && sd=1
    # shellcheck disable=SC2046
    "$BIN" --headless --sweep "norm=post layers=6 lr=3e-3,1e-2 seed=$sd" $(lesson_flags stability-map) \
        --sweep-out "$T/map6" >/dev/null 2>"$T/map6.err" || { no "stability-map at 6 layers, seeds $sd: $(tail -2 "$T/map6.err")"; return; }
    cells=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { printf "%s/%g/%s/%s\n", $c["seed"], $c["lr"], $c["status"], $c["stalled"] }' "$T/map6/results.csv" | LC_ALL=C sort | tr '\n' ' ')
    want=$(for s in $(seq ${sd%..*} ${sd#*..}); do printf '%s/0.003/ok/0 %s/0.01/stalled/1 ' "$s" "$s"; done)
    [ "$cells" = "$want" ] && ok "6 layers, seeds $sd: Post-LN trains at 3e-3 and stalls at 1e-2 on each" ||
        no "6 layers, seeds $sd: seed/lr/status/stalled: $cells"
    "$BIN" --plot "$S" --kind map --out "$T/map.svg" 2>"$T/map.err" && grep -c 'class="cell"' "$T/map.svg" | grep -qx 18 \
        && ok "its map: 18 cells" || no "--plot $S --kind map: $(cat "$T/map.err")"
}

# --- a teacher's own lesson file, and the checker ------------------------------

# bad_lesson DESC LINE WORDS TEXT: a file with TEXT is refused by
# --check-lesson, exit 2, with "FILE:LINE:" and WORDS in its one line
bad_lesson() {
    printf '%b' "$4" >"$T/bad.lesson"
    "$BIN" --check-lesson "$T/bad.lesson" >"$T/bad.out" 2>&1
    rc=$?
    [ $rc -eq 2 ] && [ "$(wc -l <"$T/bad.out")" -eq 1 ] && grep -qF -- "$T/bad.lesson:$2: " "$T/bad.out" &&
        grep -qF -- "$3" "$T/bad.out" && ok "checker: $1 ($(cat "$T/bad.out"))" ||
        no "checker: $1: exit $rc, want 2 and line $2 with '$3': $(cat "$T/bad.out")"
}
# the binary's absolute path: some checks run from other directories
ABS_BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
lesson_check() {
    # every built-in lesson through the checker, by name and as a file
    for l in $("$BIN" --lesson list | cut -d' ' -f1); do
        "$BIN" --check-lesson "$l" >"$T/c.out" 2>&1 && grep -q "^$l: ok: " "$T/c.out" &&
            "$BIN" --check-lesson "$LESSONS/$l.lesson" >"$T/c.out" 2>&1 &&
            grep -qF "$LESSONS/$l.lesson: ok: " "$T/c.out" && ok "checker: built-in $l passes, by name and as a file" ||
            no "checker: built-in $l: $(cat "$T/c.out")"
    done
    h='title: t\nflags: -L 2 -d 32 -H 2 --norm post\n'
    bad_lesson "a misspelt flag, on its own flags line" 3 "flags: unknown option '--warmpu'" "${h}flags: --warmpu 0\ncompare: norm=pre\n"
    bad_lesson "a value out of range" 2 "flags: --lr '20'" "title: t\nflags: --lr 20\n"
    bad_lesson "a misspelt compare value" 4 "compare: --norm 'pr'" "${h}# a comment\ncompare: norm=pr\n"
    bad_lesson "a compare the twin cannot differ in" 3 "compare: --compare 'steps=5'" "${h}compare: steps=5\n"
    bad_lesson "a compare that does not differ from run a" 3 "would not differ" "${h}compare: norm=post\n"
    bad_lesson "a script line under a condition that does not hold" 4 "unknown command 'frobnicate'" "${h}compare: norm=pre\nif layers=24: at 5: frobnicate\n"
    bad_lesson "a condition on a name that is no setting" 3 "'if layrs'" "${h}if layrs=3: text: x\n"
    bad_lesson "a condition's value out of its set" 3 "'if norm=postt'" "${h}if norm=postt: text: x\n"
    bad_lesson "reveal without a compare" 3 "no run b to hide" "${h}reveal: 10\n"
    bad_lesson "reveal's value" 4 "reveal 'soon'" "${h}compare: norm=pre\nreveal: soon\n"
    bad_lesson "an unknown key" 3 "unknown key 'titel'" "${h}titel: x\n"
    bad_lesson "a lesson that starts another" 3 "--lesson is not a lesson's flag" "${h}flags: --lesson warmup\n"
    bad_lesson "a sweep's value" 2 "sweep: --norm 'pr'" "title: t\nsweep: norm=post,pr\n"
    # a flag whose value was meant for the next line: the line left without one
    bad_lesson "a flag without its value, on the last flags line" 4 "--norm needs a value" \
        "${h}flags: --steps 5 --norm\nflags: pre --norm\n"
    bad_lesson "a second compare, not dropped" 4 "a second compare line (the first is line 3" \
        "${h}compare: norm=pre\ncompare: norm=sandwich\n"
    bad_lesson "a step past the lesson's --steps" 4 "at 900: past the lesson's last step (--steps 700)" \
        "${h}flags: --steps 700\nat 900: note never\n"
    bad_lesson "a pause with no question" 4 "a pause with no question" "${h}compare: norm=pre\nat 5: pause\n"
    # --lesson FILE refuses the same file before anything runs: no text, no CSV
    printf 'title: t\nflags: --steps 5\nflags: --warmpu 0\n' >"$T/bad.lesson"
    rm -f "$T/bad.csv"
    "$BIN" --headless --lesson "$T/bad.lesson" --csv "$T/bad.csv" >"$T/bad.out" 2>&1
    rc=$?
    [ $rc -eq 2 ] && [ ! -e "$T/bad.csv" ] && ! grep -q '^lesson ' "$T/bad.out" &&
        grep -qF "$T/bad.lesson:3: flags: unknown option '--warmpu'" "$T/bad.out" &&
        ok "--lesson FILE: a typo refused at load, before any text or row" || no "--lesson bad file: exit $rc: $(cat "$T/bad.out")"
    # a sweep lesson's refused flags are refused before its text prints
    "$BIN" --headless --lesson stability-map --csv "$T/map.csv" >"$T/c.out" 2>&1
    rc=$?
    [ $rc -eq 2 ] && [ "$(wc -l <"$T/c.out")" -eq 1 ] && grep -q '^normscope: --csv cannot be used with --lesson stability-map' "$T/c.out" &&
        [ ! -e "$T/map.csv" ] && ok "stability-map --csv: one line, exit 2, before the lesson's text" ||
        no "stability-map --csv: exit $rc: $(head -3 "$T/c.out")"
    # a bare name stays a built-in's, even with a file of that name here;
    # NAME.lesson here is a file
    cp "$LESSONS/gamma-zero.lesson" "$T/mine"
    cp "$LESSONS/gamma-zero.lesson" "$T/mine.lesson"
    (cd "$T" && "$ABS_BIN" --check-lesson mine) >"$T/c.out" 2>&1
    rc=$?
    [ $rc -eq 2 ] && grep -q "no such lesson" "$T/c.out" && ok "a bare name is a built-in's name" || no "bare name: exit $rc: $(cat "$T/c.out")"
    (cd "$T" && "$ABS_BIN" --check-lesson mine.lesson) >"$T/c.out" 2>&1 && grep -q '^mine.lesson: ok: ' "$T/c.out" &&
        ok "NAME.lesson is a file" || no "mine.lesson: $(cat "$T/c.out")"
    "$BIN" --check-lesson "$T/none/x.lesson" >"$T/c.out" 2>&1
    [ $? -eq 2 ] && grep -qF "normscope: --check-lesson $T/none/x.lesson: " "$T/c.out" &&
        ok "a missing file is named, with the flag typed, exit 2" || no "missing file: $(cat "$T/c.out")"
    "$BIN" --check-lesson no-such-name >"$T/c.out" 2>&1
    [ $? -eq 2 ] && grep -q "^normscope: --check-lesson 'no-such-name': no such lesson" "$T/c.out" &&
        ok "an unknown name, with the flag typed" || no "unknown name: $(cat "$T/c.out")"
}

# The complete example of normscope-lessons(7)'s WRITING A LESSON, taken
# from the page, saved where the page says (under a home of its own) and
# run with the page's own commands from another directory.
man_example() {
    awk '/^\.Ss A complete example/ { on = 1 } on && /^\.Bd -literal/ { p = 1; next } p && /^\.Ed/ { exit } p' "$MAN7"
}
lesson_own_file() {
    H=$T/home
    mkdir -p "$H/class" "$T/elsewhere"
    man_example >"$H/class/depth4.lesson"
    grep -q '^title: ' "$H/class/depth4.lesson" || { no "no example lesson in normscope-lessons(7)"; return; }
    chk=$(grep '^\$ normscope --check-lesson ~/class/depth4.lesson$' "$MAN7" | sed 's/^\$ //')
    hl=$(sed -n 's/.*\.Ql \(normscope --headless --lesson ~\/class\/depth4.lesson --csv depth4.csv\)$/\1/p' "$MAN7")
    [ -n "$chk" ] && [ -n "$hl" ] && ok "the page gives the commands" || { no "the page's commands changed: '$chk' '$hl'"; return; }
    # the page's command lines as written, ~ and all, with this binary
    chk=$(printf '%s' "$chk" | sed "s|^normscope |$ABS_BIN |")
    hl=$(printf '%s' "$hl" | sed "s|^normscope |$ABS_BIN |")
    (cd "$T/elsewhere" && HOME=$H sh -c "$chk") >"$T/own.check" 2>&1 &&
        grep -q "^$H/class/depth4.lesson: ok: " "$T/own.check" && ok "the example passes the checker: $(cat "$T/own.check")" ||
        no "the example: $(cat "$T/own.check")"
    # what the checker's line says of the file: its twin, its reveal, and
    # how many lines (not blank, not a comment) it read
    n=$(grep -cv '^[[:space:]]*\(#.*\)\{0,1\}$' "$H/class/depth4.lesson")
    cmp=$(sed -n 's/^compare: //p' "$H/class/depth4.lesson")
    rv=$(sed -n 's/^reveal: //p' "$H/class/depth4.lesson")
    grep -qF "(two runs, b: $cmp; run b hidden until step $rv; $n lines checked)" "$T/own.check" &&
        ok "the checker's line: b: $cmp, hidden until $rv, $n lines" || no "the checker's line: $(cat "$T/own.check"), want $cmp $rv $n"
    (cd "$T/elsewhere" && HOME=$H sh -c "$hl") >/dev/null 2>"$T/own.err" ||
        { no "the example's headless run: $(cat "$T/own.err")"; return; }
    cp "$T/elsewhere/depth4.csv" "$T/own.csv"
    title=$(sed -n 's/^title: //p' "$H/class/depth4.lesson" | head -1)
    note=$(sed -n 's/^at 0: note //p' "$H/class/depth4.lesson")
    q=$(sed -n 's/^at 50: pause //p' "$H/class/depth4.lesson")
    grep -qxF "lesson depth4: $title" "$T/own.err" && grep -qF "Run b stays hidden until step 50" "$T/own.err" &&
        grep -qF "normscope: $note" "$T/own.err" && grep -qF "normscope: $q" "$T/own.err" &&
        ok "headless: the title, the text, the note and the question" || no "the example's output: $(cat "$T/own.err")"
    [ "$(last "$T/own.csv" step)" = 100 ] && [ -n "$(col "$T/own.csv" b_val_loss)" ] &&
        ok "100 steps, both runs' columns" || no "own.csv: $(head -1 "$T/own.csv" | cut -c1-80)"
    a=$(at "$T/own.csv" val_loss 100); b=$(at "$T/own.csv" b_val_loss 100)
    cmpv "4 layers at step 100: Post-LN ahead of Pre-LN, as the page says" "$a" "<" "$b"
}

# The built-in lessons' table follows the files: a lesson deleted from
# assets/lessons/ leaves the table at the next make (a scratch copy of the
# rule's inputs), and an unchanged list remakes nothing.
lesson_make_deleted() {
    S=$T/tree
    R=$(dirname "$0")/../..
    mkdir -p "$S/src" "$S/assets/lessons"
    cp "$R/Makefile" "$S/" && cp -r "$R/src/tools" "$S/src/" && cp "$R"/assets/lessons/*.lesson "$S/assets/lessons/" ||
        { no "make: could not copy the tree"; return; }
    mk() { (cd "$S" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s build/lessons.c) >>"$T/make.out" 2>&1; }
    mk || { no "make build/lessons.c: $(cat "$T/make.out")"; return; }
    n=$(grep -c '^    {"' "$S/build/lessons.c")
    grep -q '^    {"depth",' "$S/build/lessons.c" && ok "the table holds depth ($n lessons)" || no "no depth in the table"
    rm "$S/assets/lessons/depth.lesson"
    mk
    grep -q '^    {"depth",' "$S/build/lessons.c" && no "make: the deleted lesson is still in the table" ||
        ok "make: a deleted lesson leaves the table"
    [ "$(grep -c '^    {"' "$S/build/lessons.c")" -eq $((n - 1)) ] && ok "make: $((n - 1)) lessons left" || no "make: count after delete"
    touch "$T/make.mark"
    mk
    [ "$S/build/lessons.c" -nt "$T/make.mark" ] && no "make: nothing changed, yet the table was remade" ||
        ok "make: an unchanged list remakes nothing"
}

run warmup lesson_warmup
run depth lesson_depth
run keys lesson_keys
run gradient-profile lesson_gradient_profile
run fp16-layernorm lesson_fp16_layernorm
run loss-scaling lesson_loss_scaling
run gamma-zero lesson_gamma_zero
run deep-stable lesson_deep_stable
run rmsnorm-swap lesson_rmsnorm_swap
run attn-logits lesson_attn_logits
run stability-map lesson_stability_map
run check lesson_check
run own-file lesson_own_file
run make lesson_make_deleted
# every lesson compiled in has a check here
for l in $("$BIN" --lesson list | cut -d' ' -f1); do
    grep -q "^run $l " "$0" && ok "lesson $l has a check" || no "lesson $l has no check in tests/sh/lessons.sh"
done

# the numbers the texts quote, read from the texts, against these runs
"$BIN" --lesson list >"$T/list.txt"
python3 "$(dirname "$0")/../lib/lesson_claims.py" "$T" $ONLY >"$T/claims.out" 2>&1
sed -n '/passed, .* failed$/!p' "$T/claims.out"
n=$(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$T/claims.out")
[ -n "$n" ] || { no "lesson_claims.py did not finish: $(tail -3 "$T/claims.out")"; n="0 0"; }
pass=$((pass + ${n% *}))
fail=$((fail + ${n#* }))

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
