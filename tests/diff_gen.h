/*
 * diff_gen.h -- the differential generator shared by tests/test_diff.c and
 * fuzz/fuzz_diff.c: a random valid spec, a graph stand-in that returns
 * random values (and injects faults), random inputs and calls, and a text
 * snapshot of every observable after each call -- status, message, every
 * input's bytes, view, version, storage and reference count, every
 * output's data, view, flags and identity, the grad mode, the order of
 * hooks and guards.  Two tiers agree when their snapshots are equal.
 *
 * Tensors are on the CPU unless a case names a device (diff_case_dev);
 * there the bytes go in and come back through the includer's copies
 * (diff_io), and a snapshot names the device of a tensor only when it is
 * not the case's, so the snapshots of one seed on the CPU and on a device
 * can be compared as they are.
 *
 * The includer defines WBD_FAIL(...), printf-style, which must not return
 * (a Criterion assertion, or a message and abort() in a fuzz target).
 */
#ifndef WB_DIFF_GEN_H
#define WB_DIFF_GEN_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wrapbake.h"

#ifndef WBD_FAIL
#error "define WBD_FAIL(...) before including diff_gen.h"
#endif

#define WBD_OK(call)                                                         \
    do {                                                                     \
        wb_status wbd_st_ = (call);                                          \
        if (wbd_st_ != WB_OK)                                                \
            WBD_FAIL("%s -> %s: %s", #call, wb_status_str(wbd_st_),          \
                     wb_last_error());                                       \
    } while (0)

static const DLDevice WBD_CPU = {kDLCPU, 0};

/* The compiled tiers every random spec is held to the interpreter on.  The
   cc tier costs a run of the system compiler per spec, so it goes through
   diff_case_on for a share of the specs (see test_diff.c, fuzz_diff.c). */
static const wb_tier diff_tiers[] = {WB_TIER_TCC};
#define DIFF_NTIERS ((int)(sizeof diff_tiers / sizeof *diff_tiers))

#define DIFF_MAX_IN 8
#define DIFF_MAX_OUT 6
#define DIFF_CALLS 2

/* A xorshift generator.  A fuzzer's bytes, when given, are mixed in one per
   draw before the state runs on alone, so that a mutated input changes the
   decisions it reaches and an empty one is a plain seed. */
typedef struct diff_rng {
    uint64_t s;
    const uint8_t *data;
    size_t size;
} diff_rng;

static uint64_t diff_next(diff_rng *r)
{
    if (r->size) {
        r->s ^= (uint64_t)(*r->data++ + 1) * 0x9E3779B97F4A7C15ULL;
        r->size--;
        if (!r->s)
            r->s = 1;
    }
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1DULL;
}

static int diff_below(diff_rng *r, int n)
{
    return n <= 0 ? 0 : (int)(diff_next(r) % (uint64_t)n);
}

/* How bytes reach a storage on a device and come back, for the cases on
   one: copies through the device's runtime, the reader synchronizing
   first.  The includer sets them before it runs such a case. */
typedef struct diff_device_io {
    void (*put)(wb_storage *s, const void *host, size_t n);
    void (*get)(const wb_storage *s, void *host, size_t n);
} diff_device_io;
static diff_device_io diff_io;

static bool diff_on_cpu(const wb_storage *s)
{
    return wb_storage_device(s).device_type == kDLCPU;
}

/* What the generator decided, read back by the graph stand-in. */
typedef struct diff_spec {
    DLDevice dev;         /* where every tensor is made */
    int ninputs, noutputs, nbases;
    bool is_tensor[DIFF_MAX_IN];
    wb_mutation mut[DIFF_MAX_IN];
    DLDataType dtype[DIFF_MAX_IN];
    wb_alias kind[DIFF_MAX_OUT];
    int base[DIFF_MAX_OUT];
    wb_scalar_type number[DIFF_MAX_OUT];  /* 0: a tensor output */
    int muts[DIFF_MAX_IN], nmuts;
    int dup_of[DIFF_MAX_IN];  /* the input it duplicates, or -1 */
    /* Synthetic bases: the earlier input each lies on (-1: none), the
       group it is in (-1: none), the groups' first members, and the
       members whose view the graph changes, in input order. */
    int alias_of[DIFF_MAX_IN], group_of[DIFF_MAX_IN];
    int group_first[DIFF_MAX_IN], ngroups;
    bool group_in_graph[DIFF_MAX_IN];  /* written by the graph: no value */
    int new_views[DIFF_MAX_IN], nnew_views;
    bool member[DIFF_MAX_IN];  /* its kind may be a member's */
    bool tied_to[DIFF_MAX_IN]; /* a later input lies on its storage */
    int arg_at[DIFF_MAX_IN];  /* its graph argument, or -1 */
    int ntokens, nargs;       /* effect tokens; the graph's arguments */
    bool rng;                 /* functionalized RNG */
} diff_spec;

