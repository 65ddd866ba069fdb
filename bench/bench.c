/*
 * wrapbake-bench -- the per-call cost of each tier against the floor.
 *
 * Cases A-E follow the reference table of PyTorch's code-generated runtime
 * wrapper: every input is a contiguous float32 [2, 4] tensor, mutations are
 * data mutations of distinct inputs, each alias is an alias-of-input view of
 * a distinct input, and one further output is not aliased.  Their specs are
 * the text of bench/cases.txt, which the Makefile also builds into this
 * program ahead of time (aot.c): every tier, aot included, runs the same
 * specs.  --spec FILE benchmarks the user's own specs the same way, on every
 * tier but aot, whose code only a build can bring.  The graph stand-in does
 * constant work: it hands out references to values prepared ahead of time,
 * shaped as the spec says, and keeps its own, their storage fixed as a
 * graph that keeps its buffers would (with --unfixed not fixed; with
 * --fresh it hands over the only reference to a new tensor on each value's
 * storage instead, as a compiled graph does).  "direct" calls the graph
 * alone and releases its values, the least any caller must do: the floor
 * no wrapper can beat.
 *
 * With --tier, wrapbake-bench makes exactly --calls calls and prints no
 * timing, for instruction counts that do not depend on a noisy clock:
 * callgrind's count for N calls minus its count for 0 calls, over N.  With
 * --builds instead of --calls it builds wrappers (or compiles the libtcc
 * floor) the same way.
 */
#define _GNU_SOURCE /* sched_setaffinity */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "wrapbake.h"
#include "bench.h"
#include "../src/cli/input.h"
#include "../src/tiers/jit.h"
#include "../src/spec/spec.h"

/* ---- cases ---- */

typedef struct bench_case {
    char name[WB_MAX_NAME + 1], desc[64];
    wb_spec *spec;
    int aot;  /* the case's graph in the ahead-of-time unit, or -1 */
} bench_case;

/* What each builtin case must be; bench_builtin_spec holds the text of
   bench/cases.txt to it. */
static const struct {
    const char *name, *desc;
    int nargs, nmut, nalias;
} bench_builtin[] = {
    {"A", "0 alias, 0 mut, 5 args", 5, 0, 0},
    {"B", "2 alias, 0 mut, 5 args", 5, 0, 2},
    {"C", "0 alias, 2 mut, 5 args", 5, 2, 0},
    {"D", "3 alias, 1 mut, 10 args", 10, 1, 3},
    {"E", "5 alias, 3 mut, 20 args", 20, 3, 5},
};

#define BENCH_NBUILTIN ((int)(sizeof bench_builtin / sizeof *bench_builtin))

void bench_die(const char *what, const char *why)
{
    fprintf(stderr, "wrapbake-bench: %s: %s\n", what, why);
    exit(1);
}

/* Whether a file written through f (NULL: not opened) has all it was
   given; closes f. */
static bool bench_closed(FILE *f)
{
    if (!f)
        return false;
    bool ok = !ferror(f);
    return fclose(f) == 0 && ok;
}

static void bench_ok(wb_status st, const char *what)
{
    if (st != WB_OK)
        bench_die(what, wb_last_error());
}

static const DLDataType bench_f32 = {kDLFloat, 32, 1};
/* Where every tensor lives (--device). */
static DLDevice bench_device = {kDLCPU, 0};

/* --device cpu, cuda or cuda:N. */
static void bench_parse_device(const char *text)
{
    char *end;
    if (!strcmp(text, "cpu"))
        return;
    if (strncmp(text, "cuda", 4) != 0)
        bench_die("--device", "takes cpu, cuda or cuda:N");
    bench_device = (DLDevice){kDLCUDA, 0};
    if (text[4] == ':') {
        long id = strtol(text + 5, &end, 10);
        if (end == text + 5 || *end || id < 0 || id > 1024)
            bench_die("--device", "takes cpu, cuda or cuda:N");
        bench_device.device_id = (int32_t)id;
    } else if (text[4]) {
        bench_die("--device", "takes cpu, cuda or cuda:N");
    }
    bench_ok(wb_cuda_devices(NULL), "--device cuda");
}

/* --stream: the calls enqueue on a stream of their own instead of the
   legacy default stream, so that a call's contiguous copies go in one
   cudaMemcpyBatchAsync rather than the gather-copy kernel (docs/cuda.md). */
static void bench_own_stream(void)
{
    int (*set)(int), (*create)(void **);
    void *stream;
    *(void **)&set = wb_rt_cuda_symbol("cudaSetDevice");
    *(void **)&create = wb_rt_cuda_symbol("cudaStreamCreate");
    /* A stream belongs to the device current when it is made. */
    if (!set || set(bench_device.device_id) != 0)
        bench_die("--stream", "cudaSetDevice failed");
    if (!create || create(&stream) != 0)
        bench_die("--stream", "cudaStreamCreate failed");
    wb_set_call_stream(stream);
}

/* On a device, every tensor input is declared there, so the generated code
   takes the device write-back without asking. */
static void bench_on_device(wb_spec *s, const char *where)
{
    if (bench_device.device_type == kDLCPU)
        return;
    for (int i = 0; i < s->ninputs; i++)
        if (s->inputs[i].is_tensor && !(s->inputs[i].flags & WB_INPUT_OPTIONAL))
            bench_ok(wb_spec_declare_device(s, i, bench_device), where);
    bench_ok(wb_spec_validate(s), where);
}

/* The device's own work finished, so that each repetition starts on an
   idle device and measures what the host pays. */
static void bench_device_sync(void)
{
    static int (*sync)(void);
    if (bench_device.device_type == kDLCPU)
        return;
    if (!sync)
        *(void **)&sync = wb_rt_cuda_symbol("cudaDeviceSynchronize");
    if (!sync || sync() != 0)
        bench_die("--device cuda", "cudaDeviceSynchronize failed");
}

