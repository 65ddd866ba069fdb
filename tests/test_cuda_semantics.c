/*
 * test_cuda_semantics.c -- what tests/test_semantics.c and
 * tests/test_errors.c assert on the CPU, on CUDA tensors and on every
 * tier: each mutation kind besides the data copy (metadata, data+metadata,
 * storage, resize without growth, in-graph), each alias kind of outputs,
 * versions and reference counts, and failed calls that leave every
 * tensor's device bytes, view, version and references as they were and
 * enqueue nothing.
 *
 * The tests are in the `cuda` suite, so they run on the emulated device
 * in `make test` and skip with the reason where no device can be used.
 * Device bytes are read back after synchronizing (tc_get).
 */
#include <stdint.h>
#include <string.h>

#include "cuda_helpers.h"

#ifdef WB_WITH_CUDA

/* A view as literals, for tables. */
typedef struct cs_view {
    int ndim;
    int64_t sizes[2], strides[2], offset;
} cs_view;

static wb_tensor *cs_view_of(const wb_tensor *base, const cs_view *v)
{
    return tc_view(base, v->ndim, v->sizes, v->strides, v->offset);
}

static void cs_assert_view(const wb_tensor *t, const cs_view *v,
                           const char *what)
{
    cr_assert_eq(wb_tensor_ndim(t), v->ndim, "%s: ndim %d", what,
                 wb_tensor_ndim(t));
    for (int d = 0; d < v->ndim; d++) {
        cr_assert_eq(wb_tensor_sizes(t)[d], v->sizes[d], "%s: size %d", what,
                     d);
        cr_assert_eq(wb_tensor_strides(t)[d], v->strides[d], "%s: stride %d",
                     what, d);
    }
    cr_assert_eq(wb_tensor_offset(t), v->offset, "%s: offset %lld", what,
                 (long long)wb_tensor_offset(t));
}

/* The first n floats of t's storage, read back from the device. */
static void cs_floats(const wb_tensor *t, float *host, int n)
{
    cr_assert(n >= 0 && (size_t)n * sizeof *host <=
              wb_storage_nbytes(wb_tensor_storage(t)));
    tc_get(wb_tensor_storage(t), host, sizeof *host * (size_t)n);
}

/* ======================================================================= */
/* Mutation kinds                                                           */
/* ======================================================================= */

/*
 * One input x, a view of a storage of xn floats holding 0, 1, ...; the
 * graph's updated value is a view of a storage of vn floats holding 100,
 * 101, ... (none when vn is 0).  The spec also returns x itself (is-input)
 * and a new view of x at offset 1, of 2 floats (alias-of-input), which
 * must follow x onto whatever storage the mutation leaves it on.
 */
typedef struct cs_mut {
    const char *name;
    wb_mutation kind;
    unsigned flags;
    int xn;
    cs_view x;
    int vn;
    cs_view v;
    cs_view after;       /* x's view after a call */
    bool takes_storage;  /* x ends on the value's storage (set_) */
    int an;              /* floats in x's storage after a call */
    float want[8];       /* what they hold */
    uint64_t version;    /* x's version after one call */
    int copies;          /* write-back submissions per call */
} cs_mut;

static const cs_mut cs_muts[] = {
    {"data into a slice", WB_MUT_DATA, 0,
     8, {2, {2, 2}, {4, 1}, 1}, 4, {2, {2, 2}, {2, 1}, 0},
     {2, {2, 2}, {4, 1}, 1}, false,
     8, {0, 100, 101, 3, 4, 102, 103, 7}, 1, 1},
    /* x takes the value's view onto its own storage; no byte moves. */
    {"metadata", WB_MUT_METADATA, 0,
     6, {2, {2, 3}, {3, 1}, 0}, 8, {2, {2, 2}, {1, 2}, 1},
     {2, {2, 2}, {1, 2}, 1}, false,
     6, {0, 1, 2, 3, 4, 5}, 1, 0},
    /* Restrided first, then x[i][j] (at 1+i+2j) = v[i][j] (at 1+i+2j). */
    {"data+metadata", WB_MUT_DATA_METADATA, 0,
     6, {2, {2, 3}, {3, 1}, 0}, 8, {2, {2, 2}, {1, 2}, 1},
     {2, {2, 2}, {1, 2}, 1}, false,
     6, {0, 101, 102, 103, 104, 5}, 2, 1},
    /* x's own 2 floats could not hold the alias (it ends at float 3). */
    {"storage (set_)", WB_MUT_STORAGE, 0,
     2, {1, {2}, {1}, 0}, 8, {1, {3}, {2}, 1},
     {1, {3}, {2}, 1}, true,
     8, {100, 101, 102, 103, 104, 105, 106, 107}, 1, 0},
    /* Same sizes: x keeps its transposed strides; x[i][j] (at j*3+i) =
       v[i][j] (100 + 2i+j). */
    {"resize, same sizes", WB_MUT_RESIZE, 0,
     6, {2, {3, 2}, {1, 3}, 0}, 6, {2, {3, 2}, {2, 1}, 0},
     {2, {3, 2}, {1, 3}, 0}, false,
     6, {100, 102, 104, 101, 103, 105}, 1, 1},
    {"resize, smaller", WB_MUT_RESIZE, 0,
     6, {2, {3, 2}, {1, 3}, 0}, 4, {2, {2, 2}, {2, 1}, 0},
     {2, {2, 2}, {2, 1}, 0}, false,
     6, {100, 101, 102, 103, 4, 5}, 1, 1},
    /* Contiguous at x's offset, inside the storage: no growth. */
    {"resize, smaller at an offset", WB_MUT_RESIZE, 0,
     8, {1, {4}, {1}, 2}, 3, {1, {3}, {1}, 0},
     {1, {3}, {1}, 2}, false,
     8, {0, 1, 100, 101, 102, 5, 6, 7}, 1, 1},
    {"in-graph", WB_MUT_IN_GRAPH, 0,
     4, {1, {4}, {1}, 0}, 0, {0, {0}, {0}, 0},
     {1, {4}, {1}, 0}, false,
     4, {0, 1, 2, 3}, 1, 0},
    {"in-graph, hidden", WB_MUT_IN_GRAPH, WB_INPUT_HIDDEN,
     4, {1, {4}, {1}, 0}, 0, {0, {0}, {0}, 0},
     {1, {4}, {1}, 0}, false,
     4, {0, 1, 2, 3}, 0, 0},
};

