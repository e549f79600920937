/* test_settings.c - the settings table against the outside. For every
 * row: the flag is in --help with the row's range and default, in the man
 * page, accepted at its bounds and refused just beyond them (exit 2, one
 * line naming it), settable by a script line where the row has a command
 * word, and round-trips through a checkpoint where the row has a place in
 * it. And the settings that act inside the engine, checked by what they do
 * to the numbers: the layer-wise LR decay scales each block's update as
 * X^(L-1-l), set mid-run by its script word. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "command.h"
#include "engine.h"
#include "metrics.h"
#include "model.h"
#include "resume.h"
#include "settings.h"
#include "testengine.h"
#include "testutil.h"

static dataset D;

static ns_config small_cfg(int layers)
{
    ns_config c;
    settings_defaults(&c);
    c.n_layer = layers;
    c.dim = 16;
    c.n_head = 2;
    c.context = 16;
    c.batch = 4;
    c.warmup = 0;
    c.val_every = 0;
    return c;
}

static engine *make(const ns_config *c) { return test_engine_create(c, &D); }

/* One step of a fresh engine with decay x, set mid-run (after creation,
 * before the first step) by the script command; the update ratios into
 * ratio[L] and the relative change of the token embeddings into *emb. */
static int step_with(double x, int layers, double *ratio, double *emb)
{
    ns_config c = small_cfg(layers);
    engine *e = make(&c);
    if (!e)
        return -1;
    char line[64], err[256];
    ns_command cmd;
    snprintf(line, sizeof line, "lr-layer-decay %g", x);
    int ok = command_parse(line, &cmd, err, sizeof err) == 0 &&
             command_apply(e, &cmd) == CMD_APPLIED && engine_config(e)->lr_layer_decay == (float)x;
    size_t n;
    float *p = engine_params(e, &n);
    size_t nw = (size_t)NS_VOCAB * (size_t)c.dim; /* wte comes first */
    float *before = malloc(nw * sizeof *before);
    memcpy(before, p, nw * sizeof *before);
    step_metrics m;
    memset(&m, 0, sizeof m);
    engine_step(e, &m);
    double d = 0, w = 0;
    for (size_t i = 0; i < nw; i++)
        d += (double)(p[i] - before[i]) * (p[i] - before[i]), w += (double)before[i] * before[i];
    *emb = sqrt(d / w);
    for (int l = 0; l < layers; l++)
        ratio[l] = m.layer[l].update_ratio;
    free(before);
    engine_free(e);
    return ok ? 0 : -1;
}

/* With Adam, a first step moves each parameter by about lr, so block l's
 * update ratio under decay X is X^(L-1-l) times the one without: the top
 * block as before, the bottom slower (X < 1) or faster (X > 1). */
static void test_lr_layer_decay(void)
{
    enum { L = 4 };
    double off[L], half[L], twice[L], e_off, e_half, e_twice;
    CHECK(step_with(1.0, L, off, &e_off) == 0);
    CHECK(step_with(0.5, L, half, &e_half) == 0);
    CHECK(step_with(2.0, L, twice, &e_twice) == 0);
    int follows = 1;
    for (int l = 0; l < L; l++) {
        double want_h = pow(0.5, L - 1 - l), want_t = pow(2.0, L - 1 - l);
        int ok = off[l] > 0 && t_close(half[l] / off[l], want_h, 0.03, 0) &&
                 t_close(twice[l] / off[l], want_t, 0.03, 0);
        if (!ok)
            fprintf(stderr, "  layer %d: ratio x0.5 %g, x2 %g, want %g, %g\n", l,
                    half[l] / off[l], twice[l] / off[l], want_h, want_t);
        follows &= ok;
    }
    CHECK(follows);
    CHECK(half[0] < 0.2 * half[L - 1] && off[0] > 0.5 * off[L - 1]);
    /* the embeddings sit below block 0: X^L */
    CHECK(t_close(e_half / e_off, pow(0.5, L), 0.03, 0));
    /* out of the flag's range: refused, with the range */
    ns_command c;
    char err[256];
    CHECK(command_parse("lr-layer-decay 11", &c, err, sizeof err) != 0 && strstr(err, "0.1..10"));
    CHECK(command_parse("lr-layer-decay", &c, err, sizeof err) != 0);
}

