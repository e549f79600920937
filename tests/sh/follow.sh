#!/bin/sh
# follow.sh - `normscope --follow` from the outside: the real binary in a
# tmux pane follows a stream that a shell loop appends to with printf (no
# torch needed). Checks that it waits for the file, shows the layers, the
# loss, validation and setting events, the non-finite step with its
# module; that space, + and C append "pause", "lr x2" and "checkpoint" to
# the control file; that a model key is refused; that a truncated file is
# said and survived, and 100 lines at once are read; then the headless
# summary and its exit status (3 on a diverged stream, 2 on a missing
# file or one that is not a stream, 0 / 5 / 6 by the end line), normscope's own --jsonl output replayed (Left, Home) and converted
# back to the same CSV, a 96-layer stream whose panel scrolls, and the
# lab's rules on a followed run: a blow-up at lr 1.0 said with its cause
# and exit 3, a healthy run with none, the D panel and its a key at 80x24
# and 100x30.
#
# Usage: NS_BIN=./normscope sh tests/sh/follow.sh
# Prints "N passed, N failed"; exits non-zero on any failure. Every wait
# has a timeout; the tmux server is killed on exit.
# shellcheck source-path=SCRIPTDIR source=../lib/tmux_lib.sh
. "$(dirname "$0")/../lib/tmux_lib.sh"
tmux_init follow.sh follow
watchdog "${NS_FOLLOW_LIMIT:-300}"
need_tmux_bin
sanitizer_env
W=follow

run() {
    rm -f "$T/err"
    key "clear; $* 2>$T/err; echo NS_\"\"EXIT=\$?" Enter
}

# a step line of a 4-block stream: step, loss, val_loss (or null)
row() {
    printf '{"step":%d,"loss":%s,"val_loss":%s,"lr":0.001,"grad_norm":1.5,"l0_grad_attn":0.01,"l0_grad_ffn":0.02,"l0_grad_ln":0,"l1_grad_attn":0.1,"l1_grad_ffn":0.2,"l1_grad_ln":0,"l2_grad_attn":0.3,"l2_grad_ffn":0.4,"l2_grad_ln":0,"l3_grad_attn":0.5,"l3_grad_ffn":0.6,"l3_grad_ln":0.001,"l3_act_max":42.5,"future_field":{"x":[1]}}\n' "$1" "$2" "$3"
}
header() {
    printf '{"format":"normscope-stream","version":1,"source":"pytorch","model":"TinyGPT","blocks":["h.0","h.1","h.2","h.3"],"n_layer":4,"world_size":1,"dtype":"float32","every":1}\n'
}

new_session
S=$T/run.nsj

# --- waits for the file, then follows what a loop appends -------------------
run "LC_ALL=C.UTF-8 $BIN --follow $S"
wait_for "waiting for $S to appear" 20 && ok || no "no 'waiting' line: $(screen | tail -3)"
(
    header
    i=1
    while [ "$i" -le 40 ]; do
        v=null
        [ "$i" -eq 20 ] && v=2.25
        row "$i" "3.$((50 - i))" "$v"
        [ "$i" -eq 25 ] && printf '{"event":"setting","step":25,"text":"lr x2"}\n'
        [ "$i" -eq 30 ] && printf 'this is not json\n'
        sleep 0.05
        i=$((i + 1))
    done
) >>"$S" &
loop=$!
wait_for 'step 40' 30 && ok || no "the steps did not reach 40: $(screen | head -1)"
wait "$loop"
screen | grep -q 'TinyGPT L=4' && ok || no "the header's model is not shown: $(screen | sed -n 2p)"
screen | grep -q 'layer 3 = h.3' && ok || no "the selected layer's module is not named"
screen | grep -q '^> 3' && ok || no "layer 3 (the top) is not in the panel"
screen | grep -q '^  0 ' && ok || no "layer 0 is not in the panel"
screen | grep -q 'loss 3.1000' && ok || no "the loss of step 40 is not shown: $(screen | head -1)"
screen | grep -q 'validation loss 2.2500' && ok || no "no validation event"
screen | grep -q 'lr x2' && ok || no "no setting event"
screen | grep -q 'line 33: malformed' && ok || no "the malformed line is not named: $(screen | tail -8)"

