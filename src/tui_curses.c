/* tui_curses.c - the only file that calls curses: terminal set-up and
 * restore, colors per scheme, keys and mouse into actions, and the copy
 * of the cell grid onto the screen once per frame.
 *
 * Not in libnormscope.a (the engine library stays curses-free); linked
 * into the binary only. The UI thread is the only caller of curses.
 *
 * Frames: every FRAME_MS the UI asks its source (the trainer, a followed
 * stream or a sweep: a ui_source, as tmux's window modes) for what
 * changed; when anything changed (or a key came) the source draws the
 * whole grid and curses sends only the changed cells.
 *
 * The terminal is restored on q/F10, on SIGINT/SIGTERM/SIGHUP (handled
 * here, outside the handler, by the normal path), on a crash signal (the
 * handler writes the terminal's own restore strings and resets termios:
 * both async-signal-safe), and on exit() from anywhere (atexit).
 *
 * Ctrl-Z (SIGTSTP) is ours too, not ncurses's: its own handler calls
 * endwin and refresh inside the signal handler, while this thread may be
 * in the middle of a refresh. Ours only sets a flag; the loop then leaves
 * curses mode, stops the process with the default action, and on fg
 * (SIGCONT) re-enters curses mode and redraws everything. The trainer
 * thread is stopped with the process, so training waits too.
 */
#include <curses.h>
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <term.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "nstime.h"
#include "plot.h"
#include "tui.h"
#include "tui_follow.h"
#include "tui_sweep.h"

#define FRAME_MS 100 /* 10 frames/s from the trainer (keys redraw at once): smooth
                        * enough to watch, and ~1% of a core */
#define NOTE_S 3.0  /* how long a footer note stays */

/* Set by handlers, read by the loop. Atomics, not volatile sig_atomic_t:
 * a signal the trainer's and the pool's threads do not block (SIGCONT,
 * a crash) runs its handler on whichever thread it lands on, and
 * sig_atomic_t is only safe within one thread (ThreadSanitizer reported
 * the race on SIGCONT). A lock-free atomic is safe in a handler too. */
static atomic_int stop_signal; /* SIGINT/SIGTERM/SIGHUP seen */
static atomic_int suspend_req; /* SIGTSTP seen: stop once the terminal is restored */
static atomic_int continued;   /* SIGCONT seen: the screen may hold anything */
static atomic_int curses_on;

/* What the crash handler needs, captured before curses starts: the tty
 * settings and the terminal's "leave full-screen" strings. */
static struct termios saved_tio;
static int saved_tio_ok, tty_fd = -1;
static char restore_seq[256];
static size_t restore_len;

static void on_stop(int sig) { stop_signal = sig; }
static void on_tstp(int sig) { (void)sig; suspend_req = 1; }
static void on_cont(int sig) { (void)sig; continued = 1; }

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void on_fatal(int sig)
{
    int saved_errno = errno; /* for the sanitizers' checks; we re-raise anyway */
    if (curses_on) {
        write_all(STDOUT_FILENO, restore_seq, restore_len);
        if (saved_tio_ok)
            tcsetattr(tty_fd, TCSANOW, &saved_tio);
    }
    errno = saved_errno;
    signal(sig, SIG_DFL);
    raise(sig);
}

static void at_exit_restore(void)
{
    if (curses_on) {
        endwin();
        curses_on = 0;
    }
}

/* The terminal's own strings where terminfo has them; xterm's otherwise. */
static void capture_restore_seq(void)
{
    static const char *const caps[] = {"sgr0", "cnorm", "rmcup"};
    static const char *const fallback[] = {"\033[0m", "\033[?25h", "\033[?1049l"};
    restore_len = 0;
    /* mouse reporting off first: the modes ncurses may have turned on */
    const char *mouse_off = "\033[?1000l\033[?1002l\033[?1003l\033[?1006l";
    size_t ml = strlen(mouse_off);
    memcpy(restore_seq, mouse_off, ml);
    restore_len = ml;
    for (int i = 0; i < 3; i++) {
        char *s = tigetstr((char *)caps[i]);
        const char *use = (s && s != (char *)-1) ? s : fallback[i];
        size_t l = strlen(use);
        if (restore_len + l < sizeof restore_seq) {
            memcpy(restore_seq + restore_len, use, l);
            restore_len += l;
        }
    }
}

