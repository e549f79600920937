/* twin.c - the two-run (--compare) rule for commands, and each run's
 * label derived from its current state (see twin.h for the rule).
 * No threads, no curses: the trainer thread and the headless loop call
 * it between steps. */
#include "twin.h"

#include <stdio.h>
#include <string.h>

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
    if (c->kind == CMD_NOTE) /* said once: in b's log when it names b, else a's */
        return run == (t == TWIN_B);
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
    if (!b || c->kind == CMD_NOTE) /* a note to the run it names ("b: note ..." in b's log) */
        return command_apply(b && t == TWIN_B ? b : a, c);
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

/* The settings a label names, walked in the table's order in passes:
 * the rows a key changes whose values are names (placement, kind,
 * precision: said by the value alone in the rest), those that apply only
 * where another setting says (the low formats' knobs, after the format),
 * those without a flag (the ramp, which says what --warmup set), the
 * other rows a key changes, then the rows --compare may vary that no key
 * changes (fixed at the start: said only where the runs differ). */
enum { LBL_NAMED, LBL_ONLY_WHERE, LBL_NOFLAG, LBL_KEYED, LBL_FIXED, LBL_PASSES };

/* Whether the row applies only where another setting says, by its
 * holds: asked of the rows a key toggles or cycles, whose holds read the
 * settings alone (settings.h). */
static int only_where(const ns_setting *s)
{
    return s->applies.holds && (s->live & (SETL_TOGGLE | SETL_CYCLE));
}

static int label_pass(const ns_setting *s)
{
    if (s->keys[0].key)
        return s->type == SET_ENUM           ? LBL_NAMED
               : only_where(s)              ? LBL_ONLY_WHERE
               : (s->flags & SETF_NOFLAG)   ? LBL_NOFLAG
                                            : LBL_KEYED;
    if (!(s->flags & SETF_COMPARE))
        return -1;
    /* a flag whose mid-run value another row says (--warmup: the ramp) */
    const ns_setting *live = settings_find_cmd(s->name);
    return live && live != s ? -1 : LBL_FIXED;
}

/* The rows a label names in order: label_next gives the next, NULL past
 * the last; start with {0, 0}. */
typedef struct {
    int pass, k;
} label_iter;

static const ns_setting *label_next(label_iter *it)
{
    for (; it->pass < LBL_PASSES; it->pass++, it->k = 0)
        while (it->k < settings_count()) {
            const ns_setting *s = settings_row(it->k++);
            /* the keyed passes look at keyed rows only: label_pass of the
             * others searches the table */
            if ((it->pass == LBL_FIXED || s->keys[0].key) && label_pass(s) == it->pass)
                return s;
        }
    return NULL;
}

/* The row as r has it now, "name=value" as --compare spells it, "" where
 * it does not apply to the run (fp16's knobs in fp32: the row's applies).
 * The value is the config's but for the two the engine's schedule holds
 * (twin_run): the ramp in force, said by its length (100 steps when
 * --warmup was 0), and the peak LR. A row's "off" is said "off". */
static void label_item(twin_run r, const ns_setting *s, char *b, size_t n)
{
    const char *name = s->flags & SETF_NOFLAG ? s->cmd : s->name;
    double x = s->hook == SETH_WARMUP ? r.warmup_on : s->hook == SETH_LR ? r.lr_peak
                                                                         : settings_get(s, r.cfg);
    char v[64];
    b[0] = 0;
    if (only_where(s) && !s->applies.holds(r.cfg, NULL))
        return;
    if (settings_is_off(s, x))
        snprintf(v, sizeof v, "off");
    else if (s->hook == SETH_WARMUP)
        snprintf(v, sizeof v, "%d", config_ramp_steps(r.cfg));
    else if (s->hook == SETH_LR)
        snprintf(v, sizeof v, "%g", x);
    else
        settings_format(s, r.cfg, v, sizeof v);
    snprintf(b, n, "%s=%s", name, v);
}

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
    char x[96], y[96];
    const ns_setting *s;
    for (label_iter it = {0, 0}; (s = label_next(&it));) {
        label_item(a, s, x, sizeof x);
        label_item(b, s, y, sizeof y);
        if (strcmp(x, y) != 0)
            return 1;
    }
    return 0;
}

/* Does every name=value of words (space-separated) hold for r now? */
static int still_holds(twin_run r, const char *words)
{
    char w[96], now[96];
    const ns_setting *s;
    for (const char *p = words; *p;) {
        size_t k = strcspn(p, " ");
        snprintf(w, sizeof w, "%.*s", (int)k, p);
        const char *eq = strchr(w, '=');
        for (label_iter it = {0, 0}; eq && (s = label_next(&it));) {
            label_item(r, s, now, sizeof now);
            if (!strncmp(now, w, (size_t)(eq - w) + 1) && strcmp(now, w) != 0)
                return 0;
        }
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
    char mine[96], theirs[96];
    const ns_setting *s;
    /* what differs first: a header cut to the panel's width keeps it */
    for (label_iter it = {0, 0}; other.cfg && (s = label_next(&it));) {
        label_item(self, s, mine, sizeof mine);
        label_item(other, s, theirs, sizeof theirs);
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
    /* the rest briefly, the rows a key changes: the named ones by their
     * value alone */
    for (label_iter it = {0, 0}; (s = label_next(&it)) && label_pass(s) != LBL_FIXED;) {
        label_item(self, s, mine, sizeof mine);
        if (other.cfg)
            label_item(other, s, theirs, sizeof theirs);
        if (mine[0] && (!other.cfg || !strcmp(mine, theirs)))
            append(buf, n, &used, label_pass(s) == LBL_NAMED ? strchr(mine, '=') + 1 : mine);
    }
}
