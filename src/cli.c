/* cli.c - walk argv against the settings table (settings.c), which gives
 * every flag's type, range, default and help; and the --compare setting
 * of a twin run. It is not where flags are listed: that is the table. */
#include "cli.h"

#include "nstext.h"
#include "pool.h"
#include "settings.h"

#include <string.h>

/* A value from the command line as an error line may show it: one line,
 * no escape sequence reaching the terminal. */
static const char *shown(const char *v, char *buf, size_t n)
{
    nstext_escape_str(v, buf, n);
    return buf;
}

void cli_usage(FILE *f)
{
    fputs("usage: normscope [options]            live view of a Transformer training\n"
          "       normscope --headless [options] train and write metrics, no UI\n\n"
          "Trains a small byte-level GPT and shows per-layer gradient norms,\n"
          "activation maxima and the loss while it trains.\n\noptions:\n",
          f);
    settings_help(f);
    fputs("\nexit status: 0 done, 1 runtime error, 2 bad usage or input, 3 diverged or\n"
          "blew up (finite), or a fix did not help and none was left, 4 stalled\n"
          "(--on-stall stop)\n"
          "See normscope(1) for the metrics columns and the checkpoint format.\n",
          f);
}

int cli_given(const cli_opts *o, const char *long_name)
{
    const ns_setting *s = settings_find(long_name, strlen(long_name));
    return s && o->given[settings_index(s)];
}

/* Store one flag's value; --help and --version print and return 1. */
static int apply(cli_opts *o, const ns_setting *s, const char *v, FILE *out, FILE *err)
{
    char why[200], vb[300];
    if (s->type == SET_ACTION) {
        if (!strcmp(s->name, "help"))
            cli_usage(out);
        else
            fprintf(out, "normscope %s\n", NS_VERSION);
        return 1;
    }
    if (settings_set(s, &o->cfg, o, v, why, sizeof why) != 0) {
        fprintf(err, "normscope: --%s '%s': %s\n", s->name, shown(v, vb, sizeof vb), why);
        return 2;
    }
    o->given[settings_index(s)] = 1;
    return 0;
}

int cli_apply_setting(ns_config *c, const char *spec, FILE *err)
{
    const char *eq = strchr(spec, '=');
    size_t len = eq ? (size_t)(eq - spec) : strlen(spec);
    const ns_setting *s = settings_find(spec, len);
    if (!eq || !s || !(s->flags & SETF_COMPARE)) {
        char names[600], vb[300];
        settings_compare_names(names, sizeof names);
        fprintf(err, "normscope: --compare '%s': expected SETTING=VALUE with SETTING one of %s\n",
                shown(spec, vb, sizeof vb), names);
        return 2;
    }
    ns_config tmp = *c;
    char why[200], vb[300];
    if (settings_set(s, &tmp, NULL, eq + 1, why, sizeof why) != 0) {
        fprintf(err, "normscope: --%s '%s': %s\n", s->name, shown(eq + 1, vb, sizeof vb), why);
        return 2;
    }
    *c = tmp;
    return 0;
}

/* The row named by argv[*i] and its value (the next argument, or after
 * '=' or a short flag's letter). 0, or 2 after one line to err. */
static int next_flag(int argc, char **argv, int *i, const ns_setting **sp, const char **valp,
                     FILE *err)
{
    const char *a = argv[*i], *val = NULL;
    const ns_setting *s;
    int takes;
    char vb[300];
    if (a[0] == '-' && a[1] == '-' && a[2]) {
        const char *eq = strchr(a + 2, '=');
        size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (!(s = settings_find(a + 2, len))) {
            nstext_escape(a, len + 2, vb, sizeof vb);
            fprintf(err, "normscope: unknown option '%s' (see --help)\n", vb);
            return 2;
        }
        takes = s->type != SET_PRESENCE && s->type != SET_ACTION;
        if (eq && !takes) {
            fprintf(err, "normscope: --%s takes no value\n", s->name);
            return 2;
        }
        val = eq ? eq + 1 : NULL;
    } else if (a[0] == '-' && a[1] && a[1] != '-') {
        if (!(s = settings_find_short(a[1]))) {
            nstext_escape(a, 2, vb, sizeof vb);
            fprintf(err, "normscope: unknown option '%s' (see --help)\n", vb);
            return 2;
        }
        takes = s->type != SET_PRESENCE && s->type != SET_ACTION;
        if (a[2] && !takes) {
            fprintf(err, "normscope: -%c takes no value\n", a[1]);
            return 2;
        }
        val = a[2] ? a + 2 : NULL;
    } else {
        fprintf(err, "normscope: unexpected argument '%s' (see --help)\n", shown(a, vb, sizeof vb));
        return 2;
    }
    if (takes && !val) {
        if (*i + 1 >= argc) {
            char arg[96];
            if (s->arg)
                snprintf(arg, sizeof arg, "%s", s->arg);
            else
                settings_names(s, "|", arg, sizeof arg);
            fprintf(err, "normscope: --%s needs a value: %s\n", s->name, arg);
            return 2;
        }
        val = argv[++*i];
    }
    *sp = s;
    *valp = val;
    return 0;
}