/* One tier's world: its graph context, its hook log. */
typedef struct diff_world {
    const diff_spec *d;
    uint64_t call_seed;
    int fault;            /* 0 none, else which fault the graph injects */
    int hook_fail;        /* which hook fails: 0 none, 1 before, 2 guard,
                             3 the RNG's get */
    char log[512];
    size_t loglen;
    /* The views of output k the graph keeps, fixed, until its next call
       or the run's end, so that wrappers see shared and fixed values. */
    wb_tensor *kept[DIFF_MAX_OUT];
} diff_world;

/* The world of the case being run: the graph's context and the hooks'. */
static diff_world diff_case_world;

/* Appends to buf (of cap bytes, *len used) what fits; a piece that does
   not fit whole is not counted. */
static void diff_vappend(char *buf, size_t cap, size_t *len, const char *fmt,
                         va_list ap)
{
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    if (n > 0 && *len + (size_t)n < cap)
        *len += (size_t)n;
}

static void diff_log(diff_world *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diff_vappend(w->log, sizeof w->log, &w->loglen, fmt, ap);
    va_end(ap);
}

/* Functionalized RNG: the seed and the offset are fresh int64 scalars of
   the call's seed; the new offset is logged with its value. */
static int diff_rng_get(void *ud, wb_tensor **seed, wb_tensor **offset)
{
    diff_world *w = ud;
    static const DLDataType i64 = {kDLInt, 64, 1};
    diff_log(w, "R");
    if (w->hook_fail == 3)
        return 7;
    WBD_OK(wb_tensor_new(i64, WBD_CPU, 0, NULL, seed));
    WBD_OK(wb_tensor_new(i64, WBD_CPU, 0, NULL, offset));
    *(int64_t *)wb_tensor_data(*seed) = (int64_t)(w->call_seed >> 8);
    return 0;
}

static void diff_rng_set(void *ud, wb_tensor *offset)
{
    diff_world *w = ud;
    diff_log(w, "S%d", wb_tensor_ndim(offset));
}

static int diff_before(void *ud)
{
    diff_world *w = ud;
    diff_log(w, "B%d", wb_grad_enabled());
    return w->hook_fail == 1 ? 5 : 0;
}

static int diff_first(void *ud)
{
    diff_log(ud, "F");
    return 0;
}

static int diff_enter(void *ud)
{
    diff_world *w = ud;
    diff_log(w, "E");
    return w->hook_fail == 2 ? 6 : 0;
}

static void diff_leave(void *ud)
{
    diff_log(ud, "L");
}

static const DLDataType diff_dtypes[] = {
    {kDLFloat, 32, 1}, {kDLFloat, 64, 1}, {kDLInt, 64, 1}, {kDLUInt, 8, 1},
    {kDLInt, 16, 1},
};

/* A tensor on dev of random sizes (or the given ones) with random bytes,
   laid out contiguously or transposed in a larger storage. */
static wb_tensor *diff_tensor(diff_rng *r, DLDevice dev, DLDataType dt,
                              int ndim, const int64_t *sizes_in)
{
    int64_t sizes[4], strides[4], n = 1;
    for (int d = 0; d < ndim; d++) {
        sizes[d] = sizes_in ? sizes_in[d] : diff_below(r, 4);
        n *= sizes[d] ? sizes[d] : 1;
    }
    size_t es = wb_dtype_size(dt);
    int64_t pad = diff_below(r, 3);
    wb_storage *s;
    WBD_OK(wb_storage_new(dev, (size_t)(n + pad) * es, &s));
    size_t nbytes = wb_storage_nbytes(s);
    unsigned char *p = diff_on_cpu(s) ? wb_storage_data(s)
                                      : malloc(nbytes ? nbytes : 1);
    if (!p)
        WBD_FAIL("out of memory for %zu bytes", nbytes);
    for (size_t i = 0; i < nbytes; i++)
        p[i] = (unsigned char)diff_next(r);
    if (!diff_on_cpu(s)) {
        diff_io.put(s, p, nbytes);
        free(p);
    }
    /* Row-major, or laid out as if dims 0 and 1 were swapped (a
       transposed view). */
    bool swap = ndim >= 2 && diff_below(r, 2);
    int64_t st = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        int m = swap && d < 2 ? 1 - d : d;
        strides[m] = st;
        st *= sizes[m] ? sizes[m] : 1;
    }
    wb_tensor *t;
    WBD_OK(wb_tensor_from_storage(s, dt, ndim, sizes, strides, pad, &t));
    wb_storage_release(s);
    return t;
}

/* A random view of t's storage (on its device) that fits it most of the
   time. */
