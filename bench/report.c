/*
 * report.c -- wrapbake-bench's outputs: an aligned table, JSON, CSV and an
 * SVG bar chart, all from one bench_report.
 */
#include <string.h>

#include "bench.h"
#include "../src/cli/input.h"

const char *const bench_tier_names[BENCH_NTIERS] = {"direct", "interp", "tcc",
                                                    "cc", "aot"};

/* ---- the table ---- */

/* The default table fits this many columns; --wide is as wide as it needs. */
#define BENCH_COLS 100
/* A case name in the default table is cut to this many columns. */
#define BENCH_NAME_COLS 16
/* The columns a line of prose takes. */
#define BENCH_PROSE_COLS 80

/* v in at most width columns: with decimals when they fit, else without,
   else in exponent form. */
static const char *bench_num(char *buf, size_t n, int width, int decimals,
                             double v)
{
    snprintf(buf, n, "%.*f", decimals, v);
    if ((int)strlen(buf) > width)
        snprintf(buf, n, "%.0f", v);
    if ((int)strlen(buf) > width)
        snprintf(buf, n, "%.0e", v);
    return buf;
}

/* s in at most cols columns (at least 5; buf holds cols + 1 bytes): whole
   when it fits, else its start and its end around "...", so that names
   sharing a prefix stay apart. */
static const char *bench_cut(char *buf, size_t n, const char *s, int cols)
{
    int len = (int)strlen(s), head = len, tail = 0;
    if (len > cols) {
        tail = (cols - 3) / 2;
        head = cols - 3 - tail;
    }
    snprintf(buf, n, "%.*s%s%.*s", head, s, len > cols ? "..." : "", tail,
             s + len - tail);
    return buf;
}

/* text, its words broken onto lines of at most cols columns, the lines
   after the first indented by indent; a word longer than a line goes on
   over the next. */
static void bench_wrap(FILE *f, const char *text, int cols, int indent)
{
    int col = 0, start = 0;  /* where the line is, and where its words start */
    for (const char *p = text + strspn(text, " "); *p; p += strspn(p, " ")) {
        int len = (int)strcspn(p, " ");
        if (col > start && col + 1 + len > cols) {
            fprintf(f, "\n%*s", indent, "");
            col = start = indent;
        }
        if (col > start) {
            fputc(' ', f);
            col++;
        }
        int take = len < cols - col ? len : cols - col;
        fwrite(p, 1, (size_t)take, f);
        col += take;
        p += take;
    }
    fputc('\n', f);
}

/* How the graph stand-in hands out its values. */
static const char *bench_values_name(const bench_report *r)
{
    static const char *const names[] = {"fixed", "kept", "fresh"};
    return names[r->values];
}

/* The most heap allocations per call of any wrapper tier, or -1 when this
   build cannot count them. */
static double bench_worst_allocs(const bench_case_result *k)
{
    double worst = -1;
    for (int x = BENCH_INTERP; x < BENCH_NTIERS; x++)
        if (k->tiers[x].available && k->tiers[x].allocs_per_call > worst)
            worst = k->tiers[x].allocs_per_call;
    return worst;
}

/* The columns the default table gives the case names: the longest, up to
   BENCH_NAME_COLS. */
static int bench_name_cols(const bench_report *r)
{
    int cols = 4;  /* "case" */
    for (int c = 0; c < r->ncases; c++)
        if ((int)strlen(r->cases[c].name) > cols)
            cols = (int)strlen(r->cases[c].name);
    return cols < BENCH_NAME_COLS ? cols : BENCH_NAME_COLS;
}

/* The default table: per case each tier's ns per call and its overhead
   above direct, and the allocations per call of the worst tier, in at most
   16 + 5 * 8 + 4 * 9 + 7 = 99 columns. */
