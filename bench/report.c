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

/* How the graph stand-in hands out its values. */
static const char *bench_values_name(const bench_report *r)
{
    static const char *const names[] = {"fixed", "kept", "fresh"};
    return names[r->values];
}

void bench_print_table(FILE *f, const bench_report *r)
{
    fprintf(f, "wrapbake-bench: ns per call, median (min-max) of %ld runs of "
            "%ld calls\n%s, %s, tensors on %s, graph values %s\n\n", r->reps,
            r->calls, r->machine, r->date, r->device, bench_values_name(r));
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
        double worst = 0;
        for (int x = BENCH_INTERP; x < BENCH_NTIERS; x++)
            if (k->tiers[x].available && k->tiers[x].allocs_per_call > worst)
                worst = k->tiers[x].allocs_per_call;
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
        if (i->allocs_per_call < 0)
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
    for (int x = 0; x < BENCH_NTIERS; x++)
        if (r->ncases && !r->cases[0].tiers[x].available)
            fprintf(f, "%s: %s\n", bench_tier_names[x],
                    r->cases[0].tiers[x].why_not);
    if (r->ncases && r->cases[0].tiers[BENCH_DIRECT].launches_per_call < 0)
        return;
    fprintf(f, "\nCUDA submissions (kernel launches, batched copies) per "
            "call:\n%-4s", "case");
    for (int x = 0; x < BENCH_NTIERS; x++)
        fprintf(f, " %8s", bench_tier_names[x]);
    fputc('\n', f);
    for (int c = 0; c < r->ncases; c++) {
        fprintf(f, "%-4s", r->cases[c].name);
        for (int x = 0; x < BENCH_NTIERS; x++) {
            const bench_tier_result *t = &r->cases[c].tiers[x];
            if (t->available)
                fprintf(f, " %8.2f", t->launches_per_call);
            else
                fprintf(f, " %8s", "n/a");
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
            "\"cases\": [", r->calls, r->reps, r->libtcc_us);
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

/* One group of bars per case, one bar per available tier, the floor (the
   graph alone) drawn across each group as a dashed line. */
void bench_print_svg(FILE *f, const bench_report *r)
{
    static const char *const colors[BENCH_NTIERS] = {"#9e9e9e", "#e07b39",
                                                      "#3b7dd8", "#3aa655",
                                                      "#8e5bc2"};
    const int bar = 22, gap = 28, left = 70, top = 50, height = 300;
    int ntiers = BENCH_NTIERS;
    int width = left + r->ncases * (ntiers * bar + gap) + 40;
    if (width < left + ntiers * 110)
        width = left + ntiers * 110;  /* room for the legend */
    double max = 1;
    for (int c = 0; c < r->ncases; c++)
        for (int x = 0; x < ntiers; x++)
            if (r->cases[c].tiers[x].available &&
                r->cases[c].tiers[x].ns.median > max)
                max = r->cases[c].tiers[x].ns.median;
    max *= 1.1;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n",
            width, top + height + 70);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%d\" y=\"24\" font-size=\"15\">wrapbake-bench: "
            "ns per call (median), dashed: the graph alone</text>\n", left);
    /* The axis and its ticks. */
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
            "stroke=\"black\"/>\n", left, top, left, top + height);
    for (int i = 0; i <= 4; i++) {
        double v = max * i / 4;
        int y = top + height - (int)(height * i / 4);
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
                "stroke=\"#ddd\"/>\n<text x=\"%d\" y=\"%d\" "
                "text-anchor=\"end\">%.0f</text>\n", left, y, width - 20, y,
                left - 6, y + 4, v);
    }
    for (int c = 0; c < r->ncases; c++) {
        const bench_case_result *k = &r->cases[c];
        int x0 = left + 10 + c * (ntiers * bar + gap);
        for (int x = 0; x < ntiers; x++) {
            const bench_tier_result *t = &k->tiers[x];
            if (!t->available)
                continue;
            int h = (int)(height * t->ns.median / max);
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                    "fill=\"%s\"><title>%s %s: %.1f ns</title></rect>\n",
                    x0 + x * bar, top + height - h, bar - 2, h, colors[x],
                    k->name, bench_tier_names[x], t->ns.median);
        }
        int floor = top + height -
                    (int)(height * k->tiers[BENCH_DIRECT].ns.median / max);
        fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
                "stroke=\"black\" stroke-dasharray=\"4 3\"/>\n", x0 - 4, floor,
                x0 + ntiers * bar, floor);
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                x0 + ntiers * bar / 2, top + height + 18, k->name);
    }
    /* The legend. */
    for (int x = 0, lx = left; x < ntiers; x++) {
        bool any = r->ncases && r->cases[0].tiers[x].available;
        fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" "
                "fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s%s</text>\n", lx,
                top + height + 36, colors[x], lx + 16, top + height + 46,
                bench_tier_names[x], any ? "" : " (n/a)");
        lx += 110;
    }
    fprintf(f, "</svg>\n");
}