static wb_tensor *diff_view_of(diff_rng *r, const wb_tensor *t, DLDataType dt)
{
    size_t es = wb_dtype_size(dt);
    int64_t cap = (int64_t)(wb_storage_nbytes(wb_tensor_storage(t)) / es);
    int64_t sizes[2], strides[2], off;
    int ndim = diff_below(r, 3);
    for (int d = 0; d < ndim; d++) {
        sizes[d] = diff_below(r, 3);
        strides[d] = diff_below(r, 3);
    }
    off = diff_below(r, (int)(cap > 0 ? cap / 2 + 1 : 1));
    if (diff_below(r, 20) == 0)
        off = cap + 1; /* out of bounds, on purpose */
    wb_storage *s = wb_tensor_storage(t);
    wb_tensor *v = NULL;
    /* Built on a scratch storage large enough, then the values checked by
       the wrapper decide whether it fits the real base. */
    wb_storage *big;
    WBD_OK(wb_storage_new(wb_tensor_device(t), (size_t)(cap + 16) * es + 64,
                          &big));
    if (wb_tensor_from_storage(diff_below(r, 2) ? s : big, dt, ndim, sizes,
                               strides, off, &v) != WB_OK)
        WBD_OK(wb_tensor_from_storage(big, dt, ndim, sizes, strides, 0, &v));
    wb_storage_release(big);
    return v;
}

static int diff_graph(void *ctx, const wb_arg *args, int nargs,
                      wb_value *values, int nvalues)
{
    diff_world *w = ctx;
    const diff_spec *d = w->d;
    diff_rng r = {w->call_seed, NULL, 0};
    wb_tensor *bases[4] = {0};
    int v = 0;
    diff_log(w, "G%d", wb_grad_enabled());
    if (nargs != d->nargs)
        return -9;
    if (d->rng && (wb_tensor_ndim(args[nargs - 2].t) != 0 ||
                   wb_tensor_ndim(args[nargs - 1].t) != 0))
        return -11;
    for (int k = 0; k < d->ntokens; k++)
        if (args[k].t)
            return -10;
    /* Effect tokens: None, or a tensor the wrapper drops. */
    for (int k = 0; k < d->ntokens && v < nvalues; k++)
        values[v++].t = diff_below(&r, 2)
                          ? NULL
                          : diff_tensor(&r, d->dev, diff_dtypes[0], 1, NULL);
    /* Each synthetic base's new data, its size now and then wrong; one
       the graph writes itself has none. */
    for (int g = 0; g < d->ngroups && v < nvalues; g++) {
        const wb_tensor *b = args[d->ntokens + g].t;
        if (d->group_in_graph[g])
            continue;
        values[v++].t = diff_tensor(&r, d->dev, wb_tensor_dtype(b), 1,
                                    diff_below(&r, 8) ? wb_tensor_sizes(b)
                                                      : NULL);
    }
    for (int j = 0; j < d->nmuts && v < nvalues; j++) {
        int i = d->muts[j];
        const wb_tensor *t = args[d->arg_at[i]].t;
        DLDataType dt = d->dtype[i];
        if (w->fault == 4 && j == 0)
            dt = dt.bits == 8 ? diff_dtypes[0] : diff_dtypes[3];
        switch (d->mut[i]) {
        case WB_MUT_DATA:
            values[v++].t = diff_tensor(&r, d->dev, dt, wb_tensor_ndim(t),
                                      diff_below(&r, 8) ? wb_tensor_sizes(t)
                                                        : NULL);
            break;
        case WB_MUT_METADATA:
        case WB_MUT_DATA_METADATA:
            values[v++].t = diff_view_of(&r, t, dt);
            break;
        case WB_MUT_RESIZE: {
            int nd = diff_below(&r, 2) ? wb_tensor_ndim(t) : diff_below(&r, 4);
            values[v++].t = diff_tensor(&r, d->dev, dt, nd, NULL);
            break;
        }
        default:
            values[v++].t = diff_tensor(&r, d->dev, dt, diff_below(&r, 4),
                                      NULL);
            break;
        }
    }
    for (int b = 0; b < d->nbases; b++)
        bases[b] = diff_tensor(&r, d->dev, diff_dtypes[0], 2, NULL);
    int first_out = v;
    for (int k = 0; k < d->noutputs && v < nvalues; k++) {
        const wb_tensor *base = NULL;
        switch (d->number[k]) {
        case WB_SCALAR_INT: values[v++].i = (int64_t)diff_next(&r); continue;
        case WB_SCALAR_FLOAT: values[v++].i = (int64_t)diff_next(&r); continue;
        case WB_SCALAR_BOOL: values[v++].b = diff_below(&r, 2); continue;
        case WB_SCALAR_NONE: v++; continue;  /* None: nothing written */
        default: break;
        }
        switch (d->kind[k]) {
        case WB_OUT_ALIAS_OF_INPUT:
            base = args[d->arg_at[d->base[k]]].t;
            break;
        case WB_OUT_ALIAS_OF_INTERMEDIATE:
        case WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT:
            base = bases[d->base[k]];
            break;
        case WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT:
            base = d->base[k] < k ? values[first_out + d->base[k]].t : NULL;
            break;
        default:
            break;
        }
        wb_tensor *o = base ? diff_view_of(&r, base, wb_tensor_dtype(base))
                            : diff_tensor(&r, d->dev, diff_dtypes[0],
                                          diff_below(&r, 3), NULL);
        wb_tensor_set_requires_grad(o, diff_below(&r, 2));
        wb_tensor_set_dynamic_dims(o, (uint64_t)diff_below(&r, 4));
        /* Decided by the call's seed, leaving r's sequence as it was. */
        if (base && (w->call_seed >> (16 + k)) & 1) {
            wb_tensor_fix_storage(o);
            wb_tensor_release(w->kept[k]);
            w->kept[k] = wb_tensor_retain(o);
        }
        values[v++].t = o;
    }
    /* The members' new views, of their storage, then the intermediate
       bases. */
    for (int k = 0; k < d->nnew_views && v < nvalues; k++) {
        const wb_tensor *t = args[d->arg_at[d->new_views[k]]].t;
        values[v++].t = diff_view_of(&r, t, wb_tensor_dtype(t));
    }
    for (int b = 0; b < d->nbases && v < nvalues; b++) {
        values[v++].t = bases[b];
        bases[b] = NULL;
    }
    /* The RNG's new offset: a 1-d tensor, so that the log tells it from
       the offset the wrapper read. */
    if (d->rng && v < nvalues)
        values[v++].t = diff_tensor(&r, d->dev, diff_dtypes[0], 1, NULL);
    for (int b = 0; b < d->nbases; b++)
        wb_tensor_release(bases[b]);
    switch (w->fault) {
    case 1: return -3;
    case 2: return v > 0 ? v - 1 : v + 1;
    case 3:
        /* A tensor left NULL; a number is never one. */
        if (v > 0) {
            int x = diff_below(&r, v), k = x - first_out;
            if (k < 0 || k >= d->noutputs || !d->number[k]) {
                wb_tensor_release(values[x].t);
                values[x].t = NULL;
            }
        }
        return v;
    default: return v;
    }
}