static void bench_table_narrow(FILE *f, const bench_report *r)
{
    int namew = bench_name_cols(r);
    char name[BENCH_NAME_COLS + 1], full[BENCH_COLS], s[32];
    bool cut = false;
    fprintf(f, "%-*s", namew, "case");
    for (int x = 0; x < BENCH_NTIERS; x++)
        fprintf(f, " %7s", bench_tier_names[x]);
    for (int x = BENCH_INTERP; x < BENCH_NTIERS; x++) {
        snprintf(s, sizeof s, "%s-d", bench_tier_names[x]);
        fprintf(f, " %8s", s);
    }
    fprintf(f, " %6s\n", "allocs");
    for (int c = 0; c < r->ncases; c++) {
        const bench_case_result *k = &r->cases[c];
        double floor = k->tiers[BENCH_DIRECT].ns.median;
        fprintf(f, "%-*s", namew, bench_cut(name, sizeof name, k->name, namew));
        for (int x = 0; x < BENCH_NTIERS; x++)
            fprintf(f, " %7s", k->tiers[x].available
                                   ? bench_num(s, sizeof s, 7, 1,
                                               k->tiers[x].ns.median)
                                   : "n/a");
        for (int x = BENCH_INTERP; x < BENCH_NTIERS; x++)
            fprintf(f, " %8s", k->tiers[x].available
                                   ? bench_num(s, sizeof s, 8, 1,
                                               k->tiers[x].ns.median - floor)
                                   : "n/a");
        double worst = bench_worst_allocs(k);
        fprintf(f, " %6s\n",
                worst < 0 ? "n/a" : bench_num(s, sizeof s, 6, 2, worst));
    }
    fputc('\n', f);
    bench_wrap(f, "interp-d, tcc-d, cc-d, aot-d: overhead above direct (the "
               "graph called alone); allocs: heap allocations per call, "
               "worst tier. --wide adds the spread (min-max), the ratios of "
               "the overheads and the times to build a wrapper.",
               BENCH_PROSE_COLS, 0);
    /* Each cut name in full, as far as a line holds it. */
    for (int c = 0; c < r->ncases; c++) {
        if ((int)strlen(r->cases[c].name) <= namew)
            continue;
        if (!cut)
            fprintf(f, "Case names cut to fit, in the order of the table:\n");
        cut = true;
        fprintf(f, "  %s: %s\n",
                bench_cut(name, sizeof name, r->cases[c].name, namew),
                bench_cut(full, sizeof full, r->cases[c].name,
                          BENCH_COLS - 4 - namew));
    }
}

static void bench_cell(FILE *f, const bench_tier_result *t)
{
    char s[48];
    if (!t->available)
        snprintf(s, sizeof s, "n/a");
    else
        snprintf(s, sizeof s, "%.1f (%.1f-%.1f)", t->ns.median, t->ns.min,
                 t->ns.max);
    fprintf(f, " %20s", s);
}