static void cs_mut_run(const cs_mut *m, wb_tier tier, void *stream)
{
    char what[96];
    snprintf(what, sizeof what, "%s on %s", m->name, wb_tier_name(tier));
    wb_spec *s;
    WBT_OK(wb_spec_new("cuda_mut", &s));
    if (m->kind == WB_MUT_IN_GRAPH)
        WBT_OK(wb_spec_set_keep_input_mutations(s, true));
    WBT_OK(wb_spec_add_tensor(s, "x", m->kind, m->flags, NULL));
    WBT_OK(wb_spec_add_output(s, "self", WB_OUT_IS_INPUT, 0, false, 0x2,
                              NULL));
    WBT_OK(wb_spec_add_output(s, "tail", WB_OUT_ALIAS_OF_INPUT, 0, true, 0,
                              NULL));

    wb_tensor *base = tc_vec(0, m->xn, 0), *x = cs_view_of(base, &m->x);
    wb_tensor *vbase = m->vn ? tc_vec(0, m->vn, 100) : NULL;
    /* The graph's values: the updated x, what it returns for x itself
       (dropped), and the alias's layout, each in a storage of its own. */
    tc_graph g = {0};
    if (vbase)
        g.values[g.n++] = cs_view_of(vbase, &m->v);
    wb_tensor *scratch = tc_vec(0, 8, -50);
    g.values[g.n++] = tc_vec(0, 4, -1);
    g.values[g.n++] = tc_view(scratch, 1, (int64_t[]){2}, (int64_t[]){1},
                              1);
    wb_options o = {.tier = tier, .stream = stream};
    wb_wrapper *w;
    WBT_OK(wb_wrapper_new(s, tc_graph_fn, &g, &o, &w));

    for (int call = 1; call <= 2; call++) {
        wb_value out[2] = {{NULL}, {NULL}};
        uint64_t before = wb_cuda_launches();
        WBT_OK(wb_call(w, (wb_arg[]){{.t = x}}, 1, out, 2));
        cr_assert_eq(wb_cuda_launches() - before, (uint64_t)m->copies,
                     "%s: %llu submissions", what,
                     (unsigned long long)(wb_cuda_launches() - before));

        /* x: its view, its storage and what the storage holds. */
        cs_assert_view(x, &m->after, what);
        cr_assert_eq(wb_tensor_device(x).device_type, kDLCUDA);
        cr_assert_eq(wb_tensor_storage(x), wb_tensor_storage(
                         m->takes_storage ? vbase : base), "%s: storage",
                     what);
        cr_assert_eq(wb_storage_nbytes(wb_tensor_storage(x)),
                     sizeof(float) * (size_t)m->an, "%s: nbytes", what);
        float got[8];
        cs_floats(x, got, m->an);
        for (int i = 0; i < m->an; i++)
            cr_assert_eq(got[i], m->want[i], "%s, call %d: element %d is "
                         "%g, not %g", what, call, i, got[i], m->want[i]);
        uint64_t want = m->version * (uint64_t)call;
        cr_assert_eq(wb_tensor_version(x), want,
                     "%s, call %d: version %llu", what, call,
                     (unsigned long long)wb_tensor_version(x));
        if (m->takes_storage) {
            /* The old storage: left as it was, held by base alone. */
            float old[8];
            cs_floats(base, old, m->xn);
            for (int i = 0; i < m->xn; i++)
                cr_assert_eq(old[i], (float)i, "%s: old storage written",
                             what);
            cr_assert_eq(wb_storage_refcount(wb_tensor_storage(base)), 1);
            cr_assert_eq(wb_tensor_version(vbase), 0, "set_ bumps x's own "
                         "counter, not its source's");
        }
        /* x is a view of base, and keeps sharing its counter, after a
           set_ too (as in PyTorch). */
        cr_assert_eq(wb_tensor_version(base), wb_tensor_version(x),
                     "%s: one counter for a tensor and its views", what);
        if (vbase && !m->takes_storage)
            cr_assert_eq(wb_tensor_version(vbase), 0, "%s: the value's "
                         "storage was written", what);

        /* is-input: x itself; alias-of-input: a new view of x's storage
           as it is now. */
        cr_assert_eq(out[0].t, x, "%s: is-input is not x", what);
        cr_assert_eq(wb_tensor_dynamic_dims(x), 0x2);
        cr_assert(out[1].t != x && out[1].t != g.values[g.n - 1]);
        cr_assert_eq(wb_tensor_storage(out[1].t), wb_tensor_storage(x),
                     "%s: the alias views another storage", what);
        cs_assert_view(out[1].t, &(cs_view){1, {2}, {1}, 1}, what);
        cr_assert(wb_tensor_requires_grad(out[1].t));
        cr_assert_eq(wb_tensor_version(out[1].t), wb_tensor_version(x));
        float tail[3];
        cs_floats(out[1].t, tail, 3);
        cr_assert(tail[1] == m->want[1] && tail[2] == m->want[2],
                  "%s: the alias reads %g, %g", what, tail[1], tail[2]);

        /* References: x held by the test and out[0].t; its storage by its
           tensor (base or vbase), x, the alias, and the value when x
           took the value's storage; every graph value released. */
        cr_assert_eq(wb_tensor_refcount(x), 2);
        cr_assert_eq(wb_storage_refcount(wb_tensor_storage(x)),
                     m->takes_storage ? 4 : 3, "%s: storage refcount %ld",
                     what, wb_storage_refcount(wb_tensor_storage(x)));
        for (int i = 0; i < g.n; i++)
            cr_assert_eq(wb_tensor_refcount(g.values[i]), 1, "%s: value %d "
                         "kept", what, i);
        wb_tensor_release(out[0].t);
        wbt_release_last(out[1].t);
    }

    wb_wrapper_free(w);
    wb_spec_free(s);
    tc_graph_free(&g);
    wbt_release_last(scratch);
    wbt_release_last(x);
    wbt_release_last(base);
    if (vbase)
        wbt_release_last(vbase);
}

