#!/bin/sh
# sweep.sh - --sweep, --list and --sweep-collect from the outside: the grid,
# determinism against runs alone, resume, a run that dies, bad input, the
# --list | xargs path against the in-process sweep, what collect counts and
# lists, --list-range, --retry failed, one spelling per value, the
# directory lock and runs that die with their sweep, exploded runs and the
# table's width, --loss-at's columns, and the papers' claims over several
# seeds.
# Usage: NS_BIN=./normscope sh tests/sh/sweep.sh
# Prints "N passed, N failed"; exits non-zero on any failure.
BIN=${NS_BIN:-./normscope}
. "$(dirname "$0")/../lib/claims_lib.sh"
# shellcheck source=../lib/results_lib.sh
. "$(dirname "$0")/../lib/results_lib.sh"
# shellcheck source=../lib/posix_lib.sh
. "$(dirname "$0")/../lib/posix_lib.sh"
T=$(mktemp -d /tmp/ns_sweep.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
# tiny runs: a sweep of a dozen takes well under a second
# C0: the common flags but --steps, for the sweeps whose axis it is
C0="-d 16 -H 2 -T 8 -B 2 --val-every 5 --val-batches 1"
C="$C0 --steps 20"
SPEC='norm=post,pre layers=1..2 lr=1e-3..1e-2*10^0.5'

# expect_bad NEEDLE ARGS...: exit 2, one stderr line containing NEEDLE, and
# no directory $T/bad made
expect_bad() {
    needle=$1
    shift
    "$BIN" "$@" >"$T/out" 2>"$T/err" </dev/null
    rc=$?
    if [ "$rc" -ne 2 ]; then no "$*: exit $rc, want 2"; return; fi
    if [ "$(wc -l <"$T/err")" -ne 1 ]; then no "$*: stderr not one line:"; cat "$T/err" >&2; return; fi
    if ! grep -q -- "$needle" "$T/err"; then no "$*: stderr lacks '$needle': $(cat "$T/err")"; return; fi
    if [ -e "$T/bad" ]; then no "$*: wrote $T/bad"; rm -rf "$T/bad"; return; fi
    ok
}
# csv of the run whose results row matches the pattern (id is column 1)
run_csv() { echo "$1/run-$(grep -E -- "$2" "$1/results.csv" | cut -d, -f1).csv"; }
rows() { tail -n +2 "$1/results.csv" | wc -l; }
# the rows where awk condition $2 holds, fields by name as c["NAME"]
where() { awk -F, "NR == 1 { for (i = 1; i <= NF; i++) c[\$i] = i; next } $2" "$1"; }
# how many rows of results.csv $1 awk condition $2 holds for
count() { where "$1/results.csv" "$2" | wc -l; }
# pid of a process whose command line holds $1 (posix_lib.sh)
find_pid() { ns_find_pid "$1"; }
# the pid of a run whose command line holds $1, once it has started (10 s)
wait_run() {
    for i in $(seq 1 100); do
        p=$(find_pid "$1")
        [ -n "$p" ] && { echo "$p"; return; }
        sleep 0.1
    done
}

# --- the grid: 2 x 2 x 3 (1e-3, 3.16e-3, 1e-2), in every listing and row set
"$BIN" --sweep "$SPEC" $C --sweep-out "$T/l" --list >"$T/list" 2>"$T/err"
[ "$(wc -l <"$T/list")" -eq 12 ] && ok || no "--list: $(wc -l <"$T/list") lines, want 12"
n=$(grep -c -- '--lr=0.00316228 ' "$T/list")
[ "$n" -eq 4 ] && ok || no "geometric step 10^0.5: $n runs at lr 0.00316228, want 4"
[ "$(grep -c -- '--layers=2 ' "$T/list")" -eq 6 ] && ok || no "integer range 1..2"
[ "$(cut -d' ' -f1 "$T/list" | sort -u | wc -l)" -eq 1 ] && ok || no "--list: one binary"
[ "$(grep -o 'run-[0-9a-f]*\.csv' "$T/list" | sort -u | wc -l)" -eq 12 ] && ok || no "12 distinct run IDs"
[ -f "$T/l/sweep.spec" ] && [ ! -f "$T/l/results.csv" ] && ok || no "--list writes sweep.spec only"

# --- a flag that does nothing is said once, by the sweep (its runs are quiet
# children): in how many runs, the first one's ID; the runs still run
"$BIN" --sweep 'precision=fp32,fp16 seed=1,2' $C --loss-scale 128 --sweep-out "$T/na" \
    >/dev/null 2>"$T/err"
rc=$?
[ "$rc" -eq 0 ] && [ "$(grep -c 'does nothing' "$T/err")" -eq 1 ] &&
    grep -q -- 'warning: --sweep: in 2 of 4 runs ([0-9a-f]* first), --loss-scale 128 does nothing with --precision fp32' "$T/err" &&
    ok || no "an axis value where a flag does nothing: exit $rc, $(cat "$T/err")"
first=$(sed -n 's/.*runs (\([0-9a-f]*\) first).*/\1/p' "$T/err")
[ -n "$first" ] && grep -q "^$first,fp32," "$T/na/results.csv" && [ "$(rows "$T/na")" -eq 4 ] &&
    ok || no "the run named first ($first) is not an fp32 one of 4: $(cat "$T/na/results.csv")"
"$BIN" --sweep 'seed=1,2' $C --dyt-alpha 0.3 --sweep-out "$T/na2" --list >/dev/null 2>"$T/err"
grep -q -- '^normscope: warning: --sweep: in every run, --dyt-alpha 0.3 does nothing with --norm-kind layernorm' "$T/err" &&
    ok || no "a common flag that does nothing: $(cat "$T/err")"
"$BIN" --sweep 'norm-kind=layernorm,dyt' $C --dyt-alpha 0.3 --sweep-out "$T/na3" --list >/dev/null 2>"$T/err"
grep -q 'in 1 of 2 runs' "$T/err" && ok || no "dyt-alpha under a norm-kind axis: $(cat "$T/err")"
"$BIN" --sweep 'norm-kind=dyt seed=1,2' $C --dyt-alpha 0.3 --sweep-out "$T/na4" --list >/dev/null 2>"$T/err"
[ ! -s "$T/err" ] && ok || no "a flag that applies in every run is warned: $(cat "$T/err")"

for j in 1 2; do
    "$BIN" --sweep "$SPEC" $C --sweep-out "$T/s$j" --jobs $j >"$T/table$j" 2>"$T/err$j"
    rc=$?
    [ $rc -eq 0 ] && ok || { no "--jobs $j: exit $rc"; cat "$T/err$j" >&2; }
    [ "$(rows "$T/s$j")" -eq 12 ] && ok || no "--jobs $j: $(rows "$T/s$j") rows, want 12"
    # the table: a header and one line per cell (no seed axis: 12 cells)
    [ "$(wc -l <"$T/table$j")" -eq 13 ] && ok || no "--jobs $j: table of $(wc -l <"$T/table$j") lines"
    head -1 "$T/table$j" | grep -Eq '^layers +lr +norm +runs +n +final +sd +ci95 +div +stall +expl +fail +ratio$' && ok || no "table header: $(head -1 "$T/table$j")"
    # determinism: each run's CSV is the same run alone, bytes apart from tokens_per_s
    for r in "1,0.001,post" "2,0.00316228,pre" "2,0.01,post"; do
        set -- $(echo "$r" | tr , ' ')
        "$BIN" --headless --threads 1 -q $C --layers "$1" --lr "$2" --norm "$3" --csv "$T/alone.csv"
        f=$(run_csv "$T/s$j" "^[0-9a-f]{12},$r,")
        ns_cut_out 6 "$T/alone.csv" >"$T/a.cut"
        ns_cut_out 6 "$f" >"$T/b.cut" 2>/dev/null
        [ -s "$T/a.cut" ] && cmp -s "$T/a.cut" "$T/b.cut" && ok || no "--jobs $j: run $r differs from the run alone"
    done
done
head -1 "$T/s1/results.csv" | grep -q '^id,layers,lr,norm,seed,last_step,train_loss,val_loss,diverged_step,stalled,exploded,ratio_first,ratio_last,wall_s,status,state,reason,best_val,best_val_step,update_ratio_end,tokens,train_s,dim,heads,.*,version,command,time,host$' \
    && ok || no "results.csv header: $(head -1 "$T/s1/results.csv")"
# every setting the runs ran with, each column once: the common flags
# (-d 16), the defaults (--eps 1e-5), normscope's version
[ -z "$(head -1 "$T/s1/results.csv" | tr , '\n' | sort | uniq -d)" ] && ok || no "a column twice: $(head -1 "$T/s1/results.csv" | tr , '\n' | sort | uniq -d)"
[ "$(count "$T/s1" '$c["dim"] == 16 && $c["eps"] == "1e-05" && $c["steps"] == 20 && $c["val-every"] == 5 && $c["version"] ~ /^[0-9]+\.[0-9]+/ && $c["time"] ~ /^20[0-9-]+T/ && $c["command"] ~ /--csv /')" -eq 12 ] \
    && ok || no "the configuration columns: $(sed -n 2p "$T/s1/results.csv")"
# --jobs 1 and 2: the same rows apart from the wall time
results_rows "$T/s1/results.csv" >"$T/r1"
results_rows "$T/s2/results.csv" >"$T/r2"
cmp -s "$T/r1" "$T/r2" && ok || no "results differ between --jobs 1 and 2"
# every run finished its 20 steps, and ratios of a 1-layer model are 1
[ "$(count "$T/s1" '$c["last_step"] == 20 && $c["status"] == "ok" && $c["tokens"] == 20 * 2 * 8')" -eq 12 ] && ok || no "not all runs 20 steps (320 tokens), ok"
[ "$(count "$T/s1" '$c["layers"] == 1 && $c["ratio_first"] == 1 && $c["ratio_last"] == 1 && $c["status"] == "ok"')" -eq 6 ] && ok || no "1-layer ratios not 1"
# 20 steps are fewer than the 48 the diagnosis needs to call a plateau
# one: these runs are above the plateau (loss over 3.3) and none is
# called stalled; two end a little above their first step's loss (under
# 0.15 nats), noise that is not a blow-up: none is called exploded
[ "$(where "$T/s1/results.csv" '$c["train_loss"] > 3.3 && $c["stalled"] == 0 && $c["exploded"] == 0' | wc -l)" -eq 12 ] \
    && ok || no "20-step runs called stalled or exploded: $(cat "$T/s1/results.csv")"

# --- resume: nothing to do; a lost row is run again, only it
"$BIN" --sweep "$SPEC" $C --sweep-out "$T/s1" --jobs 2 >/dev/null 2>"$T/err"
grep -q '12 runs, 0 to do' "$T/err" && [ "$(rows "$T/s1")" -eq 12 ] && ok || no "resume: $(cat "$T/err")"
grep -v ',1,0.001,post,' "$T/s1/results.csv" >"$T/keep" && mv "$T/keep" "$T/s1/results.csv"
keep=$(run_csv "$T/s1" ',2,0.01,pre,')
touch -d '2001-01-01' "$keep"
"$BIN" --sweep "$SPEC" $C --sweep-out "$T/s1" --jobs 2 -q >/dev/null 2>"$T/err"
[ "$(rows "$T/s1")" -eq 12 ] && ok || no "resume: $(rows "$T/s1") rows, want 12"
[ -n "$(find "$keep" ! -newermt '2002-01-01')" ] && ok || no "resume ran a finished run again"
results_rows "$T/s1/results.csv" >"$T/r1b"
cmp -s "$T/r1" "$T/r1b" && ok || no "resume: the rerun run's row differs"

# --- widening: the same axes with other values share DIR; the shared run
# is not run again, and --sweep-collect keeps the rows of both grids
"$BIN" --sweep 'lr=1e-3,2e-3' $C --sweep-out "$T/w" -q >/dev/null 2>&1
"$BIN" --sweep 'lr=2e-3,1e-2' $C --sweep-out "$T/w" >/dev/null 2>"$T/err"
grep -q '2 runs, 1 to do' "$T/err" && [ "$(rows "$T/w")" -eq 3 ] && ok || no "widen: $(cat "$T/err")"
sort "$T/w/results.csv" >"$T/w1"
"$BIN" --sweep-collect "$T/w" >/dev/null 2>&1
sort "$T/w/results.csv" >"$T/w2"
cmp -s "$T/w1" "$T/w2" && ok || no "--sweep-collect dropped another grid's rows"

# --- --list | xargs, then --sweep-collect: the in-process results
"$BIN" --sweep "$SPEC" $C --sweep-out "$T/x" --list | xargs -P 2 -I{} sh -c '{}'
"$BIN" --sweep-collect "$T/x" >"$T/tablex" 2>"$T/err"
[ $? -eq 0 ] && ok || no "--sweep-collect: $(cat "$T/err")"
results_rows "$T/x/results.csv" >"$T/rx"
cmp -s "$T/r1" "$T/rx" && ok || { no "--list | xargs + --sweep-collect differs from --sweep"; diff "$T/r1" "$T/rx" >&2; }
cmp -s "$T/table2" "$T/tablex" && ok || no "--sweep-collect's table differs"
# collecting an in-process sweep again keeps its rows and wall times
cp "$T/s2/results.csv" "$T/before"
"$BIN" --sweep-collect "$T/s2" >/dev/null 2>&1
sort "$T/before" >"$T/b1"
sort "$T/s2/results.csv" >"$T/b2"
cmp -s "$T/b1" "$T/b2" && ok || no "--sweep-collect changed an in-process sweep's rows"

# --- a run that dies: recorded, and the grid goes on
# dim 512 at this size needs far more than 150 MB of address space (not
# under the sanitizers, which reserve terabytes of it: NS_SANITIZED set)
if [ -z "$NS_SANITIZED" ]; then
(ulimit -v 150000 && "$BIN" --sweep 'dim=16,512 seed=1,2' -L 1 -H 2 -T 64 -B 16 --steps 5 \
    --sweep-out "$T/m" --jobs 1 -q >/dev/null 2>&1)
rc=$?
[ $rc -eq 1 ] && ok || no "out-of-memory run: sweep exit $rc, want 1"
[ "$(count "$T/m" '$c["dim"] == 16 && $c["last_step"] == 5 && $c["status"] == "ok"')" -eq 2 ] && ok || no "small runs not ok beside a failed one"
# exit 2 when the model's memory is refused (glibc), exit 1 when it fits
# and a later allocation is (musl's malloc reserves less address space)
[ "$(count "$T/m" '$c["dim"] == 512 && $c["status"] == "failed" && ($c["reason"] == "exit 2" || $c["reason"] == "exit 1") && $c["train_loss"] == ""')" -eq 2 ] && ok || no "failed runs not recorded"
fi
# a child killed by a signal: steps=... 1e9 never ends on its own
"$BIN" --sweep 'steps=5,1000000000' -L 1 $C0 --sweep-out "$T/k" --jobs 2 -q >/dev/null 2>&1 &
sweep_pid=$!
victim=$(wait_run "--steps=1000000000 --csv $T/k/")
[ -n "$victim" ] && kill -9 "$victim"
wait $sweep_pid
rc=$?
[ $rc -eq 1 ] && ok || no "killed run: sweep exit $rc, want 1"
[ "$(count "$T/k" '$c["steps"] == 1000000000 && $c["status"] == "killed" && $c["reason"] == "signal 9"')" -eq 1 ] && ok || no "SIGKILL not recorded: $(cat "$T/k/results.csv")"
[ "$(count "$T/k" '$c["steps"] == 5 && $c["last_step"] == 5 && $c["status"] == "ok"')" -eq 1 ] && ok || no "the other run did not finish"

# --- interrupted: exit 130, no row for the run cut short; a resume finishes it
"$BIN" --sweep 'steps=5,1000000000' -L 1 $C0 --sweep-out "$T/i" --jobs 2 -q >/dev/null 2>&1 &
sweep_pid=$!
wait_run "--steps=1000000000 --csv $T/i/" >/dev/null
sleep 0.3
kill -TERM $sweep_pid
wait $sweep_pid
rc=$?
[ $rc -eq 130 ] && ok || no "SIGTERM: sweep exit $rc, want 130"
grep -q ',1000000000,' "$T/i/results.csv" && no "an interrupted run got a row" || ok

# --- runs stopped from outside the sweep (scancel, a timeout, an admin, the
# OOM killer): a SIGTERM and a SIGKILL each get a killed row and a line on
# stderr, the sweep exits 1 and lists them as their --list lines, as
# --sweep-collect does; --retry failed runs exactly those two again
"$BIN" --sweep 'steps=5,1000000000 seed=1,2' -L 1 $C0 --sweep-out "$T/o" --jobs 4 -q \
    >/dev/null 2>"$T/oerr" &
sweep_pid=$!
v1=$(wait_run "--seed=1 --steps=1000000000 --csv $T/o/")
v2=$(wait_run "--seed=2 --steps=1000000000 --csv $T/o/")
sleep 0.5 # past the run's start, its stop handler set
[ -n "$v1" ] && kill -TERM "$v1"
[ -n "$v2" ] && kill -KILL "$v2"
wait $sweep_pid
rc=$?
[ $rc -eq 1 ] && ok || no "runs stopped from outside: sweep exit $rc, want 1: $(cat "$T/oerr")"
[ "$(count "$T/o" '$c["seed"] == 1 && $c["steps"] == 1000000000 && $c["status"] == "killed" && $c["reason"] ~ /^(exit 130|signal 15)/')" -eq 1 ] &&
    [ "$(count "$T/o" '$c["seed"] == 2 && $c["steps"] == 1000000000 && $c["status"] == "killed" && $c["reason"] == "signal 9"')" -eq 1 ] &&
    [ "$(count "$T/o" '$c["steps"] == 5 && $c["status"] == "ok"')" -eq 2 ] \
    && ok || no "runs stopped from outside: rows $(cat "$T/o/results.csv")"
[ "$(grep -c '^normscope: run [0-9a-f]* killed (.*); its log: ' "$T/oerr")" -eq 2 ] &&
    grep -q "sweep $T/o: 4 expected, 2 complete, 0 missing, 0 truncated, 0 running, 0 corrupt, 2 failed" "$T/oerr" \
    && ok || no "runs stopped from outside: stderr $(cat "$T/oerr")"
"$BIN" --sweep 'steps=5,1000000000 seed=1,2' -L 1 $C0 --sweep-out "$T/o" --list 2>/dev/null |
    grep -- '--steps=1000000000' | sed 's/$/  # failed/' >"$T/olist"
grep '  # failed$' "$T/oerr" | cmp -s - "$T/olist" && ok || no "the killed runs' --list lines: $(cat "$T/oerr")"
"$BIN" --sweep-collect "$T/o" >/dev/null 2>"$T/ocol"
rc=$?
[ $rc -eq 1 ] && grep -q '4 expected, 2 complete, 0 missing, 0 truncated, 0 running, 0 corrupt, 2 failed' "$T/ocol" \
    && ok || no "--sweep-collect disagrees with the sweep: exit $rc, $(cat "$T/ocol")"
touch -d '2001-01-01' "$T"/o/run-*.csv
"$BIN" --sweep 'steps=5,1000000000 seed=1,2' -L 1 $C0 --sweep-out "$T/o" --jobs 4 --retry failed \
    >/dev/null 2>"$T/oerr" &
sweep_pid=$!
r1=$(wait_run "--seed=1 --steps=1000000000 --csv $T/o/")
r2=$(wait_run "--seed=2 --steps=1000000000 --csv $T/o/")
kill -TERM $sweep_pid
wait $sweep_pid
rc=$?
[ $rc -eq 130 ] && [ -n "$r1" ] && [ -n "$r2" ] && grep -q '4 runs, 2 to do' "$T/oerr" &&
    [ "$(count "$T/o" '$c["steps"] == 5')" -eq 2 ] &&
    [ -z "$(where "$T/o/results.csv" '$c["steps"] == 5' | cut -d, -f1 | while read -r id; do
        find "$T/o/run-$id.csv" -newermt '2002-01-01'; done)" ] \
    && ok || no "--retry failed after runs stopped from outside: exit $rc, $(cat "$T/oerr")"

# --- collect counts what the spec expects: a deleted CSV is missing, a CSV
# cut short or left as .tmp is truncated, a failure row is failed; each is
# listed as its --list line and the exit status is 1 until all are complete
collect() { "$BIN" --sweep-collect "$1" >"$T/ctable" 2>"$T/cerr"; crc=$?; }
counts() { grep -o '[0-9]* expected, [0-9]* complete, [0-9]* missing, [0-9]* truncated, [0-9]* running, [0-9]* corrupt, [0-9]* failed' "$T/cerr"; }
"$BIN" --sweep "$SPEC" $C --sweep-out "$T/c" --list >"$T/clist" 2>/dev/null
collect "$T/c"
[ $crc -eq 1 ] && [ "$(counts)" = "12 expected, 0 complete, 12 missing, 0 truncated, 0 running, 0 corrupt, 0 failed" ] \
    && ok || no "collect of 0 CSVs: exit $crc, $(cat "$T/cerr")"
[ "$(grep -c '  # missing$' "$T/cerr")" -eq 12 ] && ok || no "collect: the 12 missing runs not listed"
xargs -P 2 -I{} sh -c '{}' <"$T/clist"
csv_of() { sed -n "$1p" "$T/clist" | grep -o "$T/c/run-[0-9a-f]*\.csv"; }
rm "$(csv_of 3)"                                               # never ran
head -n 8 "$(csv_of 5)" >"$T/part" && mv "$T/part" "$(csv_of 5)" # cancelled at step 7
mv "$(csv_of 7)" "$(csv_of 7).tmp.99999"                         # killed before its end
collect "$T/c"
[ $crc -eq 1 ] && [ "$(counts)" = "12 expected, 9 complete, 1 missing, 2 truncated, 0 running, 0 corrupt, 0 failed" ] \
    && ok || no "collect after damage: exit $crc, $(cat "$T/cerr")"
grep -qxF "$(sed -n 3p "$T/clist")  # missing" "$T/cerr" && grep -qxF "$(sed -n 5p "$T/clist")  # truncated" "$T/cerr" \
    && ok || no "collect: the not-complete runs not listed as their --list lines: $(cat "$T/cerr")"
"$BIN" --sweep-collect "$T/c" --list >"$T/again" 2>/dev/null
[ $? -eq 1 ] && sed -n '3p;5p;7p' "$T/clist" | cmp -s - "$T/again" && ok \
    || no "collect --list: not the 3 runs' lines: $(cat "$T/again")"
sh "$T/again"
collect "$T/c"
[ $crc -eq 0 ] && [ "$(counts)" = "12 expected, 12 complete, 0 missing, 0 truncated, 0 running, 0 corrupt, 0 failed" ] \
    && ok || no "collect after running its list: exit $crc, $(cat "$T/cerr")"
results_rows "$T/c/results.csv" >"$T/rc"
cmp -s "$T/r1" "$T/rc" && ok || no "collect after a resubmission differs from --sweep"
# a row that records a failure (as an in-process sweep writes it) is failed
fid=$(csv_of 9 | sed 's/.*run-\(.*\)\.csv/\1/')
fail_row() {
    awk -F, -v OFS=, -v id="$fid" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
        NR > 1 && $1 == id { for (i = c["last_step"]; i <= c["train_s"]; i++) $i = ""
                             $c["status"] = "killed"; $c["reason"] = "signal 9" } { print }' \
        "$T/c/results.csv" >"$T/cr" && mv "$T/cr" "$T/c/results.csv"
}
fail_row
rm "$(csv_of 9)"
collect "$T/c"
[ $crc -eq 1 ] && [ "$(counts)" = "12 expected, 11 complete, 0 missing, 0 truncated, 0 running, 0 corrupt, 1 failed" ] \
    && grep -qxF "$(sed -n 9p "$T/clist")  # failed" "$T/cerr" \
    && ok || no "collect of a failure row: exit $crc, $(cat "$T/cerr")"

# --- collect reads what is in a CSV: a loss of "abc", a row with a field
# missing, bytes of garbage, a broken header, a CSV of other settings under
# a run's ID are each corrupt (listed, exit 1), never a result; a CSV in
# the making whose writer lives is running; without results.csv a corrupt
# run's row says corrupt and why; with it, the rows kept are counted
"$BIN" --sweep 'norm=post,pre layers=1..3' $C --sweep-out "$T/d" -q >/dev/null 2>&1
cp "$T/d/results.csv" "$T/d.rows"
"$BIN" --sweep 'norm=post,pre layers=1..3' $C --sweep-out "$T/d" --list >"$T/dlist" 2>/dev/null
dcsv() { sed -n "$1p" "$T/dlist" | grep -o "$T/d/run-[0-9a-f]*\.csv"; }
did() { dcsv "$1" | sed 's/.*run-\(.*\)\.csv/\1/'; }
# lines: 1 1/post 2 1/pre 3 2/post 4 2/pre 5 3/post 6 3/pre
awk -F, -v OFS=, 'NR == 21 { $2 = "abc" } { print }' "$(dcsv 1)" >"$T/dmg" && mv "$T/dmg" "$(dcsv 1)"
awk -F, -v OFS=, 'NR == 15 { $7 = ""; sub(/,,/, ",") } { print }' "$(dcsv 2)" >"$T/dmg" && mv "$T/dmg" "$(dcsv 2)"
{ head -n 18 "$(dcsv 3)"; printf 'x\001\377,,\n'; tail -n 2 "$(dcsv 3)"; } >"$T/dmg" && mv "$T/dmg" "$(dcsv 3)"
sed '1s/^step,loss/stp,los/' "$(dcsv 4)" >"$T/dmg" && mv "$T/dmg" "$(dcsv 4)"
cp "$(dcsv 6)" "$(dcsv 5)"           # a 3-layer Pre-LN CSV under a 3-layer Post-LN ID
mv "$(dcsv 6)" "$(dcsv 6).tmp.$$"     # this shell lives: its writer is running
rm "$T/d/results.csv"
collect "$T/d"
[ $crc -eq 1 ] && [ "$(counts)" = "6 expected, 0 complete, 0 missing, 0 truncated, 1 running, 5 corrupt, 0 failed" ] \
    && ok || no "collect of damaged CSVs: exit $crc, $(cat "$T/cerr")"
[ "$(grep -c '  # corrupt$' "$T/cerr")" -eq 5 ] && grep -qxF "$(sed -n 6p "$T/dlist")  # running" "$T/cerr" \
    && ok || no "collect: the corrupt and running runs not listed: $(cat "$T/cerr")"
rs() { awk -F, -v id="$(did "$1")" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $1 == id && $c["status"] == "corrupt" && $c["train_loss"] == "" { print $c["reason"] }' "$T/d/results.csv"; }
rs 1 | grep -q "line 21: loss 'abc'" && rs 2 | grep -q 'line 15: fewer fields' &&
    rs 3 | grep -q 'line 19: ' && rs 4 | grep -q 'line 1: not a run' &&
    rs 5 | grep -q "norm pre where the run's ID says --norm post" && ok \
    || no "corrupt rows' reasons: $(cut -d, -f1,13-16 "$T/d/results.csv")"
cp "$T/d.rows" "$T/d/results.csv"
collect "$T/d"
[ $crc -eq 1 ] && [ "$(counts)" = "6 expected, 0 complete, 0 missing, 0 truncated, 1 running, 5 corrupt, 0 failed" ] &&
    grep -q '5 rows kept from results.csv whose CSV is damaged or cut short' "$T/cerr" \
    && ok || no "collect of damaged CSVs beside results.csv: exit $crc, $(cat "$T/cerr")"
rm "$T/d"/run-*.csv*
collect "$T/d"
[ $crc -eq 0 ] && grep -q "6 rows kept from results.csv whose CSV is gone (the row is all there is of the run): $(did 1) " "$T/cerr" \
    && ok || no "collect of rows without CSVs: exit $crc, $(cat "$T/cerr")"
# a narrower spec over the same directory tabulates only its runs, per
# cell or per seed; DIR/summary.csv holds each cell's n, mean, sd, ci95
"$BIN" --sweep 'norm=post layers=1..3' $C --sweep-out "$T/d" >"$T/dt" 2>/dev/null
[ "$(wc -l <"$T/dt")" -eq 4 ] && ! grep -q ' pre ' "$T/dt" && [ "$(wc -l <"$T/d/summary.csv")" -eq 4 ] \
    && ok || no "a narrower spec's table: $(cat "$T/dt")"
"$BIN" --sweep 'seed=1..3' $C --sweep-out "$T/ps" --per-seed >"$T/pst" 2>/dev/null
head -1 "$T/pst" | grep -Eq '^seed +runs +n +final ' && [ "$(wc -l <"$T/pst")" -eq 4 ] &&
    awk -F, 'NR == 2 { s = $4; h = $5 } END { exit !(NR == 2 && s > 0 && h > 4.303 * s / sqrt(3) - 1e-5 && h < 4.303 * s / sqrt(3) + 1e-5) }' "$T/ps/summary.csv" \
    && ok || no "--per-seed: $(cat "$T/pst"), summary $(cat "$T/ps/summary.csv")"
awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { x[NR] = $c["val_loss"] }
    END { m = (x[2] + x[3] + x[4]) / 3; print m }' "$T/ps/results.csv" >"$T/psm"
awk -F, -v m="$(cat "$T/psm")" 'NR == 2 { exit !($3 - m < 1e-5 && m - $3 < 1e-5) }' "$T/ps/summary.csv" \
    && ok || no "summary.csv's mean is not the mean of the seeds' val_loss: $(cat "$T/psm") vs $(cat "$T/ps/summary.csv")"

# --- --list-range: lines A..B of the list, for an array size limit
"$BIN" --sweep "$SPEC" $C --sweep-out "$T/c" --list --list-range 5..8 >"$T/lr" 2>/dev/null
sed -n 5,8p "$T/clist" | cmp -s - "$T/lr" && ok || no "--list-range 5..8: $(cat "$T/lr")"
"$BIN" --sweep "$SPEC" $C --sweep-out "$T/c" --list --list-range 11..2000 >"$T/lr" 2>/dev/null
sed -n 11,12p "$T/clist" | cmp -s - "$T/lr" && ok || no "--list-range past the end: $(cat "$T/lr")"

# --- a failure stays a failure: a resume exits 1 and says so; --retry
# failed runs it again, once, and the grid is complete
"$BIN" --sweep "$SPEC" $C --sweep-out "$T/c" >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 1 ] && grep -q '1 run failed in an earlier attempt.*--retry failed' "$T/err" \
    && ok || no "resume over a failed row: exit $rc, $(cat "$T/err")"
"$BIN" --sweep "$SPEC" $C --sweep-out "$T/c" --retry failed >/dev/null 2>"$T/err"
rc=$?
[ $rc -eq 0 ] && grep -q '1 run to run again' "$T/err" && grep -q '12 runs, 1 to do' "$T/err" \
    && ok || no "--retry failed: exit $rc, $(cat "$T/err")"
[ "$(grep -c "^$fid," "$T/c/results.csv")" -eq 1 ] && [ "$(rows "$T/c")" -eq 12 ] \
    && ok || no "--retry failed: $(grep -c "^$fid," "$T/c/results.csv") rows of the run, $(rows "$T/c") in all"
results_rows "$T/c/results.csv" >"$T/rc"
cmp -s "$T/r1" "$T/rc" && ok || no "--retry failed: the rows differ from a sweep that never failed"

# --- one value, one spelling, one ID: widening lr=1e-3 keeps its run
"$BIN" --sweep 'lr=1e-3' $C --sweep-out "$T/v" -q >/dev/null 2>&1
"$BIN" --sweep 'lr=1e-3..1e-2*10' $C --sweep-out "$T/v" >"$T/vt" 2>"$T/err"
grep -q '2 runs, 1 to do' "$T/err" && [ "$(rows "$T/v")" -eq 2 ] && ok || no "widen lr=1e-3: $(cat "$T/err")"
[ "$(cut -d, -f2 "$T/v/results.csv" | tail -n +2 | sort | tr '\n' ' ')" = "0.001 0.01 " ] \
    && ok || no "widen: lr spelled $(cut -d, -f2 "$T/v/results.csv" | tr '\n' ' ')"
"$BIN" --sweep 'seed=01,2' $C --sweep-out "$T/v2" --list | grep -c -- '--seed=1 ' | grep -qx 1 \
    && ok || no "seed=01 not spelled 1"

# --- one sweep per directory: a second is refused with the holder's pid;
# kill -9 of the sweep takes its runs with it and frees the directory
"$BIN" --sweep 'steps=1000000000' -L 1 $C0 --sweep-out "$T/lk" --jobs 1 -q >/dev/null 2>&1 &
sweep_pid=$!
run=$(wait_run "--steps=1000000000 --csv $T/lk/")
"$BIN" --sweep 'steps=1000000000' -L 1 $C0 --sweep-out "$T/lk" -q >/dev/null 2>"$T/err"
rc=$?
# the holder by pid, user and host: a pid alone means nothing on another node
[ $rc -eq 1 ] && grep -qF "another sweep (pid $sweep_pid of $(id -un) on $(hostname)) is using this directory" "$T/err" \
    && ok || no "a second sweep on one directory: exit $rc, $(cat "$T/err")"
"$BIN" --sweep-collect "$T/lk" >/dev/null 2>"$T/err"
grep -q "pid $sweep_pid" "$T/err" && ok || no "--sweep-collect beside a sweep: $(cat "$T/err")"
kill -9 "$sweep_pid"
wait "$sweep_pid" 2>/dev/null
# gone, or a zombie nobody reaps (PID 1 in a container may not): ns_alive
for i in $(seq 1 100); do
    ns_alive "$run" || break
    sleep 0.1
done
[ -n "$run" ] && ! ns_alive "$run" && ok || no "a run outlived its sweep's kill -9 (pid $run)"
"$BIN" --sweep-collect "$T/lk" >/dev/null 2>"$T/err"
grep -q 'another sweep' "$T/err" && no "the lock outlived its sweep: $(cat "$T/err")" || ok
# the same where the kernel cannot send the run a signal when its parent
# dies (macOS has no PR_SET_PDEATHSIG): NORMSCOPE_PARENT_WATCH=poll makes
# this Linux sweep take that way, the run watching its parent's pid
NORMSCOPE_PARENT_WATCH=poll "$BIN" --sweep 'steps=1000000000' -L 1 $C0 --sweep-out "$T/lp" \
    --jobs 1 -q >/dev/null 2>&1 &
sweep_pid=$!
run=$(wait_run "--steps=1000000000 --csv $T/lp/")
# (its environment is read where /proc shows it)
if [ -d /proc/self ]; then
    [ -n "$run" ] && tr '\0' '\n' <"/proc/$run/environ" 2>/dev/null |
        grep -qx "NORMSCOPE_SWEEP_PARENT=$sweep_pid" && ok || no "the run was not told its sweep's pid (pid $run)"
fi
kill -9 "$sweep_pid"
wait "$sweep_pid" 2>/dev/null
for i in $(seq 1 100); do
    ns_alive "$run" || break
    sleep 0.1
done
[ -n "$run" ] && ! ns_alive "$run" && ok ||
    no "NORMSCOPE_PARENT_WATCH=poll: a run outlived its sweep's kill -9 (pid $run)"

# --- outliers: without normalization at lr 1 the loss blows up (finite, to
# 1e+12 on this grid) or diverges; such a run is exploded (above its first
# step's loss), never stalled; at lr 1e-2 none explodes. The table keeps
# its numbers short and its lines within 80 columns.
"$BIN" --sweep 'norm=none,pre lr=1e-2,1 seed=1,2' -L 2 $C --steps 60 --warmup 0 \
    --sweep-out "$T/ex" -q >"$T/ext" 2>/dev/null
[ "$(where "$T/ex/results.csv" '$c["lr"] == 1 && $c["norm"] == "none" && ($c["exploded"] == 1 || $c["status"] == "diverged") && $c["stalled"] == 0' | wc -l)" -eq 2 ] \
    && ok || no "norm=none lr=1: not exploded or diverged: $(cat "$T/ex/results.csv")"
[ "$(where "$T/ex/results.csv" '$c["lr"] == 0.01 && $c["exploded"] == 1' | wc -l)" -eq 0 ] \
    && ok || no "lr=1e-2 exploded: $(cat "$T/ex/results.csv")"
[ "$(where "$T/ex/results.csv" '$c["exploded"] == 1' | wc -l)" -ge 2 ] && ok || no "no exploded run: $(cat "$T/ex/results.csv")"
awk 'length($0) > 80 { bad = 1 } END { exit bad }' "$T/ext" && ok || no "the table is wider than 80 columns: $(cat "$T/ext")"
grep -Eq '[0-9]{8}' "$T/ext" && no "the table prints a long number: $(cat "$T/ext")" || ok
grep -Eq '^1 +none +2 +[0-9] +[^ ]+ +[^ ]+ +[^ ]+ +[0-9] +0 +[12] ' "$T/ext" && ok || no "the lr=1 none cell's counts: $(cat "$T/ext")"

# The numbers normscope-lessons(7) quotes from these grids (its A LARGER
# MAP section, read as one line of words) are the runs': a loss to the
# digits quoted, a learning rate exactly.
MAN7=$(dirname "$0")/../../man/normscope-lessons.7
larger_map() { sed -n '/^\.Sh A LARGER MAP/,/^\.Sh AFTER CLASS/p' "$MAN7" | sed 's/^\.[A-Z][a-z] //' | tr '\n' ' '; }
# page_quotes DESC ERE "GOT1 GOT2": the two numbers ERE's groups catch on
# the page are GOT1 and GOT2, rounded to the decimals each quotes
page_quotes() {
    q=$(larger_map | sed -nE "s/.*$2.*/\1 \2/p")
    if [ -z "$q" ]; then
        no "normscope-lessons(7) no longer says /$2/ ($1): measure again and fix the check"
        return
    fi
    # shellcheck disable=SC2016
    awk -v q="$q" -v g="$3" 'BEGIN {
        split(q, a, " "); split(g, b, " ")
        for (i = 1; i <= 2; i++) {
            w = a[i]; sub(/^\+/, "", w)
            if (w ~ /e/) { if (w + 0 != b[i] + 0) exit 1; continue }
            d = index(w, ".") ? length(w) - index(w, ".") : 0
            if (sprintf("%." d "f", b[i]) + 0 != w + 0) exit 1
        }
    }' && ok || no "normscope-lessons(7) quotes $q for $1; the runs give $3"
}
# val_range FILE WARMUP: the lowest and highest val_loss of the runs with
# that warmup
val_range() {
    awk -F, -v w="$2" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["warmup"] == w { v = $c["val_loss"] + 0; if (n++ == 0 || v < lo) lo = v; if (n == 1 || v > hi) hi = v }
        END { print lo, hi }' "$1"
}

