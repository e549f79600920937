/* tui_keys.c - the key table (htop's habit: keys map to actions, actions
 * change state and return what to do; none of them draws) and the UI
 * state the actions change. The same table prints the help overlay and
 * the footer, so a key cannot be bound without being documented. The
 * settings' keys are the settings table's: each is bound to its row's
 * command text ("norm toggle"), which the command parser reads, as tmux
 * binds keys to commands; here they only get their place.
 * No curses: the curses layer translates its key codes to TUI_KEY_*. */
#include "settings.h"
#include "tui.h"
#include "twin.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The keys in the help's order. A settings row's key has its place here
 * (row, how: its command word and the words after it) and nothing else:
 * the key, its help line and its command are the row's (settings.c). A
 * row's key without a place here is shown after these. */
static const tui_key layout[] = {
    {.row = "norm", .how = "toggle", .hint = "Norm"},
    {.row = "norm", .how = "next"},
    {.row = "kind", .how = "next"},
    {.row = "warmup", .how = "toggle", .hint = "Warmup"},
    {.row = "precision", .how = "next", .hint = "Prec"},
    {.row = "fp32-norms", .how = "toggle"},
    {.row = "loss-scale", .how = "toggle"},
    {{' '}, "space", "Spc", "Pause", "pause / resume training", TUI_ACT_PAUSE, NULL, NULL},
    {{'n'}, "n", "n", "Step", "one step while paused (pauses a running trainer)",
     TUI_ACT_STEP, NULL, NULL},
    {.row = "lr", .how = "x2", .hint = "LR"},
    {.row = "lr", .how = "x0.5"},
    {.row = "clip", .how = "toggle", .hint = "Clip"},
    {{'b'}, "b", "b", "Rewind", "rewind to the newest snapshot before now (again: older)",
     TUI_ACT_REWIND, NULL, NULL},
    {{'r'}, "r", "r", "Reinit", "re-initialize: step 0, fresh weights, same seed",
     TUI_ACT_REINIT, NULL, NULL},
    {{TUI_KEY_TAB, TUI_KEY_BTAB}, "Tab", NULL, NULL,
     "--compare: keys act on both runs -> run a -> run b", TUI_ACT_TARGET, NULL, NULL},
    {{'m'}, "m/v/M", "m", "View",
     "view bars / heatmap (m); bars absolute / relative (v); layer rows: gradients / "
     "mechanisms (M: attention logits and entropy, branch/x, norm input)",
     TUI_ACT_VIEW, NULL, NULL},
    {{'v'}, NULL, NULL, NULL, NULL, TUI_ACT_BARS, NULL, NULL},
    {{'M'}, NULL, NULL, NULL, NULL, TUI_ACT_MECH, NULL, NULL},
    {{TUI_KEY_UP}, "up/down", NULL, NULL, "select a layer (its numbers in the box at the right)",
     TUI_ACT_UP, NULL, NULL},
    {{TUI_KEY_DOWN}, NULL, NULL, NULL, NULL, TUI_ACT_DOWN, NULL, NULL},
    /* one help line for both pairs: the overlay is full at 24 rows */
    {{TUI_KEY_PGUP}, "PgUp/PgDn", NULL, NULL, "a page of layers up / down; Home/End: top / layer 0",
     TUI_ACT_PGUP, NULL, NULL},
    {{TUI_KEY_PGDN}, NULL, NULL, NULL, NULL, TUI_ACT_PGDN, NULL, NULL},
    {{TUI_KEY_HOME}, NULL, NULL, NULL, NULL, TUI_ACT_TOP, NULL, NULL},
    {{TUI_KEY_END}, NULL, NULL, NULL, NULL, TUI_ACT_BOTTOM, NULL, NULL},
    /* one line for five: a help line more made the D panel, as tall as
     * the help, cover the status line at 120x40 */
    {{'y'}, "y/z/L/B/t", "y", "Log-y",
     "log-y (y); freeze (z); lesson (L); hidden b (B); palette (t)", TUI_ACT_LOGY, NULL, NULL},
    {{'z'}, NULL, "z", "Freeze", NULL, TUI_ACT_FREEZE, NULL, NULL},
    {{'L'}, NULL, NULL, NULL, NULL, TUI_ACT_LESSON, NULL, NULL},
    {{'B'}, NULL, NULL, NULL, NULL, TUI_ACT_REVEAL, NULL, NULL},
    {{'t'}, NULL, NULL, NULL, NULL, TUI_ACT_PALETTE, NULL, NULL},
    {{'['}, "[/]", NULL, NULL, "event log: a line older / newer ({ }: a page; the wheel)",
     TUI_ACT_LOG_OLDER, NULL, NULL},
    {{']'}, NULL, NULL, NULL, NULL, TUI_ACT_LOG_NEWER, NULL, NULL},
    {{'{'}, NULL, NULL, NULL, NULL, TUI_ACT_LOG_PGOLDER, NULL, NULL},
    {{'}'}, NULL, NULL, NULL, NULL, TUI_ACT_LOG_PGNEWER, NULL, NULL},
    {{'d'}, "d/e/g", NULL, NULL, "write the screen as text / the loss as CSV / the view as SVG",
     TUI_ACT_DUMP_SCREEN, NULL, NULL},
    {{'e'}, NULL, NULL, NULL, NULL, TUI_ACT_DUMP_METRICS, NULL, NULL},
    {{'g'}, NULL, NULL, NULL, NULL, TUI_ACT_DUMP_FIGURE, NULL, NULL},
    {{'?', 'h', TUI_KEY_F1}, "?/h/F1/D", "F1", "Help",
     "this help (PgDn/PgUp: its pages) / the diagnosis (D; a there applies its fix)",
     TUI_ACT_HELP, NULL, NULL},
    {{'D'}, NULL, NULL, NULL, NULL, TUI_ACT_DIAG, NULL, NULL},
    /* in the D panel only: rewind and apply its first next step (3 at most) */
    {{'a'}, NULL, NULL, NULL, NULL, TUI_ACT_FIX, NULL, NULL},
    {{'q', TUI_KEY_F10}, "q/F10", "F10", "Quit", "quit (asks nothing)", TUI_ACT_QUIT, NULL, NULL},
    /* --follow only (the help shows them there, in the rows of the keys
     * that change the lab's model, which it sums up in one line) */
    {{TUI_KEY_LEFT}, "Left/Right", NULL, NULL,
     "replay: the view's step back / forward (Home/End: the ends)", TUI_ACT_STEP_BACK, NULL, NULL},
    {{TUI_KEY_RIGHT}, NULL, NULL, NULL, NULL, TUI_ACT_STEP_FWD, NULL, NULL},
    {{'C'}, "C", NULL, NULL, "ask the followed run for a checkpoint (space, +/-: pause, LR)",
     TUI_ACT_CHECKPOINT, NULL, NULL},
};
enum { N_LAYOUT = sizeof layout / sizeof layout[0] };