Test(cuda, every_mutation_kind_on_every_tier)
{
    tc_need_cuda();
    cudaStream_t st;
    cr_assert_eq(cu.stream_create(&st), cudaSuccess);
    for (size_t k = 0; k < sizeof cs_muts / sizeof *cs_muts; k++)
        for (int t = 0; t < TC_NTIERS; t++) {
            /* The legacy stream takes the kernel, a created one the
               batched copy where the copy is dense. */
            cs_mut_run(&cs_muts[k], tc_tiers[t], NULL);
            cs_mut_run(&cs_muts[k], tc_tiers[t], st);
        }
    cu.stream_destroy(st);
    if (cu.fake)
        cr_assert_gt(cu.fake->batch_copies, 0, "no batched copy was made");
}

/* ======================================================================= */
/* Output alias kinds                                                       */
/* ======================================================================= */

/* What one output must be after the call. */
typedef struct cs_out {
    const char *name;
    int owner;         /* index into the tensors whose storage it views */
    bool same;         /* it is that very tensor */
    cs_view view;      /* 1-D views here */
    float first[3];    /* its elements */
    bool requires_grad;
    uint64_t dyn;
} cs_out;

enum { CS_X, CS_Y, CS_PLAIN, CS_B0, CS_B1, CS_NOWNERS };

