#!/bin/sh
# sched.sh - a sweep run by other schedulers, as the README shows it: the
# --list lines through GNU parallel, and through a real single-node Slurm
# started here on localhost (munged, slurmctld and slurmd as this user,
# proctrack/linuxproc, task/none: no cgroups) as job arrays in pieces of
# --list-range, with --sweep-collect as an afterany job, then a resubmission
# of what collect lists as not complete. Each must build the results.csv the
# in-process sweep builds. Where parallel is missing or the daemons cannot
# start, that part says SKIPPED and counts neither as passed nor failed.
# The daemons started here are stopped here, by their pids.
# Usage: NS_BIN=./normscope sh tests/sh/sched.sh
# Prints "N passed, N failed, N skipped"; exits non-zero on any failure.
BIN=$(cd "$(dirname "${NS_BIN:-./normscope}")" && pwd)/$(basename "${NS_BIN:-./normscope}")
README=$(cd "$(dirname "$0")/../.." && pwd)/README.md
# shellcheck source=../lib/results_lib.sh
. "$(dirname "$0")/../lib/results_lib.sh"
T=$(mktemp -d /tmp/ns_sched.XXXXXX)
pass=0
fail=0
skip=0
ok() { pass=$((pass + 1)); }
no() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
skipped() { skip=$((skip + 1)); echo "SKIPPED: $*" >&2; }
daemons=
stop_daemons() {
    for p in $daemons; do kill "$p" 2>/dev/null; done
    for p in $daemons; do
        for i in $(seq 1 50); do [ -d "/proc/$p" ] || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null
    done
    daemons=
}
trap 'stop_daemons; rm -rf "$T"' EXIT
trap 'exit 130' INT TERM

# tiny runs, 2 x 2 x 3 = 12 of them
C="-d 16 -H 2 -T 8 -B 2 --steps 20 --val-every 5 --val-batches 1"
SPEC='norm=post,pre layers=1..2 lr=1e-3..1e-2*10^0.5'
"$BIN" --sweep "$SPEC" $C --sweep-out "$T/ref" --jobs 2 -q --headless >/dev/null 2>&1
rows_of() { results_rows "$1/results.csv"; }
rows_of "$T/ref" >"$T/ref.rows"
[ "$(wc -l <"$T/ref.rows")" -eq 13 ] && ok || no "the in-process sweep: $(wc -l <"$T/ref.rows") lines"

# The README's block that begins with the line $1, up to its closing fence.
readme_block() {
    awk -v first="$1" '$0 == first { on = 1 } on && /^```/ { exit } on' "$README"
}

# --- GNU parallel: the README's two lines, parallel for xargs ---
if command -v parallel >/dev/null 2>&1; then
    mkdir "$T/par" && cd "$T/par" || exit 1
    "$BIN" --sweep "$SPEC" $C --sweep-out grid --list | parallel -j 2 >/dev/null 2>"$T/par.err"
    "$BIN" --sweep-collect grid >/dev/null 2>"$T/par.collect"
    rc=$?
    [ $rc -eq 0 ] && grep -q '12 expected, 12 complete, 0 missing' "$T/par.collect" && ok \
        || no "parallel, then --sweep-collect: exit $rc, $(cat "$T/par.err" "$T/par.collect")"
    rows_of grid | cmp -s - "$T/ref.rows" && ok || no "parallel's results differ from the sweep's"
    # what collect lists, run by parallel, completes the grid
    rm grid/run-*.csv
    head -n 5 grid/results.csv >grid/r && mv grid/r grid/results.csv
    "$BIN" --sweep-collect grid --list 2>/dev/null | parallel -j 2 >/dev/null 2>&1
    "$BIN" --sweep-collect grid >/dev/null 2>"$T/par.collect"
    rc=$?
    [ $rc -eq 0 ] && rows_of grid | cmp -s - "$T/ref.rows" && ok \
        || no "collect --list | parallel: exit $rc, $(cat "$T/par.collect")"
    cd "$T" || exit 1
else
    skipped "GNU parallel is not installed"
fi

# --- Slurm: a cluster of one node, this machine ---
slurm_up() {
    for t in munged slurmctld slurmd sbatch squeue scontrol mungekey; do
        command -v "$t" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin:/sbin
        command -v "$t" >/dev/null 2>&1 || { echo "no $t (Debian: munge, slurm-wlm)"; return 1; }
    done
    S=$T/slurm
    mkdir -p "$S/state" "$S/spool" || return 1
    mungekey -c -k "$S/munge.key" >/dev/null 2>&1 && chmod 600 "$S/munge.key" || { echo "mungekey failed"; return 1; }
    munged -F -f --socket="$S/munge.sock" --key-file="$S/munge.key" --log-file="$S/munged.log" \
        --pid-file="$S/munged.pid" --seed-file="$S/munged.seed" >"$S/munged.out" 2>&1 &
    daemons="$daemons $!"
    for i in $(seq 1 50); do [ -S "$S/munge.sock" ] && break; sleep 0.1; done
    [ -S "$S/munge.sock" ] || { echo "munged did not start: $(tail -2 "$S/munged.out")"; return 1; }
    node=$(slurmd -C 2>/dev/null | head -1)
    case "$node" in NodeName=*) ;; *) echo "slurmd -C: $node"; return 1 ;; esac
    port=$((20000 + $$ % 20000))
    cat >"$S/slurm.conf" <<EOF