/* Whether s is builtin case i as documented: nargs declared float32 2-d
   tensor inputs, the first nmut of them data-mutated, each of the next
   nalias viewed by one alias-of-input output, then one output that aliases
   nothing; nothing else. */
static bool bench_builtin_ok(const wb_spec *s, int i)
{
    int nargs = bench_builtin[i].nargs, nmut = bench_builtin[i].nmut;
    int nalias = bench_builtin[i].nalias;
    if (s->ninputs != nargs || s->nupdated != nmut ||
        s->noutputs != nalias + 1 || s->nbases != 0 || s->training ||
        s->nguards || s->before_call || s->first_call)
        return false;
    for (int a = 0; a < nargs; a++) {
        const wb_input *in = &s->inputs[a];
        if (!in->is_tensor || in->flags || in->ndim != 2 ||
            in->device.device_type != kDLCPU ||
            in->dtype.code != bench_f32.code ||
            in->dtype.bits != bench_f32.bits ||
            in->dtype.lanes != bench_f32.lanes ||
            in->mutation != (a < nmut ? WB_MUT_DATA : WB_MUT_NONE))
            return false;
    }
    for (int k = 0; k <= nalias; k++) {
        const wb_output *o = &s->outputs[k];
        if (o->requires_grad || o->dyn ||
            (k < nalias && (o->kind != WB_OUT_ALIAS_OF_INPUT ||
                            o->base != nmut + k)) ||
            (k == nalias && o->kind != WB_OUT_NON_ALIAS))
            return false;
    }
    return true;
}

/* Builtin case i, parsed from the text the ahead-of-time unit embeds (that
   of bench/cases.txt), so that the aot code was generated for the very
   spec every other tier runs. */
static wb_spec *bench_builtin_spec(int i, int *aot)
{
    wb_spec *s;
    const char *name = bench_builtin[i].name;
    *aot = bench_aot_lookup(name);
    if (*aot < 0)
        bench_die(name, "bench/cases.txt has no such case; rebuild "
                  "wrapbake-bench");
    bench_ok(bench_aot_spec(*aot, &s), name);
    if (!bench_builtin_ok(s, i))
        bench_die(name, "bench/cases.txt does not say what the case is "
                  "documented to be");
    bench_on_device(s, name);
    return s;
}

/* The specs of a text or YAML file, each a case named by its spec. */
static int bench_file_cases(const char *path, bench_case **cases)
{
    wb_cli_entries es = {0};
    char *err = NULL;
    if (wb_cli_read_file(path, &es, &err) != 0)
        bench_die("--spec", err ? err : "cannot read it");
    if (es.n == 0)
        bench_die(path, "holds no spec");
    *cases = calloc(es.n ? es.n : 1, sizeof **cases);
    if (!*cases)
        bench_die(path, "out of memory");
    int n = 0;
    for (size_t i = 0; i < es.n; i++) {
        char where[300];
        snprintf(where, sizeof where, "%s:%d", path, es.v[i].line);
        if (es.v[i].error)
            bench_die(where, es.v[i].error);
        bench_case *c = &(*cases)[n++];
        c->aot = -1;
        bench_ok(wb_spec_parse(es.v[i].text, &c->spec), where);
        bench_ok(wb_spec_validate(c->spec), where);
        bench_on_device(c->spec, where);
        snprintf(c->name, sizeof c->name, "%s", wb_spec_name(c->spec));
        snprintf(c->desc, sizeof c->desc, "%d in, %d mut, %d out",
                 wb_spec_num_inputs(c->spec), wb_spec_num_updated(c->spec),
                 wb_spec_num_outputs(c->spec));
    }
    wb_cli_entries_free(&es);
    return n;
}

/* ---- the graph stand-in ---- */

/* Inputs, arguments and the values the graph hands out, made from a spec:
   every tensor [2, 4] (or [2]*ndim when declared) of the declared dtype or
   float32; updated values shaped as their input; views of the inputs,
   intermediate bases and outputs they alias.  The arrays of values are
   sized from the spec, as many as its graph returns; the calls reuse outs,
   so that a call allocates nothing of the benchmark's own. */
typedef struct bench_world {
    const wb_spec *spec;
    wb_tensor *in[WB_MAX_INPUTS];
    wb_arg args[WB_MAX_INPUTS];
    wb_tensor **values;
    wb_value *outs;  /* what a call hands back: outputs, or graph values */
    int nvalues;
    wb_graph_fn graph;  /* bench_graph_kept, or with --fresh _fresh */
} bench_world;

/* How the graph hands out its values: --unfixed, --fresh. */
static bench_values bench_mode = BENCH_FIXED;

/* The stand-in: a reference to each prepared value, the graph keeping its
   own. */
static int bench_graph_kept(void *ctx, const wb_arg *args, int nargs,
                            wb_value *values, int nvalues)
{
    bench_world *w = ctx;
    (void)args;
    (void)nargs;
    if (nvalues != w->nvalues)
        return -1;
    for (int i = 0; i < nvalues; i++)
        values[i].t = wb_tensor_retain(w->values[i]);
    return nvalues;
}

/* The stand-in as a compiled graph returns its values: each a new tensor
   (a header on the prepared value's storage, with its view), whose only
   reference the caller gets.  Out of memory, it returns the values made so
   far, which the caller releases. */
static int bench_graph_fresh(void *ctx, const wb_arg *args, int nargs,
                             wb_value *values, int nvalues)
{
    bench_world *w = ctx;
    (void)args;
    (void)nargs;
    if (nvalues != w->nvalues)
        return -1;
    for (int i = 0; i < nvalues; i++)
        if (wb_tensor_detach(w->values[i], &values[i].t) != WB_OK)
            return i;
    return nvalues;
}

static wb_tensor *bench_tensor(DLDataType dt, int ndim)
{
    int64_t sizes[WB_MAX_DIMS];
    wb_tensor *t;
    for (int d = 0; d < ndim; d++)
        sizes[d] = d == ndim - 1 && ndim == 2 ? 4 : 2;
    bench_ok(wb_tensor_new(dt, bench_device, ndim, sizes, &t), "tensor");
    return t;
}