# --- the papers, in direction (Xiong et al. 2020; Liu et al. 2020): at a
# fixed learning rate without warmup, the Post-LN minus Pre-LN validation
# loss gap grows with depth. Measured on this grid: -0.13 nats at 2 layers,
# +0.28 at 8 (seeds 1-2); seeds 3-6 gave -0.18 and +0.25, with the 8-layer
# Post-LN runs stalled at the unigram plateau (3.09 nats) and none of the
# Pre-LN ones. Eight runs of a second or so; not under the sanitizers.
if [ -z "$NS_SANITIZED" ]; then
"$BIN" --sweep 'norm=post,pre layers=2,8 seed=1,2' --lr 3e-3 -d 32 -H 2 -T 32 -B 8 --steps 120 \
    --warmup 0 --val-every 20 --sweep-out "$T/claim" -q >/dev/null 2>&1
g2=$(claim_gap "$T/claim/results.csv" 2 2)
g8=$(claim_gap "$T/claim/results.csv" 8 2)
awk -v a="$g2" -v b="$g8" 'BEGIN { exit !(a != "none" && b != "none" && b - a > 0.2) }' \
    && ok || no "Post-LN - Pre-LN gap: $g2 at 2 layers, $g8 at 8; want it to grow by > 0.2 nats"
