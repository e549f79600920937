/* twin.c - the two-run (--compare) rule for commands, and each run's
 * label derived from its current state (see twin.h for the rule).
 * No threads, no curses: the trainer thread and the headless loop call
 * it between steps. */
#include "twin.h"

#include <stdio.h>
#include <string.h>

#include "numfmt.h"
#include "settings.h"

const char *twin_target_name(twin_target t)
{
    static const char *const names[] = {"both", "a", "b"};
    return (unsigned)t < TWIN_TARGET_COUNT ? names[t] : "?";
}

/* Commands that move the runs' shared clock (or say something once): the
 * target does not split them. */
static int shared_cmd(command_kind k)
{
    return k == CMD_REINIT || k == CMD_SNAPSHOT || k == CMD_REWIND || k == CMD_NOTE;
}

int twin_acts_on(const ns_command *c, twin_target t, int run)
{
    if (c->kind == CMD_NOTE)
        return run == 0;
    if (shared_cmd(c->kind) || t == TWIN_BOTH)
        return 1;
    return run == (t == TWIN_B);
}

/* Set dst's setting that c changes to src's value (src already changed). */
static void sync_setting(engine *dst, const engine *src, const ns_command *c)
{
    const ns_setting *s = command_row(c);
    if (s)
        engine_set_setting(dst, s, engine_setting_value(src, s));
}

int twin_apply(engine *a, engine *b, const ns_command *c, twin_target t)
{
    if (!b || c->kind == CMD_NOTE)
        return command_apply(a, c);
    int each = shared_cmd(c->kind); /* the same clock: both, whatever the target */
    if (!each && t == TWIN_A)
        return command_apply(a, c);
    if (!each && t == TWIN_B)
        return command_apply(b, c);
    if (each || c->how == CMDH_SCALE) {
        /* each run its own: the same clock, or a ratio of its own rate */
        int r = command_apply(a, c);
        if (r != CMD_FLOW)
            command_apply(b, c);
        return r;
    }
    int r = command_apply(a, c); /* the new value, computed once from a */
    if (r == CMD_APPLIED)
        sync_setting(b, a, c);
    return r;
}

/* ---- labels ---------------------------------------------------------------- */

/* The mid-run settings, as name=value (the --compare names where there
 * is one); i indexes them, "" when the setting does not apply to this
 * run (fp16's knobs in fp32). Returns 0 past the last. */
static int runtime_setting(twin_run r, int i, char *b, size_t n)
{
    const ns_config *c = r.cfg;
    int low = c->precision != FMT_FP32;
    b[0] = 0;
    switch (i) {
    case 0: snprintf(b, n, "norm=%s", norm_place_name(c->norm)); return 1;
    case 1: snprintf(b, n, "norm-kind=%s", norm_kind_name(c->norm_kind)); return 1;
    case 2: snprintf(b, n, "precision=%s", numfmt_name(c->precision)); return 1;
    case 3:
        if (low)
            snprintf(b, n, "fp32-norms=%s", c->fp32_norms ? "on" : "off");
        return 1;
    case 4:
        if (low)
            snprintf(b, n, c->loss_scale == 0  ? "loss-scale=dynamic"
                           : c->loss_scale < 0 ? "loss-scale=off"
                                               : "loss-scale=%g",
                     (double)c->loss_scale);
        return 1;
    case 5:
        if (r.warmup_on) /* the ramp in force: 100 steps when --warmup was 0 */
            snprintf(b, n, "warmup=%d", config_ramp_steps(c));
        else
            snprintf(b, n, "warmup=off");
        return 1;
    case 6: snprintf(b, n, "lr=%g", (double)r.lr_peak); return 1;
    case 7:
        if (c->clip > 0)
            snprintf(b, n, "clip=%g", (double)c->clip);
        else
            snprintf(b, n, "clip=off");
        return 1;
    default: return 0;
    }
}

/* Settings fixed at the start, shown only where the runs differ. */
static const char *const fixed_names[] = {
    "final-norm", "eps", "init", "init-std", "lr-layer-decay", "betas", "adam-eps", "weight-decay",
    "schedule", "mix-k", "dyt-alpha", "ln-gamma-init", "ln-beta-init", "seed",
};

