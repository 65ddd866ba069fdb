/*
 * driver.c -- runs every graph of a `wrapbake emit --aot` unit on fixed
 * inputs and prints what a caller can observe, for tests/aot/run.sh.
 *
 * Built twice from this one source.  Plain, it is an ahead-of-time program:
 * it makes its wrappers through the generated dispatch unit, links without
 * libtcc (wb_wrapper_new would pull the JIT in, and the link would fail),
 * and also checks the dispatch unit's own functions.  With -DDRIVER_JIT it
 * makes wrappers of the same specs on the tier named by its argument
 * (interp or tcc).  The runs must print the same text to the byte.
 *
 *   aot-driver            the ahead-of-time wrappers
 *   aot-driver --verify   only wb_aot_verify(): 0, or 1 and its message
 *   jit-driver TIER       the same specs on interp or tcc
 *
 * The graph stand-in reads the spec's IR (src/spec/spec.h) to return values
 * that fit it: updated inputs, outputs that view what their alias kind
 * says, intermediate bases.  Some rounds make it fail on purpose.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wrapbake.h"
#include "wb_aot.h"
#include "../../src/spec/spec.h"

#define DRIVER_ROUNDS 5
#define DRIVER_MAX 64

typedef struct driver_rng {
    uint64_t s;
} driver_rng;

static uint64_t driver_next(driver_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1DULL;
}

static int driver_below(driver_rng *r, int n)
{
    return n <= 0 ? 0 : (int)(driver_next(r) % (uint64_t)n);
}

static const DLDataType driver_f32 = {kDLFloat, 32, 1};
static const DLDevice driver_cpu = {kDLCPU, 0};

static void driver_die(const char *what)
{
    fprintf(stderr, "driver: %s: %s\n", what, wb_last_error());
    exit(2);
}

/* A contiguous tensor of dtype with random bytes. */
static wb_tensor *driver_tensor(driver_rng *r, DLDataType dt, int ndim,
                                const int64_t *sizes)
{
    wb_tensor *t;
    if (wb_tensor_new(dt, driver_cpu, ndim, sizes, &t) != WB_OK)
        driver_die("wb_tensor_new");
    unsigned char *p = wb_storage_data(wb_tensor_storage(t));
    for (size_t i = 0; i < wb_storage_nbytes(wb_tensor_storage(t)); i++)
        p[i] = (unsigned char)driver_next(r);
    return t;
}

/* A 1-D view of the first elements of t's storage. */
static wb_tensor *driver_view(driver_rng *r, const wb_tensor *t)
{
    size_t es = wb_dtype_size(wb_tensor_dtype(t));
    int64_t cap = es ? (int64_t)(wb_storage_nbytes(wb_tensor_storage(t)) / es)
                     : 0;
    int64_t n = cap > 1 ? 1 + driver_below(r, (int)cap - 1) : cap;
    int64_t stride = 1, off = cap - n > 0 ? driver_below(r, (int)(cap - n)) : 0;
    wb_tensor *v;
    if (wb_tensor_as_strided(t, 1, &n, &stride, off, &v) != WB_OK)
        driver_die("wb_tensor_as_strided");
    return v;
}

/* What one graph does in one round. */
typedef struct driver_world {
    const wb_spec *spec;
    uint64_t seed;
    int fault;  /* 0 none, 1 fails, 2 one value short, 3 a NULL value */
} driver_world;

static int driver_graph(void *ctx, const wb_arg *args, int nargs,
                        wb_value *values, int nvalues)
{
    driver_world *w = ctx;
    const wb_spec *s = w->spec;
    driver_rng r = {w->seed};
    int v = 0;
    if (nargs != s->ninputs || nvalues != s->nvalues)
        return -7;
    if (w->fault == 1)
        return -1;
    for (int j = 0; j < s->nupdated; j++) {
        const wb_tensor *t = args[s->muts[j].input].t;
        DLDataType dt = wb_tensor_dtype(t);
        switch (s->muts[j].kind) {
        case WB_MUT_METADATA:
        case WB_MUT_DATA_METADATA:
            values[v++].t = driver_view(&r, t);
            break;
        case WB_MUT_RESIZE: {
            int64_t sizes[2] = {3, 4};
            values[v++].t = driver_tensor(&r, dt, 2, sizes);
            break;
        }
        default:
            values[v++].t = driver_tensor(&r, dt, wb_tensor_ndim(t),
                                        wb_tensor_sizes(t));
            break;
        }
    }
    wb_tensor *bases[DRIVER_MAX];
    for (int b = 0; b < s->nbases; b++) {
        int64_t sizes[2] = {2, 5};
        bases[b] = driver_tensor(&r, driver_f32, 2, sizes);
    }
    int first = v;
    for (int k = 0; k < s->noutputs; k++) {
        const wb_output *o = &s->outputs[k];
        const wb_tensor *base = NULL;
        if (o->kind == WB_OUT_ALIAS_OF_INPUT)
            base = args[o->base].t;
        else if (o->kind == WB_OUT_ALIAS_OF_INTERMEDIATE ||
                 o->kind == WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT)
            base = bases[o->base];
        else if (o->kind == WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT)
            base = values[first + o->base].t;
        int64_t sizes[2] = {2, 3};
        wb_tensor *t = base ? driver_view(&r, base)
                            : driver_tensor(&r, driver_f32, 2, sizes);
        wb_tensor_set_requires_grad(t, driver_below(&r, 2));
        values[v++].t = t;
    }
    for (int b = 0; b < s->nbases; b++)
        values[v++].t = bases[b];
    if (w->fault == 2) {
        wb_tensor_release(values[--v].t);
        values[v].t = NULL;
    } else if (w->fault == 3 && v > 0) {
        int x = driver_below(&r, v);
        wb_tensor_release(values[x].t);
        values[x].t = NULL;
    }
    return v;
}