/* ---- colors ------------------------------------------------------------- */

static attr_t style_attr[TUI_S_COUNT];
static int colors_on, colors_default; /* colours in use; the terminal's default ones too */

/* The palette's attributes as curses'. */
static attr_t curses_attr(unsigned a)
{
    return (a & TUI_A_BOLD ? A_BOLD : 0) | (a & TUI_A_DIM ? A_DIM : 0) |
           (a & TUI_A_REVERSE ? A_REVERSE : 0) | (a & TUI_A_UNDERLINE ? A_UNDERLINE : 0);
}

/* The styles of a palette (light: --light's, for a white background) as
 * colour pairs and attributes; again when t switches it, on this (the UI)
 * thread, before the frame that uses them. */
static void palette_apply(int light)
{
    const tui_style_spec *specs = tui_palette(light);
    for (int s = 0; s < TUI_S_COUNT; s++) {
        if (!colors_on) {
            style_attr[s] = curses_attr(specs[s].mono_attr);
            continue;
        }
        short fg = specs[s].fg, bg = specs[s].bg;
        if (!colors_default) { /* no "default color": white on black, or black on white */
            fg = fg < 0 ? (light ? COLOR_BLACK : COLOR_WHITE) : fg;
            bg = bg < 0 ? (light ? COLOR_WHITE : COLOR_BLACK) : bg;
        }
        init_pair((short)(s + 1), fg, bg);
        style_attr[s] = COLOR_PAIR(s + 1) | curses_attr(specs[s].color_attr);
    }
}

/* Returns 1 when colors are in use. */
static int setup_colors(int want, int light)
{
    colors_on = want && has_colors() && start_color() == OK && COLORS >= 8 && COLOR_PAIRS > TUI_S_COUNT;
    colors_default = colors_on && use_default_colors() == OK;
    palette_apply(light);
    return colors_on;
}

/* ---- drawing --------------------------------------------------------------- */

/* Copy the grid to curses: one addnstr per run of cells of one style. */
static void blit(const tui_grid *g)
{
    char buf[4096];
    for (int r = 0; r < g->rows; r++) {
        const tui_cell *row = &g->cells[(size_t)r * (size_t)g->cols];
        int c = 0;
        while (c < g->cols) {
            int c0 = c, st = row[c].style;
            size_t n = 0;
            while (c < g->cols && row[c].style == st && n + 4 < sizeof buf) {
                n += (size_t)tui_utf8_encode(row[c].ch, buf + n);
                c++;
            }
            attrset(style_attr[st < TUI_S_COUNT ? st : 0]);
            mvaddnstr(r, c0, buf, (int)n); /* ERR at the bottom-right corner is harmless */
        }
    }
    attrset(A_NORMAL);
}

static int translate_key(int ch)
{
    switch (ch) {
    case KEY_UP: return TUI_KEY_UP;
    case KEY_DOWN: return TUI_KEY_DOWN;
    case KEY_PPAGE: return TUI_KEY_PGUP;
    case KEY_NPAGE: return TUI_KEY_PGDN;
    case KEY_HOME: return TUI_KEY_HOME;
    case KEY_END: return TUI_KEY_END;
    case KEY_BTAB: return TUI_KEY_BTAB;
    case KEY_LEFT: return TUI_KEY_LEFT;
    case KEY_RIGHT: return TUI_KEY_RIGHT;
    case '\t': return TUI_KEY_TAB;
    case KEY_ENTER: return '\r';
    case KEY_BACKSPACE: return SV_KEY_BACKSPACE;
    default:
        if (ch == KEY_F(1))
            return TUI_KEY_F1;
        if (ch == KEY_F(10))
            return TUI_KEY_F10;
        return ch;
    }
}

typedef struct run_state run_state;

/* What the frame loop shows: a snapshot source, as tmux's window modes
 * are (one implementation each: the trainer, a followed stream, a sweep).
 * The loop asks it for news, has it draw, and hands it the keys; it
 * never asks which one it is. */
typedef struct {
    int (*update)(run_state *rs);  /* take what is new: 1 when the frame changed */
    void (*draw)(run_state *rs);   /* the frame, into rs->grid */
    void (*key)(run_state *rs, int key);      /* a key (TUI_KEY_* codes) */
    void (*act)(run_state *rs, tui_action a); /* a click or the wheel's action */
    void (*note)(run_state *rs, const char *text); /* a line for its event log */
    int clicks;                    /* takes the mouse */
} ui_source;