Test(cuda, every_alias_kind_on_every_tier)
{
    tc_need_cuda();
    /* x [4] data-mutated, y [8] read; the graph returns x's new value, six
       outputs and two intermediate bases. */
    wb_spec *s;
    WBT_OK(wb_spec_new("cuda_alias", &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_set_intermediate_bases(s, 2));
    WBT_OK(wb_spec_add_output(s, "x_self", WB_OUT_IS_INPUT, 0, false, 0x4,
                              NULL));
    WBT_OK(wb_spec_add_output(s, "y_view", WB_OUT_ALIAS_OF_INPUT, 1, true,
                              0x3, NULL));
    WBT_OK(wb_spec_add_output(s, "plain", WB_OUT_NON_ALIAS, -1, false, 0,
                              NULL));
    WBT_OK(wb_spec_add_output(s, "of_plain",
                              WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT,
                              2, true, 0x1, NULL));
    WBT_OK(wb_spec_add_output(s, "mid", WB_OUT_ALIAS_OF_INTERMEDIATE, 1,
                              false, 0x2, NULL));
    WBT_OK(wb_spec_add_output(s, "mid_saved",
                              WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT, 0,
                              true, 0, NULL));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_values(s), 1 + 6 + 2);

    static const cs_out outs[] = {
        {"x_self", CS_X, true, {1, {4}, {1}, 0}, {30, 31, 32}, false, 0x4},
        {"y_view", CS_Y, false, {1, {3}, {2}, 1}, {51, 53, 55}, true, 0x3},
        {"plain", CS_PLAIN, true, {1, {8}, {1}, 0}, {70, 71, 72}, false, 0},
        {"of_plain", CS_PLAIN, false, {1, {3}, {1}, 5}, {75, 76, 77}, true,
         0x1},
        {"mid", CS_B1, false, {1, {3}, {3}, 2}, {22, 25, 28}, false, 0x2},
        {"mid_saved", CS_B0, false, {1, {2}, {2}, 1}, {11, 13, 0}, true, 0},
    };
    for (int t = 0; t < TC_NTIERS; t++) {
        const char *tier = wb_tier_name(tc_tiers[t]);
        wb_tensor *x = tc_vec(0, 4, 0), *y = tc_vec(0, 8, 50);
        wb_tensor *plain = tc_vec(0, 8, 70), *b0 = tc_vec(0, 6, 10);
        wb_tensor *b1 = tc_vec(0, 9, 20), *sc = tc_vec(0, 16, -9);
        wb_tensor *owners[CS_NOWNERS] = {x, y, plain, b0, b1};
        /* The graph's view values sit in a scratch storage: the wrapper
           keeps only their views. */
        tc_graph g = {.n = 9, .values = {tc_vec(0, 4, 30), tc_vec(0, 4, -2)}};
        for (int k = 1; k < 6; k++)
            g.values[1 + k] = k == 2 ? wb_tensor_retain(plain)
                                     : cs_view_of(sc, &outs[k].view);
        g.values[7] = wb_tensor_retain(b0);
        g.values[8] = wb_tensor_retain(b1);
        wb_tensor_set_requires_grad(plain, true);
        static char mark;
        wb_value o[8];
        for (int k = 0; k < 8; k++)
            o[k].t = (wb_tensor *)(void *)&mark;
        wb_wrapper *w = wbt_wrap(s, tc_graph_fn, &g, tc_tiers[t]);

        WBT_OK(wb_call(w, (wb_arg[]){{.t = x}, {.t = y}}, 2, o, 8));
        cr_assert_eq(o[6].t, (wb_tensor *)(void *)&mark, "a base returned");
        cr_assert_eq(o[7].t, (wb_tensor *)(void *)&mark, "a base returned");
        for (int k = 0; k < 6; k++) {
            const cs_out *e = &outs[k];
            const wb_tensor *own = owners[e->owner];
            char what[64];
            snprintf(what, sizeof what, "%s on %s", e->name, tier);
            if (e->same)
                cr_assert_eq(o[k].t, own, "%s: not the tensor itself", what);
            else
                cr_assert(o[k].t != own && o[k].t != g.values[1 + k],
                          "%s: not a new view", what);
            cr_assert_eq(wb_tensor_storage(o[k].t), wb_tensor_storage(own),
                         "%s: another storage", what);
            cr_assert_eq(wb_tensor_device(o[k].t).device_type, kDLCUDA);
            cs_assert_view(o[k].t, &e->view, what);
            float host[16];
            cs_floats(own, host, (int)(wb_storage_nbytes(
                          wb_tensor_storage(own)) / sizeof *host));
            for (int i = 0; i < 3 && i < e->view.sizes[0]; i++)
                cr_assert_eq(host[e->view.offset + i * e->view.strides[0]],
                             e->first[i], "%s: element %d", what, i);
            cr_assert_eq(wb_tensor_requires_grad(o[k].t), e->requires_grad,
                         "%s: requires_grad", what);
            cr_assert_eq(wb_tensor_dynamic_dims(o[k].t), e->dyn,
                         "%s: dynamic dims %llx", what,
                         (unsigned long long)wb_tensor_dynamic_dims(o[k].t));
        }
        /* Versions: x written once; a view shares its base's counter. */
        cr_assert_eq(wb_tensor_version(x), 1);
        cr_assert_eq(wb_tensor_version(y), 0);
        cr_assert_eq(wb_tensor_version(plain), 0);
        /* References: the caller's x and plain are returned as
           themselves; every other graph value was released. */
        cr_assert_eq(wb_tensor_refcount(x), 2);
        cr_assert_eq(wb_tensor_refcount(plain), 3, "the test, g, o[2].t");
        for (int i = 0; i < g.n; i++)
            if (g.values[i] != plain && g.values[i] != b0 &&
                g.values[i] != b1)
                cr_assert_eq(wb_tensor_refcount(g.values[i]), 1,
                             "value %d kept on %s", i, tier);
        cr_assert_eq(wb_tensor_refcount(b0), 2, "the test and g");
        cr_assert_eq(wb_storage_refcount(wb_tensor_storage(y)), 2);
        cr_assert_eq(wb_storage_refcount(wb_tensor_storage(plain)), 2);
        cr_assert_eq(wb_storage_refcount(wb_tensor_storage(b1)), 2);

        /* Writing through the alias of y bumps y's counter and lands in
           y's device memory. */
        wb_tensor *src = tc_vec(0, 3, -7);
        WBT_OK(wb_tensor_copy_(o[1].t, src));
        cr_assert_eq(wb_tensor_version(y), 1);
        float yh[8];
        cs_floats(y, yh, 8);
        for (int i = 0; i < 8; i++)
            cr_assert_eq(yh[i], i % 2 && i < 7 ? -7.0f + (float)(i / 2)
                                               : 50.0f + (float)i,
                         "y[%d] = %g", i, yh[i]);

        /* The views of the bases keep their storages alive. */
        tc_graph_free(&g);
        wb_tensor_release(b0);
        wb_tensor_release(b1);
        float mid[9];
        cs_floats(o[4].t, mid, 9);
        cr_assert_eq(mid[8], 28.0f);
        cr_assert_eq(wb_storage_refcount(wb_tensor_storage(o[4].t)), 1);

        wbt_release_last(src);
        for (int k = 0; k < 6; k++)
            wb_tensor_release(o[k].t);
        wb_wrapper_free(w);
        wbt_release_last(sc);
        wbt_release_last(x);
        wbt_release_last(y);
        wbt_release_last(plain);
    }
    wb_spec_free(s);
}