/* --wide: every column, the spread, the ratios and the build times. */
static void bench_table_wide(FILE *f, const bench_report *r)
{
    fprintf(f, "%-4s %-26s", "case", "desc");
    for (int t = 0; t < BENCH_NTIERS; t++)
        fprintf(f, " %20s", bench_tier_names[t]);
    fprintf(f, " %9s %9s %9s %9s %8s %8s %8s %8s %7s %7s %7s %7s\n",
            "interp-d", "tcc-d", "cc-d", "aot-d", "tcc/int", "tcc/cc",
            "tcc us", "batch us", "cc ms", "hit us", "aot us", "allocs");
    for (int c = 0; c < r->ncases; c++) {
        const bench_case_result *k = &r->cases[c];
        const bench_tier_result *d = &k->tiers[BENCH_DIRECT];
        const bench_tier_result *i = &k->tiers[BENCH_INTERP];
        const bench_tier_result *t = &k->tiers[BENCH_TCC];
        const bench_tier_result *cc = &k->tiers[BENCH_CC];
        const bench_tier_result *a = &k->tiers[BENCH_AOT];
        fprintf(f, "%-4s %-26s", k->name, k->desc);
        for (int x = 0; x < BENCH_NTIERS; x++)
            bench_cell(f, &k->tiers[x]);
        double oi = i->ns.median - d->ns.median, ot = t->ns.median - d->ns.median;
        double oc = cc->ns.median - d->ns.median;
        double worst = bench_worst_allocs(k);
        fprintf(f, " %9.1f %9.1f", oi, ot);
        if (cc->available)
            fprintf(f, " %9.1f", oc);
        else
            fprintf(f, " %9s", "n/a");
        if (a->available)
            fprintf(f, " %9.1f", a->ns.median - d->ns.median);
        else
            fprintf(f, " %9s", "n/a");
        fprintf(f, " %8.2f", oi > 0 ? ot / oi : 0.0);
        if (cc->available)
            fprintf(f, " %8.2f", oc > 0 ? ot / oc : 0.0);
        else
            fprintf(f, " %8s", "n/a");
        fprintf(f, " %8.1f %8.1f", t->compile_us, t->batch_us);
        if (cc->available)
            fprintf(f, " %7.1f %7.1f", cc->compile_us / 1e3, cc->load_us);
        else
            fprintf(f, " %7s %7s", "n/a", "n/a");
        if (a->available)
            fprintf(f, " %7.1f", a->compile_us);
        else
            fprintf(f, " %7s", "n/a");
        if (worst < 0)
            fprintf(f, " %7s\n", "n/a");
        else
            fprintf(f, " %7.2f\n", worst);
    }
    fprintf(f, "\ninterp-d, tcc-d, cc-d, aot-d: overhead above direct (the "
            "graph called alone);\ntcc/int, tcc/cc: ratios of those "
            "overheads; tcc us: one wrapper compiled by\nlibtcc; batch us: "
            "per wrapper when %d are compiled together; cc ms: one\nwrapper "
            "built by the system compiler; hit us: one cc wrapper loaded from "
            "the\ndisk cache; aot us: one wrapper made from the code that "
            "`wrapbake emit --aot`\nwrote for the case, built into "
            "wrapbake-bench (its spec parsed, its fingerprint\nchecked); "
            "allocs: heap allocations per call, worst tier.\n", BENCH_BATCH);
    fprintf(f, "libtcc alone (a one-line function, the floor under tcc us): "
            "%.1f us\n", r->libtcc_us);
}

/* ", N instructions/us" of the machine's calibration, or nothing. */
static const char *bench_calibration(char *buf, size_t n,
                                     const bench_report *r)
{
    if (r->calibration > 0)
        snprintf(buf, n, ", %.0f instructions/us", r->calibration);
    else
        snprintf(buf, n, "%s", "");
    return buf;
}

void bench_print_table(FILE *f, const bench_report *r, bool wide)
{
    char line[1024], name[BENCH_NAME_COLS + 1], num[32];
    int namew = bench_name_cols(r);
    fprintf(f, "wrapbake-bench: ns per call, median%s of %ld runs of %ld "
            "calls\n", wide ? " (min-max)" : "", r->reps, r->calls);
    snprintf(line, sizeof line, "%s, %s, tensors on %s, graph values %s%s",
             r->machine, r->date, r->device, bench_values_name(r),
             bench_calibration(num, sizeof num, r));
    bench_wrap(f, line, BENCH_COLS, 2);
    fputc('\n', f);
    if (wide)
        bench_table_wide(f, r);
    else
        bench_table_narrow(f, r);
    for (int x = 0; x < BENCH_NTIERS; x++)
        if (r->ncases && !r->cases[0].tiers[x].available) {
            snprintf(line, sizeof line, "%s: %s", bench_tier_names[x],
                     r->cases[0].tiers[x].why_not);
            bench_wrap(f, line, BENCH_COLS, 2);
        }
    if (r->ncases && r->cases[0].tiers[BENCH_DIRECT].launches_per_call < 0)
        return;
    fprintf(f, "\nCUDA submissions (kernel launches, batched copies) per "
            "call:\n%-*s", namew, "case");
    for (int x = 0; x < BENCH_NTIERS; x++)
        fprintf(f, " %8s", bench_tier_names[x]);
    fputc('\n', f);
    for (int c = 0; c < r->ncases; c++) {
        fprintf(f, "%-*s", namew,
                bench_cut(name, sizeof name, r->cases[c].name, namew));
        for (int x = 0; x < BENCH_NTIERS; x++) {
            const bench_tier_result *t = &r->cases[c].tiers[x];
            fprintf(f, " %8s", t->available
                                   ? bench_num(num, sizeof num, 8, 2,
                                               t->launches_per_call)
                                   : "n/a");
        }
        fputc('\n', f);
    }
}