static wb_tensor *bench_view(const wb_tensor *base)
{
    wb_tensor *v;
    bench_ok(wb_tensor_as_strided(base, wb_tensor_ndim(base),
                                  wb_tensor_sizes(base),
                                  wb_tensor_strides(base),
                                  wb_tensor_offset(base), &v), "view");
    return v;
}

static void bench_world_make(bench_world *w, const wb_spec *s)
{
    memset(w, 0, sizeof *w);
    w->spec = s;
    w->nvalues = s->nvalues;
    w->graph = bench_mode == BENCH_FRESH ? bench_graph_fresh
                                         : bench_graph_kept;
    /* One more than needed: a graph of no values must not ask for none. */
    w->values = calloc((size_t)s->nvalues + 1, sizeof *w->values);
    w->outs = calloc((size_t)s->nvalues + 1, sizeof *w->outs);
    if (!w->values || !w->outs)
        bench_die(s->name, "out of memory");
    for (int i = 0; i < s->ninputs; i++) {
        const wb_input *in = &s->inputs[i];
        if (!in->is_tensor)
            continue;
        w->in[i] = bench_tensor(in->dtype.bits ? in->dtype : bench_f32,
                                in->ndim >= 0 ? in->ndim : 2);
        w->args[i].t = w->in[i];
    }
    int m = s->nupdated, nout = s->noutputs;
    for (int j = 0; j < m; j++) {
        const wb_tensor *t = w->in[s->muts[j].input];
        w->values[j] = bench_tensor(wb_tensor_dtype(t), wb_tensor_ndim(t));
    }
    for (int b = 0; b < s->nbases; b++)
        w->values[m + nout + b] = bench_tensor(bench_f32, 2);
    for (int pass = 0; pass < 2; pass++)
        for (int k = 0; k < nout; k++) {
            const wb_spec_out *d = &s->outs[k];
            /* Plain outputs first: other outputs may view them. */
            bool plain = d->kind == WB_OUT_NON_ALIAS ||
                         d->kind == WB_OUT_IS_INPUT;
            if (plain != (pass == 0))
                continue;
            if (plain)
                w->values[d->value] = bench_tensor(bench_f32, 2);
            else if (d->kind == WB_OUT_ALIAS_OF_INPUT)
                w->values[d->value] = bench_view(w->in[d->base]);
            else
                w->values[d->value] = bench_view(w->values[d->base]);
        }
    if (bench_mode == BENCH_FIXED)
        for (int i = 0; i < w->nvalues; i++)
            wb_tensor_fix_storage(w->values[i]);
}

static void bench_world_free(bench_world *w)
{
    for (int i = 0; i < w->nvalues; i++)
        wb_tensor_release(w->values[i]);
    for (int i = 0; i < w->spec->ninputs; i++)
        wb_tensor_release(w->in[i]);
    free(w->values);
    free(w->outs);
}

/* ---- measuring ---- */

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

/* The machine's speed, so that times from two runs can be set side by
   side: instructions per microsecond of a loop of two instructions an
   iteration (a subtract and the branch on it, each iteration waiting on
   the last, an iteration a cycle), the fastest of five runs of 10 million
   iterations, since load only slows it.  0 on an architecture without the
   loop. */
static double bench_calibrate(void)
{
#if defined(__x86_64__)
    enum { runs = 5 };
    const long iters = 10000000;
    double us[runs];
    for (int r = 0; r < runs; r++) {
        long n = iters;
        double t0 = bench_now_ns();
        __asm__ volatile("1: sub $1, %0\n\tjnz 1b" : "+r"(n) : : "cc");
        us[r] = (bench_now_ns() - t0) / 1e3;
    }
    qsort(us, runs, sizeof *us, bench_cmp);
    return 2.0 * (double)iters / us[0];
#else
    return 0;
#endif
}

/* calls calls through w, or of the graph alone when w is NULL. */
static void bench_calls(bench_world *world, wb_wrapper *w, long calls)
{
    wb_value *outs = world->outs;
    int nouts = world->spec->noutputs, nargs = world->spec->ninputs;
    wb_graph_fn volatile graph = world->graph;
    for (long i = 0; i < calls; i++) {
        if (w) {
            bench_ok(wb_call(w, world->args, nargs, outs, nouts), "call");
            for (int k = 0; k < nouts; k++)
                wb_tensor_release(outs[k].t);
        } else {
            int n = graph(world, world->args, nargs, outs, world->nvalues);
            for (int k = 0; k < n; k++)
                wb_tensor_release(outs[k].t);
            if (n != world->nvalues)
                bench_die("direct", "the graph stand-in failed");
        }
    }
}

/* The median of the n values at v, which it sorts. */
static double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp);
    return v[n / 2];
}

static bench_stat bench_time(bench_world *world, wb_wrapper *w, long calls,
                             long reps)
{
    double *per = malloc(sizeof *per * (size_t)reps);
    if (!per)
        bench_die("timing", "out of memory");
    bench_calls(world, w, calls); /* warm-up */
    for (long r = 0; r < reps; r++) {
        bench_device_sync();
        double t0 = bench_now_ns();
        bench_calls(world, w, calls);
        per[r] = (bench_now_ns() - t0) / (double)calls;
    }
    bench_device_sync();
    qsort(per, (size_t)reps, sizeof *per, bench_cmp);
    bench_stat st = {per[reps / 2], per[0], per[reps - 1]};
    free(per);
    return st;
}

/* Heap allocations per call in steady state, counted over calls calls,
   and on a device the submissions (launches, batched copies) per call. */
static double bench_count_allocs(bench_world *world, wb_wrapper *w, long calls,
                                 double *launches)
{
    bench_calls(world, w, 16);
    long before = bench_allocs();
    uint64_t sent = wb_cuda_launches();
    bench_calls(world, w, calls);
    *launches = bench_device.device_type == kDLCPU
                    ? -1 : (double)(wb_cuda_launches() - sent) / (double)calls;
    bench_device_sync();
    if (!bench_allocs_counted())
        return -1;
    return (double)(bench_allocs() - before) / (double)calls;
}

