#!/bin/sh
# tui_lesson_sizes.sh - every lesson at the sizes of a classroom's
# projector (80x24, 100x30) and of a laptop (120x40), from the outside
# (tmux, as tui_lesson.sh): at the lesson's first pause the screen shows
# the question, both runs' loss and val, every layer of both runs (the
# lessons name the bottom, the middle and the top ones) and a loss chart
# whose legend names a setting of each run.
# What the tour (normscope-lessons(7)) says to point at is there too, at
# each size in the words the page uses for it (check_points).
# At 80x24, L hides the question and gives its rows back, L shows it again.
# The sweep lesson (stability-map) shows its title, its questions and notes
# as its runs end, and its text, under its grid.
# The lessons run with a tiny model (-d 16 -T 8 -B 2): the layout depends
# on the layer count and the texts, which the lessons keep, not on the width.
# Usage: NS_BIN=./normscope sh tests/sh/tui_lesson_sizes.sh
# Prints "N passed, N failed"; exits non-zero on any failure.
# shellcheck source-path=SCRIPTDIR source=../lib/tmux_lib.sh
. "$(dirname "$0")/../lib/tmux_lib.sh"
tmux_init tui_lesson_sizes.sh lsizes
watchdog "${NS_E2E_LIMIT:-600}"
need_tmux_bin
sanitizer_env
LESSONS=$(dirname "$0")/../../assets/lessons
TINY="-d 16 -H 2 -T 8 -B 2 --val-batches 1"
W=lsizes
run() {
    rm -f "$T/err"
    key "clear; $* 2>$T/err; echo NS_\"\"EXIT=\$?" Enter
}
new_session
DEFAULT_L=$($BIN --help | sed -n 's/.*--layers N .*default \([0-9]*\).*/\1/p')

# check_points LESSON COLS ROWS: what normscope-lessons(7) tells a teacher
# to point at, at the lesson's first pause, is on the screen at that size
# (its words for where it is, per size, are the page's)
check_points() {
    what="$1 at ${2}x$3"
    case $1 in
    gradient-profile) # relative bars from the start; the numbers of both runs
        # the bars' axis: in the column titles where the bars are wide, once
        # after the run's label where they are compact
        [ "$(screen | grep -Ec 'mlp rel|bars rel')" -ge 1 ] && ok || no "$what: the bars are not relative: $(screen | sed -n 4,5p)"
        screen | grep -Eq 'mlp abs|bars abs' && no "$what: a run's bars are absolute: $(screen | sed -n 4,5p)" || ok
        if [ "$3" -ge 40 ]; then
            screen | grep -qF '| grad mlp ' && ok || no "$what: no layer box with the MLP gradient"
            screen | grep -q 'lyr .* rms' && ok || no "$what: no rms column in the rows"
        elif [ "$3" -ge 30 ]; then
            screen | sed -n 3p | grep -Eq '^ layer [0-9]+/[0-9]+ +a\|b .* mlp [0-9.e+-]+\|[0-9.e+-]+ .* rms [0-9.]+\|[0-9.]+' && ok ||
                no "$what: the third row lacks the selected layer's mlp and rms: $(screen | sed -n 3p)"
        else # L first gives the panel's rows back
            key L
            wait_gone 'L hides' 10
            screen | sed -n 3p | grep -Eq '^ layer [0-9]+/[0-9]+ +a\|b .* mlp [0-9.e+-]+\|[0-9.e+-]+' && ok ||
                no "$what: after L the third row lacks the selected layer's mlp: $(screen | sed -n 3p)"
            key L
        fi ;;
    loss-scaling) # the under column of the rows; the box's underflows from 30 rows
        screen | grep -Eq '^lyr .* under .*lyr .* under' && ok || no "$what: no under column in both runs' rows: $(screen | sed -n 5p)"
        if [ "$3" -ge 30 ]; then
            screen | grep -Eq '\| underflows +[0-9]+ +[0-9]+ \|' && ok || no "$what: no underflows in the layer box"
        fi ;;
    fp16-layernorm) # act max nearing 256 and the headroom beside it; resid max in the box
        if [ "$2" -le 100 ]; then
            screen | grep -Eq '^lyr .* act max headroom .*lyr .* act max headroom' && ok || no "$what: no act max and headroom columns: $(screen | sed -n 5p)"
        else
            screen | grep -Eq '^lyr .* 256 +65k .*headroom' && ok || no "$what: no act max bar with its marks and headroom: $(screen | sed -n 5p)"
        fi
        screen | grep -Eq '\| res(id)? ?m(a)?x ' && ok || no "$what: no resid max in the layer box" ;;
    gamma-zero) # the act max column of both runs
        screen | grep -Eq '^lyr .* act max .*lyr .* act max' && ok || no "$what: no act max column in both runs' rows" ;;
    rmsnorm-swap) # the marker at step 300, once the step after it is taken
        key n
        wait_for 'a:rmsnorm' 30 && ok || no "$what: no marker for the switch on the chart after n" ;;
    esac
}