/* ---- JSON ---- */

static void bench_json_tier(FILE *f, int x, const bench_tier_result *t)
{
    if (!t->available) {
        fprintf(f, "{\"available\": false, \"reason\": ");
        wb_cli_json_string(f, t->why_not);
        fputc('}', f);
        return;
    }
    fprintf(f, "{\"median\": %.2f, \"min\": %.2f, \"max\": %.2f", t->ns.median,
            t->ns.min, t->ns.max);
    if (x != BENCH_DIRECT) {
        if (t->allocs_per_call >= 0)
            fprintf(f, ", \"allocs_per_call\": %.3f", t->allocs_per_call);
        else
            fprintf(f, ", \"allocs_per_call\": null");
    }
    if (t->compile_us >= 0)
        fprintf(f, ", \"compile_us\": %.1f", t->compile_us);
    if (t->batch_us >= 0)
        fprintf(f, ", \"batch_compile_us\": %.1f, \"batch\": %d",
                t->batch_us, BENCH_BATCH);
    if (t->load_us >= 0)
        fprintf(f, ", \"cache_hit_us\": %.1f", t->load_us);
    if (t->launches_per_call >= 0)
        fprintf(f, ", \"launches_per_call\": %.3f", t->launches_per_call);
    fputc('}', f);
}

void bench_print_json(FILE *f, const bench_report *r)
{
    fprintf(f, "{\"machine\": ");
    wb_cli_json_string(f, r->machine);
    fprintf(f, ", \"date\": ");
    wb_cli_json_string(f, r->date);
    fprintf(f, ", \"device\": ");
    wb_cli_json_string(f, r->device);
    fprintf(f, ", \"graph_values\": \"%s\"", bench_values_name(r));
    fprintf(f, ", \"calls\": %ld, \"reps\": %ld, \"libtcc_floor_us\": %.1f, "
            "\"instructions_per_us\": %.0f, \"cases\": [", r->calls, r->reps,
            r->libtcc_us, r->calibration);
    for (int c = 0; c < r->ncases; c++) {
        const bench_case_result *k = &r->cases[c];
        fprintf(f, "%s{\"case\": ", c ? ", " : "");
        wb_cli_json_string(f, k->name);
        fprintf(f, ", \"desc\": ");
        wb_cli_json_string(f, k->desc);
        fprintf(f, ", \"direct\": ");
        bench_json_tier(f, BENCH_DIRECT, &k->tiers[BENCH_DIRECT]);
        fprintf(f, ", \"tiers\": {");
        for (int x = BENCH_INTERP; x < BENCH_NTIERS; x++) {
            fprintf(f, "%s\"%s\": ", x > BENCH_INTERP ? ", " : "",
                    bench_tier_names[x]);
            bench_json_tier(f, x, &k->tiers[x]);
        }
        fprintf(f, "}}");
    }
    fprintf(f, "]}\n");
}

/* ---- CSV ---- */