struct run_state {
    const ui_source *src;
    trainer *t;           /* the trainer's source; its clock stops with Ctrl-Z */
    tui_follow_state *fw; /* the followed stream's */
    sweepview *sv;        /* the sweep's, and the board its scheduler reports on */
    sv_board *board;
    trainer_snapshot *snap;
    FILE *spool;          /* the trainer's CSV copy, for e (NULL: the loss history) */
    int small_seen;       /* the pause small_pause sent has been seen applied */
    int small_theirs;     /* someone resumed it while small: left to them until it grows */
    tui_ui ui;
    tui_grid grid;
    double note_until;
    int repaint; /* the next frame clears the terminal and paints every cell */
    int light;   /* the palette the colour pairs hold (ui.light: the one asked for) */
};

/* ---- the trainer ---------------------------------------------------------------- */

static int trainer_src_update(run_state *rs)
{
    int shown = tui_lesson_unhide(&rs->ui, rs->snap); /* a lesson's hidden run b */
    int r = !rs->ui.frozen && trainer_snapshot_copy(rs->t, rs->snap);
    tui_lesson_hide_b(&rs->ui, rs->snap);
    return r || shown;
}

static void snapshot_draw(run_state *rs) { tui_draw(&rs->grid, rs->snap, &rs->ui); }

static void trainer_src_act(run_state *rs, tui_action a)
{
    ns_command cmd;
    if (!tui_apply(&rs->ui, a, rs->snap->s.n_layer, &cmd))
        return;
    /* the target goes alongside the command (twin.h: the two-run rule) */
    if (trainer_send_to(rs->t, &cmd, rs->snap->s.compare ? rs->ui.target : 0) != 0) {
        snprintf(rs->ui.note, sizeof rs->ui.note,
                 "busy: %d commands wait for the step in progress ", TRAINER_QUEUE);
        rs->note_until = nstime_now() + NOTE_S;
    }
}

/* The view's keys (the key table's), for the trainer and a followed run. */
static void table_key(run_state *rs, int key)
{
    tui_action a = tui_key_action(key);
    char before[sizeof rs->ui.note];
    memcpy(before, rs->ui.note, sizeof before);
    if (a != TUI_ACT_NONE)
        rs->src->act(rs, a);
    else if (rs->ui.help || rs->ui.diag) /* "any key closes": unbound ones too */
        rs->ui.help = rs->ui.diag = 0;
    if (rs->ui.note[0] && strcmp(before, rs->ui.note)) /* a note the key left stays a while */
        rs->note_until = nstime_now() + NOTE_S;
}

/* A note goes through the queue, so the trainer records it between steps. */
static void trainer_src_note(run_state *rs, const char *text)
{
    ns_command cmd = command_make(CMD_NOTE);
    snprintf(cmd.text, sizeof cmd.text, "%s", text);
    trainer_send(rs->t, &cmd);
}

static const ui_source trainer_source = {
    .update = trainer_src_update, .draw = snapshot_draw, .key = table_key,
    .act = trainer_src_act, .note = trainer_src_note, .clicks = 1,
};

/* ---- a followed stream (tui_follow.c) ------------------------------------------------ */

static int follow_src_update(run_state *rs)
{
    return !rs->ui.frozen && tui_follow_update(rs->fw, rs->snap, &rs->ui);
}

static void follow_src_draw(run_state *rs)
{
    if (rs->fw->changed && !rs->ui.frozen) /* a replay key: the step it shows */
        tui_follow_update(rs->fw, rs->snap, &rs->ui);
    tui_draw(&rs->grid, rs->snap, &rs->ui);
    tui_follow_draw(&rs->grid, rs->snap, &rs->ui, rs->fw);
}

static void follow_src_act(run_state *rs, tui_action a)
{
    if (tui_follow_action(rs->fw, &rs->ui, a) && rs->ui.note[0])
        rs->note_until = nstime_now() + NOTE_S;
}

static void follow_src_note(run_state *rs, const char *text)
{
    stream_note(rs->fw->r, NS_EV_INFO, text);
}

static const ui_source follow_source = {
    .update = follow_src_update, .draw = follow_src_draw, .key = table_key,
    .act = follow_src_act, .note = follow_src_note, .clicks = 1,
};