/* ---- keys bound to the settings' commands ------------------------------------ */

/* The i-th bound key (a settings row's key, in table order): its row and
 * binding. NULL past the last. */
static const ns_setting *bound(int i, const setting_key **k)
{
    for (int r = 0; r < settings_count(); r++) {
        const ns_setting *s = settings_row(r);
        for (int j = 0; s->cmd && j < SET_KEYS; j++)
            if (s->keys[j].key && i-- == 0) {
                *k = &s->keys[j];
                return s;
            }
    }
    return NULL;
}

const ns_setting *tui_bind_row(tui_action a)
{
    const setting_key *k;
    return a >= TUI_ACT_BIND ? bound((int)a - TUI_ACT_BIND, &k) : NULL;
}

tui_action tui_bind_action(const char *word, const char *how)
{
    const setting_key *k;
    const ns_setting *s;
    for (int i = 0; (s = bound(i, &k)) != NULL; i++)
        if (!strcmp(s->cmd, word) && !strcmp(k->how, how))
            return (tui_action)(TUI_ACT_BIND + i);
    return TUI_ACT_NONE;
}

int tui_bind_command(tui_action a, char *buf, size_t n)
{
    const setting_key *k;
    const ns_setting *s = a >= TUI_ACT_BIND ? bound((int)a - TUI_ACT_BIND, &k) : NULL;
    if (!s)
        return -1;
    snprintf(buf, n, "%s %s", s->cmd, k->how);
    return 0;
}

/* ---- the table ----------------------------------------------------------------- */

#define TUI_MAX_KEYS (N_LAYOUT + 2 * NS_SETTINGS_MAX)
static tui_key table[TUI_MAX_KEYS];
static char names[TUI_MAX_KEYS][2][8]; /* a bound key's name and footer label */
static int n_table;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

/* The entry of bound key i; hint: its footer word, NULL = not there. A
 * binding without a help line is the second of a pair ("+/-"): the
 * first's line names both. */
static tui_key bound_entry(int i, const char *hint)
{
    const setting_key *k, *next = NULL;
    const ns_setting *s = bound(i, &k);
    tui_key e;
    memset(&e, 0, sizeof e);
    e.keys[0] = k->key;
    e.keys[1] = k->alt;
    e.act = (tui_action)(TUI_ACT_BIND + i);
    e.help = k->help;
    if (k + 1 < s->keys + SET_KEYS && k[1].key && !k[1].help)
        next = &k[1];
    char *name = names[n_table][0], *foot = names[n_table][1];
    if (k->help) {
        if (next)
            snprintf(name, 8, "%c/%c", k->key, next->key), snprintf(foot, 8, "%c%c", k->key, next->key);
        else
            snprintf(name, 8, "%c", k->key), snprintf(foot, 8, "%c", k->key);
        e.name = name;
        e.foot = hint ? foot : NULL;
        e.hint = hint;
    }
    return e;
}