/* ---- the generator ---- */

/* Whether an input of mutation m with flags may be a member of a
   synthetic base, and whether it writes data there. */
static bool diff_member_kind(wb_mutation m, unsigned flags)
{
    return (m == WB_MUT_NONE || m == WB_MUT_DATA || m == WB_MUT_METADATA ||
            m == WB_MUT_DATA_METADATA || m == WB_MUT_IN_GRAPH) &&
           !(flags & WB_INPUT_DETACH);
}

static bool diff_writes_data(wb_mutation m)
{
    return m == WB_MUT_DATA || m == WB_MUT_DATA_METADATA ||
           m == WB_MUT_IN_GRAPH;
}

/* Whether mutation m may join input k's synthetic base: a base's data
   is written in the graph for all its members or for none. */
static bool diff_joins(const diff_spec *d, int i, int k, wb_mutation m)
{
    int root = k;
    while (d->alias_of[root] >= 0)
        root = d->alias_of[root];
    for (int j = 0; j < i; j++) {
        int rj = j;
        while (rj >= 0 && d->alias_of[rj] >= 0)
            rj = d->alias_of[rj];
        if (rj == root && diff_writes_data(m) &&
            diff_writes_data(d->mut[j]) &&
            (m == WB_MUT_IN_GRAPH) != (d->mut[j] == WB_MUT_IN_GRAPH))
            return false;
    }
    return true;
}

/* The synthetic bases, as wb_spec_validate numbers them: in order of
   their first members; their members leave d->muts. */
static void diff_groups(diff_spec *d)
{
    int root[DIFF_MAX_IN], first_group[DIFF_MAX_IN];
    d->ngroups = d->nnew_views = 0;
    for (int i = 0; i < d->ninputs; i++) {
        root[i] = d->alias_of[i] >= 0 ? root[d->alias_of[i]] : i;
        first_group[i] = -1;
    }
    for (int i = 0; i < d->ninputs; i++)
        if (d->alias_of[i] >= 0 && first_group[root[i]] < 0)
            first_group[root[i]] = 0;
    for (int i = 0; i < d->ninputs; i++)
        if (first_group[i] == 0) {
            first_group[i] = d->ngroups;
            d->group_first[d->ngroups++] = i;
        }
    int n = 0;
    for (int i = 0; i < d->ninputs; i++) {
        d->group_of[i] = d->is_tensor[i] ? first_group[root[i]] : -1;
        if (d->group_of[i] >= 0 && (d->mut[i] == WB_MUT_METADATA ||
                                    d->mut[i] == WB_MUT_DATA_METADATA))
            d->new_views[d->nnew_views++] = i;
        if (d->group_of[i] >= 0)
            d->group_in_graph[d->group_of[i]] |= d->mut[i] == WB_MUT_IN_GRAPH;
    }
    for (int j = 0; j < d->nmuts; j++)
        if (d->group_of[d->muts[j]] < 0)
            d->muts[n++] = d->muts[j];
    d->nmuts = n;
}