/* ---- a sweep (tui_sweep.c): its own keys, no mouse, no event log ------------------- */

static int sweep_src_update(run_state *rs) { return tui_sweep_update(rs->sv, rs->board); }
static void sweep_src_draw(run_state *rs) { tui_sweep_draw(&rs->grid, rs->sv); }

static void sweep_src_key(run_state *rs, int key)
{
    if (key == 't' && !rs->sv->help) /* the other palette, as the live view's t */
        rs->ui.light = !rs->ui.light;
    else
        tui_sweep_key(rs->sv, key);
    rs->ui.quit = rs->sv->quit;
}

static void sweep_src_act(run_state *rs, tui_action a) { (void)rs, (void)a; }
static void sweep_src_note(run_state *rs, const char *text) { (void)rs, (void)text; }

static const ui_source sweep_source = {
    .update = sweep_src_update, .draw = sweep_src_draw, .key = sweep_src_key,
    .act = sweep_src_act, .note = sweep_src_note, .clicks = 0,
};

/* ---- the frame loop ------------------------------------------------------------------ */

static void send_action(run_state *rs, tui_action a) { rs->src->act(rs, a); }

/* d and e: the file is written here, on the UI thread, from the frame just
 * drawn and the snapshot copy it shows; its name goes to the event log
 * (a note through the queue, so the trainer records it between steps). */
static void write_one_dump(run_state *rs, int what)
{
    char path[64], err[256] = "";
    long step = rs->snap->s.steps_done;
    /* a second press at one step writes a second file, never over the first */
    int r = tui_unused_path(path, sizeof path,
                            what == TUI_DUMP_SCREEN ? "normscope-screen"
                            : what == TUI_DUMP_FIGURE ? "normscope" : "normscope-metrics",
                            step, what == TUI_DUMP_SCREEN ? "txt" : what == TUI_DUMP_FIGURE ? "svg" : "csv");
    if (r != 0)
        snprintf(err, sizeof err, "%s: 99 files of step %ld already", path, step);
    else if (what == TUI_DUMP_SCREEN)
        r = tui_write_screen(&rs->grid, path, err, sizeof err);
    else if (what == TUI_DUMP_FIGURE)
        r = plot_write_snapshot(rs->snap, rs->ui.view == TUI_VIEW_HEATMAP, rs->ui.logy,
                                rs->ui.smooth, path, err, sizeof err);
    else if (rs->spool) /* every column of both runs, as --csv */
        r = tui_write_spool(rs->spool, path, err, sizeof err);
    else
        r = tui_write_metrics(rs->snap, path, err, sizeof err);
    char text[NS_CMD_TEXT];
    if (r == 0)
        snprintf(text, sizeof text, "wrote %s", path);
    else
        snprintf(text, sizeof text, "could not write %.70s", err);
    snprintf(rs->ui.note, sizeof rs->ui.note, "%.70s ", text);
    rs->note_until = nstime_now() + NOTE_S;
    rs->src->note(rs, text);
}

/* d and e pressed within one frame: both files */
static void write_dump(run_state *rs)
{
    int what = rs->ui.dump;
    rs->ui.dump = 0;
    if (what & TUI_DUMP_SCREEN)
        write_one_dump(rs, TUI_DUMP_SCREEN);
    if (what & TUI_DUMP_METRICS)
        write_one_dump(rs, TUI_DUMP_METRICS);
    if (what & TUI_DUMP_FIGURE)
        write_one_dump(rs, TUI_DUMP_FIGURE);
}

/* The mouse wheel: over the event log it scrolls the log, WHEEL_LINES a
 * notch (as terminals scroll text); elsewhere it moves the selected
 * layer (up = away from you = a layer up, or older events). */
#define WHEEL_LINES 3
static void wheel(run_state *rs, int row, int up)
{
    if (!tui_log_at_row(&rs->ui, row)) {
        send_action(rs, up ? TUI_ACT_UP : TUI_ACT_DOWN);
        return;
    }
    for (int i = 0; i < WHEEL_LINES; i++)
        send_action(rs, up ? TUI_ACT_LOG_OLDER : TUI_ACT_LOG_NEWER);
}

