/* tui_keys.c - the key table (htop's habit: keys map to actions, actions
 * change state and return what to do; none of them draws) and the UI
 * state the actions change. The same table prints the help overlay and
 * the footer, so a key cannot be bound without being documented.
 * No curses: the curses layer translates its key codes to TUI_KEY_*. */
#include "tui.h"
#include "twin.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const tui_key tui_keys[] = {
    {{'p'}, "p", "p", "Norm", "Pre-LN / Post-LN placement (weights untouched)", TUI_ACT_NORM},
    {{'P'}, "P", NULL, NULL, "next placement: post pre sandwich deepnorm rezero none mix",
     TUI_ACT_NORM_CYCLE},
    {{'k'}, "k", NULL, NULL, "next norm kind: layernorm rmsnorm dyt", TUI_ACT_KIND_CYCLE},
    {{'w'}, "w", "w", "Warmup", "LR warmup on (a fresh ramp from now) / off", TUI_ACT_WARMUP},
    {{'f'}, "f", "f", "Prec", "next precision: fp32 bf16 fp16", TUI_ACT_PRECISION},
    {{'i'}, "i", NULL, NULL, "norms, softmax and loss in fp32 / in the low format",
     TUI_ACT_FP32_NORMS},
    {{'l'}, "l", NULL, NULL, "loss scaling dynamic / off (bf16, fp16)", TUI_ACT_LOSS_SCALE},
    {{' '}, "space", "Spc", "Pause", "pause / resume training", TUI_ACT_PAUSE},
    {{'n'}, "n", "n", "Step", "one step while paused (pauses a running trainer)", TUI_ACT_STEP},
    {{'+', '='}, "+/-", "+-", "LR", "peak learning rate x2 / /2", TUI_ACT_LR_UP},
    {{'-', '_'}, NULL, NULL, NULL, NULL, TUI_ACT_LR_DOWN},
    {{'c'}, "c", "c", "Clip", "gradient clipping at 1.0 on / off", TUI_ACT_CLIP},
    {{'b'}, "b", "b", "Rewind", "rewind to the newest snapshot before now (again: older)",
     TUI_ACT_REWIND},
    {{'r'}, "r", "r", "Reinit", "re-initialize: step 0, fresh weights, same seed", TUI_ACT_REINIT},
    {{TUI_KEY_TAB, TUI_KEY_BTAB}, "Tab", NULL, NULL,
     "--compare: keys act on both runs -> run a -> run b", TUI_ACT_TARGET},
    {{'m'}, "m/v", "m", "View", "view bars / heatmap (m); bars absolute / relative (v)",
     TUI_ACT_VIEW},
    {{'v'}, NULL, NULL, NULL, NULL, TUI_ACT_BARS},
    {{TUI_KEY_UP}, "up/down", NULL, NULL, "select a layer (its numbers in the box at the right)",
     TUI_ACT_UP},
    {{TUI_KEY_DOWN}, NULL, NULL, NULL, NULL, TUI_ACT_DOWN},
    /* one help line for both pairs: the overlay is full at 24 rows */
    {{TUI_KEY_PGUP}, "PgUp/PgDn", NULL, NULL, "a page of layers up / down; Home/End: top / layer 0",
     TUI_ACT_PGUP},
    {{TUI_KEY_PGDN}, NULL, NULL, NULL, NULL, TUI_ACT_PGDN},
    {{TUI_KEY_HOME}, NULL, NULL, NULL, NULL, TUI_ACT_TOP},
    {{TUI_KEY_END}, NULL, NULL, NULL, NULL, TUI_ACT_BOTTOM},
    {{'y'}, "y/z/L", "y", "Log-y", "chart log-y / linear (y); freeze (z); lesson panel (L)",
     TUI_ACT_LOGY},
    {{'z'}, NULL, "z", "Freeze", NULL, TUI_ACT_FREEZE},
    {{'L'}, NULL, NULL, NULL, NULL, TUI_ACT_LESSON},
    {{'['}, "[/]", NULL, NULL, "event log: a line older / newer ({ }: a page; the wheel)",
     TUI_ACT_LOG_OLDER},
    {{']'}, NULL, NULL, NULL, NULL, TUI_ACT_LOG_NEWER},
    {{'{'}, NULL, NULL, NULL, NULL, TUI_ACT_LOG_PGOLDER},
    {{'}'}, NULL, NULL, NULL, NULL, TUI_ACT_LOG_PGNEWER},
    {{'d'}, "d/e/g", NULL, NULL, "write the screen as text / the loss as CSV / the view as SVG",
     TUI_ACT_DUMP_SCREEN},
    {{'e'}, NULL, NULL, NULL, NULL, TUI_ACT_DUMP_METRICS},
    {{'g'}, NULL, NULL, NULL, NULL, TUI_ACT_DUMP_FIGURE},
    {{'?', 'h', TUI_KEY_F1}, "?/h/F1/D", "F1", "Help",
     "this help / the runs' diagnosis and what to try (D); any key closes", TUI_ACT_HELP},
    {{'D'}, NULL, NULL, NULL, NULL, TUI_ACT_DIAG},
    {{'q', TUI_KEY_F10}, "q/F10", "F10", "Quit", "quit (asks nothing)", TUI_ACT_QUIT},
    /* --follow only (the help shows them there, in the rows of the keys
     * that change the lab's model, which it sums up in one line) */
    {{TUI_KEY_LEFT}, "Left/Right", NULL, NULL,
     "replay: the view's step back / forward (Home/End: the ends)", TUI_ACT_STEP_BACK},
    {{TUI_KEY_RIGHT}, NULL, NULL, NULL, NULL, TUI_ACT_STEP_FWD},
    {{'C'}, "C", NULL, NULL, "ask the followed run for a checkpoint (space, +/-: pause, LR)",
     TUI_ACT_CHECKPOINT},
};
const int tui_n_keys = (int)(sizeof tui_keys / sizeof tui_keys[0]);