static void append(char *buf, size_t n, size_t *used, const char *s)
{
    if (!s[0] || *used + 1 >= n)
        return;
    int w = snprintf(buf + *used, n - *used, "%s%s", buf[*used - 1] == ' ' ? "" : " ", s);
    if (w > 0)
        *used = *used + (size_t)w < n ? *used + (size_t)w : n - 1;
}

int twin_differ(twin_run a, twin_run b)
{
    char x[64], y[64];
    for (int i = 0; runtime_setting(a, i, x, sizeof x); i++) {
        runtime_setting(b, i, y, sizeof y);
        if (strcmp(x, y) != 0)
            return 1;
    }
    for (size_t i = 0; i < sizeof fixed_names / sizeof fixed_names[0]; i++) {
        settings_label(a.cfg, fixed_names[i], x, sizeof x);
        settings_label(b.cfg, fixed_names[i], y, sizeof y);
        if (strcmp(x, y) != 0)
            return 1;
    }
    return 0;
}

/* Does every name=value of words (space-separated) hold for r now? */
static int still_holds(twin_run r, const char *words)
{
    char w[64], now[64];
    for (const char *p = words; *p;) {
        size_t k = strcspn(p, " ");
        snprintf(w, sizeof w, "%.*s", (int)k, p);
        const char *eq = strchr(w, '=');
        for (int i = 0; eq && runtime_setting(r, i, now, sizeof now); i++)
            if (!strncmp(now, w, (size_t)(eq - w) + 1) && strcmp(now, w) != 0)
                return 0;
        p += k + (p[k] == ' ');
    }
    return 1;
}

/* A joined run's words: what it was until the join when that changed,
 * its own words when they still hold, else whom it equals since when. */
static void joined_words(const char *name, twin_run self, char *buf, size_t n, size_t *used)
{
    char words[96];
    if (self.was && self.was[0] && !still_holds(self, self.was))
        snprintf(words, sizeof words, "%.60s until step %ld", self.was, self.joined);
    else if (self.was && self.was[0])
        snprintf(words, sizeof words, "%.60s", self.was);
    else
        snprintf(words, sizeof words, "as %s since step %ld", strcmp(name, "a") ? "a" : "b",
                 self.joined);
    append(buf, n, used, words);
}

void twin_label_differs(const char *label, char *out, size_t n)
{
    const char *p = strchr(label, ':'), *end = p ? strstr(p, "  ") : NULL;
    if (!p || !end || n == 0) {
        if (n)
            out[0] = 0;
        return;
    }
    p += 1 + (p[1] == ' ');
    snprintf(out, n, "%.*s", (int)(end - p), p);
}

void twin_label(const char *name, twin_run self, twin_run other, char *buf, size_t n)
{
    if (n == 0)
        return;
    int w = snprintf(buf, n, "%s:", name);
    size_t used = w > 0 && (size_t)w < n ? (size_t)w : n - 1;
    char mine[64], theirs[64];
    int differ[8] = {0};
    /* what differs first: a header cut to the panel's width keeps it */
    for (int i = 0; other.cfg && runtime_setting(self, i, mine, sizeof mine); i++) {
        runtime_setting(other, i, theirs, sizeof theirs);
        if ((differ[i] = strcmp(mine, theirs) != 0))
            append(buf, n, &used, mine);
    }
    for (size_t i = 0; other.cfg && i < sizeof fixed_names / sizeof fixed_names[0]; i++) {
        settings_label(self.cfg, fixed_names[i], mine, sizeof mine);
        settings_label(other.cfg, fixed_names[i], theirs, sizeof theirs);
        if (strcmp(mine, theirs) != 0)
            append(buf, n, &used, mine);
    }
    if (other.cfg && self.joined > 0 && used == strlen(name) + 1 && !twin_differ(self, other))
        joined_words(name, self, buf, n, &used);
    if (used + 3 < n && used > strlen(name) + 1) { /* two spaces: the rest */
        buf[used++] = ' ';
        buf[used++] = ' ';
        buf[used] = 0;
    }
    /* the rest briefly: the three named kinds by their value alone */
    for (int i = 0; runtime_setting(self, i, mine, sizeof mine); i++)
        if (!differ[i])
            append(buf, n, &used, i < 3 ? strchr(mine, '=') + 1 : mine);
}