ClusterName=normscope
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$S/munge.sock
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
MinJobAge=600
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    export SLURM_CONF="$S/slurm.conf"
    slurmctld -D -f "$SLURM_CONF" >"$S/slurmctld.out" 2>&1 &
    daemons="$daemons $!"
    slurmd -D -f "$SLURM_CONF" >"$S/slurmd.out" 2>&1 &
    daemons="$daemons $!"
    for i in $(seq 1 100); do
        sinfo -h -o %T 2>/dev/null | grep -qx idle && return 0
        sleep 0.2
    done
    echo "the node never came up: $(tail -2 "$S/slurmctld.log" "$S/slurmd.log" 2>/dev/null | tr '\n' ' ')"
    return 1
}

# Wait for the queue to empty (a minute at most).
slurm_drain() {
    for i in $(seq 1 300); do
        [ -z "$(squeue -h 2>/dev/null)" ] && return 0
        sleep 0.2
    done
    return 1
}

# The README's array block, run as written with normscope on PATH, but
# pieces of 5 lines (--list-range) instead of 1000 so that 12 runs make
# three arrays, and this grid's flags for --steps 300.
slurm_readme() {
    readme_block 'normscope --sweep "$SPEC" --steps 300 --sweep-out grid --list >runs.txt' \
        | sed -e '/^# if it exits 1/,$d' -e "s/--steps 300/$C/g" \
              -e 's/seq 1 1000/seq 1 5/' -e 's/a + 999/a + 4/'
}
slurm_resubmit() {
    readme_block 'normscope --sweep "$SPEC" --steps 300 --sweep-out grid --list >runs.txt' \
        | sed -n '/^# if it exits 1/,$p'
}

if slurm_up >"$T/why" 2>&1; then
    mkdir "$T/sl" && cd "$T/sl" || exit 1
    mkdir bin && ln -s "$BIN" bin/normscope
    PATH=$T/sl/bin:$PATH
    export PATH SPEC
    slurm_readme >submit.sh
    grep -q -- '--list-range' submit.sh && grep -q 'afterany' submit.sh && ok \
        || no "the README's Slurm block lacks --list-range or afterany: $(cat submit.sh)"
    sh submit.sh >submit.out 2>&1
    rc=$?
    [ $rc -eq 0 ] && ok || no "the README's sbatch lines: exit $rc, $(cat submit.out)"
    [ "$(ls runs-*.txt 2>/dev/null | wc -l)" -eq 3 ] && ok || no "--list-range pieces: $(ls)"
    slurm_drain && ok || no "the jobs did not end in a minute: $(squeue)"
    grep -q '12 expected, 12 complete, 0 missing, 0 truncated, 0 running, 0 corrupt, 0 failed' slurm-*.out 2>/dev/null \
        && ok || no "the afterany collect job's output: $(cat slurm-*.out 2>/dev/null | grep -v '^ ' | head -5)"
    rows_of grid | cmp -s - "$T/ref.rows" && ok || { no "Slurm's results differ from the sweep's"; rows_of grid | diff - "$T/ref.rows" >&2; }
    # two runs lost (a node failure): collect lists them, the README's
    # resubmission runs them, and the grid is whole again
    rm "$(sed -n 2p runs.txt | grep -o 'grid/run-[0-9a-f]*\.csv')" \
       "$(sed -n 11p runs.txt | grep -o 'grid/run-[0-9a-f]*\.csv')"
    head -n 1 grid/results.csv >grid/r && mv grid/r grid/results.csv
    normscope --sweep-collect grid >/dev/null 2>collect.err
    rc=$?
    [ $rc -eq 1 ] && grep -q '12 expected, 10 complete, 2 missing' collect.err && ok \
        || no "collect after two runs lost: exit $rc, $(cat collect.err)"
    slurm_resubmit | sh >resubmit.out 2>&1
    [ "$(wc -l <again.txt)" -eq 2 ] && ok || no "the resubmission: $(wc -l <again.txt) runs, want 2"
    slurm_drain
    normscope --sweep-collect grid >/dev/null 2>collect.err
    rc=$?
    [ $rc -eq 0 ] && rows_of grid | cmp -s - "$T/ref.rows" && ok \
        || no "after the resubmission: exit $rc, $(cat collect.err resubmit.out)"
    cd "$T" || exit 1
    stop_daemons
else
    skipped "Slurm: $(tail -1 "$T/why")"
    stop_daemons
fi

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