static void table_build(void)
{
    unsigned char placed[TUI_MAX_KEYS] = {0};
    for (int i = 0; i < N_LAYOUT; i++) {
        const tui_key *l = &layout[i];
        if (!l->row) {
            table[n_table++] = *l;
            continue;
        }
        tui_action a = tui_bind_action(l->row, l->how);
        if (a == TUI_ACT_NONE)
            continue;
        table[n_table] = bound_entry((int)a - TUI_ACT_BIND, l->hint);
        n_table++;
        placed[a - TUI_ACT_BIND] = 1;
    }
    const setting_key *k;
    for (int i = 0; bound(i, &k) && n_table < TUI_MAX_KEYS; i++)
        if (!placed[i]) {
            table[n_table] = bound_entry(i, NULL);
            n_table++;
        }
}

const tui_key *tui_key_table(int *n)
{
    pthread_once(&table_once, table_build);
    *n = n_table;
    return table;
}

tui_action tui_key_action(int key)
{
    int n;
    const tui_key *t = tui_key_table(&n);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 3 && t[i].keys[k]; k++)
            if (t[i].keys[k] == key)
                return t[i].act;
    return TUI_ACT_NONE;
}

void tui_key_name(tui_action a, char *b, size_t n)
{
    int nk;
    const tui_key *t = tui_key_table(&nk);
    snprintf(b, n, "?");
    for (int i = 0; i < nk; i++) {
        int k = t[i].keys[0];
        if (t[i].act != a)
            continue;
        if (k == ' ')
            snprintf(b, n, "space");
        else if (k == TUI_KEY_TAB)
            snprintf(b, n, "Tab");
        else if (k > ' ' && k < 127)
            snprintf(b, n, "%c", k);
        return;
    }
}

int tui_action_changes_model(tui_action a)
{
    const ns_setting *s = tui_bind_row(a);
    if (s) /* a followed run takes some commands itself (its control file) */
        return !(s->live & SETL_REMOTE);
    return a == TUI_ACT_REWIND || a == TUI_ACT_STEP || a == TUI_ACT_REINIT || a == TUI_ACT_FIX;
}

int tui_action_follow_only(tui_action a)
{
    return a == TUI_ACT_STEP_BACK || a == TUI_ACT_STEP_FWD || a == TUI_ACT_CHECKPOINT;
}

void tui_ui_init(tui_ui *ui, int unicode, int color)
{
    memset(ui, 0, sizeof *ui);
    ui->unicode = unicode;
    ui->color = color;
    ui->selected = -1; /* the top layer, once the layer count is known */
    ui->log_newest = -1; /* the event log follows the newest */
    ui->smooth = settings_find("smooth", 6)->def; /* --smooth's default */
}

/* [ ] { }: the event log scrolls, and shows (the lesson panel covers it) */
static int log_key(tui_ui *ui, long delta)
{
    if (ui->log_rows <= 0) {
        snprintf(ui->note, sizeof ui->note, "no event log at this size (projector layout) ");
        return 0;
    }
    ui->lesson_hidden = 1;
    tui_log_scroll(ui, delta);
    return 0;
}

void tui_palette_note(int light, char *b, size_t n)
{
    char k[8];
    tui_key_name(TUI_ACT_PALETTE, k, sizeof k);
    snprintf(b, n, "palette: %s (%s: %s)", light ? "light" : "dark", k, light ? "dark" : "light");
}

/* t: the other palette; the curses layer re-initialises its colour pairs
 * before the next frame and logs which is in force (tui_curses.c); the
 * footer says it too, where it has room. */
static int palette_key(tui_ui *ui)
{
    ui->light = !ui->light;
    tui_palette_note(ui->light, ui->note, sizeof ui->note - 1);
    strcat(ui->note, " ");
    return 0;
}

/* The help's page keys: 1 when a turned a page (the last frame's count). */
static int help_turn(tui_ui *ui, tui_action a)
{
    int fwd = a == TUI_ACT_PGDN || a == TUI_ACT_DOWN, back = a == TUI_ACT_PGUP || a == TUI_ACT_UP;
    if (fwd && ui->help_page + 1 < ui->help_pages)
        ui->help_page++;
    else if (back && ui->help_page > 0)
        ui->help_page--;
    else
        return 0;
    return 1;
}