/* --out, --kind, ... shape a figure; without --plot they would be dropped
 * without a word, so the run they were meant for is refused instead */
static int refuse_plot_options(const cli_opts *o, FILE *err)
{
    if (cli_given(o, "plot"))
        return 0;
    for (int i = 0; i < settings_count(); i++) {
        const ns_setting *s = settings_row(i);
        if ((s->flags & SETF_PLOT) && cli_given(o, s->name)) {
            fprintf(err, "normscope: --%s is a --plot option (give --plot INPUT)\n", s->name);
            return 1;
        }
    }
    return 0;
}

/* --follow shows a stream that another run writes, --plot draws a file:
 * a training or sweep flag given with either would be dropped without a
 * word, so it is refused (the display and figure options are kept). */
static int refuse_unused(const cli_opts *o, const char *mode, const char *why, FILE *err)
{
    for (int i = 0; i < settings_count(); i++) {
        const ns_setting *s = settings_row(i);
        if (o->given[i] && !(s->flags & (SETF_FOLLOW | SETF_PLOT)) && strcmp(s->name, mode)) {
            fprintf(err, "normscope: --%s does nothing with --%s, %s\n", s->name, mode, why);
            return 1;
        }
    }
    return 0;
}

static int refuse_follow_options(const cli_opts *o, FILE *err)
{
    if (o->follow)
        return refuse_unused(o, "follow", "which shows a stream and trains nothing (give it to "
                             "the run that writes the stream)", err);
    if (cli_given(o, "plot"))
        return refuse_unused(o, "plot", "which draws a figure from its input and trains nothing",
                             err);
    return 0;
}

/* Does the --compare twin differ in the setting named under? Then a flag
 * it decides may apply to one run of the two. */
static int twin_varies(const cli_opts *o, const char *under)
{
    size_t n = under ? strlen(under) : 0;
    return o->compare && n && !strncmp(o->compare, under, n) && o->compare[n] == '=';
}

void cli_each_inapplicable(const cli_opts *o, const ns_config *c, cli_applies_fn *each, void *ctx)
{
    for (int i = 0; i < settings_count(); i++) {
        const ns_setting *s = settings_row(i);
        char line[400];
        int r = o->given[i] && !twin_varies(o, s->applies.under)
                    ? settings_applies(s, c, o, line, sizeof line)
                    : 0;
        if (r)
            each(ctx, i, r, line);
    }
}

typedef struct {
    FILE *err;
    int refused;
} applies_print;

/* A warning line each; the first refusal ends the list */
static void print_applies(void *ctx, int row, int verdict, const char *line)
{
    applies_print *p = ctx;
    (void)row;
    if (p->refused)
        return;
    if (verdict == 2) {
        fprintf(p->err, "normscope: %s\n", line);
        p->refused = 1;
    } else {
        fprintf(p->err, "normscope: warning: %s\n", line);
    }
}

int cli_check_applies(const cli_opts *o, const ns_config *c, FILE *err)
{
    applies_print p = {err, 0};
    cli_each_inapplicable(o, c, print_applies, &p);
    return p.refused ? 2 : 0;
}

int cli_parse(cli_opts *o, int argc, char **argv, FILE *out, FILE *err)
{
    memset(o, 0, sizeof *o);
    settings_defaults(&o->cfg);
    settings_opts_defaults(o);
    o->threads = pool_default_threads();
    for (int i = 1; i < argc; i++) {
        const ns_setting *s;
        const char *val;
        int r = next_flag(argc, argv, &i, &s, &val, err);
        if (!r)
            r = apply(o, s, val, out, err);
        if (r)
            return r;
    }
    /* the shape flags given, as a mask (cli_given says the same) */
    o->set = (cli_given(o, "layers") ? CLI_SET_LAYERS : 0u) |
             (cli_given(o, "dim") ? CLI_SET_DIM : 0u) |
             (cli_given(o, "heads") ? CLI_SET_HEADS : 0u) |
             (cli_given(o, "context") ? CLI_SET_CONTEXT : 0u) |
             (cli_given(o, "batch") ? CLI_SET_BATCH : 0u) |
             (cli_given(o, "steps") ? CLI_SET_STEPS : 0u);
    if (refuse_plot_options(o, err) || refuse_follow_options(o, err))
        return 2;
    if (o->cfg.n_head > o->cfg.dim || o->cfg.dim % o->cfg.n_head) {
        fprintf(err, "normscope: --heads %d: must divide --dim %d\n", o->cfg.n_head, o->cfg.dim);
        return 2;
    }
    if (o->headless && !cli_given(o, "steps"))
        o->cfg.steps = 1000;
    const char *why = config_check(&o->cfg);
    if (why) {
        fprintf(err, "normscope: %s\n", why);
        return 2;
    }
    return 0;
}
