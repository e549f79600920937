#!/bin/sh
# tour.sh - every lesson as normscope-lessons(7) tells a teacher to run it:
# the live view in tmux (as tui_lesson.sh), the keys the tour says to press
# at the steps it names, and the screen checked for what it says the class
# will see: the state, which run is ahead, the numbers it quotes, the event
# text, the question in the lesson panel. Each lesson is followed up to its
# key moment only (its first question, or the moment after it that the
# tour is about), which its own pause stops the run at; the quoted numbers
# are checked with the margin the tour's "about" allows.
#
# A ninth lesson (a sweep's stability map) has no live view to tour: if its
# file is there it is skipped, as the tour's THE STABILITY MAP section is.
#
# Usage: NS_BIN=./normscope sh tests/sh/tour.sh   (TOUR_ONLY="warmup depth": some)
# Prints "N passed, N failed"; exits non-zero on any failure.
# shellcheck source-path=SCRIPTDIR source=../lib/tmux_lib.sh
. "$(dirname "$0")/../lib/tmux_lib.sh"
tmux_init tour.sh tour
watchdog "${NS_TOUR_LIMIT:-1500}"
need_tmux_bin
sanitizer_env
W=tour
run() {
    rm -f "$T/err"
    key "clear; $* 2>$T/err; echo NS_\"\"EXIT=\$?" Enter
}
new_session