/* One input event. Returns -1 when the grid could not be resized. */
static int handle_input(run_state *rs, int ch)
{
    switch (ch) {
    case KEY_RESIZE: /* the one place a resize is handled */
        if (tui_grid_resize(&rs->grid, LINES, COLS) != 0)
            return -1;
        rs->repaint = 1;
        break;
    case KEY_MOUSE: {
        MEVENT ev;
        if (getmouse(&ev) != OK || !rs->src->clicks)
            break;
        tui_action a = TUI_ACT_NONE;
        int sel;
        if (ev.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED))
            a = tui_click(&rs->ui, ev.y, ev.x, &sel);
#ifdef BUTTON5_PRESSED
        else if (ev.bstate & (BUTTON4_PRESSED | BUTTON5_PRESSED)) {
            wheel(rs, ev.y, (ev.bstate & BUTTON4_PRESSED) != 0);
            break;
        }
#endif
        if (a != TUI_ACT_NONE)
            send_action(rs, a);
        break;
    }
    default:
        rs->src->key(rs, translate_key(ch));
        break;
    }
    return 0;
}

/* Ctrl-Z: the terminal as the shell wants it, then stop as the default
 * action would (the trainer thread blocks SIGTSTP, so the signal comes
 * back to this thread; stopping stops every thread). When fg continues
 * us, kill returns here. The trainer's clock is held meanwhile, so the
 * stop is not counted as training time (run_seconds, steps/s). */
static void suspend(trainer *t)
{
    /* Started from a wrapper (a script, make), the wrapper stops at once
     * and its shell takes the terminal back before endwin is done; endwin's
     * tcsetattr from a background process would then stop us on SIGTTOU
     * with the tty still raw. With SIGTTOU blocked it goes through. */
    sigset_t ttou, old;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    pthread_sigmask(SIG_BLOCK, &ttou, &old);
    endwin();
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    struct sigaction dfl, ours;
    memset(&dfl, 0, sizeof dfl);
    sigemptyset(&dfl.sa_mask);
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGTSTP, &dfl, &ours);
    suspend_req = 0;
    if (t)
        trainer_clock_hold(t);
    kill(getpid(), SIGTSTP);
    if (t)
        trainer_clock_release(t);
    sigaction(SIGTSTP, &ours, NULL);
}

/* After a stop (ours, or a SIGSTOP from outside) the screen and the tty
 * modes may hold anything: the shell's "Stopped" line and prompt, its own
 * tty modes, a size that changed while the shell had the terminal (no
 * SIGWINCH reaches a stopped process). So: out of curses mode if a SIGSTOP
 * left us in it, and the next refresh re-enters it in full (tty modes,
 * alternate screen, keypad, mouse) and repaints every cell; a SIGWINCH to
 * ourselves makes ncurses read the size again, and a change comes back
 * from getch as KEY_RESIZE, handled in the one place that does. */
static void resume(run_state *rs)
{
    continued = 0;
    if (!isendwin())
        endwin();
    rs->repaint = 1;
    raise(SIGWINCH);
}

/* Every handler the live view installs, in one table: installed before
 * newterm (so ncurses keeps its own off SIGTSTP) and put back on the way
 * out. SIGINT/SIGTERM/SIGHUP without SA_RESTART: getch returns at once.
 * SIGCONT may land on the trainer thread: SA_RESTART keeps its blocking
 * calls going; the flag is all the handler does. The crash signals
 * restore the terminal once and re-raise. */
static const struct {
    int sig;
    void (*fn)(int);
    int flags;
} ui_handlers[] = {
    {SIGINT, on_stop, 0},
    {SIGTERM, on_stop, 0},
    {SIGHUP, on_stop, 0},
    {SIGTSTP, on_tstp, 0},
    {SIGCONT, on_cont, SA_RESTART},
    {SIGSEGV, on_fatal, (int)SA_RESETHAND},
    {SIGBUS, on_fatal, (int)SA_RESETHAND},
    {SIGFPE, on_fatal, (int)SA_RESETHAND},
    {SIGILL, on_fatal, (int)SA_RESETHAND},
    {SIGABRT, on_fatal, (int)SA_RESETHAND},
};
#define N_UI_HANDLERS (sizeof ui_handlers / sizeof ui_handlers[0])

static void install_handlers(struct sigaction old[N_UI_HANDLERS])
{
    for (size_t i = 0; i < N_UI_HANDLERS; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sigemptyset(&sa.sa_mask);
        sa.sa_handler = ui_handlers[i].fn;
        sa.sa_flags = ui_handlers[i].flags;
        sigaction(ui_handlers[i].sig, &sa, &old[i]);
    }
    static int atexit_done;
    if (!atexit_done)
        atexit_done = atexit(at_exit_restore) == 0;
}