page_quotes "the gap at 2 and 8 layers" 'gap grows with depth \((-?[0-9.]+) nats at 2 layers, \+?(-?[0-9.]+) at 8' "$g2 $g8"
[ "$(count "$T/claim" '$c["layers"] == 8 && $c["norm"] == "post" && $c["last_step"] == 120 && $c["stalled"] == 1 && $c["state"] == "stalled" && $c["status"] == "stalled"')" -eq 2 ] \
    && ok || no "8-layer Post-LN runs not stalled"
[ "$(count "$T/claim" '$c["layers"] == 8 && $c["norm"] == "pre" && $c["last_step"] == 120 && $c["stalled"] == 0 && $c["status"] == "ok"')" -eq 2 ] \
    && ok || no "8-layer Pre-LN runs stalled"
# The largest learning rate that trains (every seed neither diverged nor
# stalled) is larger for Pre-LN than for Post-LN (Xiong et al. 2020).
# Measured at 4 layers, 200 steps, no warmup: at 3e-3 both train (val
# 2.50-2.62); at 1e-2 Post-LN stalls (3.08, 3.11) and Pre-LN trains (2.65,
# 2.74). Eight runs.
"$BIN" --sweep 'norm=post,pre lr=3e-3,1e-2 seed=1,2' -L 4 -d 32 -H 2 -T 32 -B 8 --steps 200 \
    --warmup 0 --val-every 20 --sweep-out "$T/claim2" -q >/dev/null 2>&1
