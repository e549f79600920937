# shellcheck shell=sh
# posix_lib.sh - the GNU and Linux conveniences the shell suites used,
# done with POSIX tools, so that make test's scripts run where coreutils
# is BSD's (macOS) or busybox's (Alpine). Sourced, not run; POSIX sh.
#
# ns_cut_out COLS [FILE]: FILE's (or standard input's) comma-separated
# lines without the columns COLS (a comma list, as cut -f takes: "6" or
# "6,9"); GNU's cut -d, -fCOLS --complement.
ns_cut_out() {
    _ns_cols=$1
    shift
    awk -F, -v cols="$_ns_cols" 'BEGIN { n = split(cols, c, ","); for (i = 1; i <= n; i++) drop[c[i]] = 1 }
        { out = ""; sep = ""
          for (i = 1; i <= NF; i++) if (!(i in drop)) { out = out sep $i; sep = "," }
          print out }' "$@"
}

# ns_timeout SECS CMD...: CMD, sent SIGTERM after SECS seconds (then exit
# 124, as timeout(1) says); coreutils' timeout when there is one. Without
# it, CMD runs in the background (its stdin is the caller's only when the
# caller redirects it, as every suite does: </dev/null) and a watcher
# stops it.
ns_timeout() {
    if command -v timeout >/dev/null 2>&1; then
        timeout "$@"
        return
    fi
    _ns_secs=$1
    shift
    "$@" &
    _ns_pid=$!
    (sleep "$_ns_secs" && kill -TERM "$_ns_pid" 2>/dev/null && echo x >"${TMPDIR:-/tmp}/ns_timeout.$_ns_pid") \
        >/dev/null 2>&1 </dev/null &
    _ns_watch=$!
    wait "$_ns_pid"
    _ns_rc=$?
    kill "$_ns_watch" 2>/dev/null
    wait "$_ns_watch" 2>/dev/null
    if [ -e "${TMPDIR:-/tmp}/ns_timeout.$_ns_pid" ]; then
        rm -f "${TMPDIR:-/tmp}/ns_timeout.$_ns_pid"
        return 124
    fi
    return $_ns_rc
}

# ns_find_pid TEXT: the pid of a process whose command line holds TEXT
# (one; empty when none): /proc where there is one (procps's pgrep may be
# absent in a container), else ps -A -o pid=,args= (POSIX: macOS, BSD)
ns_find_pid() {
    if [ -d /proc/self ]; then
        for _ns_d in /proc/[0-9]*; do
            _ns_c=$(tr '\0' ' ' 2>/dev/null <"$_ns_d/cmdline")
            case "$_ns_c" in *"$1"*) echo "${_ns_d#/proc/}"; return ;; esac
        done
    else
        ps -A -o pid= -o args= | awk -v t="$1" -v me="$$" 'index($0, t) && $1 != me { print $1; exit }'
    fi
}

# ns_alive PID: PID runs (a zombie nobody reaps, as PID 1 in a container
# may leave it, is not running)
ns_alive() {
    if [ -d /proc/self ]; then
        [ -d "/proc/$1" ] && [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]
    else
        _ns_s=$(ps -o stat= -p "$1" 2>/dev/null)
        [ -n "$_ns_s" ] && case "$_ns_s" in Z*) false ;; *) true ;; esac
    fi
}