# check_pause LESSON COLS ROWS: the lesson at its first pause at that size
check_pause() {
    name=$1 cols=$2 rows=$3 f=$LESSONS/$1.lesson
    # the first pause by step (a line may be one of a question's variants,
    # "if SETTING=V: at N: pause ..."), and the first three words of each
    # variant asked at that step: the lesson asks one of them
    pauses=$(sed -n 's/^\(if [^:]*: \)\{0,1\}at \([0-9]*\): pause \(.*\)/\2 \3/p' "$f" | sort -n)
    step=$(echo "$pauses" | head -1 | cut -d' ' -f1)
    variants=$(echo "$pauses" | awk -v s="$step" '$1 == s {print $2, $3, $4}')
    nl=$(sed -n 's/^flags:.*-L \([0-9]*\).*/\1/p' "$f" | head -1)
    nl=${nl:-$DEFAULT_L}
    what="$name at ${cols}x$rows"
    $TM resize-window -t "$W" -x "$cols" -y "$rows" 2>/dev/null
    run "LC_ALL=C $BIN --lesson $name $TINY"
    # until one of them is on the screen ("step N: " alone may be a note's)
    words= i=0
    while [ -z "$words" ] && [ "$i" -lt 600 ]; do
        words=$(echo "$variants" | while read -r v; do
            screen | grep -qF -- "step $step: $v" && { echo "$v"; break; }
        done)
        [ -n "$words" ] || sleep 0.1
        i=$((i + 1))
    done
    if [ -z "$words" ]; then
        no "$what: no question of step $step ($(echo "$variants" | tr '\n' '/')) on the screen: $(cat "$T/err" 2>/dev/null)"
        screen >&2
        key q
        check_exited "$what q" 0
        return
    fi
    ok
    screen | sed -n 1p | grep -qF PAUSED && ok || no "$what: not paused at the question"
    screen | sed -n 1p | grep -Eq 'a: +loss [0-9.]+ +val ' && ok || no "$what: run a's loss and val: $(screen | sed -n 1p)"
    screen | sed -n 2p | grep -Eq '^ b: +loss [0-9.]+ +val ' && ok || no "$what: run b's loss and val: $(screen | sed -n 2p)"
    [ "$step" -gt 50 ] && { screen | sed -n 2p | grep -Eq 'val [0-9]' && ok || no "$what: run b's val is not measured"; }
    screen | grep -q '^ loss ' && ok || no "$what: no loss chart"
    # both runs' entries in the chart's legend, a setting named in each
    # (never a bare " +N"), whatever the width leaves
    screen | grep '^ loss ' | grep -Eq -- '- a: [a-z].*  \+ b: [a-z]' && ok ||
        no "$what: the legend lacks a run's entry: $(screen | grep '^ loss ')"
    # every layer twice: in run a's panel and in run b's
    seen=$(layers_seen | sort -n | uniq -c | awk '$1 >= 2' | wc -l)
    [ "$seen" -eq "$nl" ] && ok || { no "$what: $seen of $nl layers on the screen in both panels"; screen >&2; }
    check_points "$name" "$cols" "$rows"
    if [ "$cols" = 80 ] && [ "$name" = depth ]; then # L hides, and L shows again
        key L
        wait_gone "step $step: $words" 10 && ok || no "$what: L did not hide the question"
        key L
        wait_for "step $step: $words" 10 && ok || no "$what: L did not bring the question back"
    fi
    key q
    check_exited "$what q" 0
}