static wb_spec *diff_make_spec(diff_rng *r, diff_spec *d)
{
    wb_spec *s;
    bool training = diff_below(r, 3) == 0, keep = diff_below(r, 2);
    memset(d, 0, sizeof *d);
    d->dev = WBD_CPU;
    WBD_OK(wb_spec_new(diff_below(r, 2) ? "diff" : "d*/\n\"x", &s));
    WBD_OK(wb_spec_set_training(s, training));
    WBD_OK(wb_spec_set_keep_input_mutations(s, keep));
    d->ninputs = 1 + diff_below(r, DIFF_MAX_IN);
    int ntensors = 0;
    for (int i = 0; i < d->ninputs; i++) {
        d->dup_of[i] = d->alias_of[i] = -1;
        if (diff_below(r, 5) == 0) {
            WBD_OK(wb_spec_add_scalar(s, "k", (wb_scalar_type)(1 + diff_below(r, 3)), NULL));
            continue;
        }
        ntensors++;
        d->is_tensor[i] = true;
        d->dtype[i] = diff_dtypes[diff_below(r, 5)];
        wb_mutation m = (wb_mutation)diff_below(r, 7);
        unsigned flags = 0;
        if (m == WB_MUT_IN_GRAPH && !keep)
            m = WB_MUT_DATA;
        if (m == WB_MUT_IN_GRAPH && diff_below(r, 2))
            flags |= WB_INPUT_HIDDEN;
        if (training && diff_below(r, 2))
            flags |= WB_INPUT_DETACH;
        if (m != WB_MUT_NONE && diff_below(r, 4) == 0)
            flags |= WB_INPUT_OUT;
        /* An unmutated input may be deduplicated: the same tensor as the
           last earlier input that is kept. */
        if (m == WB_MUT_NONE && !flags && diff_below(r, 4) == 0)
            for (int j = 0; j < i; j++)
                if (d->is_tensor[j] && d->dup_of[j] < 0)
                    d->dup_of[i] = j;
        if (d->dup_of[i] >= 0)
            d->dtype[i] = d->dtype[d->dup_of[i]];
        d->mut[i] = m;
        /* Now and then on an earlier input's storage, in one synthetic
           base: members take data or metadata mutations, and a group has
           a member whose data is written. */
        if (diff_below(r, 4) == 0 && diff_member_kind(m, flags) &&
            d->dup_of[i] < 0) {
            int j = diff_below(r, i + 1);
            bool data = diff_writes_data(m);
            for (int k = j; k < i && d->alias_of[i] < 0; k++)
                if (d->is_tensor[k] && d->dup_of[k] < 0 && d->member[k] &&
                    (data || diff_writes_data(d->mut[k]) ||
                     d->alias_of[k] >= 0 || d->tied_to[k]) &&
                    diff_joins(d, i, k, m))
                    d->alias_of[i] = k;
            if (d->alias_of[i] >= 0) {
                d->tied_to[d->alias_of[i]] = true;
                d->dtype[i] = d->dtype[d->alias_of[i]];
            }
        }
        d->member[i] = diff_member_kind(m, flags) && d->dup_of[i] < 0;
        if (m != WB_MUT_NONE && m != WB_MUT_IN_GRAPH)
            d->muts[d->nmuts++] = i;
        WBD_OK(wb_spec_add_tensor(s, "t", m, flags, NULL));
        WBD_OK(wb_spec_set_duplicate(s, i, d->dup_of[i]));
        WBD_OK(wb_spec_set_synthetic_base(s, i, d->alias_of[i]));
        if (diff_below(r, 4) == 0)
            WBD_OK(wb_spec_declare_input(s, i, diff_below(r, 8) ? d->dtype[i]
                                                              : diff_dtypes[0],
                                         diff_below(r, 4) ? -1 : diff_below(r, 4)));
    }
    d->noutputs = diff_below(r, DIFF_MAX_OUT + 1);
    d->nbases = diff_below(r, 3);
    if (d->nbases > d->noutputs)
        d->nbases = d->noutputs;
    bool last_grad = false;  /* the flags of the output before */
    uint64_t last_dyn = 0;
    for (int k = 0; k < d->noutputs; k++) {
        wb_alias kind = (wb_alias)diff_below(r, 8);
        int base = -1;
        /* Now and then a view of the input the output before views, with
           its flags, as split, chunk and unbind return them (three make a
           run of views of one input). */
        bool same = k > 0 && d->kind[k - 1] == WB_OUT_ALIAS_OF_INPUT &&
                    diff_below(r, 3) == 0;
        if (same)
            kind = WB_OUT_ALIAS_OF_INPUT;
        /* A number (an int, a float, a bool) or None now and then. */
        if (k >= d->nbases && diff_below(r, 6) == 0) {
            static const wb_scalar_type types[] = {
                WB_SCALAR_INT, WB_SCALAR_FLOAT, WB_SCALAR_BOOL,
                WB_SCALAR_NONE};
            d->number[k] = types[diff_below(r, 4)];
            d->kind[k] = WB_OUT_NON_ALIAS;
            d->base[k] = -1;
            WBD_OK(wb_spec_add_scalar_output(s, "n", d->number[k], NULL));
            continue;
        }
        if (k < d->nbases)
            kind = WB_OUT_ALIAS_OF_INTERMEDIATE; /* every base referenced */
        switch (kind) {
        case WB_OUT_IS_INPUT:
        case WB_OUT_ALIAS_OF_INPUT:
            if (!ntensors) {
                kind = WB_OUT_NON_ALIAS;
                break;
            }
            if (same) {
                base = d->base[k - 1];
                break;
            }
            do
                base = diff_below(r, d->ninputs);
            while (!d->is_tensor[base] || d->dup_of[base] >= 0);
            break;
        case WB_OUT_ALIAS_OF_INTERMEDIATE:
        case WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT:
            if (!d->nbases) {
                kind = WB_OUT_NON_ALIAS;
                break;
            }
            base = k < d->nbases ? k : diff_below(r, d->nbases);
            break;
        case WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT:
            base = -1;
            for (int b = 0; b < k; b++)
                if (d->kind[b] <= WB_OUT_CUSTOM_FUNCTION_VIEW &&
                    !d->number[b])
                    base = b;
            if (base < 0)
                kind = WB_OUT_NON_ALIAS;
            break;
        default:
            break;
        }
        d->kind[k] = kind;
        d->base[k] = base;
        bool grad = kind != WB_OUT_IS_INPUT && diff_below(r, 2);
        uint64_t dyn = (uint64_t)diff_below(r, 4);
        if (same) {
            grad = last_grad;
            dyn = last_dyn;
        }
        last_grad = grad;
        last_dyn = dyn;
        WBD_OK(wb_spec_add_output(s, "o", kind, base, grad, dyn, NULL));
    }
    WBD_OK(wb_spec_set_intermediate_bases(s, d->nbases));
    WBD_OK(wb_spec_set_grad_mode_at_end(s, diff_below(r, 3) - 1));
    d->ntokens = diff_below(r, 4) == 0 ? 1 + diff_below(r, 2) : 0;
    WBD_OK(wb_spec_set_effect_tokens(s, d->ntokens));
    diff_groups(d);
    /* The graph's arguments: the tokens, the bases, the inputs outside
       them, the members. */
    d->nargs = d->ntokens + d->ngroups;
    for (int i = 0; i < d->ninputs; i++)
        d->arg_at[i] = d->dup_of[i] >= 0 || d->group_of[i] >= 0
                           ? -1
                           : d->nargs++;
    for (int i = 0; i < d->ninputs; i++)
        if (d->group_of[i] >= 0)
            d->arg_at[i] = d->nargs++;
    /* The generator's callbacks log into the world of the case run. */
    d->rng = diff_below(r, 4) == 0;
    if (d->rng) {
        WBD_OK(wb_spec_set_rng(s, diff_rng_get, diff_rng_set,
                               &diff_case_world));
        d->nargs += 2;
    }
    return s;
}