void bench_print_csv(FILE *f, const bench_report *r)
{
    fprintf(f, "case,desc,tier,available,median_ns,min_ns,max_ns,"
            "allocs_per_call,compile_us,batch_compile_us,cache_hit_us\n");
    for (int c = 0; c < r->ncases; c++)
        for (int x = 0; x < BENCH_NTIERS; x++) {
            const bench_tier_result *t = &r->cases[c].tiers[x];
            fprintf(f, "%s,\"%s\",%s,%d,", r->cases[c].name, r->cases[c].desc,
                    bench_tier_names[x], t->available);
            if (t->available)
                fprintf(f, "%.2f,%.2f,%.2f,", t->ns.median, t->ns.min,
                        t->ns.max);
            else
                fprintf(f, ",,,");
            if (t->available && x != BENCH_DIRECT && t->allocs_per_call >= 0)
                fprintf(f, "%.3f", t->allocs_per_call);
            fputc(',', f);
            if (t->compile_us >= 0)
                fprintf(f, "%.1f", t->compile_us);
            fputc(',', f);
            if (t->batch_us >= 0)
                fprintf(f, "%.1f", t->batch_us);
            fputc(',', f);
            if (t->load_us >= 0)
                fprintf(f, "%.1f", t->load_us);
            fputc('\n', f);
        }
}

/* ---- SVG ---- */

/* s as XML character data, each byte that is not printable ASCII shown as
   '?': the machine's name comes from /proc/cpuinfo, which the chart does not
   trust to be UTF-8, nor free of markup. */
static void bench_xml(FILE *f, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        default: fputc(c >= 0x20 && c < 0x7f ? c : '?', f); break;
        }
    }
}

/* A round step for an axis from 0 past max in about n steps: 1, 2, 2.5 or
   5 times a power of ten (Heckbert's "nice numbers", Graphics Gems, 1990).
   *decimals is what its multiples need to be written exactly. */
static double bench_axis_step(double max, int n, int *decimals)
{
    static const double nice[] = {1, 2, 2.5, 5, 10};
    double raw = max / n, mag = 1;
    int exp = 0, i = 0;
    while (mag * 10 <= raw)
        mag *= 10, exp++;
    while (mag > raw)
        mag /= 10, exp--;
    while (nice[i] * mag < raw)
        i++;
    if (nice[i] == 10)
        exp++;
    *decimals = (exp < 0 ? -exp : 0) + (nice[i] == 2.5 && exp <= 0);
    return nice[i] * mag;
}

/* One group of bars per case, one bar per available tier.  Each bar is the
   floor (direct, the graph alone) in grey with the tier's overhead above
   it in the tier's colour, its size written on top, so that what a
   wrapper adds shows at a glance. */