/* ---- the table against the outside -------------------------------------- */

static int is_number_row(const ns_setting *s)
{
    return s->type == SET_INT || s->type == SET_LONG || s->type == SET_REAL;
}

/* A value of the row other than its default, inside its range, spelled
 * as the flag takes it. */
static void other_value(const ns_setting *s, char *buf, size_t len)
{
    double x = s->lo != s->def ? s->lo : s->hi;
    switch (s->type) {
    case SET_ENUM: snprintf(buf, len, "%s", s->names[((int)s->def + 1) % s->n_names]); return;
    case SET_ONOFF: snprintf(buf, len, "%s", s->def ? "off" : "on"); return;
    case SET_AUTO: snprintf(buf, len, "on"); return;
    case SET_U64: snprintf(buf, len, "%llu", (unsigned long long)UINT64_MAX); return;
    case SET_BETAS: snprintf(buf, len, "%.17g,%.17g", s->lo, s->hi); return;
    case SET_PATH: snprintf(buf, len, "x"); return;
    case SET_ASSIGN: snprintf(buf, len, "lr=1"); return;
    default: snprintf(buf, len, "%.17g", x); return;
    }
}

/* cli_parse of "--NAME [VALUE] --version": 1 if the value was taken (the
 * parser reached --version), 2 if refused with one line naming the flag. */
static int parse_flag(const ns_setting *s, const char *v, int with_eq)
{
    char flag[128];
    char *argv[4] = {"normscope", flag, NULL, "--version"};
    int argc = 2;
    if (with_eq)
        snprintf(flag, sizeof flag, "--%s=%s", s->name, v);
    else
        snprintf(flag, sizeof flag, "--%s", s->name);
    if (v && !with_eq)
        argv[argc++] = (char *)v;
    argv[argc++] = "--version";
    FILE *out = tmpfile(), *err = tmpfile();
    cli_opts o;
    int r = cli_parse(&o, argc, argv, out, err);
    char line[512] = "", more[8];
    rewind(err);
    int lines = fgets(line, sizeof line, err) != NULL;
    lines += fgets(more, sizeof more, err) != NULL;
    fclose(out);
    fclose(err);
    if (r == 2 && (lines != 1 || !strstr(line, s->name)))
        return -1;
    return r;
}

static int accepted(const ns_setting *s, const char *v) { return parse_flag(s, v, 0) == 1; }
static int refused(const ns_setting *s, const char *v) { return parse_flag(s, v, 0) == 2; }

/* Just beyond a bound: a hundredth of it further out (or 1e-300 from 0). */
static double beyond(double b, int up)
{
    double d = fabs(b) * 0.01 > 0 ? fabs(b) * 0.01 : 1e-300;
    return up ? b + d : b - d;
}

static int bounds_hold(const ns_setting *s)
{
    char lo[40], hi[40], blo[40], bhi[40];
    snprintf(lo, sizeof lo, "%.17g", s->lo), snprintf(hi, sizeof hi, "%.17g", s->hi);
    int ilo = s->type == SET_INT || s->type == SET_LONG; /* integers: one past */
    snprintf(blo, sizeof blo, "%.17g", ilo ? s->lo - 1 : beyond(s->lo, 0));
    snprintf(bhi, sizeof bhi, "%.17g", ilo ? s->hi + 1 : beyond(s->hi, 1));
    int words = s->type != SET_LOSS_SCALE || (accepted(s, "dynamic") && accepted(s, "off"));
    if (is_number_row(s) || s->type == SET_LOSS_SCALE)
        return words && accepted(s, lo) && accepted(s, hi) && refused(s, blo) && refused(s, bhi);
    char a[160], b[160], c[160];
    switch (s->type) {
    case SET_BETAS:
        snprintf(a, sizeof a, "%s,%s", lo, hi);
        snprintf(b, sizeof b, "%.17g,%s", beyond(s->lo, 0), hi);
        snprintf(c, sizeof c, "%s,%.17g", lo, beyond(s->hi, 1));
        return accepted(s, a) && refused(s, b) && refused(s, c);
    case SET_U64:
        return accepted(s, "0") && accepted(s, "18446744073709551615") && refused(s, "-1") &&
               refused(s, "18446744073709551616");
    case SET_ENUM: case SET_ONOFF: case SET_AUTO: {
        int ok = refused(s, "bogus");
        settings_names(s, "|", a, sizeof a);
        for (char *t = strtok(a, "|"); t; t = strtok(NULL, "|"))
            ok &= accepted(s, t);
        return ok;
    }
    case SET_PRESENCE: case SET_ACTION:
        return parse_flag(s, NULL, 0) == 1 && parse_flag(s, "1", 1) == 2;
    case SET_ASSIGN: return accepted(s, "lr=1") && refused(s, "lr");
    default: return accepted(s, "x");
    }
}