# --- controls go to the control file ------------------------------------------
key Space
key +
key C
i=0
while [ "$i" -lt 50 ] && [ "$(cat "$S.ctl" 2>/dev/null | wc -l)" != 3 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat "$S.ctl" 2>/dev/null)" = "1 pause
2 lr x2
3 checkpoint" ] && ok || no "control file: $(cat "$S.ctl" 2>/dev/null)"
wait_for 'sent: checkpoint' 10 && ok || no "no 'sent' event"
printf '{"event":"paused","step":40,"text":"at the step boundary"}\n' >>"$S"
wait_for 'PAUSED' 10 && ok || no "the stream's paused event did not show"
key Space
i=0
while [ "$i" -lt 50 ] && ! grep -q '^4 resume$' "$S.ctl"; do sleep 0.1; i=$((i + 1)); done
grep -q '^4 resume$' "$S.ctl" && ok || no "space after paused did not send resume: $(cat "$S.ctl")"
key p
wait_for 'not available while following' 10 && ok || no "p was not refused"
grep -q norm "$S.ctl" && no "p wrote to the control file" || ok

# --- a non-finite step names its module ------------------------------------------
printf '{"step":41,"loss":null,"loss_nonfinite":"nan","first_nonfinite":"h.2.mlp.c_fc, forward"}\n' >>"$S"
wait_for 'first non-finite: h.2.mlp.c_fc, forward' 10 && ok || no "no first non-finite: $(screen | head -1)"
screen | grep -q DIVERGED && ok || no "no DIVERGED state"

# --- truncated, then 100 lines at once ---------------------------------------------
: >"$S"
wait_for 'was truncated' 10 && ok || no "the truncation was not said: $(screen | tail -6)"
{
    header
    i=1
    while [ "$i" -le 100 ]; do row "$i" "9.$((100 + i))" null; i=$((i + 1)); done
} >"$T/hundred"
cat "$T/hundred" >>"$S"
wait_for 'step 100' 20 && ok || no "100 lines at once: $(screen | head -1)"
screen | grep -q 'loss 9.2000' && ok || no "the new run's loss is not shown: $(screen | head -1)"
key Left
wait_for 'replay step 99' 10 && ok || no "Left: no replay: $(screen | head -1)"
key Home
wait_for 'replay step 1 ' 10 && ok || no "Home: not the first step: $(screen | head -1)"
key End
wait_for 'step 100' 10 && ok || no "End: not the newest step"
key q
check_exited q 0
check_modes q

# --- headless: the summary and the exit status -----------------------------------------
out=$("$BIN" --follow "$S" --headless 2>&1)
echo "$out" | grep -q '^steps: 100 (steps 1..100)' && ok || no "summary: $out"
echo "$out" | grep -q 'smallest layer 0 .* largest layer 3' && ok || no "summary layers: $out"
printf '{"step":101,"loss":null,"first_nonfinite":"h.3.attn.c_attn, backward"}\n' >>"$S"
out=$("$BIN" --follow "$S" --headless 2>&1)
code=$?
[ "$code" = 3 ] && ok || no "a diverged stream: exit $code, not 3"
echo "$out" | grep -q 'first non-finite: step 101, h.3.attn.c_attn, backward' && ok ||
    no "summary lacks the module: $out"
"$BIN" --follow "$T/missing.nsj" --headless >/dev/null 2>"$T/e"
code=$?
[ "$code" = 2 ] && grep -q 'missing.nsj' "$T/e" && ok || no "a missing file: exit $code, $(cat "$T/e")"
# with --steps it waits: the step comes later
(sleep 1; { row 1 2.5 null; row 2 2.4 null; } >"$T/late.nsj") &
out=$("$BIN" --follow "$T/late.nsj" --headless --steps 2 2>&1)
code=$?
[ "$code" = 0 ] && echo "$out" | grep -q '^steps: 2' && ok || no "--steps 2 waiting: exit $code: $out"
echo "$out" | grep -q 'waiting for the file to appear' && ok || no "the wait is not said: $out"
# not a stream: random bytes, a text file
head -c 3000 /dev/urandom >"$T/rand.bin"
printf 'hello\nthis is a text file\n' >"$T/text.txt"
for f in rand.bin text.txt; do
    out=$("$BIN" --follow "$T/$f" --headless 2>&1)
    code=$?
    [ "$code" = 2 ] && echo "$out" | grep -q "$f: not a normscope stream" &&
        ! echo "$out" | grep -q '^steps:' && ok || no "$f: exit $code: $out"