static const wb_tier bench_tiers[BENCH_NTIERS] = {
    [BENCH_INTERP] = WB_TIER_INTERP, [BENCH_TCC] = WB_TIER_TCC,
    [BENCH_CC] = WB_TIER_CC, [BENCH_AOT] = WB_TIER_AOT,
};

/* A wrapper of case c on tier (for aot: from the code built into this
   program, which c must have). */
static wb_wrapper *bench_wrapper(const bench_case *c, bench_world *world,
                                 wb_tier tier, unsigned flags,
                                 double *compile_us)
{
    wb_options o = {.tier = tier, .flags = flags};
    wb_wrapper *w;
    double t0 = bench_now_ns();
    if (tier == WB_TIER_AOT)
        bench_ok(bench_aot_new(c->aot, world->graph, world, &w), "wrapper");
    else
        bench_ok(wb_wrapper_new(c->spec, world->graph, world, &o, &w),
                 "wrapper");
    if (compile_us)
        *compile_us = (bench_now_ns() - t0) / 1e3;
    return w;
}

/* The median time of building one wrapper on tier with flags, over n fresh
   ones (compiled anew: nothing shared; aot wrappers never share). */
static double bench_build_us(const bench_case *c, bench_world *world,
                             wb_tier tier, unsigned flags, int n)
{
    double us[9];
    for (int i = 0; i < n; i++)
        wb_wrapper_free(bench_wrapper(c, world, tier, flags | WB_OPT_NO_SHARE,
                                      &us[i]));
    return bench_median(us, n);
}

/* The time per wrapper of compiling n tcc wrappers of s together. */
static double bench_batch_us(const wb_spec *s, bench_world *world, int n)
{
    const wb_spec **specs = malloc((size_t)n * sizeof *specs);
    wb_graph_fn *graphs = malloc((size_t)n * sizeof *graphs);
    void **ctxs = malloc((size_t)n * sizeof *ctxs);
    wb_wrapper **ws = malloc((size_t)n * sizeof *ws);
    wb_options o = {.tier = WB_TIER_TCC, .flags = WB_OPT_NO_SHARE};
    if (!specs || !graphs || !ctxs || !ws)
        bench_die("batch", "out of memory");
    for (int i = 0; i < n; i++)
        specs[i] = s, graphs[i] = world->graph, ctxs[i] = world;
    double t0 = bench_now_ns();
    bench_ok(wb_wrappers_new(n, specs, graphs, ctxs, &o, ws), "batch");
    double us = (bench_now_ns() - t0) / 1e3 / n;
    for (int i = 0; i < n; i++)
        wb_wrapper_free(ws[i]);
    free(specs);
    free(graphs);
    free(ctxs);
    free(ws);
    return us;
}

/* The floor under every tcc build: libtcc compiling a one-line function
   through the library's driver (a fresh compiler state, the code placed in
   pages of its own, the state deleted), whatever the spec.  Returns the
   time it took. */
static double bench_libtcc_once(void)
{
    static const char src[] = "int wb_bench_floor(void) { return 0; }\n";
    wb_jit_code *code;
    void *entry;
    double t0 = bench_now_ns();
    bench_ok(wb_jit_compile(src, "wb_bench_floor", NULL, &code, &entry),
             "libtcc");
    wb_jit_free(code);
    return (bench_now_ns() - t0) / 1e3;
}

/* The median of n of those. */
static double bench_libtcc_us(int n)
{
    double us[9];
    for (int i = 0; i < n; i++)
        us[i] = bench_libtcc_once();
    return bench_median(us, n);
}

/* Whether the cc tier works here (the system compiler builds a trivial
   wrapper); when not, t says why.  Decided once. */