/* The --help line of the row (the text after "--NAME", both lines when
 * the help goes on the next one) into buf; 0 if found. */
static int help_of(const ns_setting *s, const char *help, char *buf, size_t len)
{
    char key[64];
    snprintf(key, sizeof key, "--%s", s->name);
    for (const char *p = strstr(help, key); p; p = strstr(p + 1, key)) {
        char after = p[strlen(key)];
        int left = p - help >= 2 && p[-1] == ' ' && (p[-2] == ' ' || p[-2] == ',');
        if ((after != ' ' && after != '\n') || !left) /* the option column only */
            continue;
        const char *e = strchr(p, '\n');
        if (e && strspn(e + 1, " ") >= 28) /* the help went on the next line */
            e = strchr(e + 1, '\n');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), p);
        return 0;
    }
    return -1;
}

/* The help line states the row's range and default, read back. */
static int help_states(const ns_setting *s, const char *line)
{
    const char *open = strrchr(line, '(');
    char want[200];
    if (s->type == SET_PATH || s->type == SET_ASSIGN || s->type == SET_PRESENCE ||
        s->type == SET_ACTION)
        return !s->def_text || strstr(line, s->def_text) != NULL;
    if (!open)
        return 0;
    if (is_number_row(s)) {
        char *end, *dots = strstr(open, "..");
        if (!dots || strtod(open + 1, NULL) != s->lo || strtod(dots + 2, &end) != s->hi)
            return 0;
        if (s->def_text)
            return strstr(end, s->def_text) != NULL;
        const char *d = strstr(end, "default ");
        return d && (float)strtod(d + 8, NULL) == (float)s->def;
    }
    if (s->def_text)
        snprintf(want, sizeof want, "default: %s", s->def_text);
    else if (s->type == SET_ENUM)
        snprintf(want, sizeof want, "default %s", s->names[(int)s->def]);
    else if (s->type == SET_ONOFF || s->type == SET_AUTO)
        snprintf(want, sizeof want, "default %s", s->def < 0 ? "auto" : s->def ? "on" : "off");
    else if (s->type == SET_BETAS)
        snprintf(want, sizeof want, "each %g..%g, default %g,%g", s->lo, s->hi, s->def, s->def2);
    else if (s->type == SET_U64)
        snprintf(want, sizeof want, "0..2^64-1, default %.0f", s->def);
    else /* loss scale */
        snprintf(want, sizeof want, "default dynamic");
    return strstr(open, want) != NULL;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = calloc(1, 1 << 20);
    if (buf && fread(buf, 1, (1 << 20) - 1, f) == 0)
        buf[0] = 0;
    fclose(f);
    return buf;
}

/* normscope(1)'s text (NS_FIXTURES/../../man, the tree's), or NULL. */
static char *man_page(void)
{
    const char *fix = getenv("NS_FIXTURES");
    char manp[512];
    snprintf(manp, sizeof manp, "%s/../../man/normscope.1", fix ? fix : "tests/fixtures");
    return slurp(manp);
}