/* ======================================================================= */
/* Failed calls                                                             */
/* ======================================================================= */


/* What a case spoils in an otherwise good call. */
typedef enum cs_spoil {
    CS_VALUE_SIZES,     /* x's value has other sizes */
    CS_VALUE_DTYPE,     /* x's value is float64 */
    CS_VALUE_ON_CPU,    /* x's value is on the CPU */
    CS_VALUE_ON_GPU1,   /* x's value is on cuda:1 */
    CS_VALUE_NULL,      /* the graph returns NULL for x's value */
    CS_VALUE_TOO_BIG,   /* x's value's view does not fit x's storage */
    CS_VALUE_GROWS,     /* x's value grows x's storage, and the device
                           has no memory for it (emulated device only) */
    CS_LATER_VALUE,     /* z's value (checked after x's) has other sizes */
    CS_ALIAS_ON_CPU,    /* the alias of y's layout comes on the CPU */
    CS_ALIAS_TOO_FAR,   /* ...or does not fit y's storage */
    CS_INPUT_NULL,      /* y is given as NULL */
    CS_DECLARED_CPU,    /* x is declared on the CPU */
    CS_GRAPH_FAILS,     /* the graph returns -7 */
    CS_GRAPH_COUNT,     /* the graph returns one value too few */
} cs_spoil;

typedef struct cs_err {
    wb_mutation kind;   /* x's */
    cs_spoil spoil;
    wb_status status;
    const char *needle;
} cs_err;

static const cs_err cs_errs[] = {
    {WB_MUT_DATA, CS_VALUE_SIZES, WB_ERR_SHAPE,
     "input 0 'x': the updated value's sizes [3, 2] differ from the input's "
     "[2, 3]"},
    {WB_MUT_RESIZE, CS_VALUE_DTYPE, WB_ERR_TYPE,
     "input 0 'x': the updated value has dtype float64; expected float32"},
    {WB_MUT_DATA, CS_VALUE_ON_CPU, WB_ERR_DEVICE,
     "input 0 'x': the updated value is on cpu; expected cuda:0"},
    {WB_MUT_DATA_METADATA, CS_VALUE_ON_GPU1, WB_ERR_DEVICE,
     "input 0 'x': the updated value is on cuda:1; expected cuda:0"},
    {WB_MUT_METADATA, CS_VALUE_ON_CPU, WB_ERR_DEVICE,
     "the updated value is on cpu; expected cuda:0"},
    {WB_MUT_STORAGE, CS_VALUE_ON_CPU, WB_ERR_DEVICE,
     "the updated value is on cpu; expected cuda:0"},
    {WB_MUT_STORAGE, CS_VALUE_DTYPE, WB_ERR_TYPE,
     "the updated value has dtype float64"},
    {WB_MUT_RESIZE, CS_VALUE_ON_GPU1, WB_ERR_DEVICE,
     "the updated value is on cuda:1; expected cuda:0"},
    {WB_MUT_DATA, CS_VALUE_NULL, WB_ERR_GRAPH,
     "the graph returned NULL as value 0; expected a tensor"},
    {WB_MUT_METADATA, CS_VALUE_TOO_BIG, WB_ERR_SHAPE,
     "input 0 'x': the updated view does not fit the input's storage"},
    {WB_MUT_DATA_METADATA, CS_VALUE_TOO_BIG, WB_ERR_SHAPE,
     "the updated view does not fit"},
    {WB_MUT_RESIZE, CS_VALUE_GROWS, WB_ERR_NOMEM,
     "input 0 'x': cannot allocate CUDA memory"},
    {WB_MUT_DATA, CS_LATER_VALUE, WB_ERR_SHAPE,
     "input 3 'z': the updated value's sizes [5] differ from the input's "
     "[4]"},
    {WB_MUT_DATA_METADATA, CS_LATER_VALUE, WB_ERR_SHAPE,
     "input 3 'z': the updated value's sizes [5] differ from the input's "
     "[4]"},
    {WB_MUT_RESIZE, CS_LATER_VALUE, WB_ERR_SHAPE,
     "input 3 'z': the updated value's sizes [5] differ from the input's "
     "[4]"},
    {WB_MUT_DATA, CS_ALIAS_ON_CPU, WB_ERR_DEVICE,
     "output 1 'v' (alias-of-input): the graph's value is on cpu, its base "
     "on cuda:0"},
    {WB_MUT_STORAGE, CS_ALIAS_TOO_FAR, WB_ERR_SHAPE,
     "output 1 'v' (alias-of-input): the graph's view does not fit"},
    {WB_MUT_DATA, CS_INPUT_NULL, WB_ERR_TYPE,
     "input 1 'y': got NULL; expected a tensor"},
    {WB_MUT_DATA, CS_DECLARED_CPU, WB_ERR_DEVICE,
     "input 0 'x': on cuda:0; expected cpu"},
    {WB_MUT_METADATA, CS_GRAPH_FAILS, WB_ERR_GRAPH,
     "the graph failed with code -7"},
    {WB_MUT_DATA, CS_GRAPH_COUNT, WB_ERR_ARITY,
     "the graph returned 3 values; expected 4"},
};