for size in "80 24" "100 30" "120 40"; do
    for f in "$LESSONS"/*.lesson; do
        grep -q '^sweep:' "$f" && continue # a sweep's lesson: below
        grep -Eq '^(if [^:]*: )?at [0-9]+: pause' "$f" || continue
        # shellcheck disable=SC2086
        check_pause "$(basename "$f" .lesson)" $size
    done
done

# a sweep's lesson: its title, its questions and notes ("at N:" once N
# runs have ended, the latest first) and its text under the grid of cells,
# at the projector's sizes too; a question stops no run
MAP=$LESSONS/stability-map.lesson
title=$(sed -n 's/^title: //p' "$MAP")
# "N first three words" of each at line (note or pause) of the lesson that
# holds for the runs: $1 is own (the lesson's own flags) or !own (flags
# that change its runs, as --steps 20 does: its notes on the results,
# measured with its own, are not said then)
lines_of() {
    sed -n "s/^\(if $1: \)\{0,1\}at \([0-9]*\): \(note\|pause\) \([^ ]* [^ ]* [^ ]*\).*/\2 \4/p" "$MAP"
}
# shown_as N WORDS M: the line as the sweep's view says it
shown_as() { if [ "$1" = 0 ]; then echo "at the start: $2"; else echo "$1 of $3 ended: $2"; fi; }
first=$(lines_of own | sort -n | head -1)
last=$(lines_of '!own' | sort -n | tail -1 | cut -d' ' -f1)
[ "$(lines_of own | sort -n | head -1)" = "$(lines_of '!own' | sort -n | head -1)" ] && ok ||
    no "stability-map: the first line depends on the flags"
for size in "80 24" "100 30" "120 40"; do
    # shellcheck disable=SC2086
    $TM resize-window -t "$W" -x ${size% *} -y ${size#* } 2>/dev/null
    run "LC_ALL=C $BIN --lesson stability-map --jobs 1 --sweep-out $T/map"
    wait_for "layers\\lr" 30 && ok || no "stability-map at $size: no grid of cells: $(cat "$T/err" 2>/dev/null)"
    wait_for "${title%%:*}:" 10 && ok || no "stability-map at $size: the lesson's title is not on the screen"
    q=$(shown_as "${first%% *}" "${first#* }" 18)
    screen | grep -qF "$q" && ok || { no "stability-map at $size: no '$q' at the start"; screen >&2; }
    screen | grep -qF 'one per cell' && ok || no "stability-map at $size: the lesson's text is not on the screen"
    key q
    check_exited "stability-map at $size q" 130 # stopped before its end
    rm -rf "$T/map"
done
# to its end in a few seconds (--steps 20, the user's flags win): every
# line of its last count on the screen, the question first
for size in "80 24" "100 30"; do
    # shellcheck disable=SC2086
    $TM resize-window -t "$W" -x ${size% *} -y ${size#* } 2>/dev/null
    run "LC_ALL=C $BIN --lesson stability-map --steps 20 --sweep-out $T/map"
    if wait_for "none left to run" 90; then
        m=$(screen | sed -n '1s|^ *[0-9]*/\([0-9]*\) ended.*|\1|p')
        lines_of '!own' | awk -v n="$last" '$1 == n' | while read -r n words; do
            l=$(shown_as "$n" "$words" "$m")
            screen | grep -qF "$l" && echo ok || echo "no '$l'"
        done >"$T/lines"
        [ -s "$T/lines" ] && ! grep -v '^ok$' "$T/lines" >/dev/null && ok ||
            { no "stability-map at $size, ended: $(grep -v '^ok$' "$T/lines" | tr '\n' ' ')"; screen >&2; }
        # the notes measured with the lesson's own flags are not said of
        # these 20-step runs
        lines_of own | awk -v n="$last" '$1 == n' | while read -r n words; do
            screen | grep -qF "$(shown_as "$n" "$words" "$m")" && echo "said: $words"
        done >"$T/own"
        [ ! -s "$T/own" ] && ok || no "stability-map at $size, --steps 20: the lesson's own results are said: $(cat "$T/own")"
        q=$(sed -n "s/^if !own: at $last: pause \([^ ]* [^ ]* [^ ]*\).*/\1/p" "$MAP" | head -1)
        below=$(screen | grep -n "^ $(shown_as "$last" "" "$m")" | head -1 | cut -d: -f2-)
        echo "$below" | grep -qF "$q" && ok || no "stability-map at $size: the first line is not its question: $below"
    else
        no "stability-map at $size: did not end: $(cat "$T/err" 2>/dev/null)"
    fi
    key q
    check_exited "stability-map at $size, ended, q" 0
    rm -rf "$T/map"
done

check_reports 60

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