static char *help_text(void)
{
    FILE *f = tmpfile();
    cli_usage(f);
    long n = ftell(f);
    rewind(f);
    char *buf = calloc(1, (size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n)
        buf[0] = 0;
    fclose(f);
    return buf;
}

/* Save an engine with c, load it back: the loaded config into *out. */
static int roundtrip(const ns_config *c, ns_config *out)
{
    char path[] = "/tmp/ns_settings_XXXXXX", err[256];
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    close(fd);
    engine *e = make(c);
    int r = e && engine_save(e, path, err, sizeof err) == 0 ? 0 : -1;
    engine_free(e);
    engine *l = r == 0 ? engine_load(path, &D, out, err, sizeof err) : NULL;
    if (!l && r == 0)
        fprintf(stderr, "  load: %s\n", err), r = -1;
    engine_free(l);
    unlink(path);
    return r;
}

/* The row's value set by a flag, then through a checkpoint: the same
 * (and not the default, which a lost field would read as). */
static int survives_checkpoint(const ns_setting *s, const ns_config *base)
{
    ns_config c = *base, back;
    char v[80], why[200], a[80], b[80], d[80];
    other_value(s, v, sizeof v);
    if (settings_set(s, &c, NULL, v, why, sizeof why) != 0 || roundtrip(&c, &back) != 0)
        return 0;
    ns_config def;
    settings_defaults(&def);
    settings_format(s, &c, a, sizeof a);
    settings_format(s, &back, b, sizeof b);
    settings_format(s, &def, d, sizeof d);
    return !strcmp(a, b) && strcmp(b, d);
}

/* "at 0: WORD VALUE" applied to an engine, which then saves: the loaded
 * checkpoint has the value. */
static int script_sets(const ns_setting *s, const ns_config *base)
{
    char v[80], text[160], err[256], a[80], b[80];
    other_value(s, v, sizeof v);
    snprintf(text, sizeof text, "at 0: %s %s\n", s->cmd, v);
    ns_script sc;
    if (command_script_parse(text, "t", &sc, err, sizeof err) != 0 || sc.n != 1) {
        fprintf(stderr, "  %s\n", err);
        return 0;
    }
    ns_config want = *base, back;
    settings_set(s, &want, NULL, v, err, sizeof err);
    engine *e = make(base);
    int ok = e && command_apply(e, &sc.e[0].cmd) == CMD_APPLIED;
    if (ok) {
        ns_config now = *engine_config(e);
        ok = roundtrip(&now, &back) == 0;
    }
    engine_free(e);
    command_script_free(&sc);
    settings_format(s, &want, a, sizeof a);
    settings_format(s, &back, b, sizeof b);
    return ok && !strcmp(a, b);
}

static void test_table(void)
{
    char *man = man_page(), *help = help_text();
    CHECK(man != NULL && help != NULL);
    ns_config base = small_cfg(2);
    base.context = 8;
    base.steps = 5;
    for (int i = 0; man && help && i < settings_count(); i++) {
        const ns_setting *s = settings_row(i);
        char line[400], key[80];
        snprintf(key, sizeof key, "Fl -%s", s->name);
        /* a mid-run setting that is no flag: its command only */
        int flag = !(s->flags & SETF_NOFLAG);
        line[0] = 0;
        int in_help = !flag || (help_of(s, help, line, sizeof line) == 0 && help_states(s, line));
        int checks[5] = {in_help, !flag || strstr(man, key) != NULL, !flag || bounds_hold(s),
                         !s->cmd || script_sets(s, &base),
                         !s->ckpt || survives_checkpoint(s, &base)};
        static const char *what[5] = {"--help with its range and default", "the man page",
                                      "bounds", "script", "checkpoint"};
        for (int k = 0; k < 5; k++)
            if (!t_check(checks[k], __FILE__, __LINE__, what[k]))
                fprintf(stderr, "  row --%s: %s%s%s\n", s->name, what[k], k ? "" : ": ",
                        k ? "" : line);
    }
    free(man);
    free(help);
}

/* man[from, to): the text of a man page section, from its heading to the
 * next heading of the same or a higher level (NULL when not found). */
static const char *man_section(const char *man, const char *heading, const char **end)
{
    const char *at = strstr(man, heading);
    if (!at)
        return NULL;
    const char *sh = strstr(at + 1, "\n.Sh "), *ss = strstr(at + 1, "\n.Ss ");
    if (!strncmp(heading, "\n.Sh", 5) || (sh && ss && sh < ss) || !ss)
        ss = NULL; /* a section ends at the next section; a subsection at either */
    *end = ss ? ss : sh ? sh : at + strlen(at);
    return at;
}

/* Is there a line in [from, to) that starts with `lead` and has the token
 * `word` (followed by a blank, a comma or the line's end)? */
static int man_item(const char *from, const char *to, const char *lead, const char *word)
{
    size_t n = strlen(word);
    for (const char *l = from; l && l < to; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        const char *eol = strchr(l, '\n');
        if (strncmp(l, lead, strlen(lead)))
            continue;
        for (const char *w = l; (w = strstr(w, word)) && (!eol || w < eol); w++)
            if ((w[-1] == ' ') && (w[n] == ' ' || w[n] == ',' || w[n] == '\n'))
                return 1;
    }
    return 0;
}

/* The man page's key table (LIVE VIEW, Keys) has each settings row's keys,
 * and SCRIPTS each row's command word: both follow from the table. */
static void test_man_keys(void)
{
    char *man = man_page();
    CHECK(man != NULL);
    if (!man)
        return;
    const char *kend, *send;
    const char *keys = man_section(man, "\n.Ss Keys\n", &kend);
    const char *scripts = man_section(man, "\n.Sh SCRIPTS\n", &send);
    CHECK(keys && scripts);
    int n_keys = 0, n_cmds = 0, bad = 0;
    for (int i = 0; keys && scripts && i < settings_count(); i++) {
        const ns_setting *s = settings_row(i);
        if (!s->cmd)
            continue;
        n_cmds++;
        if (!man_item(scripts, send, ".It Cm ", s->cmd)) {
            fprintf(stderr, "  SCRIPTS has no '.It Cm %s'\n", s->cmd);
            bad++;
        }
        for (int k = 0; k < SET_KEYS; k++) {
            char tok[8];
            if (!s->keys[k].key)
                continue;
            n_keys++;
            snprintf(tok, sizeof tok, "Ic %c", s->keys[k].key);
            if (!man_item(keys, kend, ".It ", tok)) {
                fprintf(stderr, "  Keys has no '.It Ic %c' (--%s %s)\n", s->keys[k].key, s->name,
                        s->keys[k].how);
                bad++;
            }
        }
    }
    CHECK(n_keys >= 10 && n_cmds >= 10);
    CHECK(bad == 0);
    free(man);
}

/* A man page's flag name in prose: as given, or its words apart ("norm
 * kind" for norm-kind). Is it at w, a whole word? */
static int man_word_at(const char *w, const char *name, const char *start)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < n; i++)
        if (w[i] != name[i] && !(name[i] == '-' && w[i] == ' '))
            return 0;
    return (w == start || strchr(" \n(", w[-1])) && strchr(" ,;.)(\n", w[n]);
}