static bool bench_cc_ready(bench_tier_result *t)
{
    static int ready = -1;
    static char why[600];
    if (ready < 0) {
        wb_spec *s;
        wb_wrapper *w = NULL;
        wb_options o = {.tier = WB_TIER_CC, .flags = WB_OPT_NO_DISK_CACHE};
        bench_ok(wb_spec_new("probe", &s), "spec");
        ready = wb_wrapper_new(s, bench_graph_kept, NULL, &o, &w) == WB_OK;
        if (!ready)
            snprintf(why, sizeof why, "not available: %s", wb_last_error());
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
    if (!ready) {
        t->available = false;
        t->why_not = why;
    }
    return ready;
}

/* Whether case c has ahead-of-time code in this program; when not, t says
   why. */
static bool bench_aot_ready(const bench_case *c, bench_tier_result *t)
{
    if (c->aot >= 0 && bench_device.device_type == kDLCPU)
        return true;
    t->available = false;
    if (c->aot >= 0) {
        t->why_not = "not available: the ahead-of-time cases are built for "
                     "the CPU (bench/cases.txt declares it)";
        return false;
    }
    t->why_not = "not available: wrapbake-bench holds ahead-of-time code for "
                 "its builtin cases A-E only (a spec of --spec can be built "
                 "into a program of its own with `wrapbake emit --aot`)";
    return false;
}

/* The cc tier's disk cache goes to a private directory, removed at exit,
   unless WRAPBAKE_CACHE_DIR names one. */
static char bench_cache[64];

static void bench_cache_done(void)
{
    wb_cache_clear();
    rmdir(bench_cache);
}

static void bench_private_cache(void)
{
    const char *t = getenv("TMPDIR");
    if (getenv("WRAPBAKE_CACHE_DIR"))
        return;
    snprintf(bench_cache, sizeof bench_cache, "%s/wrapbake-bench-XXXXXX",
             t && strlen(t) < 32 ? t : "/tmp");
    if (!mkdtemp(bench_cache))
        bench_die("cache directory", strerror(errno));
    setenv("WRAPBAKE_CACHE_DIR", bench_cache, 1);
    atexit(bench_cache_done);
}

static void bench_progress(const char *c, const char *tier)
{
    if (isatty(2))
        fprintf(stderr, "\r\033[Kwrapbake-bench: case %s, %s", c, tier);
}

static void bench_measure(const bench_case *c, long calls, long reps,
                          bench_case_result *out)
{
    bench_world world;
    bench_world_make(&world, c->spec);
    out->name = c->name;
    out->desc = c->desc;
    for (int x = 0; x < BENCH_NTIERS; x++) {
        bench_tier_result *t = &out->tiers[x];
        t->available = true;
        t->allocs_per_call = -1;
        t->compile_us = -1;
        t->batch_us = -1;
        t->load_us = -1;
        t->launches_per_call = -1;
        bench_progress(c->name, bench_tier_names[x]);
        wb_wrapper *w = NULL;
        if (x == BENCH_CC && !bench_cc_ready(t))
            continue;
        if (x == BENCH_AOT && !bench_aot_ready(c, t))
            continue;
        if (x != BENCH_DIRECT)
            w = bench_wrapper(c, &world, bench_tiers[x], 0, NULL);
        if (x == BENCH_TCC) {
            t->compile_us = bench_build_us(c, &world, WB_TIER_TCC, 0, 9);
            double us[BENCH_BATCH_REPS];
            for (int i = 0; i < BENCH_BATCH_REPS; i++)
                us[i] = bench_batch_us(c->spec, &world, BENCH_BATCH);
            t->batch_us = bench_median(us, BENCH_BATCH_REPS);
        }
        if (x == BENCH_CC) {
            t->compile_us = bench_build_us(c, &world, WB_TIER_CC,
                                           WB_OPT_NO_DISK_CACHE, 3);
            t->load_us = bench_build_us(c, &world, WB_TIER_CC, 0, 9);
        }
        if (x == BENCH_AOT)
            t->compile_us = bench_build_us(c, &world, WB_TIER_AOT, 0, 9);
        t->ns = bench_time(&world, w, calls, reps);
        t->allocs_per_call = bench_count_allocs(&world, w, calls,
                                                &t->launches_per_call);
        wb_wrapper_free(w);
    }
    bench_world_free(&world);
}

/* ---- counting builds ---- */

/* The column named name, or -1. */
static int bench_tier_index(const char *name)
{
    for (int x = 0; x < BENCH_NTIERS; x++)
        if (!strcmp(name, bench_tier_names[x]))
            return x;
    return -1;
}

/* Whether --builds takes tier. */
static bool bench_builds_tier(const char *tier)
{
    int x = bench_tier_index(tier);
    return !strcmp(tier, "libtcc") || x == BENCH_TCC || x == BENCH_CC ||
           x == BENCH_AOT;
}

/* Exactly n builds on tier (or of the libtcc floor), printing nothing:
   callgrind's count for N builds minus its count for 1, over N - 1, is
   what one build costs in steady state. */
static void bench_count_builds(const bench_case *c, const char *tier, long n,
                               bool batch)
{
    int x = bench_tier_index(tier);
    bench_world world;
    bench_tier_result t;
    if (!strcmp(tier, "libtcc")) {
        for (long i = 0; i < n; i++)
            bench_libtcc_once();
        return;
    }
    if (x == BENCH_AOT && !bench_aot_ready(c, &t))
        bench_die("aot", t.why_not);
    bench_world_make(&world, c->spec);
    if (batch) {
        if (n > 0)
            bench_batch_us(c->spec, &world, (int)n);
    } else {
        for (long i = 0; i < n; i++)
            wb_wrapper_free(bench_wrapper(c, &world, bench_tiers[x],
                                          WB_OPT_NO_SHARE |
                                              WB_OPT_NO_DISK_CACHE,
                                          NULL));
    }
    bench_world_free(&world);
}

/* ---- the machine ---- */

/* The CPU's model from /proc/cpuinfo, the CPUs online and the architecture.
   What the file says is not trusted to be text: the model is kept to
   printable ASCII, its runs of spaces (some models are padded) made one. */
static void bench_machine(char *buf, size_t n)
{
    char model[128] = "unknown CPU", line[256];
    struct utsname u;
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            const char *p = strchr(line, ':') + 1;
            size_t k = 0;
            p += strspn(p, " \t");
            for (; *p && *p != '\n' && k < sizeof model - 1; p++)
                if (*p != ' ' || (k && model[k - 1] != ' '))
                    model[k++] = *p >= 0x20 && *p < 0x7f ? *p : '?';
            while (k && model[k - 1] == ' ')
                k--;
            if (k) {  /* else "unknown CPU" stands */
                model[k] = '\0';
                break;
            }
        }
    if (f)
        fclose(f);
    if (uname(&u) != 0)
        snprintf(u.machine, sizeof u.machine, "?");
    snprintf(buf, n, "%s, %ld CPUs, %s", model, sysconf(_SC_NPROCESSORS_ONLN),
             u.machine);
}

/* ---- scaling ---- */

/* The scaling spec named name, when it is one (bench_scale_name). */
static bool bench_scale_case(const char *name, bench_case *c)
{
    int kind, n;
    if (!bench_scale_name(name, &kind, &n))
        return false;
    char *text = bench_scale_text(kind, n);
    memset(c, 0, sizeof *c);
    c->aot = -1;
    bench_ok(wb_spec_parse(text, &c->spec), name);
    bench_ok(wb_spec_validate(c->spec), name);
    free(text);
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->desc, sizeof c->desc, "%d %s", n, bench_scale_kinds[kind]);
    return true;
}

/* Heap allocations per call of a tcc wrapper of case c. */
static double bench_scale_allocs(const bench_case *c)
{
    bench_world world;
    double launches;
    bench_world_make(&world, c->spec);
    wb_wrapper *w = bench_wrapper(c, &world, WB_TIER_TCC, 0, NULL);
    double allocs = bench_count_allocs(&world, w, 100, &launches);
    wb_wrapper_free(w);
    bench_world_free(&world);
    return allocs;
}