bpost=$(claim_best "$T/claim2/results.csv" post 2)
bpre=$(claim_best "$T/claim2/results.csv" pre 2)
[ "$(rows "$T/claim2")" -eq 8 ] && awk -v a="$bpost" -v b="$bpre" 'BEGIN { exit !(a > 0 && b > a) }' \
    && ok || no "largest LR that trains: Post-LN $bpost, Pre-LN $bpre; want Pre-LN's larger"
page_quotes "the largest LRs that train" 'larger for Pre-LN \(([0-9.e-]+)\) than for Post-LN \(([0-9.e-]+)\) at 4' "$bpre $bpost"
# Warmup takes that stalled cell off the plateau for every seed (Xiong et
# al. 2020: Post-LN needs warmup). Measured at 4 layers, lr 1e-2, 200
# steps: without warmup seeds 1-3 stall (3.08-3.11), with 100 warmup steps
# they train (2.54-2.66). Asserted on seeds 1-3: every run without warmup
# stalled, every run with it ok, not stalled and 0.3 nats below 3.09.
"$BIN" --sweep 'warmup=0,100 seed=1..3' --norm post -L 4 -d 32 -H 2 -T 32 -B 8 --steps 200 \
    --lr 1e-2 --val-every 20 --sweep-out "$T/claim3" -q >/dev/null 2>&1