done
# an empty file: nothing written yet (a probe's first line comes with its
# first step), so no end either: never "ended normally"
: >"$T/empty.nsj"
out=$("$BIN" --follow "$T/empty.nsj" --headless 2>&1)
code=$?
[ "$code" = 5 ] && echo "$out" | grep -q '(empty: no line written yet)' &&
    echo "$out" | grep -q '^end: no end line' && ok || no "an empty file: exit $code: $out"
# the end of a probe stream: 0 only for an end line saying close or exit
{ header; row 1 2.5 null; } >"$T/end.nsj"
out=$("$BIN" --follow "$T/end.nsj" --headless 2>&1)
code=$?
[ "$code" = 5 ] && echo "$out" | grep -q '^end: no end line' && ok || no "no end line: exit $code: $out"
printf '{"event":"end","step":1,"reason":"signal","text":"run ended at step 1: signal: SIGTERM"}\n' >>"$T/end.nsj"
out=$("$BIN" --follow "$T/end.nsj" --headless 2>&1)
code=$?
[ "$code" = 6 ] && echo "$out" | grep -q '^end: run ended at step 1: signal: SIGTERM' && ok ||
    no "ended by a signal: exit $code: $out"
{ header; row 1 2.5 null; printf '{"event":"end","step":1,"reason":"close","text":"run ended at step 1: close"}\n'; } >"$T/end.nsj"
"$BIN" --follow "$T/end.nsj" --headless -q
code=$?
[ "$code" = 0 ] && ok || no "a run that ended normally: exit $code"

# --- normscope's own --jsonl: the same CSV, and a replay -------------------------------
SMALL="-L 3 -d 32 -H 2 -T 32 -B 4 --val-every 10 --val-batches 1 --steps 30"
"$BIN" --headless $SMALL --jsonl "$T/own.jsonl" --csv "$T/own.csv" -q
"$BIN" --follow "$T/own.jsonl" --headless --csv "$T/back.csv" -q
code=$?
[ "$code" = 0 ] && cmp -s "$T/own.csv" "$T/back.csv" && ok ||
    no "--jsonl converted back is not the run's --csv (exit $code)"
# a run that blows up at lr 1: its rows' own state (exploded) is kept
"$BIN" --headless $SMALL --steps 100 --lr 1 --on-diverge continue --jsonl "$T/boom.jsonl" --csv "$T/boom.csv" -q
"$BIN" --follow "$T/boom.jsonl" --headless --csv "$T/boomback.csv" -q
code=$?
[ "$code" = 3 ] && grep -q ',exploded,' "$T/boom.csv" && cmp -s "$T/boom.csv" "$T/boomback.csv" && ok ||
    no "an exploding run's --jsonl converted back: exit $code, $(cmp "$T/boom.csv" "$T/boomback.csv" 2>&1)"
run "LC_ALL=C $BIN --follow $T/own.jsonl --ascii"
wait_for 'step 30' 20 && ok || no "own --jsonl: $(screen | head -1)"
key Left Left
wait_for 'replay step 28' 10 && ok || no "own --jsonl replay: $(screen | head -1)"
key q
check_exited "own --jsonl q" 0

# --- 96 layers: the panel scrolls ---------------------------------------------------------
{
    printf '{"format":"normscope-stream","version":1,"n_layer":96}\n'
    printf '{"step":1,"loss":2'
    l=0
    while [ "$l" -lt 96 ]; do printf ',"l%d_grad_attn":0.%d' "$l" $((l + 10)); l=$((l + 1)); done
    printf '}\n'
} >"$T/deep.nsj"
run "LC_ALL=C $BIN --follow $T/deep.nsj"
wait_for 'of 96' 20 && ok || no "96 layers: $(screen | sed -n 3p)"
screen | grep -q '^>95' && ok || no "96 layers: the top layer is not selected"
key PPage
key NPage
key NPage
key NPage
key NPage
key NPage
key NPage
wait_for '> 0 ' 10 && ok || no "96 layers: could not scroll to layer 0"
key q
check_exited "96 layers q" 0