tui_action tui_key_action(int key)
{
    for (int i = 0; i < tui_n_keys; i++)
        for (int k = 0; k < 3 && tui_keys[i].keys[k]; k++)
            if (tui_keys[i].keys[k] == key)
                return tui_keys[i].act;
    return TUI_ACT_NONE;
}

void tui_key_name(tui_action a, char *b, size_t n)
{
    snprintf(b, n, "?");
    for (int i = 0; i < tui_n_keys; i++) {
        int k = tui_keys[i].keys[0];
        if (tui_keys[i].act != a)
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
    switch (a) {
    case TUI_ACT_NORM: case TUI_ACT_NORM_CYCLE: case TUI_ACT_KIND_CYCLE: case TUI_ACT_WARMUP:
    case TUI_ACT_PRECISION: case TUI_ACT_FP32_NORMS: case TUI_ACT_LOSS_SCALE:
    case TUI_ACT_REWIND: case TUI_ACT_STEP: case TUI_ACT_CLIP: case TUI_ACT_REINIT:
        return 1;
    default:
        return 0;
    }
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

int tui_apply(tui_ui *ui, tui_action a, int n_layer, ns_command *cmd)
{
    if (n_layer < 1)
        n_layer = 1;
    if (ui->selected < 0 || ui->selected >= n_layer)
        ui->selected = n_layer - 1;
    if ((ui->help || ui->diag) && a != TUI_ACT_QUIT && a != TUI_ACT_NONE) {
        ui->help = ui->diag = 0; /* the key that closes an overlay does nothing else */
        return 0;
    }
    /* a page: the layers visible last frame, less one for context */
    int page = ui->layer_rows > 1 ? ui->layer_rows - 1 : 1;
    memset(cmd, 0, sizeof *cmd);
    switch (a) {
    case TUI_ACT_NORM: *cmd = command_toggle(CMD_NORM); return 1;
    case TUI_ACT_NORM_CYCLE: *cmd = command_cycle(CMD_NORM); return 1;
    case TUI_ACT_KIND_CYCLE: *cmd = command_cycle(CMD_KIND); return 1;
    case TUI_ACT_WARMUP: *cmd = command_toggle(CMD_WARMUP); return 1;
    case TUI_ACT_PRECISION: *cmd = command_cycle(CMD_PRECISION); return 1;
    case TUI_ACT_FP32_NORMS: *cmd = command_toggle(CMD_FP32_NORMS); return 1;
    case TUI_ACT_LOSS_SCALE: *cmd = command_toggle(CMD_LOSS_SCALE); return 1;
    case TUI_ACT_REWIND: cmd->kind = CMD_REWIND; return 1;
    case TUI_ACT_PAUSE: cmd->kind = CMD_PAUSE_TOGGLE; return 1;
    case TUI_ACT_STEP: cmd->kind = CMD_STEP; return 1;
    case TUI_ACT_LR_UP: *cmd = command_scale(CMD_LR, 2.0); return 1;
    case TUI_ACT_LR_DOWN: *cmd = command_scale(CMD_LR, 0.5); return 1;
    case TUI_ACT_CLIP: *cmd = command_toggle(CMD_CLIP); return 1;
    case TUI_ACT_REINIT: cmd->kind = CMD_REINIT; return 1;
    case TUI_ACT_VIEW: ui->view = (ui->view + 1) % TUI_VIEW_COUNT; return 0;
    case TUI_ACT_TARGET: ui->target = (ui->target + 1) % TWIN_TARGET_COUNT; return 0;
    case TUI_ACT_BARS: ui->bars_rel = !ui->bars_rel; return 0;
    case TUI_ACT_UP: ui->selected = clampi(ui->selected + 1, 0, n_layer - 1); return 0;
    case TUI_ACT_DOWN: ui->selected = clampi(ui->selected - 1, 0, n_layer - 1); return 0;
    case TUI_ACT_PGUP: ui->selected = clampi(ui->selected + page, 0, n_layer - 1); return 0;
    case TUI_ACT_PGDN: ui->selected = clampi(ui->selected - page, 0, n_layer - 1); return 0;
    case TUI_ACT_TOP: ui->selected = n_layer - 1; return 0;
    case TUI_ACT_BOTTOM: ui->selected = 0; return 0;
    case TUI_ACT_LOGY: ui->logy = !ui->logy; return 0;
    case TUI_ACT_FREEZE: ui->frozen = !ui->frozen; return 0;
    case TUI_ACT_LESSON: ui->lesson_hidden = !ui->lesson_hidden; return 0;
    case TUI_ACT_LOG_OLDER: return log_key(ui, -1);
    case TUI_ACT_LOG_NEWER: return log_key(ui, 1);
    case TUI_ACT_LOG_PGOLDER: return log_key(ui, -tui_log_page(ui));
    case TUI_ACT_LOG_PGNEWER: return log_key(ui, tui_log_page(ui));
    case TUI_ACT_DUMP_SCREEN: ui->dump |= TUI_DUMP_SCREEN; return 0; /* both, if d and e */
    case TUI_ACT_DUMP_METRICS: ui->dump |= TUI_DUMP_METRICS; return 0; /* come in one frame */
    case TUI_ACT_DUMP_FIGURE: ui->dump |= TUI_DUMP_FIGURE; return 0;
    case TUI_ACT_HELP: ui->help = 1; return 0;
    case TUI_ACT_DIAG: ui->diag = 1; return 0;
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