/* A run counting `count` calls (or with builds, builds) of the case named
   name on tier, the graph handing out its values as this run's do. */
static void bench_scale_run(bench_run *r, const char *name, const char *tier,
                            const char *what, long count)
{
    snprintf(r->args[0], sizeof r->args[0], "--case");
    snprintf(r->args[1], sizeof r->args[1], "%s", name);
    snprintf(r->args[2], sizeof r->args[2], "--tier");
    snprintf(r->args[3], sizeof r->args[3], "%s", tier);
    snprintf(r->args[4], sizeof r->args[4], "%s", what);
    snprintf(r->args[5], sizeof r->args[5], "%ld", count);
    r->nargs = 6;
    if (bench_mode != BENCH_FIXED)
        snprintf(r->args[r->nargs++], sizeof r->args[0], "%s",
                 bench_mode == BENCH_FRESH ? "--fresh" : "--unfixed");
}

/* Calls in a counting run of a scaling spec of size n: about 10,000 items'
   worth, at least 10, so that the spec's build and first calls, which the
   run of half as many calls subtracts, vary by a fraction of an
   instruction per call. */
static long bench_scale_calls(int n)
{
    return n >= 1000 ? 10 : 10000 / n;
}

/* Per call and per build, what each tier costs on scaling specs of the
   first nsizes sizes: the count of a run of 2N calls minus that of a run of
   N, over N (the first calls fill caches, which later calls reuse), and
   the count of 3 builds minus that of 1, over 2. */
static void bench_scale(int nsizes, bool json, const char *svg)
{
    enum { TIERS = 3, RUNS = 2 * TIERS + 2 };
    static const char *const tiers[TIERS] = {"direct", "interp", "tcc"};
    bench_scale_report r = {.values = bench_mode, .nsizes = nsizes};
    const char *why = bench_callgrind_version(r.counter, sizeof r.counter);
    if (why)
        bench_die("--scale counts instructions with callgrind, but", why);
    bench_machine(r.machine, sizeof r.machine);
    time_t now = time(NULL);
    strftime(r.date, sizeof r.date, "%Y-%m-%d", gmtime(&now));
    int npoints = BENCH_SCALE_KINDS * nsizes;
    bench_run *runs = calloc((size_t)npoints * RUNS, sizeof *runs);
    if (!runs)
        bench_die("--scale", "out of memory");
    for (int p = 0; p < npoints; p++) {
        int k = p / nsizes, n = bench_scale_sizes[p % nsizes];
        bench_case c;
        char name[32];
        snprintf(name, sizeof name, "%s_%d", bench_scale_kinds[k], n);
        bench_progress(name, "allocations");
        bench_scale_case(name, &c);
        r.at[k][p % nsizes].allocs = bench_scale_allocs(&c);
        wb_spec_free(c.spec);
        bench_run *run = &runs[p * RUNS];
        for (int t = 0; t < TIERS; t++) {
            bench_scale_run(&run[2 * t], name, tiers[t], "--calls",
                            bench_scale_calls(n));
            bench_scale_run(&run[2 * t + 1], name, tiers[t], "--calls",
                            2 * bench_scale_calls(n));
        }
        bench_scale_run(&run[2 * TIERS], name, "tcc", "--builds", 1);
        bench_scale_run(&run[2 * TIERS + 1], name, "tcc", "--builds", 3);
    }
    bench_progress("-", "callgrind");
    bench_callgrind(runs, npoints * RUNS);
    if (isatty(2))
        fprintf(stderr, "\r\033[K");
    for (int p = 0; p < npoints; p++) {
        const bench_run *run = &runs[p * RUNS];
        bench_scale_point *pt = &r.at[p / nsizes][p % nsizes];
        double calls = bench_scale_calls(bench_scale_sizes[p % nsizes]);
        double *per[TIERS] = {&pt->direct, &pt->interp, &pt->tcc};
        const bench_run *b = &run[2 * TIERS];
        for (int t = 0; t < TIERS; t++)
            *per[t] = (run[2 * t + 1].refs - run[2 * t].refs) / calls;
        pt->build = (b[1].refs - b[0].refs) / 2.0;
    }
    free(runs);
    if (json)
        bench_scale_json(stdout, &r);
    else
        bench_scale_table(stdout, &r);
    if (svg) {
        FILE *f = fopen(svg, "w");
        if (f)
            bench_scale_svg(f, &r);
        if (!bench_closed(f))
            bench_die(svg, "cannot write it");
    }
}

/* ---- main ---- */