# --- the lab's rules on a followed stream -------------------------------------------------
# a probe's stream of a 2-block GPT (vocab 256, targets' entropy 3.1 nats):
# AdamW at lr 1.0 whose loss grows x e^(s/45) to 157 at step 150, finite
# (blow), or one whose loss falls from 5.6 to 2 (ok); no end line: running
probe_run() { # KIND STEPS
    awk -v kind="$1" -v n="$2" 'BEGIN {
        printf "{\"format\":\"normscope-stream\",\"version\":1,\"source\":\"pytorch\",\"model\":\"GPT\",\"blocks\":[\"h.0\",\"h.1\"],\"n_layer\":2,\"dtype\":\"float32\",\"every\":1,\"vocab\":256}\n"
        for (s = 1; s <= n; s++) {
            w = 0.02 * sin(s * 1.7)
            if (kind == "blow") { loss = 5.6 * exp(s / 45) * (1 + w); act = 4 * exp(s / 30); upd = 0.05; lr = 1 }
            else { loss = 2 + 3.6 * exp(-s / 40) + w; act = 4 + w; upd = 0.001; lr = 0.001 }
            printf "{\"step\":%d,\"loss\":%.6g,\"lr\":%g,\"grad_norm\":%.4g,\"loss_scale\":1,\"data_entropy\":3.1", s, loss, lr, 1 + w
            for (l = 0; l < 2; l++)
                printf ",\"l%d_grad_attn\":0.1,\"l%d_grad_ffn\":0.2,\"l%d_grad_ln\":0.01,\"l%d_act_max\":%.6g,\"l%d_resid_rms\":1,\"l%d_update_ratio\":%g", l, l, l, l, act, l, l, upd
            printf "}\n"
        }
    }'
}
probe_run blow 150 >"$T/blow.nsj"
out=$("$BIN" --follow "$T/blow.nsj" --headless 2>&1)
code=$?
# no end line is exit 5; the blow-up is 3, and said with its cause and fix
[ "$code" = 3 ] && ok || no "a blow-up at lr 1.0: exit $code, not 3: $out"
echo "$out" | grep -q '^diagnosis at step [0-9]*: blew up, finite: loss ' && ok || no "no cause: $out"
echo "$out" | grep -q '^  fix: needs the weights of step [0-9]* or earlier' && ok || no "no fix: $out"
echo "$out" | grep -q '^verdict: not healthy' && ok || no "no verdict: $out"
probe_run ok 300 >"$T/ok.nsj"
printf '{"event":"end","step":300,"reason":"close","text":"run ended at step 300: close"}\n' >>"$T/ok.nsj"
out=$("$BIN" --follow "$T/ok.nsj" --headless 2>&1)
code=$?
[ "$code" = 0 ] && echo "$out" | grep -q '^diagnosis: none' && echo "$out" | grep -q '^warnings: none' &&
    ok || no "a healthy run: exit $code: $out"
# the D panel at 80x24 and 100x30: the findings, and a sends the fix (a
# rewind's: pause the run, to resume from its checkpoint)
for size in 80x24 100x30; do
    rm -f "$T/blow.nsj.ctl"
    $TM resize-window -t "$W" -x "${size%x*}" -y "${size#*x}" 2>/dev/null
    run "LC_ALL=C.UTF-8 $BIN --follow $T/blow.nsj"
    wait_for '! blowup (D)' 20 && ok || no "$size: no blow-up mark: $(screen | head -2)"
    key D
    wait_for 'diagnosis of the followed run' 10 && ok || no "$size: D: $(screen)"
    screen | grep -q 'DIAGNOSIS at step [0-9]*: blew up, finite' && ok || no "$size: D lacks the cause: $(screen)"
    screen | grep -qi 'nan' && no "$size: nan on the screen: $(screen)" || ok
    key a
    i=0
    while [ "$i" -lt 50 ] && [ ! -s "$T/blow.nsj.ctl" ]; do sleep 0.1; i=$((i + 1)); done
    [ "$(cat "$T/blow.nsj.ctl" 2>/dev/null)" = "1 pause" ] && ok || no "$size: a sent: $(cat "$T/blow.nsj.ctl" 2>/dev/null)"
    key m
    wait_gone 'diagnosis of the followed run' 10 && ok || no "$size: another key did not close D"
    key q
    check_exited "$size D q" 0
done
$TM resize-window -t "$W" -x 120 -y 40 2>/dev/null
check_reports 40

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