/*
 * The fixture, on cuda:0 unless a case says otherwise:
 *   input 0 'x': mutation per case, a [2,3] transposed view of 6 floats
 *   input 1 'y': read, [8]
 *   input 2 'k': in-graph mutation, [3]
 *   input 3 'z': data mutation, [4]
 *   output 0 'o': non-alias; output 1 'v': alias of y
 * The graph returns x's value, z's value, o and v's layout.
 */
typedef struct cs_fix {
    wb_tensor *base, *x, *y, *k, *z;
    wb_tensor *good[4];   /* the values of a good call */
    wb_tensor *bad;       /* the spoiled one, if any */
    wb_tensor *scratch;
} cs_fix;

/* A good updated value for x under mutation kind m. */
static wb_tensor *cs_good_value(wb_mutation m, wb_tensor **scratch)
{
    static const cs_view meta = {2, {2, 2}, {1, 2}, 1};
    wb_tensor *v = tc_vec(0, 8, 100), *t;
    switch (m) {
    case WB_MUT_METADATA:
    case WB_MUT_DATA_METADATA:
        t = cs_view_of(v, &meta);
        break;
    case WB_MUT_STORAGE:
        t = wb_tensor_retain(v);
        break;
    default:
        t = tc_view(v, 2, (int64_t[]){2, 3}, (int64_t[]){3, 1}, 0);
        break;
    }
    *scratch = v;
    return t;
}

/* A float32 tensor of the given view on a fresh storage of n floats. */
static wb_tensor *cs_on(DLDevice dev, DLDataType dt, int64_t n,
                        const cs_view *v)
{
    wb_tensor *s, *t;
    WBT_OK(wb_tensor_new(dt, dev, 1, &n, &s));
    t = cs_view_of(s, v);
    wb_tensor_release(s);
    return t;
}

/* The value the case puts in the slot it spoils, or NULL. */
static wb_tensor *cs_spoiled(const cs_err *c, int *slot)
{
    static const DLDataType f64 = {kDLFloat, 64, 1};
    static const cs_view x23 = {2, {2, 3}, {3, 1}, 0};
    const DLDevice cpu = {kDLCPU, 0};
    *slot = 0;
    switch (c->spoil) {
    case CS_VALUE_SIZES:
        return cs_on(tc_gpu(0), tc_f32, 6, &(cs_view){2, {3, 2}, {2, 1}, 0});
    case CS_VALUE_DTYPE:
        return cs_on(tc_gpu(0), f64, 6, &x23);
    case CS_VALUE_ON_CPU:
        return cs_on(cpu, tc_f32, 8, c->kind == WB_MUT_METADATA
                     ? &(cs_view){2, {2, 2}, {1, 2}, 1} : &x23);
    case CS_VALUE_ON_GPU1:
        return cs_on(tc_gpu(1), tc_f32, 8, c->kind == WB_MUT_DATA_METADATA
                     ? &(cs_view){2, {2, 2}, {1, 2}, 1} : &x23);
    case CS_VALUE_TOO_BIG:
        /* x's storage holds 6 floats; this view ends at float 7. */
        return cs_on(tc_gpu(0), tc_f32, 8, &(cs_view){2, {2, 2}, {1, 2}, 3});
    case CS_VALUE_GROWS:
        return cs_on(tc_gpu(0), tc_f32, 12, &(cs_view){2, {3, 4}, {4, 1}, 0});
    case CS_LATER_VALUE:
        *slot = 1;
        return cs_on(tc_gpu(0), tc_f32, 5, &(cs_view){1, {5}, {1}, 0});
    case CS_ALIAS_ON_CPU:
        *slot = 3;
        return cs_on(cpu, tc_f32, 8, &(cs_view){1, {2}, {1}, 1});
    case CS_ALIAS_TOO_FAR:
        /* y holds 8 floats; this view ends at float 10. */
        *slot = 3;
        return cs_on(tc_gpu(0), tc_f32, 16, &(cs_view){1, {4}, {1}, 6});
    default:
        *slot = -1;
        return NULL;
    }
}