# --- reading the screen ------------------------------------------------------
row() { screen | sed -n "${1}p"; }
# the validation loss on status row N (1: run a, 2: run b)
val_of() { row "$1" | sed -n 's/.* val \([0-9][0-9.]*\).*/\1/p'; }
loss_of() { row "$1" | sed -n 's/.* loss \([0-9][0-9.]*\).*/\1/p'; }
# box NAME: run a's and run b's numbers on that line of the layer box
box() { screen | sed -n "s/.*| $1  *\([^ ]*\)  *\([^ ]*\) *|.*/\1 \2/p" | head -1; }
# calc EXPR: awk's verdict on a comparison of numbers, 1 or 0
calc() { awk "BEGIN { print ($1) ? 1 : 0 }"; }
# near X WANT REL: X within REL (a fraction) of WANT
near() { calc "$1 > 0 && $1 >= $2 * (1 - $3) && $1 <= $2 * (1 + $3)"; }
claim() { # claim WHAT VERDICT
    if [ "$2" = 1 ]; then ok; else no "$CUR: $1"; fi
}
# the lesson's question in the panel ("step N: ..."), or the lesson ends here
at_question() {
    if wait_for "step $1: $2" "$3"; then ok; else
        no "$CUR: no question 'step $1: $2' on the screen in $3 s: $(row 1) $(cat "$T/err" 2>/dev/null)"
        return 1
    fi
    claim "not paused at its question: $(row 1)" "$(row 1 | grep -c PAUSED)"
}
# events: the lesson panel hidden, scroll the log back until TEXT shows
in_log() {
    # L toggles the lesson panel: press it only while the panel is up
    if screen | grep -qF 'L hides'; then
        key L
        wait_gone 'L hides' 5
    fi
    i=0
    while [ "$i" -lt 30 ] && ! screen | grep -qF -- "$1"; do key '['; sleep 0.1; i=$((i + 1)); done
    screen | grep -qF -- "$1" && ok || no "$CUR: '$1' not in the event log: $(screen | grep -A8 -- '-- events')"
    key '}' '}' '}' '}' '}' '}'
}
# plateau WANT BY NAME: run a (Post-LN) on the plateau at the validation
# loss the tour quotes (within 3%), run b (NAME) ahead of it by BY nats
plateau() {
    va=$(val_of 1) vb=$(val_of 2)
    claim "Post-LN's validation loss is $va, the tour says $1" "$(near "$va" "$1" 0.03)"
    claim "$3 ($vb) is not ahead of Post-LN ($va) by $2" "$(calc "$vb < $va - $2")"
}
start() {
    CUR=$1
    shift
    run "LC_ALL=C $BIN --lesson $CUR $*"
}
finish_lesson() {
    key q
    check_exited "$CUR q" 0
}
want() { [ -z "${TOUR_ONLY:-}" ] || case " $TOUR_ONLY " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# --- 1. gradient-profile ----------------------------------------------------
# "The lesson pauses itself after step 1": b's MLP gradients fall 3.2 to
# 4.9 times from the bottom to the top, a's are level (top over bottom
# 0.87 to 1.42 by seed; lessons.sh checks the seeds); n one more step, m
# the heatmap, space resumes.
tour_gradient_profile() {
    start gradient-profile
    at_question 1 "Step 1, nothing learned yet: why does b's gradient shrink" 120 || { finish_lesson; return; }
    at=$(box 'grad mlp' | cut -d' ' -f1) bt=$(box 'grad mlp' | cut -d' ' -f2)
    key End
    wait_for 'layer 0 of 12' 10
    a0=$(box 'grad mlp' | cut -d' ' -f1) b0=$(box 'grad mlp' | cut -d' ' -f2)
    # the box shows two digits (2.5e+00): its ratios within their rounding
    claim "run b's MLP gradient falls 3.2 to 4.9 times from $b0 to $bt" "$(calc "$b0 / $bt >= 3.0 && $b0 / $bt <= 5.1")"
    claim "run a's is level from $a0 to $at (0.87 to 1.42 times)" "$(calc "$at / $a0 >= 0.83 && $at / $a0 <= 1.5")"
    key n
    wait_counter -eq 2 30 && ok || no "$CUR: n did not take one more step: $(row 1)"
    key m
    wait_for 'gradient norm per layer over time' 10 && ok || no "$CUR: m did not show the heatmap"
    key Space
    wait_for RUNNING 20 && ok || no "$CUR: space did not resume"
    finish_lesson
}

# --- 2. warmup ----------------------------------------------------------------
# By step 150 Post-LN sits at 3.09 nats of validation loss while
# Pre-LN goes on down; at 200 the script rewinds both runs to step 0 and
# pauses with warmup on (the status line's warmup=100; the chart keeps the
# first 200 steps, dotted); space replays, its first step marked
# a:rewind,warmup on the chart; the event log has the notes.
tour_warmup() {
    start warmup
    at_question 150 'Post-LN sits near 3.1 nats' 300 || { finish_lesson; return; }
    plateau 3.09 0.2 Pre-LN
    key Space
    # the question is asked where the run is: step 0, after the rewind
    at_question 0 'Both runs went back to step 0' 120 || { finish_lesson; return; }
    row 1 | grep -qF 'step 0/700' && ok || no "$CUR: not back at step 0: $(row 1)"
    row 1 | grep -qF '! stall' && no "$CUR: the replay is marked stalled before its first step" || ok
    screen | grep -qF 'before rewind' && ok || no "$CUR: the chart lost the curve before the rewind"
    screen | grep -qF 'steps 1-200' && ok || no "$CUR: the chart does not reach step 200 after the rewind"
    row 1 | grep -qF 'warmup' || screen | grep -qF 'warmup=100' && ok || no "$CUR: warmup on is not on the screen: $(screen | head -n 4)"
    in_log 'rewind to step 0 and replay both runs with warmup on'
    in_log 'warmup on: LR ramps'
    key Space
    wait_for 'rewind,warmup' 60 && ok || no "$CUR: after space, no marker at the replay's first step: $(screen | sed -n 18,24p)"
    finish_lesson
}

# --- 3. depth -----------------------------------------------------------------
# 24 layers: Post-LN stays on the plateau at 3.09 nats, Pre-LN trains; all
# 24 layers are on screen (the vanishing bottom is the lesson's point), and
# End selects layer 0.
tour_depth() {
    start depth
    at_question 150 '24 layers: Post-LN is stuck on the plateau' 300 || { finish_lesson; return; }
    plateau 3.09 0.2 Pre-LN
    screen | grep -Eq '^  0( |$)' && ok || no "$CUR: layer 0 is not on screen at the question"
    key End
    wait_for 'layer 0 of 24' 10
    screen | grep -Eq '^> 0( |$)' && ok || no "$CUR: End did not scroll the panel to layer 0"
    finish_lesson
}

# --- 4. deep-stable -------------------------------------------------------------
# Post-LN on the plateau at 3.09; DeepNorm below it (2.38 at the end).
tour_deep_stable() {
    start deep-stable
    at_question 150 'Same placement as Post-LN, yet DeepNorm trains' 300 || { finish_lesson; return; }
    plateau 3.09 0.3 DeepNorm
    row 4 | grep -qF 'b: norm=deepnorm' && ok || no "$CUR: run b is not DeepNorm: $(row 4)"
    finish_lesson
}

# --- 5. gamma-zero ----------------------------------------------------------------
# Run a's blocks between the first and the last read exactly 0 in the act
# max column, while run b trains.
tour_gamma_zero() {
    start gamma-zero
    at_question 100 'The middle layers of run a read exactly 0' 240 || { finish_lesson; return; }
    zero=0 live=0
    for lyr in 1 2 3 4; do
        line=$(screen | grep -E "^[ >] $lyr " | head -1)
        a=$(printf '%s' "$line" | cut -c1-62 | awk '{ print $(NF-2) }')
        b=$(printf '%s' "$line" | cut -c63- | awk '{ print $(NF-1) }')
        [ "$a" = 0 ] && zero=$((zero + 1))
        [ "$(calc "${b:-0} > 0.5")" = 1 ] && live=$((live + 1))
    done
    claim "run a's middle layers do not read exactly 0 ($zero of 4 do)" "$(calc "$zero == 4")"
    claim "run b's middle layers are not active ($live of 4 are)" "$(calc "$live == 4")"
    va=$(val_of 1) vb=$(val_of 2)
    claim "run b ($vb) does not train ahead of run a ($va)" "$(calc "$vb < $va - 1")"
    finish_lesson
}

# --- 6. rmsnorm-swap ----------------------------------------------------------------
# At 300 run a switches to RMSNorm (the vote); the marker at 300, and run
# a's loss stays within a few hundredths of its twin's.
tour_rmsnorm_swap() {
    start rmsnorm-swap
    at_question 300 'Run a switches to RMSNorm now' 240 || { finish_lesson; return; }
    row 3 | grep -qF '[k] rmsnorm' && ok || no "$CUR: run a is not on RMSNorm: $(row 3)"
    in_log 'norm kind layernorm -> rmsnorm'
    key n
    wait_counter -eq 301 30 && ok || no "$CUR: n did not take step 301"
    screen | grep -qF 'a:rmsnorm' && ok || no "$CUR: no marker for the switch on the chart"
    # run b was on RMSNorm already: the switch did not change it, no marker
    screen | grep -qF 'b:rmsnorm' && no "$CUR: a marker on run b, which did not change" || ok
    la=$(loss_of 1) lb=$(loss_of 2)
    claim "run a's loss ($la) is not within a few hundredths of b's ($lb)" \
        "$(calc "$la - $lb < 0.05 && $lb - $la < 0.05")"
    finish_lesson
}

# --- 7. loss-scaling --------------------------------------------------------------
# The underflow count in the layer box: millions in run a, thousands to
# tens of thousands in b; the scaling in force on the status line's second
# row; the curves close.
tour_loss_scaling() {
    start loss-scaling
    at_question 50 'Select a layer (up, down)' 240 || { finish_lesson; return; }
    key Down
    wait_for 'layer 4 of 6' 10 && ok || no "$CUR: down did not select layer 4"
    ua=$(box underflows | cut -d' ' -f1) ub=$(box underflows | cut -d' ' -f2)
    claim "run a's underflows ($ua) are not about a million a step" "$(calc "$ua >= 500000")"
    claim "run b's underflows ($ub) are not thousands to tens of thousands" "$(calc "$ub > 0 && $ub < 100000")"
    row 3 | grep -qF '[l] scale off' && ok || no "$CUR: the scaling is not on the second row: $(row 3)"
    va=$(val_of 1) vb=$(val_of 2)
    claim "the curves are not close: $va and $vb" "$(calc "$va - $vb < 0.05 && $vb - $va < 0.05")"
    finish_lesson
}

# --- 8. fp16-layernorm ------------------------------------------------------------
# By step 40 the top layer's act max is past 150; at step 417 (the default
# seed) run a diverges: paused, 'first non-finite: forward, final norm
# variance'; run b trains on. The repair: f (fp32, both runs), b, space: it
# trains past it.
tour_fp16_layernorm() {
    start fp16-layernorm
    at_question 40 "The top layer's act max is past 150" 400 || { finish_lesson; return; }
    # the layer box of the selected layer, the top one (its row's bar puts
    # the 256 mark among the row's fields)
    screen | grep -qF 'layer 5 of 6' && ok || no "$CUR: the top layer is not the selected one"
    am=$(box 'act max' | cut -d' ' -f1)
    claim "the top layer's act max (${am:-none}) is not past 150, under 256" "$(calc "${am:-0} > 150 && ${am:-0} < 256")"
    key Space
    wait_for DIVERGED 400 && ok || no "$CUR: run a did not diverge: $(row 1)"
    row 1 | grep -qF 'first non-finite: forward, final norm variance' && ok ||
        no "$CUR: the status line does not name the final norm's variance: $(row 1)"
    row 2 | grep -qF DIVERGED && no "$CUR: run b diverged too: $(row 2)" || ok
    # at 80x24, as the page says: the status line ends at "final norm", D
    # says the variance
    $TM resize-window -t "$W" -x 80 -y 24 2>/dev/null
    wait_for 'first non-finite: forward, final norm' 10 && ok || no "$CUR: 80x24: the status line: $(row 1)"
    key D
    wait_for 'forward, final norm variance' 10 && ok || no "$CUR: 80x24: D does not name the final norm's variance"
    key Escape
    $TM resize-window -t "$W" -x 120 -y 40 2>/dev/null
    wait_for 'first non-finite: forward, final norm variance' 10 && ok || no "$CUR: back at 120x40: $(row 1)"
    at=$(counter)
    key f
    wait_for '[f] fp32' 10 && ok || no "$CUR: f did not go to fp32: $(row 3)"
    key b
    wait_counter -lt "$at" 20 && ok || no "$CUR: b did not rewind"
    key Space
    wait_counter -gt $((at + 20)) 240 && ok || no "$CUR: the repaired run did not train past $at: $(row 1)"
    row 1 | grep -qF DIVERGED && no "$CUR: diverged again after the repair: $(row 1)" || ok
    finish_lesson
}

# --- 10. attn-logits ---------------------------------------------------------------
# By step 100 run a's largest attention logit is past 200 and the status
# line names the diagnosis (what 80x24 shows); the layer box gives the
# logit (the top layer, selected) and, at the bottom layer, the entropy
# under 0.2 nats, run b's above 1; at step 300 its logits are past 2,000.
tour_attn_logits() {
    start attn-logits
    at_question 100 "Run a's attention logits passed 200" 240 || { finish_lesson; return; }
    row 1 | grep -qF '! attn-logits' && ok || no "$CUR: the status line does not name attn-logits: $(row 1)"
    la=$(box 'att logit' | cut -d' ' -f1) lb=$(box 'att logit' | cut -d' ' -f2)
    claim "the top layer's att logit is $la in run a, $lb in b: not past 200 and under 20" "$(calc "$la > 200 && $lb < 20")"
    key End
    wait_for 'layer 0 of 2' 10
    ea=$(box 'att entrpy' | cut -d' ' -f1) eb=$(box 'att entrpy' | cut -d' ' -f2)
    claim "layer 0's att entrpy is $ea in run a, $eb in b: not under 0.2 and above 1" "$(calc "$ea < 0.2 && $eb > 1")"
    # the text's M: the rows show each layer's logit and entropy
    key M
    wait_for 'logit  entrpy' 10 && ok || no "$CUR: M does not put the logits in the rows: $(screen | sed -n 4,6p)"
    key M
    key Space
    at_question 300 "Run a's logits passed 2,000" 240 || { finish_lesson; return; }
    la=$(box 'att logit' | cut -d' ' -f1)
    claim "layer 0's att logit in run a is $la at step 300, not past 2,000" "$(calc "$la > 2000")"
    in_log 'run a turns QK-norm on now'
    finish_lesson
}

for l in gradient-profile warmup depth deep-stable gamma-zero rmsnorm-swap loss-scaling fp16-layernorm attn-logits; do
    want "$l" || continue
    t0=$(date +%s)
    "tour_$(printf '%s' "$l" | tr - _)"
    echo "$l: $(($(date +%s) - t0)) s" >&2
done
for f in "$(dirname "$0")"/../../assets/lessons/*.lesson; do
    case $(basename "$f" .lesson) in
    gradient-profile | warmup | depth | deep-stable | gamma-zero | rmsnorm-swap | loss-scaling | fp16-layernorm | attn-logits) ;;
    stability-map) echo "$ME: stability-map: a sweep, not toured live (skipped)" >&2 ;;
    *) no "lesson $(basename "$f" .lesson) has no tour here" ;;
    esac
done

check_reports 60

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