static const char *man_word(const char *from, const char *to, const char *name)
{
    for (const char *w = from; w && w < to; w++)
        if (man_word_at(w, name, from))
            return w;
    return NULL;
}

/* The rows a list is of, each in or out; the names that are in, in table
 * order, comma-separated: the list as the page should have it. */
typedef int (*row_test)(const ns_setting *s);
static int is_comparable(const ns_setting *s) { return (s->flags & SETF_COMPARE) != 0; }

static void expected_list(row_test in, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < settings_count(); i++)
        if (in(settings_row(i)))
            at += (size_t)snprintf(buf + at, at < len ? len - at : 0, "%s%s", at ? ", " : "",
                                   settings_row(i)->name);
}

/* [from, to) holds exactly the rows `in` keeps, by name, each as a whole
 * word after `lead` ("" or "-"): a row missing or one too many is
 * named, and the list the table gives is printed. */
static void check_man_list(const char *what, const char *from, const char *to, const char *lead,
                           row_test in)
{
    int bad = 0, found = 0;
    for (int i = 0; from && i < settings_count(); i++) {
        const ns_setting *s = settings_row(i);
        char tok[80];
        snprintf(tok, sizeof tok, "%s%s", lead, s->name);
        int there = man_word(from, to, tok) != NULL;
        if (!s->name[0] || there == in(s))
            continue;
        fprintf(stderr, "  normscope(1), %s: %s %s\n", what, s->name,
                there ? "is listed, but the table leaves it out" : "is missing");
        bad++;
    }
    for (int i = 0; i < settings_count(); i++)
        found += in(settings_row(i));
    if (!t_check(from && !bad && found > 3, __FILE__, __LINE__, what)) {
        char want[1024];
        expected_list(in, want, sizeof want);
        fprintf(stderr, "  the table's list: %s\n", want);
    }
}

/* The checkpoint header's fields, in the order of their numbers (each
 * row's ckpt), each named as its flag. */