static void bench_usage(FILE *f)
{
    fprintf(f,
        "Usage: wrapbake-bench [OPTION]...\n"
        "Times each tier of wrapbake against a bare call of the graph.\n\n"
        "  -c, --case NAME    only this case (A-E, a spec name with --spec, or\n"
        "                     a scaling spec's name: see --scale)\n"
        "  -s, --spec FILE    the specs of FILE (text or YAML) instead of A-E;\n"
        "                     their aot column is n/a (only A-E are built in)\n"
        "  -n, --calls N      calls per timed run (default 20000)\n"
        "  -r, --reps N       timed runs per column (default 31)\n"
        "  -p, --cpu N        pin the benchmark to CPU N\n"
        "  -w, --wide         every column in the table: the spread (min-max),\n"
        "                     the ratios of the overheads and the build times\n"
        "                     (the default fits 100 columns: ns per call and\n"
        "                     overhead above direct per tier, and allocations)\n"
        "  -j, --json         one JSON object instead of the table\n"
        "      --csv          CSV instead of the table\n"
        "      --svg FILE     also write a bar chart to FILE: each tier's ns\n"
        "                     per call, its overhead above the floor (direct)\n"
        "                     in colour\n"
        "      --fresh        the graph stand-in hands over the only reference\n"
        "                     to a new tensor per value, as a compiled graph\n"
        "                     does, instead of keeping one to each value\n"
        "      --unfixed      it keeps its values without fixing their\n"
        "                     storage (wb_tensor_fix_storage)\n"
        "      --device D     the tensors on D: cpu (default), cuda or cuda:N;\n"
        "                     on a device the table also gives the CUDA\n"
        "                     submissions (launches, batched copies) per call\n"
        "      --stream       with --device cuda: the calls enqueue on a stream\n"
        "                     of their own, not the legacy default stream\n"
        "                     (not with --builds, which makes no call)\n"
        "  -t, --tier T       counting mode: make exactly --calls calls on\n"
        "                     tier T (direct, interp, tcc, cc, aot) of one\n"
        "                     --case, printing nothing; for valgrind\n"
        "                     --tool=callgrind\n"
        "  -b, --builds N     counting mode: build N wrappers of one --case\n"
        "                     on tier T (tcc, cc, aot) instead, one at a\n"
        "                     time and sharing nothing, or with T libtcc N\n"
        "                     times the floor under tcc us (a one-line\n"
        "                     function compiled by libtcc alone)\n"
        "      --batch        with --builds and T tcc: the N wrappers in one\n"
        "                     batch (wb_wrappers_new)\n"
        "      --scale[=MAX]  instead of A-E, specs growing from 1 to MAX\n"
        "                     (1000; or 10, 100) arguments, mutations and\n"
        "                     views: instructions per call and per build,\n"
        "                     counted by valgrind's callgrind, and whether\n"
        "                     they grow linearly; with --svg a chart of them\n"
        "                     (with --json, --unfixed and --fresh too, no\n"
        "                     other option).\n"
        "                     --case also takes their names: args_N,\n"
        "                     mutations_N, views_N (N 1, 10, 100, 1000)\n"
        "  -h, --help         this text\n");
}

/* A usage error: what is wrong, then the usage; the exit status 2. */
static int bench_usage_error(const char *why)
{
    fprintf(stderr, "wrapbake-bench: %s\n", why);
    bench_usage(stderr);
    return 2;
}

/* The options that decide what a run does, for bench_options_bad. */
typedef struct bench_options {
    const char *tier, *case_name, *spec_file, *device;
    long calls, builds, cpu;
    bool calls_given, batch, json, csv, wide, reps_given, stream, scale;
} bench_options;

/* What is wrong with options o together, or NULL. */
static const char *bench_options_bad(const bench_options *o)
{
    bool builds = o->builds >= 0, cpu_device = !strcmp(o->device, "cpu");
    if (o->json && o->csv)
        return "--json and --csv exclude each other";
    if (o->scale && (o->tier || o->case_name || o->spec_file || o->csv ||
                     o->wide || o->calls_given || o->reps_given ||
                     o->cpu >= 0 || !cpu_device))
        return "--scale takes --json, --svg, --unfixed and --fresh alone";
    if (o->tier && bench_tier_index(o->tier) < 0 &&
        strcmp(o->tier, "libtcc"))
        return "--tier takes direct, interp, tcc, cc, aot or libtcc";
    if (o->tier && !o->case_name)
        return "--tier counts one --case";
    if (o->tier && o->calls_given == builds)
        return "--tier counts --calls or --builds, one of them";
    if (!o->tier && builds)
        return "--builds counts the builds of one --tier";
    if (!o->tier && o->calls < 1)
        return "the table takes at least one call a run (--calls)";
    if (o->tier && !builds && bench_tier_index(o->tier) < 0)
        return "--tier libtcc counts builds alone (--builds)";
    if (builds && !bench_builds_tier(o->tier))
        return "--builds counts tcc, cc, aot or libtcc builds";
    if (o->batch && (!builds || strcmp(o->tier, "tcc")))
        return "--batch goes with --builds on --tier tcc";
    if (o->stream && cpu_device)
        return "--stream needs --device cuda";
    if (o->stream && builds)
        return "--stream enqueues calls, and --builds makes none";
    return NULL;
}

/* The value of option opt, arg, as a whole number from min to max, in
   *out; false, saying why, when it is not one. */
