/*
 * report.c -- wrapbake-bench's outputs: an aligned table, JSON, CSV and an
 * SVG bar chart, all from one bench_report.
 */
#include <math.h>
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
static const char *bench_values_name(bench_values v)
{
    static const char *const names[] = {"fixed", "kept", "fresh"};
    return names[v];
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
    snprintf(line, sizeof line, "%s, %s, tensors on %s%s, graph values %s%s",
             r->machine, r->date, r->device,
             r->own_stream ? " (own stream)" : "",
             bench_values_name(r->values), bench_calibration(num, sizeof num, r));
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

/* sep, then "key": and value as a JSON string. */
static void bench_json_str(FILE *f, const char *sep, const char *key,
                           const char *value)
{
    fprintf(f, "%s\"%s\": ", sep, key);
    wb_cli_json_string(f, value);
}

void bench_print_json(FILE *f, const bench_report *r)
{
    bench_json_str(f, "{", "machine", r->machine);
    bench_json_str(f, ", ", "date", r->date);
    bench_json_str(f, ", ", "device", r->device);
    fprintf(f, ", \"own_stream\": %s", r->own_stream ? "true" : "false");
    fprintf(f, ", \"graph_values\": \"%s\"", bench_values_name(r->values));
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
    snprintf(sub, sizeof sub, "%s%s, %s (UTC), tensors on %s%s, graph "
             "values %s, median of %ld runs of %ld calls",
             bench_cut(machine, sizeof machine, r->machine, 80),
             bench_calibration(num, sizeof num, r), r->date, r->device,
             r->own_stream ? " (own stream)" : "",
             bench_values_name(r->values), r->reps, r->calls);
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

/* ---- --scale ---- */

/* What the scaling report follows of a point: the tcc wrapper's overhead
   per call above the graph alone, or its build. */
enum { BENCH_OVERHEAD, BENCH_BUILD };

static double bench_scale_of(const bench_scale_point *p, int what)
{
    return what == BENCH_OVERHEAD ? p->tcc - p->direct : p->build;
}

/* What each item added from size `from` to size `to` of kind k cost. */
static double bench_scale_slope(const bench_scale_report *r, int k, int from,
                                int to, int what)
{
    return (bench_scale_of(&r->at[k][to], what) -
            bench_scale_of(&r->at[k][from], what)) /
           (bench_scale_sizes[to] - bench_scale_sizes[from]);
}

/* How much more an item of the last step costs than an item of all the
   steps before it, from the first size (1: the same); NAN with fewer than
   two steps, or when the steps before cost nothing.  All the steps
   before, not the one before alone: a fixed cost that one step sheds
   (stores that give way to a memset) would make that step look cheap. */
static double bench_scale_bend(const bench_scale_report *r, int k, int what)
{
    int i = r->nsizes - 1;
    double before = i < 2 ? 0 : bench_scale_slope(r, k, 0, i - 1, what);
    return before > 0 ? bench_scale_slope(r, k, i - 1, i, what) / before
                      : NAN;
}

/* Growth counts as linear when an item of the last step costs at most
   this many times one of the steps before, or nothing: a quadratic cost
   would cost about ten times as much (the sizes grow tenfold). */
#define BENCH_LINEAR_BEND 1.5

static bool bench_scale_linear(const bench_scale_report *r, int k)
{
    int i = r->nsizes - 1;
    for (int what = BENCH_OVERHEAD; what <= BENCH_BUILD; what++)
        if (bench_scale_slope(r, k, i - 1, i, what) > 0 &&
            !(bench_scale_bend(r, k, what) <= BENCH_LINEAR_BEND))
            return false;
    return true;
}

/* A bend as the table writes it: "1.02x", or "n/a". */
static const char *bench_scale_bend_text(char *buf, size_t n, double bend)
{
    if (isnan(bend))
        snprintf(buf, n, "n/a");
    else
        snprintf(buf, n, "%.2fx", bend);
    return buf;
}

/* And as JSON: the number, or null. */
static void bench_scale_bend_json(FILE *f, double bend)
{
    if (isnan(bend))
        fprintf(f, "null");
    else
        fprintf(f, "%.3f", bend);
}

void bench_scale_table(FILE *f, const bench_scale_report *r)
{
    char line[512], a[32], b[32], c[32], d[32], e[32], g[32], h[32], m[32];
    int last = bench_scale_sizes[r->nsizes - 1];
    fprintf(f, "wrapbake-bench --scale: instructions per call and per tcc "
            "build, counted by callgrind,\nof specs of 1 to %d arguments, "
            "mutations and views\n", last);
    snprintf(line, sizeof line, "%s, %s, %s, graph values %s", r->machine,
             r->date, r->counter, bench_values_name(r->values));
    bench_wrap(f, line, BENCH_COLS, 2);
    fprintf(f, "\n%-9s %5s %9s %9s %9s %9s %8s %11s %9s %7s\n", "kind", "n",
            "direct", "interp", "tcc", "tcc-d", "+tcc-d", "build", "+build",
            "allocs");
    for (int k = 0; k < BENCH_SCALE_KINDS; k++)
        for (int i = 0; i < r->nsizes; i++) {
            const bench_scale_point *p = &r->at[k][i];
            fprintf(f, "%-9s %5d %9s %9s %9s %9s %8s %11s %9s %7s\n",
                    i ? "" : bench_scale_kinds[k], bench_scale_sizes[i],
                    bench_num(a, sizeof a, 9, 0, p->direct),
                    bench_num(b, sizeof b, 9, 0, p->interp),
                    bench_num(c, sizeof c, 9, 0, p->tcc),
                    bench_num(d, sizeof d, 9, 0, p->tcc - p->direct),
                    i ? bench_num(e, sizeof e, 8, 1,
                                  bench_scale_slope(r, k, i - 1, i,
                                                    BENCH_OVERHEAD))
                      : "",
                    bench_num(g, sizeof g, 11, 0, p->build),
                    i ? bench_num(h, sizeof h, 9, 0,
                                  bench_scale_slope(r, k, i - 1, i,
                                                    BENCH_BUILD))
                      : "",
                    p->allocs < 0 ? "n/a"
                                  : bench_num(m, sizeof m, 7, 2, p->allocs));
        }
    fputc('\n', f);
    bench_wrap(f, "tcc-d is the tcc wrapper's overhead, tcc minus direct (the "
               "graph alone); +tcc-d and +build are what each item added "
               "since the size above costs; allocs are the heap allocations "
               "of a tcc call.", BENCH_PROSE_COLS, 0);
    if (r->nsizes < 3)
        return;
    fprintf(f, "\nAn item of the last step against one of the steps from "
            "1 before it\n(linear: at most %.1fx):\n", BENCH_LINEAR_BEND);
    for (int k = 0; k < BENCH_SCALE_KINDS; k++)
        fprintf(f, "  %-9s per call %s, per build %s: %s\n",
                bench_scale_kinds[k],
                bench_scale_bend_text(a, sizeof a,
                                      bench_scale_bend(r, k, BENCH_OVERHEAD)),
                bench_scale_bend_text(b, sizeof b,
                                      bench_scale_bend(r, k, BENCH_BUILD)),
                bench_scale_linear(r, k) ? "linear" : "NOT linear");
}

void bench_scale_json(FILE *f, const bench_scale_report *r)
{
    bench_json_str(f, "{", "machine", r->machine);
    bench_json_str(f, ", ", "date", r->date);
    bench_json_str(f, ", ", "counter", r->counter);
    fprintf(f, ", \"graph_values\": \"%s\", \"kinds\": {",
            bench_values_name(r->values));
    for (int k = 0; k < BENCH_SCALE_KINDS; k++) {
        fprintf(f, "%s\"%s\": {\"points\": [", k ? ", " : "",
                bench_scale_kinds[k]);
        for (int i = 0; i < r->nsizes; i++) {
            const bench_scale_point *p = &r->at[k][i];
            fprintf(f, "%s{\"n\": %d, \"direct\": %.1f, \"interp\": %.1f, "
                    "\"tcc\": %.1f, \"tcc_build\": %.0f, \"allocs_per_call\": ",
                    i ? ", " : "", bench_scale_sizes[i], p->direct, p->interp,
                    p->tcc, p->build);
            if (p->allocs < 0)
                fprintf(f, "null}");
            else
                fprintf(f, "%.3f}", p->allocs);
        }
        fprintf(f, "]");
        if (r->nsizes >= 3) {
            fprintf(f, ", \"bend_per_call\": ");
            bench_scale_bend_json(f, bench_scale_bend(r, k, BENCH_OVERHEAD));
            fprintf(f, ", \"bend_per_build\": ");
            bench_scale_bend_json(f, bench_scale_bend(r, k, BENCH_BUILD));
            fprintf(f, ", \"linear\": %s",
                    bench_scale_linear(r, k) ? "true" : "false");
        }
        fputc('}', f);
    }
    fprintf(f, "}}\n");
}

/* v (at least 1, a power of ten) short: 1, 10, 100, 1k, 10k, ... 1G. */
static const char *bench_decade(char *buf, size_t n, double v)
{
    static const char *const unit[] = {"", "k", "M", "G", "T"};
    int u = 0;
    while (v >= 1000 && u < 4)
        v /= 1000, u++;
    snprintf(buf, n, "%.0f%s", v, unit[u]);
    return buf;
}

static const char *const bench_scale_colors[BENCH_SCALE_KINDS] = {
    "#e07b39", "#3b7dd8", "#3aa655"};

/* One panel of the scaling chart, at x0, y0 and w by h pixels: what (the
   overhead per call or the build) of every kind against n, both axes in
   powers of ten, with a line of slope 1, which linear growth nears as n
   grows. */
static void bench_scale_panel(FILE *f, const bench_scale_report *r, int what,
                              const char *title, int x0, int y0, int w, int h)
{
    char num[32];
    double lo = 1e300, hi = 1;
    for (int k = 0; k < BENCH_SCALE_KINDS; k++)
        for (int i = 0; i < r->nsizes; i++) {
            double v = bench_scale_of(&r->at[k][i], what);
            if (v > 0 && v < lo)
                lo = v;
            if (v > hi)
                hi = v;
        }
    int ylo = lo < 1e300 ? (int)floor(log10(lo)) : 0;
    int yhi = (int)ceil(log10(hi));
    int xhi = (int)lround(log10(bench_scale_sizes[r->nsizes - 1]));
    if (yhi <= ylo)
        yhi = ylo + 1;
#define BENCH_X(n) (x0 + w * log10(n) / xhi)
#define BENCH_Y(v) (y0 + h - h * (log10(v) - ylo) / (yhi - ylo))
    fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"13\">%s</text>\n", x0,
            y0 - 12, title);
    for (int d = 0; d <= xhi; d++)
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
                "stroke=\"#ddd\"/>\n<text class=\"tick\" x=\"%.1f\" y=\"%d\" "
                "text-anchor=\"middle\">%s</text>\n", BENCH_X(pow(10, d)), y0,
                BENCH_X(pow(10, d)), y0 + h, BENCH_X(pow(10, d)), y0 + h + 16,
                bench_decade(num, sizeof num, pow(10, d)));
    for (int d = ylo; d <= yhi; d++)
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
                "stroke=\"#ddd\"/>\n<text class=\"tick\" x=\"%d\" y=\"%.1f\" "
                "text-anchor=\"end\">%s</text>\n", x0, BENCH_Y(pow(10, d)),
                x0 + w, BENCH_Y(pow(10, d)), x0 - 6, BENCH_Y(pow(10, d)) + 4,
                bench_decade(num, sizeof num, pow(10, d)));
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">n (items the "
            "spec has)</text>\n", x0 + w / 2, y0 + h + 34);
    /* Slope 1 through the top right corner, down to the panel's floor. */
    double from = fmax(0, xhi - (yhi - ylo));
    fprintf(f, "<line class=\"linear\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
            "y2=\"%.1f\" stroke=\"#999\" stroke-dasharray=\"4 3\"/>\n",
            BENCH_X(pow(10, from)), BENCH_Y(pow(10, yhi - (xhi - from))),
            BENCH_X(pow(10, xhi)), BENCH_Y(pow(10, yhi)));
    for (int k = 0; k < BENCH_SCALE_KINDS; k++) {
        fprintf(f, "<polyline class=\"series\" fill=\"none\" stroke=\"%s\" "
                "stroke-width=\"2\" points=\"", bench_scale_colors[k]);
        for (int i = 0; i < r->nsizes; i++) {
            double v = bench_scale_of(&r->at[k][i], what);
            if (v > 0)
                fprintf(f, "%.1f,%.1f ", BENCH_X(bench_scale_sizes[i]),
                        BENCH_Y(v));
        }
        fprintf(f, "\"/>\n");
        for (int i = 0; i < r->nsizes; i++) {
            double v = bench_scale_of(&r->at[k][i], what);
            if (v > 0)
                fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" "
                        "fill=\"%s\"><title>%s_%d: %.0f instructions"
                        "</title></circle>\n", BENCH_X(bench_scale_sizes[i]),
                        BENCH_Y(v), bench_scale_colors[k],
                        bench_scale_kinds[k], bench_scale_sizes[i], v);
        }
    }