[ "$(where "$T/claim3/results.csv" '$c["warmup"] == 0 && $c["stalled"] == 1' | wc -l)" -eq 3 ] \
    && ok || no "Post-LN at lr 1e-2 without warmup did not stall for every seed: $(cat "$T/claim3/results.csv")"
[ "$(where "$T/claim3/results.csv" '$c["warmup"] == 100 && $c["stalled"] == 0 && $c["status"] == "ok" && $c["val_loss"] < 2.79' | wc -l)" -eq 3 ] \
    && ok || no "100 warmup steps did not rescue every seed: $(cat "$T/claim3/results.csv")"
page_quotes "the stalled seeds" 'stalls for every seed \(([0-9.]+) to ([0-9.]+) nats, seeds 1 to 3\)' \
    "$(val_range "$T/claim3/results.csv" 0)"
page_quotes "the seeds warmup rescues" 'take every seed off the plateau \(([0-9.]+) to ([0-9.]+)\)' \
    "$(val_range "$T/claim3/results.csv" 100)"
fi

# --- --loss-at: results.csv's loss_at_N holds the loss field of step N of
# the run's own CSV, as written; empty when the run never got there (norm
# none at lr 10 diverges within a few steps, pre at lr 10 blows up before
# 60; 100 is past --steps); the table folds them per cell
LA="-L 2 $C --steps 60 --warmup 0"
"$BIN" --sweep 'norm=none,pre lr=1e-2,10 seed=1,2' $LA --loss-at '10, 30,60,100' \
    --sweep-out "$T/la" -q >"$T/lat" 2>/dev/null
