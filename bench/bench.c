/*
 * wrapbake-bench -- the per-call cost of each tier against the floor.
 *
 * Cases A-E follow the reference table of PyTorch's code-generated runtime
 * wrapper: every input is a contiguous float32 [2, 4] tensor, mutations are
 * data mutations of distinct inputs, each alias is an alias-of-input view of
 * a distinct input, and one further output is not aliased.  The graph
 * stand-in does constant work: it hands out references to values prepared
 * ahead of time.  "direct" calls the graph alone and releases its values,
 * the least any caller must do: the floor no wrapper can beat.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wrapbake.h"

#define BENCH_MAX_ARGS 32
#define BENCH_REPS 31

typedef struct bench_case {
    const char *name, *desc;
    int nargs, nmut, nalias;
} bench_case;

static const bench_case bench_cases[] = {
    {"A", "0 alias, 0 mut, 5 args", 5, 0, 0},
    {"B", "2 alias, 0 mut, 5 args", 5, 0, 2},
    {"C", "0 alias, 2 mut, 5 args", 5, 2, 0},
    {"D", "3 alias, 1 mut, 10 args", 10, 1, 3},
    {"E", "5 alias, 3 mut, 20 args", 20, 3, 5},
};

/* The graph stand-in's prepared values. */
typedef struct bench_graph {
    wb_tensor *values[BENCH_MAX_ARGS];
    int nvalues;
} bench_graph;

static int bench_graph_fn(void *ctx, const wb_arg *args, int nargs,
                          wb_tensor **values, int nvalues)
{
    bench_graph *g = ctx;
    (void)args;
    (void)nargs;
    if (nvalues != g->nvalues)
        return -1;
    for (int i = 0; i < nvalues; i++)
        values[i] = wb_tensor_retain(g->values[i]);
    return nvalues;
}

static void bench_check(wb_status st, const char *what)
{
    if (st != WB_OK) {
        fprintf(stderr, "wrapbake-bench: %s: %s\n", what, wb_last_error());
        exit(1);
    }
}

static wb_tensor *bench_tensor(void)
{
    int64_t sizes[2] = {2, 4};
    wb_tensor *t;
    bench_check(wb_tensor_new((DLDataType){kDLFloat, 32, 1},
                              (DLDevice){kDLCPU, 0}, 2, sizes, &t),
                "tensor");
    return t;
}

static wb_spec *bench_spec(const bench_case *c)
{
    wb_spec *s;
    bench_check(wb_spec_new(c->name, &s), "spec");
    for (int i = 0; i < c->nargs; i++) {
        bench_check(wb_spec_add_tensor(s, "x", i < c->nmut ? WB_MUT_DATA
                                                          : WB_MUT_NONE,
                                       0, NULL), "input");
        bench_check(wb_spec_declare_input(s, i, (DLDataType){kDLFloat, 32, 1},
                                          2), "declare");
    }
    for (int k = 0; k < c->nalias; k++)
        bench_check(wb_spec_add_output(s, "view", WB_OUT_ALIAS_OF_INPUT,
                                       c->nmut + k, false, 0, NULL), "output");
    bench_check(wb_spec_add_output(s, "out", WB_OUT_NON_ALIAS, -1, false, 0,
                                   NULL), "output");
    bench_check(wb_spec_validate(s), "validate");
    return s;
}

static double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct bench_stat {
    double median, min, max;
} bench_stat;