int tui_apply(tui_ui *ui, tui_action a, int n_layer, ns_command *cmd)
{
    if (n_layer < 1)
        n_layer = 1;
    if (ui->selected < 0 || ui->selected >= n_layer)
        ui->selected = n_layer - 1;
    if (ui->diag && !ui->help && a == TUI_ACT_FIX) { /* the panel's own key */
        ui->diag = 0;
        memset(cmd, 0, sizeof *cmd);
        cmd->kind = CMD_FIX;
        return 1;
    }
    if (ui->help && help_turn(ui, a))
        return 0;
    if ((ui->help || ui->diag) && a != TUI_ACT_QUIT && a != TUI_ACT_NONE) {
        ui->help = ui->diag = 0; /* the key that closes an overlay does nothing else */
        return 0;
    }
    /* a page: the layers visible last frame, less one for context */
    int page = ui->layer_rows > 1 ? ui->layer_rows - 1 : 1;
    memset(cmd, 0, sizeof *cmd);
    char text[64], err[200];
    if (tui_bind_command(a, text, sizeof text) == 0) /* a settings row's key */
        return command_parse(text, cmd, err, sizeof err) == 0;
    switch (a) {
    case TUI_ACT_REWIND: cmd->kind = CMD_REWIND; return 1;
    case TUI_ACT_PAUSE: cmd->kind = CMD_PAUSE_TOGGLE; return 1;
    case TUI_ACT_STEP: cmd->kind = CMD_STEP; return 1;
    case TUI_ACT_REINIT: cmd->kind = CMD_REINIT; return 1;
    case TUI_ACT_VIEW: ui->view = (ui->view + 1) % TUI_VIEW_COUNT; return 0;
    case TUI_ACT_TARGET: ui->target = (ui->target + 1) % TWIN_TARGET_COUNT; return 0;
    case TUI_ACT_BARS: ui->bars_rel = !ui->bars_rel; return 0;
    case TUI_ACT_MECH: ui->mech = !ui->mech, ui->view = TUI_VIEW_LAYERS; return 0;
    case TUI_ACT_UP: ui->selected = clampi(ui->selected + 1, 0, n_layer - 1); return 0;
    case TUI_ACT_DOWN: ui->selected = clampi(ui->selected - 1, 0, n_layer - 1); return 0;
    case TUI_ACT_PGUP: ui->selected = clampi(ui->selected + page, 0, n_layer - 1); return 0;
    case TUI_ACT_PGDN: ui->selected = clampi(ui->selected - page, 0, n_layer - 1); return 0;
    case TUI_ACT_TOP: ui->selected = n_layer - 1; return 0;
    case TUI_ACT_BOTTOM: ui->selected = 0; return 0;
    case TUI_ACT_LOGY: ui->logy = !ui->logy; return 0;
    case TUI_ACT_FREEZE: ui->frozen = !ui->frozen; return 0;
    case TUI_ACT_LESSON: ui->lesson_hidden = !ui->lesson_hidden; return 0;
    case TUI_ACT_REVEAL: ui->reveal_stale |= ui->reveal != 0; ui->reveal = 0; return 0;
    case TUI_ACT_PALETTE: return palette_key(ui);
    case TUI_ACT_LOG_OLDER: return log_key(ui, -1);
    case TUI_ACT_LOG_NEWER: return log_key(ui, 1);
    case TUI_ACT_LOG_PGOLDER: return log_key(ui, -tui_log_page(ui));
    case TUI_ACT_LOG_PGNEWER: return log_key(ui, tui_log_page(ui));
    case TUI_ACT_DUMP_SCREEN: ui->dump |= TUI_DUMP_SCREEN; return 0; /* both, if d and e */
    case TUI_ACT_DUMP_METRICS: ui->dump |= TUI_DUMP_METRICS; return 0; /* come in one frame */
    case TUI_ACT_DUMP_FIGURE: ui->dump |= TUI_DUMP_FIGURE; return 0;
    case TUI_ACT_HELP: ui->help = 1, ui->help_page = 0; return 0;
    case TUI_ACT_DIAG: ui->diag = 1; return 0;
    case TUI_ACT_FIX:
        snprintf(ui->note, sizeof ui->note, "a applies a fix from the diagnosis: press D first ");
        return 0;
    case TUI_ACT_QUIT: ui->quit = 1; return 0;
    case TUI_ACT_STEP_BACK: case TUI_ACT_STEP_FWD: case TUI_ACT_CHECKPOINT:
        snprintf(ui->note, sizeof ui->note, "only while following a stream (--follow) ");
        return 0;
    default: return 0;
    }
}

tui_action tui_click(tui_ui *ui, int row, int col, int *selected_changed)
{
    *selected_changed = 0;
    for (int i = 0; i < ui->n_hits; i++) {
        const tui_hit *h = &ui->hits[i];
        if (h->r != row || col < h->c0 || col >= h->c1)
            continue;
        if (h->layer >= 0) {
            ui->selected = h->layer;
            *selected_changed = 1;
            return TUI_ACT_NONE;
        }
        return h->act;
    }
    return TUI_ACT_NONE;
}