void bench_print_svg(FILE *f, const bench_report *r)
{
    static const char *const colors[BENCH_NTIERS] = {"#bdbdbd", "#e07b39",
                                                      "#3b7dd8", "#3aa655",
                                                      "#8e5bc2"};
    const int bar = 26, gap = 30, left = 80, top = 70, height = 300;
    const int group = BENCH_NTIERS * bar;
    char machine[81], sub[400], name[19], num[32];
    double max = 1;
    for (int c = 0; c < r->ncases; c++)
        for (int x = 0; x < BENCH_NTIERS; x++)
            if (r->cases[c].tiers[x].available &&
                r->cases[c].tiers[x].ns.median > max)
                max = r->cases[c].tiers[x].ns.median;
    int decimals, nsteps = 1;
    double step = bench_axis_step(max, 5, &decimals);
    while (nsteps * step < max)
        nsteps++;
    double scale = height / (nsteps * step);  /* pixels per ns */
    snprintf(sub, sizeof sub, "%s%s, %s (UTC), tensors on %s, graph values "
             "%s, median of %ld runs of %ld calls",
             bench_cut(machine, sizeof machine, r->machine, 80),
             bench_calibration(num, sizeof num, r), r->date, r->device,
             bench_values_name(r), r->reps, r->calls);
    /* About 6 pixels a character of the subtitle; room for the legend. */
    int width = left + r->ncases * (group + gap) + 20;
    if (width < 20 + 6 * (int)strlen(sub))
        width = 20 + 6 * (int)strlen(sub);
    if (width < 720)
        width = 720;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n",
            width, top + height + 70);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"20\" y=\"24\" font-size=\"15\">wrapbake-bench: ns "
            "per call of each tier, its overhead above the floor (direct) in "
            "colour</text>\n");
    fprintf(f, "<text class=\"subtitle\" x=\"20\" y=\"44\" font-size=\"11\" "
            "fill=\"#444\">");
    bench_xml(f, sub);
    fprintf(f, "</text>\n");
    /* The axis, its unit and its ticks. */
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
            "stroke=\"black\"/>\n", left, top, left, top + height);
    fprintf(f, "<text class=\"unit\" x=\"24\" y=\"%d\" text-anchor=\"middle\" "
            "transform=\"rotate(-90 24 %d)\">ns per call</text>\n",
            top + height / 2, top + height / 2);
    for (int i = 0; i <= nsteps; i++) {
        double y = top + height - i * step * scale;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
                "stroke=\"#ddd\"/>\n<text class=\"tick\" x=\"%d\" "
                "y=\"%.1f\" text-anchor=\"end\">%.*f</text>\n", left, y,
                width - 20, y, left - 6, y + 4, decimals, i * step);
    }
    for (int c = 0; c < r->ncases; c++) {
        const bench_case_result *k = &r->cases[c];
        double floor = k->tiers[BENCH_DIRECT].ns.median;
        int x0 = left + 10 + c * (group + gap);
        for (int x = 0; x < BENCH_NTIERS; x++) {
            const bench_tier_result *t = &k->tiers[x];
            if (!t->available)
                continue;
            double ns = t->ns.median, under = ns < floor ? ns : floor;
            int bx = x0 + x * bar;
            fprintf(f, "<g><title>");
            bench_xml(f, k->name);
            fprintf(f, " %s: %.1f ns", bench_tier_names[x], ns);
            if (x != BENCH_DIRECT)
                fprintf(f, ", %.1f above direct", ns - floor);
            fprintf(f, "</title>\n<rect x=\"%d\" y=\"%.1f\" width=\"%d\" "
                    "height=\"%.1f\" fill=\"%s\"/>\n", bx,
                    top + height - under * scale, bar - 2, under * scale,
                    colors[BENCH_DIRECT]);
            if (ns > floor)
                fprintf(f, "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" "
                        "height=\"%.1f\" fill=\"%s\"/>\n", bx,
                        top + height - ns * scale, bar - 2,
                        (ns - floor) * scale, colors[x]);
            double v = x == BENCH_DIRECT ? ns : ns - floor;
            fprintf(f, "<text x=\"%d\" y=\"%.1f\" font-size=\"9\" "
                    "text-anchor=\"middle\">%s%s</text></g>\n",
                    bx + bar / 2 - 1, top + height - ns * scale - 3,
                    x == BENCH_DIRECT || ns < floor ? "" : "+",
                    bench_num(num, sizeof num, 5, v > -10 && v < 10, v));
        }
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
                x0 + group / 2, top + height + 18);
        bench_xml(f, bench_cut(name, sizeof name, k->name, 18));
        fprintf(f, "</text>\n");
    }
    /* The legend. */
    for (int x = 0, lx = left; x < BENCH_NTIERS; x++) {
        bool any = r->ncases && r->cases[0].tiers[x].available;
        const char *what = x == BENCH_DIRECT ? " (the floor)"
                           : any             ? ""
                                             : " (n/a)";
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" "
                "fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s%s</text>\n", lx,
                top + height + 40, colors[x], lx + 16, top + height + 50,
                bench_tier_names[x], what);
        lx += 40 + 7 * (int)(strlen(bench_tier_names[x]) + strlen(what));
    }
    fprintf(f, "</svg>\n");
}