static void diff_add_hooks(diff_rng *r, wb_spec *s, diff_world *w)
{
    if (diff_below(r, 3) == 0)
        WBD_OK(wb_spec_set_before_call(s, diff_before, w));
    if (diff_below(r, 3) == 0)
        WBD_OK(wb_spec_set_first_call(s, diff_first, w));
    for (int g = diff_below(r, 3); g > 0; g--)
        WBD_OK(wb_spec_add_guard(s, diff_enter, diff_leave, w));
}

/* How often each status came back, so the test can show it reached both
   the success path and every failure it injects. */
static long diff_status_seen[WB_ERR_UNSUPPORTED + 1];

/* Makes the wrapper of a compiled tier whose code a test built ahead of
   the case (see test_diff.c); NULL where there is none. */
static wb_status (*diff_made_wrapper)(wb_spec *s, diff_world *w,
                                      wb_wrapper **out);


/* ---- the observables ---- */

typedef struct diff_obs {
    DLDevice dev;         /* the case's device, which goes unnamed */
    char text[8192];
    size_t len;
    const void *storages[64];
    int nstorages;
} diff_obs;

static void diff_put(diff_obs *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diff_vappend(o->text, sizeof o->text, &o->len, fmt, ap);
    va_end(ap);
}

static int diff_storage_id(diff_obs *o, const wb_storage *s)
{
    for (int i = 0; i < o->nstorages; i++)
        if (o->storages[i] == s)
            return i;
    if (o->nstorages >= 64)
        WBD_FAIL("more than 64 storages in one snapshot");
    o->storages[o->nstorages] = s;
    return o->nstorages++;
}

