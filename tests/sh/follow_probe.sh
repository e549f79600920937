#!/bin/sh
# follow_probe.sh - the follow view on a live PyTorch run, end to end: a
# nanoGPT-style model trains with normscope_probe attached
# (tests/probe/live_run.py) while `normscope --follow` shows its stream in
# a tmux pane. Checks that the view shows the run's model, layers and loss;
# that space pauses the run (the stream's step counter stops, the probe
# writes a paused event) and space again resumes it; that + doubles the
# run's learning rate (a setting event, then steps at twice the LR); and
# that a hand-written attention's logits show '-' (unknown) beside a
# measured branch ratio; that TransformerEncoder runs, post-norm and norm_first, stream their
# blocks for the headless summary; and that the lab's rules name a real
# run's blow-up at lr 1.0 (exit 3) and find nothing at lr 1e-3.
#
# Usage: NS_BIN=./normscope sh tests/sh/follow_probe.sh (needs tmux and a
# Python with torch: Debian's /usr/bin/python3 with python3-torch, or
# $PYTHON). Prints "N passed, N failed"; exits non-zero on any failure.
# shellcheck source-path=SCRIPTDIR source=../lib/tmux_lib.sh
. "$(dirname "$0")/../lib/tmux_lib.sh"
tmux_init follow_probe.sh fprobe
watchdog "${NS_FOLLOW_LIMIT:-300}"
need_tmux_bin
W=fprobe
PY=${PYTHON:-/usr/bin/python3}
RUN=$(cd "$(dirname "$0")/../probe" && pwd)/live_run.py
if ! "$PY" -c "import torch" 2>/dev/null; then
    no "$PY cannot import torch (apt-get install python3-torch, or set PYTHON)"
    echo "$pass passed, $fail failed"
    exit 1
fi
export OMP_NUM_THREADS=1

run() {
    rm -f "$T/err"
    key "clear; $* 2>$T/err; echo NS_\"\"EXIT=\$?" Enter
}
# the last step line's step and lr in the stream
last_step() { grep '"step"' "$S" | grep -v '"event"' | tail -1 | sed -n 's/.*"step":\([0-9]*\).*/\1/p'; }
last_lr() { grep '"step"' "$S" | grep -v '"event"' | tail -1 | sed -n 's/.*"lr":\([0-9.e-]*\).*/\1/p'; }
# wait_file PATTERN SECONDS: until the stream has a line matching PATTERN
wait_file() {
    i=0
    while [ "$i" -lt $(($2 * 10)) ]; do
        grep -q -- "$1" "$S" 2>/dev/null && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

new_session
S=$T/run.nsj
"$PY" "$RUN" "$S" 600 gpt >"$T/py.log" 2>&1 &
py=$!
run "LC_ALL=C.UTF-8 $BIN --follow $S"
wait_for 'GPT L=3' 60 && ok || no "the run's model is not shown: $(screen | head -3) $(cat "$T/py.log")"
wait_for 'layer 2 = transformer.h.2' 20 && ok || no "the selected block's module is not named: $(screen | tail -4)"
wait_file '"step":20,' 60 && ok || no "the run did not reach step 20: $(cat "$T/py.log")"
screen | grep -q 'loss 5\.' && ok || no "no loss on the status line: $(screen | head -2)"
# the mechanisms in the selected layer's box: a hand-written attention's
# logits are unknown ('-', never 0: the header names them), the branch
# ratio and the norm's input measured
screen | grep -q 'att logit  *- ' && ok || no "a hand-written attention's logit is not '-': $(screen | grep 'att ' | head -2)"
screen | grep -Eq 'branch/x  *[0-9]' && screen | grep -Eq 'norm in  *[0-9]' && ok ||
    no "the branch ratio or the norm's input is not shown: $(screen | grep -E 'branch|norm in')"
grep -q '"unknown":\["attn_logit_max","attn_entropy",' "$S" && ok ||
    no "the header does not name the attention unknown: $(head -c 600 "$S")"

# space: the probe holds the run at a step boundary
key Space
wait_file '"event":"paused"' 20 && ok || no "space: no paused event in the stream"
a=$(last_step)
sleep 1.5
b=$(last_step)
[ -n "$a" ] && [ "$a" = "$b" ] && ok || no "paused: the step counter moved ($a -> $b)"
key Space
wait_file '"event":"resumed"' 20 && ok || no "space again: no resumed event"
i=0
while [ "$i" -lt 100 ] && [ "$(last_step)" = "$b" ]; do sleep 0.1; i=$((i + 1)); done
[ "$(last_step)" != "$b" ] && ok || no "resumed: the step counter stands at $b"

# +: every parameter group's LR times 2, seen in the stream's lr
lr0=$(last_lr)
key +
wait_file '"text":"lr x2' 20 && ok || no "+: no setting event in the stream"
sleep 0.5
lr1=$(last_lr)
awk -v a="$lr0" -v b="$lr1" 'BEGIN { exit !(a > 0 && b > 1.99 * a && b < 2.01 * a) }' && ok ||
    no "+: the stream's lr went $lr0 -> $lr1, not twice"
wait_for 'lr x2' 10 && ok || no "+: the view shows no lr x2 event: $(screen | tail -6)"
key q
check_exited "follow q" 0
kill "$py" 2>/dev/null
wait "$py" 2>/dev/null

# TransformerEncoder, post-norm and norm_first: their blocks in the summary
for kind in post pre; do
    "$PY" "$RUN" "$T/$kind.nsj" 12 "$kind" >"$T/py.log" 2>&1 || no "$kind: the run failed: $(cat "$T/py.log")"
    "$BIN" --follow "$T/$kind.nsj" --headless >"$T/sum" 2>&1 && ok || no "$kind: summary exit $?: $(cat "$T/sum")"
    grep -q 'EncoderLM' "$T/sum" && grep -q '^layers: 3' "$T/sum" && grep -q '^steps: 12' "$T/sum" &&
        ok || no "$kind: the summary: $(cat "$T/sum")"
done

# the lab's rules on a real run: the GPT with AdamW at lr 1.0 blows up
# (finite: its loss passes 60 by step 40), named with its cause, exit 3;
# at lr 1e-3 no rule fires, exit 0
for lr in 1.0 1e-3; do
    "$PY" "$RUN" "$T/lr$lr.nsj" 80 gpt "$lr" >"$T/py.log" 2>&1 || no "lr $lr: the run failed: $(cat "$T/py.log")"
    "$BIN" --follow "$T/lr$lr.nsj" --headless >"$T/sum" 2>&1
    code=$?
    if [ "$lr" = 1.0 ]; then
        [ "$code" = 3 ] && grep -q '^diagnosis at step [0-9]*: blew up, finite' "$T/sum" && ok ||
            no "lr 1.0: exit $code: $(cat "$T/sum")"
    else
        [ "$code" = 0 ] && grep -q '^diagnosis: none' "$T/sum" && grep -q '^warnings: none' "$T/sum" &&
            ok || no "lr 1e-3: exit $code: $(cat "$T/sum")"
    fi
done

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