static void check_man_ckpt(const char *from, const char *to)
{
    const char *at = from;
    int named = 0;
    for (int k = 1; at; k++) {
        const ns_setting *s = NULL;
        for (int i = 0; i < settings_count() && !s; i++)
            if (settings_row(i)->ckpt == k)
                s = settings_row(i);
        if (!s)
            break;
        const char *w = man_word(at, to, s->name);
        if (!t_check(w != NULL, __FILE__, __LINE__, "checkpoint header order"))
            fprintf(stderr, "  CHECKPOINT FORMAT: field %d (%s) is not named after field %d\n",
                    k, s->name, k - 1);
        at = w ? w + strlen(s->name) : NULL;
        named += w != NULL;
    }
    CHECK(named >= 30);
}

/* The man page's lists of settings are the table's: the settings
 * --compare may vary, those --load applies mid-run, and the checkpoint
 * header's fields in order. */
static void test_man_lists(void)
{
    char *man = man_page();
    CHECK(man != NULL);
    if (!man)
        return;
    const char *cmp = strstr(man, "Any setting that leaves the model's shape alone may differ:");
    const char *cmp_end = cmp ? strstr(cmp, ".\n") : NULL;
    check_man_list("--compare's settings", cmp, cmp_end, "", is_comparable);
    const char *load = strstr(man, "\n.It Fl -load ");
    const char *ld = load ? strstr(load, "the flags a mid-run command can change") : NULL;
    const char *ld_end = ld ? strstr(ld, " )\n") : NULL;
    check_man_list("--load's mid-run flags", ld, ld_end, "-", resume_changes);
    const char *ck = strstr(man, "\n.Sh CHECKPOINT FORMAT\n");
    const char *hdr = ck ? strstr(ck, "bytes of header:") : NULL;
    const char *hdr_end = hdr ? strstr(hdr, "then the run state") : NULL;
    CHECK(hdr && hdr_end);
    if (hdr && hdr_end)
        check_man_ckpt(hdr, hdr_end);
    free(man);
}

/* The command line words (blank-separated) parsed, then checked for flags
 * that do nothing against its own settings: the exit value (0, or 2 when
 * refused by the parser or the check), the lines on stderr in *lines and
 * the first in line. */
static int applies_case(const char *words, int *lines, char *line, size_t len)
{
    char buf[256], *argv[24] = {"normscope"};
    int argc = 1;
    snprintf(buf, sizeof buf, "%s", words);
    for (char *t = strtok(buf, " "); t && argc < 23; t = strtok(NULL, " "))
        argv[argc++] = t;
    FILE *err = tmpfile();
    cli_opts o;
    int r = cli_parse(&o, argc, argv, stdout, err);
    if (r == 0)
        r = cli_check_applies(&o, &o.cfg, err);
    rewind(err);
    char more[400];
    line[0] = 0;
    *lines = fgets(line, (int)len, err) != NULL;
    while (fgets(more, sizeof more, err))
        (*lines)++;
    fclose(err);
    return r;
}

/* Flags that do nothing where they are given: said in one line (a
 * warning, the run goes on) or refused (exit 2, one line), from each
 * row's "applies"; and where they do something, not a word. */