static void diff_tensor_obs(diff_obs *o, const wb_tensor *t)
{
    const wb_storage *s = wb_tensor_storage(t);
    uint64_t h = 1469598103934665603ULL;
    size_t nbytes = wb_storage_nbytes(s);
    unsigned char *copy = NULL;
    const unsigned char *p = wb_storage_data(s);
    if (!diff_on_cpu(s)) {
        if (!(copy = malloc(nbytes ? nbytes : 1)))
            WBD_FAIL("out of memory for %zu bytes", nbytes);
        diff_io.get(s, copy, nbytes);
        p = copy;
    }
    for (size_t i = 0; i < nbytes; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    free(copy);
    DLDataType dt = wb_tensor_dtype(t);
    DLDevice dev = wb_storage_device(s);
    if (dev.device_type != o->dev.device_type ||
        dev.device_id != o->dev.device_id)
        diff_put(o, "[on %d:%d]", (int)dev.device_type, (int)dev.device_id);
    diff_put(o, "[s%d n%zu h%016llx v%llu dt%u.%u nd%d", diff_storage_id(o, s),
             wb_storage_nbytes(s), (unsigned long long)h,
             (unsigned long long)wb_tensor_version(t), dt.code, dt.bits,
             wb_tensor_ndim(t));
    for (int d = 0; d < wb_tensor_ndim(t); d++)
        diff_put(o, " %lld:%lld", (long long)wb_tensor_sizes(t)[d],
                 (long long)wb_tensor_strides(t)[d]);
    diff_put(o, " o%lld f%u dy%llx rc%ld]", (long long)wb_tensor_offset(t),
             wb_tensor_flags(t), (unsigned long long)wb_tensor_dynamic_dims(t),
             wb_tensor_refcount(t));
}

/* A member of t's synthetic base: a 1-D tensor on t's storage, inside
   it; mostly a view of t (its counter), else one made apart (its own),
   and now and then of another dtype, which the call refuses. */
static wb_tensor *diff_member_of(diff_rng *r, const wb_tensor *t)
{
    wb_storage *s = wb_tensor_storage(t);
    DLDataType dt = diff_below(r, 16) ? wb_tensor_dtype(t) : diff_dtypes[3];
    int64_t cap = (int64_t)(wb_storage_nbytes(s) / wb_dtype_size(dt));
    int64_t size = diff_below(r, (int)cap + 1), one = 1;
    int64_t off = diff_below(r, (int)(cap - size) + 1);
    wb_tensor *m;
    if (diff_below(r, 3) && wb_dtype_size(dt) == wb_dtype_size(
                                wb_tensor_dtype(t)))
        WBD_OK(wb_tensor_as_strided(t, 1, &size, &one, off, &m));
    else
        WBD_OK(wb_tensor_from_storage(s, dt, 1, &size, &one, off, &m));
    return m;
}

/* One tier's run of DIFF_CALLS calls on fresh inputs made from seed. */
static void diff_run(const diff_spec *d, wb_spec *s, diff_world *w,
                     wb_tier tier, uint64_t seed, diff_obs *o)
{
    diff_rng r = {seed, NULL, 0};
    wb_tensor *in[DIFF_MAX_IN] = {0};
    wb_arg args[DIFF_MAX_IN];
    wb_options opt = {.tier = tier, .flags = WB_OPT_NO_DISK_CACHE};
    wb_wrapper *wr;
    memset(o, 0, sizeof *o);
    o->dev = d->dev;
    WBD_OK(tier != WB_TIER_INTERP && diff_made_wrapper
               ? diff_made_wrapper(s, w, &wr)
               : wb_wrapper_new(s, diff_graph, w, &opt, &wr));
    for (int i = 0; i < d->ninputs; i++) {
        if (d->dup_of[i] >= 0) {
            args[i].t = in[d->dup_of[i]];
        } else if (d->alias_of[i] >= 0) {
            in[i] = diff_member_of(&r, in[d->alias_of[i]]);
            args[i].t = in[i];
        } else if (d->is_tensor[i]) {
            in[i] = diff_tensor(&r, d->dev, d->dtype[i], diff_below(&r, 4),
                                NULL);
            args[i].t = in[i];
        } else {
            args[i].i = (int64_t)diff_next(&r);
        }
    }
    for (int c = 0; c < DIFF_CALLS; c++) {
        wb_value outs[DIFF_MAX_OUT + 1] = {{0}};
        int nargs = d->ninputs, nouts = d->noutputs;
        wb_arg a[DIFF_MAX_IN];
        memcpy(a, args, sizeof a);
        w->call_seed = diff_next(&r) | 1;
        w->fault = diff_below(&r, 12) < 4 ? diff_below(&r, 5) : 0;
        w->hook_fail = diff_below(&r, 16) == 0 ? 1 + diff_below(&r, 3) : 0;
        switch (diff_below(&r, 40)) {
        case 0: nargs++; break;
        case 1: nouts--; break;
        case 2:
            for (int i = 0; i < d->ninputs; i++)
                if (d->is_tensor[i]) {
                    a[i].t = NULL;
                    break;
                }
            break;
        case 3:
        case 4: {
            /* One tensor passed for two inputs. */
            int i = diff_below(&r, d->ninputs), j = diff_below(&r, d->ninputs);
            if (i != j && d->is_tensor[i] && d->is_tensor[j])
                a[j].t = a[i].t;
            break;
        }
        default: break;
        }
        wb_set_grad_enabled(diff_below(&r, 2));
        wb_status st = wb_call(wr, a, nargs, outs, nouts < 0 ? 0 : nouts);
        if (tier == WB_TIER_INTERP)
            diff_status_seen[st]++;
        diff_put(o, "call %d: %s '%s' grad %d log '%s'\n", c, wb_status_str(st),
                 st ? wb_last_error() : "", wb_grad_enabled(), w->log);
        w->loglen = 0;
        w->log[0] = '\0';
        /* Storage numbers hold within one snapshot, where all are alive. */
        o->nstorages = 0;
        for (int i = 0; i < d->ninputs; i++)
            if (in[i]) {
                diff_put(o, " in%d", i);
                diff_tensor_obs(o, in[i]);
            }
        for (int k = 0; k < d->noutputs; k++) {
            if (d->number[k] && st == WB_OK) {
                /* Every bit of a number, none of what else the slot
                   holds; None is NULL. */
                unsigned long long bits =
                    d->number[k] == WB_SCALAR_BOOL ? (unsigned long long)outs[k].b
                    : d->number[k] == WB_SCALAR_NONE
                        ? (unsigned long long)(uintptr_t)outs[k].p
                        : (unsigned long long)outs[k].i;
                diff_put(o, "\n out%d=number %d %llx", k, (int)d->number[k],
                         bits);
                continue;
            }
            if (d->number[k] || !outs[k].t)
                continue;
            int same = -1;
            for (int i = 0; i < d->ninputs; i++)
                if (outs[k].t == in[i])
                    same = i;
            diff_put(o, "\n out%d=in%d", k, same);
            diff_tensor_obs(o, outs[k].t);
        }
        diff_put(o, "\n");
        for (int k = 0; k < d->noutputs; k++)
            if (!d->number[k])
                wb_tensor_release(outs[k].t);
    }
    for (int i = 0; i < d->ninputs; i++)
        if (in[i]) {
            if (wb_tensor_refcount(in[i]) != 1)
                WBD_FAIL("seed %llu: input %d leaked a reference (refcount "
                         "%ld, tier %s)", (unsigned long long)seed, i,
                         wb_tensor_refcount(in[i]), wb_tier_name(tier));
            wb_tensor_release(in[i]);
        }
    for (int k = 0; k < DIFF_MAX_OUT; k++) {
        wb_tensor_release(w->kept[k]);
        w->kept[k] = NULL;
    }
    wb_wrapper_free(wr);
}


/* One random spec, built from r, run through the interpreter and each of
   the ntiers compiled tiers on the same inputs, made on dev; fails
   (WBD_FAIL) on the first tier whose snapshot differs.  label names the
   case in the message.  Returns the interpreter's snapshot, valid until
   the next case. */
static const diff_obs *diff_case_dev(diff_rng r, uint64_t label,
                                     const wb_tier *tiers, int ntiers,
                                     DLDevice dev)
{
    diff_spec d;
    diff_world *w = &diff_case_world;
    static diff_obs oi, ot;
    wb_spec *base = diff_make_spec(&r, &d);
    uint64_t hooks = diff_next(&r), inputs = diff_next(&r);
    d.dev = dev;
    WBD_OK(wb_spec_validate(base));
    /* t = -1 is the interpreter, the reference the others are held to. */
    for (int t = -1; t < ntiers; t++) {
        wb_tier tier = t < 0 ? WB_TIER_INTERP : tiers[t];
        wb_spec *s;
        /* Each tier gets the world afresh and the same hooks, pointed at
           it, from the same seed. */
        *w = (diff_world){.d = &d};
        WBD_OK(wb_spec_clone(base, &s));
        diff_rng h = {hooks | 1, NULL, 0};
        diff_add_hooks(&h, s, w);
        diff_run(&d, s, w, tier, inputs, t < 0 ? &oi : &ot);
        wb_spec_free(s);
        if (t >= 0 && strcmp(oi.text, ot.text) != 0)
            WBD_FAIL("case %llu: the %s tier differs from the interpreter "
                     "(tensors on device %d:%d)\ninterp:\n%s\n%s:\n%s",
                     (unsigned long long)label, wb_tier_name(tier),
                     (int)dev.device_type, (int)dev.device_id, oi.text,
                     wb_tier_name(tier), ot.text);
    }
    wb_spec_free(base);
    return &oi;
}

/* diff_case_dev with every tensor on the CPU. */
static inline void diff_case_on(diff_rng r, uint64_t label,
                                const wb_tier *tiers, int ntiers)
{
    diff_case_dev(r, label, tiers, ntiers, WBD_CPU);
}

#endif /* WB_DIFF_GEN_H */