static void cs_err_run(const cs_err *c, wb_tier tier, void *stream)
{
    if (c->spoil == CS_VALUE_GROWS && !cu.fake)
        return;  /* a real device runs out of memory only when it must */
    char what[160];
    snprintf(what, sizeof what, "mutation kind %d, '%s', on %s",
             (int)c->kind, c->needle, wb_tier_name(tier));
    wb_spec *s;
    WBT_OK(wb_spec_new("err", &s));
    WBT_OK(wb_spec_set_keep_input_mutations(s, true));
    WBT_OK(wb_spec_add_tensor(s, "x", c->kind, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "k", WB_MUT_IN_GRAPH, 0, NULL));
    WBT_OK(wb_spec_add_tensor(s, "z", WB_MUT_DATA, 0, NULL));
    WBT_OK(wb_spec_add_output(s, "o", WB_OUT_NON_ALIAS, -1, true, 0x1,
                              NULL));
    WBT_OK(wb_spec_add_output(s, "v", WB_OUT_ALIAS_OF_INPUT, 1, false, 0,
                              NULL));
    if (c->spoil == CS_DECLARED_CPU)
        WBT_OK(wb_spec_declare_device(s, 0, (DLDevice){kDLCPU, 0}));

    cs_fix f;
    f.base = tc_vec(0, 6, 0);
    f.x = tc_view(f.base, 2, (int64_t[]){2, 3}, (int64_t[]){1, 2}, 0);
    f.y = tc_vec(0, 8, 50);
    f.k = tc_vec(0, 3, -10);
    f.z = tc_vec(0, 4, 0);
    wb_tensor_set_requires_grad(f.y, true);
    wb_tensor *xs;
    f.good[0] = cs_good_value(c->kind, &xs);
    f.good[1] = tc_vec(0, 4, 200);
    f.good[2] = tc_vec(0, 2, 7);
    f.scratch = tc_vec(0, 8, 0);
    f.good[3] = tc_view(f.scratch, 1, (int64_t[]){2}, (int64_t[]){1}, 1);
    int slot;
    f.bad = cs_spoiled(c, &slot);

    tc_graph g = {.n = 4};
    for (int i = 0; i < 4; i++)
        g.values[i] = i == slot ? f.bad : f.good[i];
    if (c->spoil == CS_VALUE_NULL)
        g.values[0] = NULL;
    if (c->spoil == CS_GRAPH_FAILS)
        g.n = -7;
    if (c->spoil == CS_GRAPH_COUNT)
        g.n = 3;
    wb_options o = {.tier = tier, .stream = stream};
    wb_wrapper *w;
    WBT_OK(wb_wrapper_new(s, tc_graph_fn, &g, &o, &w));
    wb_arg args[4] = {{.t = f.x}, {.t = f.y}, {.t = f.k}, {.t = f.z}};
    if (c->spoil == CS_INPUT_NULL)
        args[1].t = NULL;

    wbt_snap snaps[5];
    const wb_tensor *ts[5] = {f.x, f.base, f.y, f.k, f.z};
    static const char *names[5] = {"x", "base", "y", "k", "z"};
    for (int i = 0; i < 5; i++)
        wbt_snap_take(&snaps[i], ts[i], tc_get);
    long refs[5];
    for (int i = 0; i < 4; i++)
        refs[i] = wb_tensor_refcount(f.good[i]);
    refs[4] = f.bad ? wb_tensor_refcount(f.bad) : 0;
    static char mark;
    wb_value outs[2] = {{(wb_tensor *)(void *)&mark},
                        {(wb_tensor *)(void *)&mark}};
    uint64_t before = wb_cuda_launches();
    bool graph_ran = c->spoil != CS_INPUT_NULL &&
                     c->spoil != CS_DECLARED_CPU;

    if (c->spoil == CS_VALUE_GROWS)
        cu.fake->fail_malloc = true;
    WBT_FAILS(wb_call(w, args, 4, outs, 2), c->status, c->needle);
    if (c->spoil == CS_VALUE_GROWS)
        cu.fake->fail_malloc = false;
    cr_assert_eq(wb_cuda_launches(), before, "%s: work was enqueued", what);
    for (int i = 0; i < 5; i++) {
        char label[200];
        snprintf(label, sizeof label, "%s: %s", what, names[i]);
        /* Once the graph has run, its in-graph write of k stands, and so
           does the bump that announced it. */
        wbt_snap_check(&snaps[i], i == 3 && graph_ran, label);
    }
    for (int i = 0; i < 2; i++)
        cr_assert_eq(outs[i].t, (wb_tensor *)(void *)&mark,
                     "%s: outs[%d].t written", what, i);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(wb_tensor_refcount(f.good[i]), refs[i],
                     "%s: value %d leaked", what, i);
    if (f.bad)
        cr_assert_eq(wb_tensor_refcount(f.bad), refs[4],
                     "%s: the spoiled value leaked", what);

    /* The same wrapper still makes a good call afterwards, whose copies
       all go in one submission: nothing of the failed call's checks is
       left pending. */
    if (c->spoil != CS_DECLARED_CPU) {
        args[1].t = f.y;
        g.n = 4;
        for (int i = 0; i < 4; i++)
            g.values[i] = f.good[i];
        uint64_t kv = wb_tensor_version(f.k);
        before = wb_cuda_launches();
        WBT_OK(wb_call(w, args, 4, outs, 2));
        cr_assert_eq(wb_cuda_launches() - before, 1, "%s: %llu submissions "
                     "in the good call", what,
                     (unsigned long long)(wb_cuda_launches() - before));
        tc_expect(f.z, 4, 200);
        cr_assert_eq(wb_tensor_version(f.z), 1);
        cr_assert_eq(wb_tensor_version(f.k), kv + 1);
        cr_assert_eq(outs[0].t, f.good[2]);
        cr_assert_eq(wb_tensor_storage(outs[1].t), wb_tensor_storage(f.y));
        wb_tensor_release(outs[0].t);
        wbt_release_last(outs[1].t);
        if (c->kind == WB_MUT_DATA || c->kind == WB_MUT_RESIZE) {
            /* x[i][j] (at i+2j) = 100 + 3i+j. */
            float xh[6];
            cs_floats(f.base, xh, 6);
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 3; j++)
                    cr_assert_eq(xh[i + 2 * j], 100.0f + (float)(3 * i + j),
                                 "%s: x[%d][%d] after a good call", what, i,
                                 j);
        }
    }

    wb_wrapper_free(w);
    wb_spec_free(s);
    wb_tensor_release(xs);  /* first: it may be good[0] itself */
    for (int i = 0; i < 4; i++)
        wbt_release_last(f.good[i]);
    if (f.bad)
        wbt_release_last(f.bad);
    wbt_release_last(f.scratch);
    wbt_release_last(f.x);
    wb_tensor_release(f.base);
    wbt_release_last(f.y);
    wbt_release_last(f.k);
    wbt_release_last(f.z);
}