static void test_applies(void)
{
    static const struct {
        const char *words;
        int exit, lines;
        const char *says;
    } cases[] = {
        {"--headless --loss-scale 128", 0, 1,
         "--loss-scale 128 does nothing with --precision fp32"},
        {"--headless --loss-scale 128 --precision fp16", 0, 0, ""},
        {"--headless --loss-scale 128 --compare precision=bf16", 0, 0, ""},
        {"--headless --fp32-norms off", 0, 1,
         "--fp32-norms off does nothing with --precision fp32"},
        {"--headless --fp32-norms off --precision bf16", 0, 0, ""},
        {"--headless --dyt-alpha 0.3", 0, 1,
         "--dyt-alpha 0.3 does nothing with --norm-kind layernorm"},
        {"--headless --dyt-alpha 0.3 --norm-kind dyt", 0, 0, ""},
        {"--headless --lr 0.01 --schedule noam", 0, 1,
         "--lr 0.01 does nothing with --schedule noam"},
        {"--headless --lr 0.01 --schedule cosine", 0, 0, ""},
        {"--headless --lr 0.01 --schedule noam --load ck", 0, 0, ""}, /* a mid-run change */
        {"--headless --on-diverge pause", 0, 1, "--on-diverge pause does nothing with --headless"},
        {"--on-diverge pause", 0, 0, ""},
        {"--headless --on-diverge stop", 0, 0, ""},
        {"--headless --loss-scale 128 --dyt-alpha 0.3", 0, 2, "--dyt-alpha"},
        {"--follow x.nsj --lr 0.1", 2, 1, "--lr does nothing with --follow"},
        {"--follow x.nsj --load ck", 2, 1, "--load does nothing with --follow"},
        {"--follow x.nsj --headless --steps 3 --csv - -q", 0, 0, ""},
        {"--follow x.nsj --ascii --no-color --bars relative", 0, 0, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char line[400];
        int lines, r = applies_case(cases[i].words, &lines, line, sizeof line);
        int ok = r == cases[i].exit && lines == cases[i].lines && strstr(line, cases[i].says);
        if (!t_check(ok, __FILE__, __LINE__, cases[i].words))
            fprintf(stderr, "  exit %d, %d lines: %s\n", r, lines, line);
    }
    /* each such row's OPTIONS entry in the man page names the flag that
     * decides, as the warning does */
    char *man = man_page();
    CHECK(man != NULL);
    int rows = 0;
    for (int i = 0; man && i < settings_count(); i++) {
        const ns_setting *s = settings_row(i);
        char item[80], under[80];
        if (!s->applies.holds)
            continue;
        rows++;
        snprintf(item, sizeof item, "\n.It Fl -%s ", s->name);
        snprintf(under, sizeof under, "Fl -%s", s->applies.under);
        const char *at = strstr(man, item), *next = at ? strstr(at + 1, "\n.It Fl ") : NULL;
        const char *u = at ? strstr(at + 1, under) : NULL;
        if (!t_check(at && u && (!next || u < next), __FILE__, __LINE__, "man names the decider"))
            fprintf(stderr, "  --%s: its entry lacks '%s'\n", s->name, under);
    }
    CHECK(rows >= 5);
    free(man);
}

/* A flag whose value is a file or a directory (its placeholder says FILE
 * or DIR) is marked SETF_FILE, so a lesson cannot give it: a classmate's
 * lesson must not write or read a file of the student's. */
static void test_file_rows(void)
{
    int n = 0;
    for (int i = 0; i < settings_count(); i++) {
        const ns_setting *s = settings_row(i);
        int names_file = s->arg && (strstr(s->arg, "FILE") || strstr(s->arg, "DIR"));
        if (!names_file)
            continue;
        n++;
        if (!t_check(s->flags & SETF_FILE, __FILE__, __LINE__, "a file flag is SETF_FILE"))
            fprintf(stderr, "  --%s %s is not marked SETF_FILE\n", s->name, s->arg);
    }
    CHECK(n >= 10);
}

/* The words of a man page list in [from, to): each line that starts with
 * `lead` gives its tokens, the separating " , " and a closing " ." left
 * out. Up to max into w (each < 48 bytes); returns how many. */
static int man_words(const char *from, const char *to, const char *lead, char (*w)[48], int max)
{
    int n = 0;
    size_t ll = strlen(lead);
    for (const char *l = from; l && l < to; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
        if (strncmp(l, lead, ll))
            continue;
        const char *p = l + ll, *eol = strchr(l, '\n');
        eol = eol ? eol : p + strlen(p);
        while (p < eol) {
            size_t k = strcspn(p, " \n");
            if (p + k > eol)
                k = (size_t)(eol - p);
            int sep = k == 1 && (*p == ',' || *p == '.');
            if (k > 0 && !sep && n < max)
                snprintf(w[n++], 48, "%.*s", (int)k, p);
            p += k + (p + k < eol);
        }
    }
    return n;
}

/* The man page's list `what` is the table's columns (prefix + name), row
 * by row: the first row that differs is named with both sides' words,
 * and a column missing or one too many. */
static void check_man_cols(const char *what, char (*w)[48], int n, const char *const *cols,
                           int ncols, const char *prefix)
{
    int bad = 0;
    for (int k = 0; k < ncols || k < n; k++) {
        char want[64] = "";
        if (k < ncols)
            snprintf(want, sizeof want, "%s%s", prefix, cols[k]);
        if (k < n && k < ncols && !strcmp(w[k], want))
            continue;
        if (!bad)
            fprintf(stderr, "  normscope(1), %s: row %d is '%s', the table's is '%s'\n", what, k + 1,
                    k < n ? w[k] : "(none)", k < ncols ? want : "(none)");
        bad++;
    }
    if (!t_check(bad == 0 && n > 0, __FILE__, __LINE__, what)) {
        fprintf(stderr, "  the table's list:");
        for (int k = 0; k < ncols; k++)
            fprintf(stderr, " %s%s", prefix, cols[k]);
        fputc('\n', stderr);
    }
}

/* METRICS lists the step columns and then the per-layer ones, in the
 * order of the tables the writers walk (metrics_step_col(k),
 * metrics_layer_cols): a column added to a table and not to the page, or
 * moved in one, fails here by name. */
static void test_man_columns(void)
{
    char *man = man_page();
    CHECK(man != NULL);
    if (!man)
        return;
    const char *end, *sec = man_section(man, "\n.Sh METRICS\n", &end);
    const char *steps = sec ? strstr(sec, "Columns, in order:") : NULL;
    const char *steps_end = steps ? strstr(steps, "\n.El\n") : NULL;
    const char *layers = steps_end ? strstr(steps_end, "for each layer i") : NULL;
    const char *layers_end = layers ? strstr(layers, "\n.El\n") : NULL;
    CHECK(steps_end && layers_end && layers_end < end);
    char (*w)[48] = calloc(256, sizeof *w);
    const char *step_names[METRICS_STEP_MAX], *layer_names[METRICS_LAYER_COLS];
    int ns = metrics_step_ncols();
    for (int k = 0; k < ns && k < METRICS_STEP_MAX; k++)
        step_names[k] = metrics_step_col(k)->name;
    for (int k = 0; k < METRICS_LAYER_COLS; k++)
        layer_names[k] = metrics_layer_cols[k].name;
    if (w && steps_end && layers_end) {
        int n = man_words(steps, steps_end, ".It Li ", w, 256);
        check_man_cols("METRICS' step columns", w, n, step_names, ns, "");
        n = man_words(layers, layers_end, ".It Li ", w, 256);
        check_man_cols("METRICS' per-layer columns", w, n, layer_names, METRICS_LAYER_COLS,
                       "l{i}_");
    }
    free(w);
    free(man);
}

/* The step columns: the ones older files have, in their order, then the
 * settings' that came after; each setting column is its row's (step_col,
 * the column's name), and every row with a step_col has its column. */
static void test_step_columns(void)
{
    static const char *const old[] = {
        "step", "loss", "val_loss", "lr", "grad_norm", "tokens_per_s", "norm", "norm_kind",
        "warmup", "clip", "precision", "fp32_norms", "loss_scale", "skipped", "ln_gamma_init"};
    int n = metrics_step_ncols(), rows = 0;
    CHECK(n >= (int)(sizeof old / sizeof old[0]) && n <= METRICS_STEP_MAX);
    for (int k = 0; k < (int)(sizeof old / sizeof old[0]) && k < n; k++)
        CHECK(!strcmp(metrics_step_col(k)->name, old[k]));
    for (int k = 0; k < n; k++) {
        const ns_setting *s = metrics_step_col(k)->setting;
        char name[64];
        if (!s)
            continue;
        settings_column(s, name, sizeof name);
        CHECK(s->step_col == k && !strcmp(name, metrics_step_col(k)->name) &&
              settings_of_column(name) == s);
    }
    for (int i = 0; i < settings_count(); i++)
        if (settings_row(i)->step_col) {
            rows++;
            CHECK(metrics_step_col(settings_row(i)->step_col)->setting == settings_row(i));
        }
    CHECK(rows >= 7);
    /* the special cases' columns: the ramp, not --warmup; lr and the
     * scale measured, not the rows' */
    CHECK(settings_of_column("warmup") == settings_find_cmd("warmup") &&
          settings_find_cmd("warmup") != settings_find("warmup", 6));
    CHECK(!metrics_step_col(metrics_step_col_find("lr", 2))->setting &&
          !metrics_step_col(metrics_step_col_find("loss_scale", 10))->setting);
}

int main(void)
{
    data_builtin(&D);
    test_lr_layer_decay();
    test_table();
    test_step_columns();
    test_man_keys();
    test_man_lists();
    test_man_columns();
    test_applies();
    test_file_rows();
    return test_summary();
}