/* ns per call of `calls` calls through w (NULL: the graph alone). */
static bench_stat bench_time(wb_wrapper *w, bench_graph *g, const wb_arg *args,
                             int nargs, int nouts, long calls)
{
    double per[BENCH_REPS];
    wb_tensor *outs[BENCH_MAX_ARGS];
    wb_graph_fn volatile graph = bench_graph_fn;
    for (int rep = -1; rep < BENCH_REPS; rep++) {
        double t0 = bench_now_ns();
        for (long i = 0; i < calls; i++) {
            if (w) {
                bench_check(wb_call(w, args, nargs, outs, nouts), "call");
                for (int k = 0; k < nouts; k++)
                    wb_tensor_release(outs[k]);
            } else {
                int n = graph(g, args, nargs, outs, g->nvalues);
                for (int k = 0; k < n; k++)
                    wb_tensor_release(outs[k]);
            }
        }
        if (rep >= 0) /* rep -1 warms up */
            per[rep] = (bench_now_ns() - t0) / (double)calls;
    }
    qsort(per, BENCH_REPS, sizeof *per, bench_cmp);
    return (bench_stat){per[BENCH_REPS / 2], per[0], per[BENCH_REPS - 1]};
}

int main(int argc, char **argv)
{
    long calls = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    printf("wrapbake-bench %s: ns per call, median over %d runs of %ld calls "
           "(min-max)\n\n", wb_version(), BENCH_REPS, calls);
    printf("%-4s %-24s %16s %16s %16s %9s %9s %8s %10s\n", "case", "desc",
           "direct", "interp", "tcc", "interp-d", "tcc-d", "tcc/int", "tcc us");
    for (size_t ci = 0; ci < sizeof bench_cases / sizeof *bench_cases; ci++) {
        const bench_case *c = &bench_cases[ci];
        wb_tensor *in[BENCH_MAX_ARGS];
        wb_arg args[BENCH_MAX_ARGS];
        bench_graph g = {.nvalues = c->nmut + c->nalias + 1};
        for (int i = 0; i < c->nargs; i++) {
            in[i] = bench_tensor();
            args[i].t = in[i];
        }
        for (int j = 0; j < c->nmut; j++)
            g.values[j] = bench_tensor();
        for (int k = 0; k < c->nalias; k++)
            bench_check(wb_tensor_as_strided(in[c->nmut + k], 2,
                                             wb_tensor_sizes(in[c->nmut + k]),
                                             NULL, 0, &g.values[c->nmut + k]),
                        "view");
        g.values[c->nmut + c->nalias] = bench_tensor();

        wb_spec *s = bench_spec(c);
        wb_wrapper *wi, *wt;
        wb_options oi = {WB_TIER_INTERP}, ot = {WB_TIER_TCC};
        bench_check(wb_wrapper_new(s, bench_graph_fn, &g, &oi, &wi), "interp");
        double t0 = bench_now_ns();
        bench_check(wb_wrapper_new(s, bench_graph_fn, &g, &ot, &wt), "tcc");
        double compile_us = (bench_now_ns() - t0) / 1e3;

        int nouts = c->nalias + 1;
        bench_stat d = bench_time(NULL, &g, args, c->nargs, nouts, calls);
        bench_stat i = bench_time(wi, &g, args, c->nargs, nouts, calls);
        bench_stat t = bench_time(wt, &g, args, c->nargs, nouts, calls);
        char cd[32], cint[32], ct[32];
        snprintf(cd, sizeof cd, "%.1f (%.1f-%.1f)", d.median, d.min, d.max);
        snprintf(cint, sizeof cint, "%.1f (%.1f-%.1f)", i.median, i.min, i.max);
        snprintf(ct, sizeof ct, "%.1f (%.1f-%.1f)", t.median, t.min, t.max);
        double oi_ns = i.median - d.median, ot_ns = t.median - d.median;
        printf("%-4s %-24s %16s %16s %16s %9.1f %9.1f %8.2f %10.1f\n", c->name,
               c->desc, cd, cint, ct, oi_ns, ot_ns,
               oi_ns > 0 ? ot_ns / oi_ns : 0.0, compile_us);

        wb_wrapper_free(wi);
        wb_wrapper_free(wt);
        wb_spec_free(s);
        for (int v = 0; v < g.nvalues; v++)
            wb_tensor_release(g.values[v]);
        for (int a = 0; a < c->nargs; a++)
            wb_tensor_release(in[a]);
    }
    printf("\ninterp-d, tcc-d: overhead above direct; tcc/int: their ratio; "
           "tcc us: one JIT compile\n");
    return 0;
}