static void restore_handlers(const struct sigaction old[N_UI_HANDLERS])
{
    for (size_t i = 0; i < N_UI_HANDLERS; i++)
        sigaction(ui_handlers[i].sig, &old[i], NULL);
}

/* The locale decides braille; numbers keep the C locale, so "2.5" is
 * never drawn as "2,5" (and the headless writers are unaffected).
 * Returns whether the terminal speaks UTF-8. */
static int locale_utf8(void)
{
    setlocale(LC_ALL, "");
    const char *cs = nl_langinfo(CODESET);
    int utf8 = cs && (!strcmp(cs, "UTF-8") || !strcmp(cs, "utf8"));
    setlocale(LC_NUMERIC, "C");
    return utf8;
}

/* Curses mode on the terminal (*scr), the modes the view needs, the
 * colors and the grid. 0, or -1 with a reason in err (the caller ends
 * what was started). */
static int start_curses(run_state *rs, const tui_options *o, SCREEN **scr, char *err,
                        size_t errlen)
{
    int utf8 = locale_utf8();
    const char *nc = getenv("NO_COLOR");
    int want_color = !o->no_color && !(nc && *nc);
    *scr = newterm(NULL, stdout, stdin);
    if (!*scr) {
        const char *term = getenv("TERM");
        snprintf(err, errlen, "cannot use the terminal (TERM=%s); try --headless",
                 term ? term : "unset");
        return -1;
    }
    set_term(*scr);
    capture_restore_seq();
    curses_on = 1;
    cbreak();
    noecho();
    nonl();
    intrflush(stdscr, FALSE);
    keypad(stdscr, TRUE);
    curs_set(0);
    set_escdelay(25);
    /* every event, though only presses and the wheel act: ncurses 6.4
     * (X10 reports) blocks in read() after an event outside the mask, which
     * froze the frame until the next key (found by tui_e2e.sh's click) */
    mousemask(ALL_MOUSE_EVENTS, NULL);
    mouseinterval(0); /* report presses at once, not after a click delay */
    int color = setup_colors(want_color, o->light);
    tui_ui_init(&rs->ui, utf8 && !o->ascii, color);
    rs->ui.follow = rs->src == &follow_source;
    rs->ui.lesson_title = o->lesson_title;
    rs->ui.lesson_text = o->lesson_text;
    rs->ui.reveal = o->lesson_reveal;
    rs->ui.bars_rel = o->bars_rel;
    rs->ui.smooth = o->smooth;
    rs->ui.light = rs->light = o->light;
    if (rs->src == &sweep_source) {
        tui_ui_init(&rs->sv->ui, rs->ui.unicode, rs->ui.color);
        rs->sv->ui.lesson_title = o->lesson_title; /* a sweep lesson's notes (main.c) */
        rs->sv->ui.lesson_text = o->lesson_text;
        rs->sv->lesson_lines = o->lesson_lines;
    }
    if (tui_grid_resize(&rs->grid, LINES, COLS) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* Every key already typed, then one frame for all of them. Returns 1 if
 * any came, 0 if none, -1 when the grid could not be resized. */
static int take_keys(run_state *rs, double next_frame)
{
    int wait_ms = (int)((next_frame - nstime_now()) * 1000.0);
    timeout(wait_ms > 0 ? wait_ms : 0);
    int ch = getch(), any = 0;
    while (ch != ERR && !rs->ui.quit) {
        if (handle_input(rs, ch) != 0)
            return -1;
        any = 1;
        timeout(0);
        ch = getch();
    }
    return any;
}

/* The frame onto the terminal. After a resize or a stop the terminal may
 * hold anything (the old frame reflowed, a shell's lines), so the next
 * frame is painted whole. That is asked for here, just before our own
 * refresh: asked for at KEY_RESIZE, it was spent by the implicit refresh
 * of the next getch (which painted the old frame at the new size), and
 * our refresh then sent the new frame as a diff whose line inserts left
 * rows blank (seen in tmux: a start at 100x30 resized to 120x40 at once,
 * tests/sh/tui_lesson_sizes.sh). */
static void paint(run_state *rs)
{
    if (rs->repaint)
        clearok(curscr, TRUE);
    rs->repaint = 0;
    refresh();
}

/* Training waits while the terminal is too small to show it (a step
 * that nobody sees is a step a class missed): a running trainer is paused
 * when the terminal shrinks under the minimum and resumed when it is
 * large enough again, unless someone paused or resumed it in between (the
 * pause is then theirs). Each is a line in the event log. 1 when it
 * changed something. */
static int small_pause(run_state *rs)
{
    if (!rs->t)
        return 0;
    int small = rs->grid.rows < TUI_MIN_ROWS || rs->grid.cols < TUI_MIN_COLS;
    trainer_state st = rs->snap->s.state;
    if (rs->ui.small_paused && st == TRAINER_PAUSED)
        rs->small_seen = 1; /* our pause has been applied */
    if (!small)
        rs->small_theirs = 0;
    ns_command c;
    char text[NS_CMD_TEXT];
    if (small && !rs->ui.small_paused && !rs->small_theirs && st == TRAINER_RUNNING) {
        c = command_make(CMD_PAUSE);
        snprintf(text, sizeof text, "paused: the terminal is %dx%d, under %dx%d", rs->grid.cols,
                 rs->grid.rows, TUI_MIN_COLS, TUI_MIN_ROWS);
    } else if (rs->ui.small_paused && rs->small_seen && st != TRAINER_PAUSED) {
        rs->ui.small_paused = 0; /* resumed, stepped or stopped by someone else: theirs */
        rs->small_theirs = small; /* not paused again until the terminal grows */
        return 1;
    } else if (rs->ui.small_paused && !small) {
        c = command_make(CMD_RESUME);
        snprintf(text, sizeof text, "resumed: the terminal is %dx%d again", rs->grid.cols,
                 rs->grid.rows);
    } else {
        return 0;
    }
    if (trainer_send(rs->t, &c) != 0)
        return 0; /* the queue is full: asked again next frame */
    rs->ui.small_paused = c.kind == CMD_PAUSE;
    rs->small_seen = 0;
    rs->src->note(rs, text);
    return 1;
}

/* t: the other palette from this frame on, its pairs re-initialised here
 * (the UI thread), the screen painted whole; the event log says which is
 * in force (the footer's note has no room at most sizes). */
static void switch_palette(run_state *rs)
{
    rs->light = rs->ui.light;
    palette_apply(rs->light);
    rs->repaint = 1;
    char text[NS_CMD_TEXT];
    tui_palette_note(rs->light, text, sizeof text);
    rs->src->note(rs, text);
}

/* Frames: a new snapshot is looked at every FRAME_MS; the screen is drawn
 * when something changed (a step, a key, a resize), so a paused run costs
 * no CPU, and a key shows its effect at once. Runs until q, a signal or
 * an error. */
static tui_end frame_loop(run_state *rs, char *err, size_t errlen)
{
    double next_frame = nstime_now();
    int dirty = 1;
    suspend_req = 0;
    continued = 0;
    while (!rs->ui.quit) {
        if (stop_signal)
            return TUI_END_SIGNAL;
        if (suspend_req) {
            suspend(rs->t);
            continued = 1; /* whatever the SIGCONT handler saw */
            continue;      /* a SIGHUP while stopped is seen first */
        }
        if (continued) {
            resume(rs);
            dirty = 1;
        }
        int keys = take_keys(rs, next_frame);
        if (keys < 0) {
            snprintf(err, errlen, "out of memory");
            return TUI_END_ERROR;
        }
        dirty |= keys;
        if (rs->ui.quit || stop_signal)
            continue;
        double now = nstime_now();
        if (now >= next_frame) {
            next_frame = now + FRAME_MS / 1000.0;
            if (rs->src->update(rs))
                dirty = 1;
            dirty |= small_pause(rs);
            if (rs->ui.note[0] && now > rs->note_until) {
                rs->ui.note[0] = 0;
                dirty = 1;
            }
        }
        if (!dirty)
            continue;
        dirty = 0;
        if (rs->ui.light != rs->light)
            switch_palette(rs);
        rs->src->draw(rs);
        blit(&rs->grid);
        if (rs->ui.dump)
            write_dump(rs);
        paint(rs);
    }
    return TUI_END_QUIT;
}

/* The dashboard on t, or with fw on a followed stream, or with sv on a
 * sweep whose scheduler reports on board (t NULL). */
static tui_end run_ui(trainer *t, tui_follow_state *fw, sweepview *sv, sv_board *board,
                      const tui_options *o, char *err, size_t errlen)
{
    run_state rs;
    memset(&rs, 0, sizeof rs);
    rs.t = t;
    rs.fw = fw;
    rs.sv = sv;
    rs.board = board;
    rs.spool = t ? o->spool : NULL;
    rs.src = sv ? &sweep_source : fw ? &follow_source : &trainer_source;
    rs.snap = snapshot_new();
    if (!rs.snap) {
        snprintf(err, errlen, "out of memory");
        return TUI_END_ERROR;
    }
    tty_fd = isatty(STDIN_FILENO) ? STDIN_FILENO : STDOUT_FILENO;
    saved_tio_ok = tcgetattr(tty_fd, &saved_tio) == 0;
    struct sigaction old[N_UI_HANDLERS];
    install_handlers(old);

    tui_end end = TUI_END_ERROR;
    SCREEN *scr = NULL;
    /* training starts once there is a screen to show it on */
    if (start_curses(&rs, o, &scr, err, errlen) == 0 && (!t || trainer_start(t, err, errlen) == 0))
        end = frame_loop(&rs, err, errlen);

    if (curses_on) {
        endwin();
        curses_on = 0;
    }
    if (scr)
        delscreen(scr);
    restore_handlers(old);
    tui_grid_free(&rs.grid);
    free(rs.snap);
    return end;
}

int tui_live_available(void) { return 1; }

tui_end tui_run(trainer *t, const tui_options *o, char *err, size_t errlen)
{
    return run_ui(t, NULL, NULL, NULL, o, err, errlen);
}

tui_end tui_follow(const char *path, const tui_options *o, char *err, size_t errlen)
{
    tui_follow_state fw;
    if (tui_follow_init(&fw, path) != 0) {
        snprintf(err, errlen, "out of memory");
        return TUI_END_ERROR;
    }
    tui_end end = run_ui(NULL, &fw, NULL, NULL, o, err, errlen);
    tui_follow_free(&fw);
    return end;
}

/* ---- the live view of a sweep ------------------------------------------------ */

typedef struct {
    sweep_ctx *c;
    sv_board *board;
} sweep_thread_arg;

/* The scheduler's thread: the sweep, reported on the board. */
static void *sweep_thread(void *p)
{
    sweep_thread_arg *a = p;
    sweep_watch w = tui_sweep_board_watch(a->board);
    tui_sweep_board_done(a->board, sweep_ctx_execute(a->c, &w));
    return NULL;
}

/* The sweep runs on its own thread while this one shows it; on q or a
 * signal the view ends, the terminal is restored, and then the sweep is
 * told to stop (its children get SIGTERM and leave no row) and waited for. */
int tui_sweep_live(sweep_ctx *c, void *arg)
{
    const tui_options *o = arg;
    const sweep_spec *spec = sweep_ctx_spec(c);
    sweepview v;
    sv_board board;
    if (tui_sweep_init(&v, spec, sweep_ctx_dir(c), 0, 0) != 0) {
        fprintf(stderr, "normscope: out of memory\n");
        return 1;
    }
    if (tui_sweep_board_init(&board, v.n_runs) != 0) {
        tui_sweep_free(&v);
        fprintf(stderr, "normscope: out of memory\n");
        return 1;
    }
    for (long k = 0; k < v.n_runs; k++)
        tui_sweep_set_row(&v, k, sweep_ctx_row(c, k));
    sweep_thread_arg ta = {c, &board};
    pthread_t th;
    char err[256] = "";
    int started = pthread_create(&th, NULL, sweep_thread, &ta) == 0;
    tui_end end = started ? run_ui(NULL, NULL, &v, &board, o, err, sizeof err) : TUI_END_ERROR;
    int status = 1;
    if (started) {
        tui_sweep_board_stop(&board);
        pthread_join(th, NULL);
        status = board.status;
    }
    if (end == TUI_END_ERROR)
        fprintf(stderr, "normscope: %s\n", err[0] ? err : "cannot start the sweep's thread");
    tui_sweep_board_free(&board);
    tui_sweep_free(&v);
    return end == TUI_END_ERROR && status == 0 ? 1 : status;
}