head -1 "$T/la/results.csv" | grep -q ',train_s,loss_at_10,loss_at_30,loss_at_60,loss_at_100,layers,' \
    && ok || no "--loss-at columns: $(head -1 "$T/la/results.csv")"
# step N's loss in a run's CSV, by column name; "-" when it has no row N
csv_loss() { awk -F, -v n="$2" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                                $c["step"] == n { v = $c["loss"]; got = 1 }
                                END { print got ? v : "-" }' "$1"; }
# loss_at_agree DIR N...: each row's loss_at_N against step N of its own
# CSV (empty where it has none); prints "MISMATCHES EMPTY FILLED"
loss_at_agree() {
    d=$1 bad=0 empty=0 full=0
    shift
    for id in $(tail -n +2 "$d/results.csv" | cut -d, -f1); do
        for n in "$@"; do
            cell=$(where "$d/results.csv" "\$1 == \"$id\" { print \$c[\"loss_at_$n\"] }")
            want=$(csv_loss "$d/run-$id.csv" "$n")
            if [ "$want" = - ]; then
                [ -z "$cell" ] || { bad=$((bad + 1)); echo "run $id step $n: '$cell', want empty" >&2; }
                empty=$((empty + 1))
            else
                [ "$cell" = "$want" ] || { bad=$((bad + 1)); echo "run $id step $n: '$cell', want '$want'" >&2; }
                full=$((full + 1))
            fi
        done
    done
    echo "$bad $empty $full"
}
# every cell is its step's loss; some runs stopped before 30 or 60 (their
# cell empty), most got there
set -- $(loss_at_agree "$T/la" 10 30 60)
[ "$1" -eq 0 ] && [ "$2" -ge 2 ] && [ "$3" -ge 12 ] && ok ||
    no "loss_at_N against the runs' CSVs: $1 differ, $2 stopped short, $3 reached"
[ "$(count "$T/la" '$c["loss_at_100"] == ""')" -eq 8 ] && ok || no "loss_at_100 past --steps 60 is not empty"
head -1 "$T/lat" | grep -Eq ' n@10 +loss@10 +sd@10 +ci95@10 .* n@100 +loss@100 +sd@100 +ci95@100$' \
    && ok || no "the table's --loss-at columns: $(head -1 "$T/lat")"
# summary.csv's mean at step 30 of the lr=0.01 pre cell: the rows' own mean
m=$(where "$T/la/results.csv" '$c["lr"] == 0.01 && $c["norm"] == "pre" { s += $c["loss_at_30"]; k++ } END { print s / k }')
where "$T/la/summary.csv" '$c["lr"] == 0.01 && $c["norm"] == "pre" { print $c["n@30"], $c["loss@30"] }' >"$T/lam"
awk -v m="$m" '{ d = $2 - m; exit !($1 == 2 && d < 1e-5 && d > -1e-5) }' "$T/lam" \
    && ok || no "summary.csv's loss@30 $(cat "$T/lam"), want n 2 mean $m"
# resume: the same steps in another spelling are the same sweep
"$BIN" --sweep 'norm=none,pre lr=1e-2,10 seed=1,2' $LA --loss-at '10,30, 60 ,100' \
    --sweep-out "$T/la" >/dev/null 2>"$T/err"
grep -q '8 runs, 0 to do' "$T/err" && ok || no "--loss-at respelled, resume: $(cat "$T/err")"
# other steps, or none: refused, naming both, results.csv as it was
cp "$T/la/results.csv" "$T/la.before"
expect_bad "columns of --loss-at 10,30,60,100, not of --loss-at 30; give --loss-at 10,30,60,100" \
    --sweep 'norm=none,pre lr=1e-2,10 seed=1,2' $LA --loss-at 30 --sweep-out "$T/la"
expect_bad "not of no --loss-at" --sweep 'norm=none,pre lr=1e-2,10 seed=1,2' $LA --sweep-out "$T/la"
expect_bad "columns of --loss-at 10,30,60,100, not of --loss-at 30" --sweep-collect "$T/la" --loss-at 30
cmp -s "$T/la.before" "$T/la/results.csv" && ok || no "a refused --loss-at changed results.csv"
# --sweep-collect without --loss-at takes sweep.spec's
"$BIN" --sweep-collect "$T/la" >/dev/null 2>&1
results_rows "$T/la.before" >"$T/lr1"
results_rows "$T/la/results.csv" >"$T/lr2"
cmp -s "$T/lr1" "$T/lr2" && ok || no "--sweep-collect changed the --loss-at rows"
# the rows it kept read back whole: their wall time stays
[ "$(count "$T/la" '$c["wall_s"] != ""')" -eq 8 ] && ok || no "collect lost wall_s of --loss-at rows"
# results.csv moved aside: collect rebuilds it with the new steps, and
# sweep.spec records them for the next resume
mv "$T/la/results.csv" "$T/la.old"
"$BIN" --sweep-collect "$T/la" --loss-at 30 >/dev/null 2>&1
head -1 "$T/la/results.csv" | tr , '\n' | grep loss_at_ | tr '\n' ' ' >"$T/lah"
[ "$(cat "$T/lah")" = "loss_at_30 " ] && grep -qx 'loss-at: 30' "$T/la/sweep.spec" \
    && ok || no "collect --loss-at 30: columns $(cat "$T/lah"), $(grep loss-at "$T/la/sweep.spec")"
where "$T/la.old" '{ print $1, $c["loss_at_30"] }' | sort >"$T/la30a"
where "$T/la/results.csv" '{ print $1, $c["loss_at_30"] }' | sort >"$T/la30b"
[ -s "$T/la30a" ] && cmp -s "$T/la30a" "$T/la30b" && ok || no "collect --loss-at 30: other losses"
"$BIN" --sweep 'norm=none,pre lr=1e-2,10 seed=1,2' $LA --loss-at 30 --sweep-out "$T/la" \
    >/dev/null 2>"$T/err"
grep -q '8 runs, 0 to do' "$T/err" && ok || no "resume after collect --loss-at 30: $(cat "$T/err")"
# --list: another scheduler's runs, collected, get the same columns
"$BIN" --sweep 'lr=1e-2,2e-2' $C --loss-at 5,20 --sweep-out "$T/lal" --list >"$T/lall"
sh "$T/lall" && "$BIN" --sweep-collect "$T/lal" >/dev/null 2>&1
[ "$(rows "$T/lal")" -eq 2 ] && [ "$(loss_at_agree "$T/lal" 5 20)" = "0 0 4" ] && ok ||
    no "--list --loss-at, collected: $(cat "$T/lal/results.csv")"
# bad steps: one line, exit 2, nothing written
for v in 0 -5 abc '' 10,10 30,10 10, 1000000001 "$(seq -s, 1 17)"; do
    expect_bad "--loss-at '" --sweep 'lr=1e-3' $C --loss-at "$v" --sweep-out "$T/bad"
done
expect_bad "at most 16" --sweep 'lr=1e-3' $C --loss-at "$(seq -s, 1 17)" --sweep-out "$T/bad"
expect_bad "must increase" --sweep 'lr=1e-3' $C --loss-at 30,10 --sweep-out "$T/bad"
expect_bad "--loss-at and --yes go with --sweep" --loss-at 10 $C

# --- bad input: one line, exit 2, nothing written
expect_bad "unknown option '--frob'" --sweep 'frob=1,2' $C --sweep-out "$T/bad"
expect_bad "--lr '20'" --sweep 'lr=1e-3,20' $C --sweep-out "$T/bad"
expect_bad "--layers '0'" --sweep 'layers=0..2' $C --sweep-out "$T/bad"
expect_bad "empty value" --sweep 'lr=' $C --sweep-out "$T/bad"
expect_bad "empty value" --sweep 'lr=1e-3,,1e-2' $C --sweep-out "$T/bad"
expect_bad "no axes" --sweep '  ' $C --sweep-out "$T/bad"
expect_bad "expected NAME=" --sweep 'layers' $C --sweep-out "$T/bad"
expect_bad "given twice" --sweep 'lr=1e-3,1e-3' $C --sweep-out "$T/bad"
expect_bad "given twice" --sweep 'lr=1e-3 lr=1e-2' $C --sweep-out "$T/bad"
expect_bad "'1e-3' and '0.001' are one value" --sweep 'lr=1e-3,0.001' $C --sweep-out "$T/bad"
expect_bad "are one value" --sweep 'lr=1e-3,1e-3..1e-2*10' $C --sweep-out "$T/bad"
expect_bad "are one value" --sweep 'seed=1,01' $C --sweep-out "$T/bad"
expect_bad "No such file" --sweep 'lr=1e-3' $C --sweep-out "$T/bad/sub"
expect_bad "--retry 'all'" --sweep 'lr=1e-3' $C --retry all --sweep-out "$T/bad"
expect_bad "--retry runs" --sweep 'lr=1e-3' $C --retry failed --list --sweep-out "$T/bad"
expect_bad "--list-range '0..3'" --sweep 'lr=1e-3' $C --list --list-range 0..3 --sweep-out "$T/bad"
expect_bad "--list-range '5..2'" --sweep 'lr=1e-3' $C --list --list-range 5..2 --sweep-out "$T/bad"
expect_bad "--list-range 'x'" --sweep 'lr=1e-3' $C --list --list-range x --sweep-out "$T/bad"
expect_bad "goes with --list" --sweep 'lr=1e-3' $C --list-range 1..2 --sweep-out "$T/bad"
expect_bad "factor above 1" --sweep 'lr=1e-4..1e-2*1' $C --sweep-out "$T/bad"
expect_bad "A <= B" --sweep 'seed=3..1' $C --sweep-out "$T/bad"
expect_bad "cannot vary" --sweep 'csv=a,b' $C --sweep-out "$T/bad"
# an axis and a flag for one setting: refused, in any of the flag's spellings
expect_bad "axis 'lr' and the flag --lr" --sweep 'lr=1e-2,1e-3' $C --lr 1e-3 --sweep-out "$T/bad"
expect_bad "axis 'layers' and the flag --layers" --sweep 'layers=1,2' $C -L2 --sweep-out "$T/bad"
expect_bad "axis 'seed' and the flag --seed" --sweep 'seed=1,2' $C --seed=3 --sweep-out "$T/bad"
expect_bad "longer than" --sweep "seed=$(seq -s, 1 3000)" $C --sweep-out "$T/bad"
expect_bad "takes no value" --sweep 'ascii=1,2' $C --sweep-out "$T/bad"
expect_bad "--heads" --sweep 'dim=16,24' -T 8 -B 2 --steps 20 -H 16 --sweep-out "$T/bad"
expect_bad "need --yes" --sweep 'seed=1..101 layers=1..100' $C --sweep-out "$T/bad"
expect_bad "more than 10000 values" --sweep 'seed=1..10001' $C --sweep-out "$T/bad"
expect_bad "--steps 0" --sweep 'lr=1e-3' -d 16 -H 2 --steps 0 --sweep-out "$T/bad"
expect_bad "--csv cannot" --sweep 'lr=1e-3' $C --csv "$T/x.csv" --sweep-out "$T/bad"
expect_bad "--data" --sweep 'lr=1e-3' $C --data "$T/missing" --sweep-out "$T/bad"
expect_bad "go with --sweep" --list $C
expect_bad "go with --sweep" --jobs 2 $C
expect_bad "--jobs" --sweep 'lr=1e-3' --jobs 0 $C --sweep-out "$T/bad"
expect_bad "sweep.spec" --sweep-collect "$T/bad"
# a sweep lesson is its own --sweep (tests/sh/lessons.sh runs it)
expect_bad "a sweep of its own" --lesson stability-map --sweep 'lr=1e-3' --sweep-out "$T/bad"
expect_bad "a sweep of its own" --lesson=stability-map --sweep-collect "$T/bad"
mkdir "$T/full" && : >"$T/full/notes.txt"
expect_bad "not a sweep" --sweep 'lr=1e-3' $C --sweep-out "$T/full"
# another sweep's directory: refused, and left as it was
cp "$T/s2/results.csv" "$T/s2.before"
expect_bad "another sweep" --sweep 'lr=1e-3,1e-2' $C --sweep-out "$T/s2"
expect_bad "another sweep" --sweep "$SPEC" $C --seed 7 --sweep-out "$T/s2"
cmp -s "$T/s2.before" "$T/s2/results.csv" && ok || no "a refused sweep changed another's results"
[ -z "$(ls "$T/s2" | grep -v -e '^run-[0-9a-f]*\.csv$' -e '^results.csv$' -e '^summary.csv$' -e '^sweep.spec$' -e '^sweep.lock$')" ] \
    && ok || no "stray files in a sweep dir: $(ls "$T/s2")"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