/* ---- what a caller sees ---- */

typedef struct driver_ids {
    const void *storages[DRIVER_MAX * 4];
    int n;
} driver_ids;

static int driver_storage_id(driver_ids *ids, const wb_storage *s)
{
    for (int i = 0; i < ids->n; i++)
        if (ids->storages[i] == s)
            return i;
    if (ids->n == DRIVER_MAX * 4)
        return -1;
    ids->storages[ids->n] = s;
    return ids->n++;
}

static void driver_print_tensor(driver_ids *ids, const wb_tensor *t)
{
    const wb_storage *s = wb_tensor_storage(t);
    const unsigned char *p = wb_storage_data(s);
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < wb_storage_nbytes(s); i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    DLDataType dt = wb_tensor_dtype(t);
    printf("[s%d n%zu h%016llx v%llu dt%u.%u nd%d", driver_storage_id(ids, s),
           wb_storage_nbytes(s), (unsigned long long)h,
           (unsigned long long)wb_tensor_version(t), dt.code, dt.bits,
           wb_tensor_ndim(t));
    for (int d = 0; d < wb_tensor_ndim(t); d++)
        printf(" %lld:%lld", (long long)wb_tensor_sizes(t)[d],
               (long long)wb_tensor_strides(t)[d]);
    printf(" o%lld f%u dy%llx rc%ld]", (long long)wb_tensor_offset(t),
           wb_tensor_flags(t), (unsigned long long)wb_tensor_dynamic_dims(t),
           wb_tensor_refcount(t));
}

/* ---- one graph ---- */

/* A wrapper of graph g.  The ahead-of-time build makes one of its own in
   even rounds and binds the graph's instance in odd ones (*out NULL: calls
   go through wb_aot_call). */
static wb_status driver_make(int g, int round, const wb_spec *spec,
                             driver_world *w, const char *tier,
                             wb_wrapper **out)
{
#ifdef DRIVER_JIT
    wb_options o = {.tier = strcmp(tier, "tcc") == 0 ? WB_TIER_TCC
                                                     : WB_TIER_INTERP};
    (void)g;
    (void)round;
    return wb_wrapper_new(spec, driver_graph, w, &o, out);
#else
    (void)spec;
    (void)tier;
    *out = NULL;
    return round % 2 ? wb_aot_bind(g, driver_graph, w)
                     : wb_aot_new(g, driver_graph, w, out);
#endif
}