static bool bench_number(const char *opt, const char *arg, long min,
                         long max, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(arg, &end, 10);
    if (end == arg || *end || errno || v < min || v > max) {
        fprintf(stderr, "wrapbake-bench: %s takes a whole number from %ld "
                "to %ld, not '%s'\n", opt, min, max, arg);
        return false;
    }
    *out = v;
    return true;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"case", required_argument, NULL, 'c'},
        {"spec", required_argument, NULL, 's'},
        {"calls", required_argument, NULL, 'n'},
        {"reps", required_argument, NULL, 'r'},
        {"cpu", required_argument, NULL, 'p'},
        {"wide", no_argument, NULL, 'w'},
        {"json", no_argument, NULL, 'j'},
        {"csv", no_argument, NULL, 'v'},
        {"svg", required_argument, NULL, 'g'},
        {"tier", required_argument, NULL, 't'},
        {"device", required_argument, NULL, 'd'},
        {"builds", required_argument, NULL, 'b'},
        {"batch", no_argument, NULL, 'B'},
        {"fresh", no_argument, NULL, 'F'},
        {"unfixed", no_argument, NULL, 'U'},
        {"scale", optional_argument, NULL, 'S'},
        {"stream", no_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *only = NULL, *spec_file = NULL, *svg = NULL, *tier = NULL;
    const char *device = "cpu";
    long calls = 20000, reps = 31, builds = -1, cpu = -1;
    int opt;
    bool json = false, csv = false, counting_calls_given = false;
    bool batch = false, wide = false, reps_given = false, stream = false;
    int scale = 0;  /* with --scale, the sizes it counts */
    while ((opt = getopt_long(argc, argv, "c:s:n:r:p:wjt:b:h", opts, NULL)) !=
           -1) {
        switch (opt) {
        case 'c': only = optarg; break;
        case 's': spec_file = optarg; break;
        case 'n':
            if (!bench_number("--calls", optarg, 0, 1000000000, &calls))
                return 2;
            counting_calls_given = true;
            break;
        case 'r':
            if (!bench_number("--reps", optarg, 1, 1000000, &reps))
                return 2;
            reps_given = true;
            break;
        case 'p':
            if (!bench_number("--cpu", optarg, 0, CPU_SETSIZE - 1, &cpu))
                return 2;
            break;
        case 'w': wide = true; break;
        case 'j': json = true; break;
        case 'v': csv = true; break;
        case 'g': svg = optarg; break;
        case 't': tier = optarg; break;
        case 'd': device = optarg; break;
        case 'b':
            if (!bench_number("--builds", optarg, 0, 1000000000, &builds))
                return 2;
            break;
        case 'B': batch = true; break;
        case 'T': stream = true; break;
        case 'S':
            scale = BENCH_SCALE_SIZES;
            if (optarg) {
                scale = 0;
                for (int i = 0; i < BENCH_SCALE_SIZES; i++)
                    if (atoi(optarg) == bench_scale_sizes[i] &&
                        strspn(optarg, "0123456789") == strlen(optarg))
                        scale = i + 1;
                if (scale < 2) {
                    fprintf(stderr, "wrapbake-bench: --scale=MAX takes 10, "
                            "100 or 1000\n");
                    return 2;
                }
            }
            break;
        case 'F':
        case 'U':
            if (bench_mode != BENCH_FIXED) {
                fprintf(stderr, "wrapbake-bench: --fresh and --unfixed "
                        "exclude each other\n");
                return 2;
            }
            bench_mode = opt == 'F' ? BENCH_FRESH : BENCH_KEPT;
            break;
        case 'h': bench_usage(stdout); return 0;
        default: return bench_usage_error("an option it does not know, or "
                                          "one without its value");
        }
    }
    bool counting_builds = builds >= 0;
    bench_options o = {
        .tier = tier, .case_name = only, .spec_file = spec_file,
        .device = device, .calls = calls, .builds = builds, .cpu = cpu,
        .calls_given = counting_calls_given, .batch = batch, .json = json,
        .csv = csv, .wide = wide, .reps_given = reps_given, .stream = stream,
        .scale = scale > 0};
    const char *bad = bench_options_bad(&o);
    if (optind < argc)
        return bench_usage_error("an operand, where options alone go");
    if (bad)
        return bench_usage_error(bad);
    if (cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0)
            bench_die("--cpu", "cannot pin to that CPU");
    }

    bench_parse_device(device);
    if (stream)
        bench_own_stream();
    if (scale) {
        bench_scale(scale, json, svg);
        return 0;
    }

    bench_case *cases, scaled;
    int ncases;
    if (spec_file) {
        ncases = bench_file_cases(spec_file, &cases);
    } else if (only && bench_scale_case(only, &scaled)) {
        ncases = 1;
        cases = malloc(sizeof *cases);
        if (!cases)
            bench_die("cases", "out of memory");
        *cases = scaled;
    } else {
        ncases = BENCH_NBUILTIN;
        cases = calloc((size_t)ncases, sizeof *cases);
        if (!cases)
            bench_die("cases", "out of memory");
        for (int i = 0; i < ncases; i++) {
            snprintf(cases[i].name, sizeof cases[i].name, "%s",
                     bench_builtin[i].name);
            snprintf(cases[i].desc, sizeof cases[i].desc, "%s",
                     bench_builtin[i].desc);
            cases[i].spec = bench_builtin_spec(i, &cases[i].aot);
        }
    }
    if (only) {
        int k = 0;
        for (int i = 0; i < ncases; i++) {
            if (!strcmp(cases[i].name, only))
                cases[k++] = cases[i];
            else
                wb_spec_free(cases[i].spec);
        }
        if (k == 0)
            bench_die(only, "no such case");
        ncases = k;
    }

    int status = 0;
    bench_private_cache();
    if (counting_builds) {
        bench_count_builds(&cases[0], tier, builds, batch);
    } else if (tier) {
        /* Counting mode: exactly `calls` calls, nothing printed. */
        int x = bench_tier_index(tier);
        bench_world world;
        bench_world_make(&world, cases[0].spec);
        wb_wrapper *w = NULL;
        bench_tier_result t;
        if (x == BENCH_AOT && !bench_aot_ready(&cases[0], &t))
            bench_die("aot", t.why_not);
        if (x != BENCH_DIRECT)
            w = bench_wrapper(&cases[0], &world, bench_tiers[x], 0, NULL);
        bench_calls(&world, w, calls);
        bench_device_sync();
        wb_wrapper_free(w);
        bench_world_free(&world);
    } else {
        bench_case_result *res = calloc((size_t)ncases, sizeof *res);
        if (!res)
            bench_die("results", "out of memory");
        bench_report r = {.calls = calls, .reps = reps, .cases = res,
                          .ncases = ncases};
        bench_machine(r.machine, sizeof r.machine);
        snprintf(r.device, sizeof r.device, "%s", device);
        r.own_stream = stream;
        r.values = bench_mode;
        time_t now = time(NULL);
        strftime(r.date, sizeof r.date, "%Y-%m-%d", gmtime(&now));
        for (int i = 0; i < ncases; i++)
            bench_measure(&cases[i], calls, reps, &res[i]);
        bench_progress("-", "libtcc alone");
        r.libtcc_us = bench_libtcc_us(9);
        r.calibration = bench_calibrate();
        if (isatty(2))
            fprintf(stderr, "\r\033[K");
        if (json)
            bench_print_json(stdout, &r);
        else if (csv)
            bench_print_csv(stdout, &r);
        else
            bench_print_table(stdout, &r, wide);
        if (svg) {
            FILE *f = fopen(svg, "w");
            if (f)
                bench_print_svg(f, &r);
            if (!bench_closed(f)) {
                fprintf(stderr, "wrapbake-bench: cannot write %s\n", svg);
                status = 1;
            }
        }
        free(res);
    }
    for (int i = 0; i < ncases; i++)
        wb_spec_free(cases[i].spec);
    free(cases);
    return status;
}