#undef BENCH_X
#undef BENCH_Y
}

void bench_scale_svg(FILE *f, const bench_scale_report *r)
{
    const int left = 70, top = 90, w = 360, h = 280, gap = 100;
    char machine[81], sub[400];
    snprintf(sub, sizeof sub, "%s, %s (UTC), %s, graph values %s",
             bench_cut(machine, sizeof machine, r->machine, 80), r->date,
             r->counter, bench_values_name(r->values));
    int width = 2 * left + 2 * w + gap;
    if (width < 20 + 6 * (int)strlen(sub))
        width = 20 + 6 * (int)strlen(sub);
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n",
            width, top + h + 80);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"20\" y=\"24\" font-size=\"15\">wrapbake-bench "
            "--scale: instructions as a spec grows (callgrind)</text>\n");
    fprintf(f, "<text class=\"subtitle\" x=\"20\" y=\"44\" font-size=\"11\" "
            "fill=\"#444\">");
    bench_xml(f, sub);
    fprintf(f, "</text>\n");
    bench_scale_panel(f, r, BENCH_OVERHEAD, "per call: the tcc wrapper's "
                      "overhead above the graph", left, top, w, h);
    bench_scale_panel(f, r, BENCH_BUILD, "per tcc build", left + w + gap, top,
                      w, h);
    int lx = left;
    for (int k = 0; k < BENCH_SCALE_KINDS; k++) {
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" "
                "fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s</text>\n", lx,
                top + h + 52, bench_scale_colors[k], lx + 16, top + h + 62,
                bench_scale_kinds[k]);
        lx += 40 + 7 * (int)strlen(bench_scale_kinds[k]);
    }
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\" "
            "stroke-dasharray=\"4 3\"/><text x=\"%d\" y=\"%d\">slope 1: "
            "linear growth</text>\n</svg>\n", lx, top + h + 58, lx + 24,
            top + h + 58, lx + 30, top + h + 62);
}