static void driver_run(int g, const char *tier)
{
    wb_spec *spec;
    if (wb_aot_spec(g, &spec) != WB_OK)
        driver_die("wb_aot_spec");
    printf("graph %d %s: %s\n", g, wb_aot_name(g), wb_spec_signature(spec));
    for (int round = 0; round < DRIVER_ROUNDS; round++) {
        driver_rng r = {(uint64_t)(g + 1) * 7919u + (uint64_t)round * 104729u};
        driver_world w = {.spec = spec, .seed = driver_next(&r) | 1,
                          .fault = round < 2 ? 0 : round - 1};
        wb_tensor *in[DRIVER_MAX] = {0};
        wb_arg args[DRIVER_MAX];
        wb_wrapper *wr;
        int n = spec->ninputs;
        if (n > DRIVER_MAX || spec->noutputs > DRIVER_MAX)
            driver_die("a spec too large for the driver");
        if (driver_make(g, round, spec, &w, tier, &wr) != WB_OK)
            driver_die("making the wrapper");
        for (int i = 0; i < n; i++) {
            const wb_input *x = &spec->inputs[i];
            if (!x->is_tensor) {
                args[i].i = (int64_t)driver_next(&r);
                continue;
            }
            int64_t sizes[WB_MAX_DIMS];
            int nd = x->ndim >= 0 ? x->ndim : 2;
            for (int d = 0; d < nd; d++)
                sizes[d] = 2 + driver_below(&r, 3);
            in[i] = driver_tensor(&r, x->dtype.bits ? x->dtype : driver_f32,
                                  nd, sizes);
            /* An optional input is left out in one round. */
            bool none = (x->flags & WB_INPUT_OPTIONAL) && round == 1;
            args[i].t = none ? NULL : in[i];
        }
        wb_value outs[DRIVER_MAX] = {{0}};
        wb_set_grad_enabled(round % 2 == 0);
        wb_status st = wr ? wb_call(wr, args, n, outs, spec->noutputs)
                          : wb_aot_call(g, args, n, outs, spec->noutputs);
        driver_ids ids = {0};
        printf(" round %d: %s '%s' grad %d\n", round, wb_status_str(st),
               st ? wb_last_error() : "", wb_grad_enabled());
        for (int i = 0; i < n; i++)
            if (in[i]) {
                printf("  in%d ", i);
                driver_print_tensor(&ids, in[i]);
                putchar('\n');
            }
        for (int k = 0; k < spec->noutputs; k++) {
            if (!outs[k].t)
                continue;
            int same = -1;
            for (int i = 0; i < n; i++)
                if (outs[k].t == in[i])
                    same = i;
            printf("  out%d=in%d ", k, same);
            driver_print_tensor(&ids, outs[k].t);
            putchar('\n');
            wb_tensor_release(outs[k].t);
        }
        for (int i = 0; i < n; i++)
            wb_tensor_release(in[i]);
        wb_wrapper_free(wr);
    }
#ifndef DRIVER_JIT
    wb_aot_clear();
#endif
    wb_spec_free(spec);
}

/* ---- the dispatch unit's own functions (ahead-of-time build) ---- */

#ifndef DRIVER_JIT
static int driver_failures;

static void driver_check(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "driver: FAILED: %s (last error: %s)\n", what,
                wb_last_error());
        driver_failures++;
    }
}

static void driver_check_unit(void)
{
    wb_value outs[1];
    driver_check(wb_aot_lookup("no such graph") == -1, "lookup of a stranger");
    driver_check(wb_aot_lookup(NULL) == -1, "lookup of NULL");
    driver_check(wb_aot_name(WB_AOT_GRAPHS) == NULL, "name past the end");
    driver_check(wb_aot_call(-1, NULL, 0, outs, 1) == WB_ERR_INVALID &&
                     strstr(wb_last_error(), "no graph -1") != NULL,
                 "call of graph -1");
    for (int g = 0; g < WB_AOT_GRAPHS; g++) {
        char fp[WB_FINGERPRINT_LEN + 1];
        wb_spec *spec;
        driver_check(wb_aot_lookup(wb_aot_name(g)) == g, "lookup by name");
        driver_check(wb_aot_spec(g, &spec) == WB_OK, "spec");
        driver_check(wb_spec_fingerprint(spec, fp) == WB_OK &&
                         strcmp(fp, wb_aot_fingerprint(g)) == 0,
                     "the recorded fingerprint is the spec's");
        wb_spec_free(spec);
        driver_check(wb_aot_active(g) == WB_TIER_DEFAULT, "no instance yet");
        driver_check(wb_aot_call(g, NULL, 0, outs, 1) == WB_ERR_INVALID &&
                         strstr(wb_last_error(), "has no instance") != NULL,
                     "call without an instance");
        driver_world w = {.fault = 1};
        driver_check(wb_aot_bind(g, driver_graph, &w) == WB_OK, "bind");
        driver_check(wb_aot_active(g) == WB_TIER_AOT, "instance is aot");
        driver_check(wb_wrapper_tier(wb_aot_instance(g)) == WB_TIER_AOT,
                     "wb_wrapper_tier says aot");
        driver_check(wb_aot_bind(g, driver_graph, &w) == WB_OK, "rebind");
    }
    driver_check(wb_aot_verify() == WB_OK, "verify");
    wb_aot_clear();
    for (int g = 0; g < WB_AOT_GRAPHS; g++)
        driver_check(wb_aot_active(g) == WB_TIER_DEFAULT, "cleared");
}
#endif

int main(int argc, char **argv)
{
    const char *tier = argc > 1 ? argv[1] : "aot";
#ifndef DRIVER_JIT
    if (strcmp(tier, "--verify") == 0) {
        if (wb_aot_verify() == WB_OK)
            return 0;
        printf("%s\n", wb_last_error());
        return 1;
    }
    driver_check_unit();
    if (driver_failures)
        return 1;
#endif
    for (int g = 0; g < WB_AOT_GRAPHS; g++)
        driver_run(g, tier);
    wb_thread_cache_flush();
    return 0;
}