Test(cuda, failed_calls_leave_everything_untouched)
{
    tc_need_cuda();
    cudaStream_t st;
    cr_assert_eq(cu.stream_create(&st), cudaSuccess);
    for (size_t k = 0; k < sizeof cs_errs / sizeof *cs_errs; k++) {
        if (cs_errs[k].spoil == CS_VALUE_ON_GPU1 &&
            !tc_two_devices("the value on another device"))
            continue;
        for (int t = 0; t < TC_NTIERS; t++)
            cs_err_run(&cs_errs[k], tc_tiers[t], t == 1 ? st : NULL);
    }
    cu.stream_destroy(st);
}

/*
 * A call that fails in its checks after checking a device copy must leave
 * nothing for the next call of the same wrapper: that call's copies go on
 * its own stream and device, whichever inputs it has on a device.  Here
 * the failed call checked x0's copy (cuda:0, stream s1) before x1's value
 * was refused; the next call has x0 on the CPU, so its first device copy
 * is x1's, on cuda:1 (or on s2, where x1 is tied).
 */
static void cs_after_failure(wb_tier tier, bool other_device, void *s1,
                             void *s2)
{
    const char *what = other_device ? "on cuda:1" : "on stream s2";
    wb_spec *s;
    WBT_OK(wb_spec_parse("f(Tensor(a!) x0, Tensor(b!) x1) -> ()", &s));
    wb_tensor *a0 = tc_vec(0, 4, 0), *a1 = tc_vec(0, 4, 0), *c0, *c1;
    WBT_OK(wb_tensor_new(tc_f32, (DLDevice){kDLCPU, 0}, 1, (int64_t[]){4},
                         &c0));
    c1 = tc_vec(other_device ? 1 : 0, 4, 0);
    wb_tensor *cpu_value;
    WBT_OK(wb_tensor_new(tc_f32, (DLDevice){kDLCPU, 0}, 1, (int64_t[]){4},
                         &cpu_value));
    for (int i = 0; i < 4; i++)
        ((float *)wb_tensor_data(cpu_value))[i] = 40.0f + (float)i;
    tc_graph g = {.n = 2, .values = {tc_vec(0, 4, 10), tc_vec(0, 5, 20)}};
    wb_wrapper *w = wbt_wrap(s, tc_graph_fn, &g, tier);

    wb_set_call_stream(s1);
    WBT_FAILS(wb_call(w, (wb_arg[]){{.t = a0}, {.t = a1}}, 2, NULL, 0),
              WB_ERR_SHAPE, "input 1 'x1': the updated value's sizes");
    tc_graph_free(&g);
    g.values[0] = wb_tensor_retain(cpu_value);
    g.values[1] = tc_vec(other_device ? 1 : 0, 4, 30);
    if (!other_device)
        wb_storage_set_stream(wb_tensor_storage(c1), s2);
    wb_set_call_stream(s2);
    wb_status st = wb_call(w, (wb_arg[]){{.t = c0}, {.t = c1}}, 2, NULL, 0);
    wb_clear_call_stream();
    cr_assert_eq(st, WB_OK, "%s, %s: the call after a failed one: %s",
                 wb_tier_name(tier), what, wb_last_error());
    tc_expect(c1, 4, 30);
    cr_assert_eq(((float *)wb_tensor_data(c0))[3], 43.0f);
    cr_assert_eq(wb_tensor_version(c1), 1);

    wb_storage_unset_stream(wb_tensor_storage(c1));
    wb_wrapper_free(w);
    wb_spec_free(s);
    tc_graph_free(&g);
    wbt_release_last(cpu_value);
    wbt_release_last(a0);
    wbt_release_last(a1);
    wbt_release_last(c0);
    wbt_release_last(c1);
}

Test(cuda, a_failed_call_leaves_nothing_for_the_next)
{
    tc_need_cuda();
    cudaStream_t s1, s2;
    cr_assert_eq(cu.stream_create(&s1), cudaSuccess);
    cr_assert_eq(cu.stream_create(&s2), cudaSuccess);
    for (int t = 0; t < TC_NTIERS; t++) {
        cs_after_failure(tc_tiers[t], false, s1, s2);
        if (tc_two_devices("a failure on another device"))
            cs_after_failure(tc_tiers[t], true, s1, s2);
    }
    cu.stream_destroy(s1);
    cu.stream_destroy(s2);
}

#else /* !WB_WITH_CUDA */

Test(cuda, semantics_built_without_cuda)
{
    cr_skip_test("CUDA semantics tests skipped: this build has no CUDA "
                 "(WITH_CUDA=0)");
}

#endif /* WB_WITH_CUDA */
