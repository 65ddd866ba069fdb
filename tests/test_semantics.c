/*
 * test_semantics.c -- what one successful call does, per input mutation
 * kind, per output alias kind and per graph-level setting, on both tiers.
 *
 * Every test builds its tensors with known contents, lets a scripted graph
 * hand back prepared values (one new reference each, or where a test says
 * so the test's own), and then checks data, sizes, strides, offsets,
 * storage sharing, identity, version counters, flags and reference counts.  The graph also records what it saw (its
 * arguments, their versions and flags, the grad mode), so that the steps
 * before the call can be checked from inside it.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "helpers.h"

/* ---- a scripted graph ---- */

#define SEM_MAXV 16
#define SEM_MAXA 8

/* An ordered record of hooks, guards and graph calls, one letter each. */
typedef struct sem_log {
    char s[256];
    int n;
} sem_log;

static void sem_log_put(sem_log *l, char c)
{
    if (l && l->n < (int)sizeof l->s - 1) {
        l->s[l->n++] = c;
        l->s[l->n] = '\0';
    }
}

typedef struct sem_ctx {
    wb_tensor *vals[SEM_MAXV]; /* returned in order, one new reference each */
    int nvals;
    unsigned hand_over;        /* bit i: vals[i] goes with the test's own
                                  reference instead (so the graph may be
                                  called only once) */
    unsigned tensor_args;      /* bit i: argument i is a tensor */
    bool keep_args;            /* retain the tensor arguments it saw */
    sem_log *log;              /* 'g' per call when set */
    /* What the graph saw on its last call. */
    int calls;
    int nargs;
    int nvalues;
    wb_arg args[SEM_MAXA];
    uint64_t versions[SEM_MAXA];
    bool requires_grad[SEM_MAXA];
    wb_tensor *kept[SEM_MAXA];
    bool grad;
} sem_ctx;

static int sem_graph(void *ctx, const wb_arg *args, int nargs,
                     wb_value *values, int nvalues)
{
    sem_ctx *c = ctx;
    c->calls++;
    c->nargs = nargs;
    c->nvalues = nvalues;
    c->grad = wb_grad_enabled();
    sem_log_put(c->log, 'g');
    for (int i = 0; i < nargs && i < SEM_MAXA; i++) {
        c->args[i] = args[i];
        if (!(c->tensor_args & (1u << i)))
            continue;
        c->versions[i] = wb_tensor_version(args[i].t);
        c->requires_grad[i] = wb_tensor_requires_grad(args[i].t);
        if (c->keep_args) {
            wb_tensor_release(c->kept[i]);
            c->kept[i] = wb_tensor_retain(args[i].t);
        }
    }
    if (c->nvals > nvalues)
        return -100;
    for (int i = 0; i < c->nvals; i++)
        values[i].t = c->hand_over & (1u << i) ? c->vals[i]
                                             : wb_tensor_retain(c->vals[i]);
    return c->nvals;
}

/* ---- hooks and guards that write the log ---- */

typedef struct sem_hook {
    sem_log *log;
    char tag;
    int count;
    bool grad;       /* the grad mode it saw last */
} sem_hook;

static int sem_hook_fn(void *ud)
{
    sem_hook *h = ud;
    h->count++;
    h->grad = wb_grad_enabled();
    sem_log_put(h->log, h->tag);
    return 0;
}

typedef struct sem_guard {
    sem_log *log;
    char enter, leave;
} sem_guard;

static int sem_guard_enter(void *ud)
{
    sem_guard *g = ud;
    sem_log_put(g->log, g->enter);
    return 0;
}

static void sem_guard_leave(void *ud)
{
    sem_guard *g = ud;
    sem_log_put(g->log, g->leave);
}

/* ---- small helpers ---- */

static wb_spec *sem_spec(const char *name)
{
    wb_spec *s = NULL;
    WBT_OK(wb_spec_new(name, &s));
    return s;
}

/* A new view of base's storage (base's dtype). */
static wb_tensor *sem_view(const wb_tensor *base, int ndim,
                           const int64_t *sizes, const int64_t *strides,
                           int64_t offset)
{
    wb_tensor *t = NULL;
    WBT_OK(wb_tensor_as_strided(base, ndim, sizes, strides, offset, &t));
    return t;
}

/* Float element i of t's storage, ignoring t's view. */
static float sem_elem(const wb_tensor *t, int64_t i)
{
    return ((const float *)wb_storage_data(wb_tensor_storage(t)))[i];
}

static void sem_ctx_drop(sem_ctx *c)
{
    for (int i = 0; i < SEM_MAXA; i++) {
        wb_tensor_release(c->kept[i]);
        c->kept[i] = NULL;
    }
}

/* ======================================================================= */
/* Input mutations                                                          */
/* ======================================================================= */

Test(semantics, data_mutation_into_transposed_input)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("data_t");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "y", WB_OUT_NON_ALIAS, -1, false, 0,
                                  NULL));
        /* x is the transpose of a 2x3 base: sizes 3x2, strides 1, 3. */
        wb_tensor *base = wbt_f32(0, 2, 2, 3);
        wb_tensor *x = sem_view(base, 2, (int64_t[]){3, 2},
                                (int64_t[]){1, 3}, 0);
        wb_tensor *v = wbt_f32(100, 2, 3, 2), *y = wbt_f32(7, 1, 2);
        sem_ctx c = {.vals = {v, y}, .nvals = 2};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_storage *st = wb_tensor_storage(x);
        void *data = wb_storage_data(st);
        wb_arg a[1] = {{.t = x}};
        wb_value o[1] = {{NULL}};

        WBT_OK(wb_call(w, a, 1, o, 1));
        wbt_assert_view(x, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0);
        cr_assert_eq(wb_tensor_storage(x), st);
        cr_assert_eq(wb_storage_data(st), data, "a copy moves no storage");
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 2; j++) {
                cr_assert_eq(wbt_at(x, i, j), 100.0f + (float)(2 * i + j));
                /* The base sees the same bytes, transposed back. */
                cr_assert_eq(wbt_at(base, j, i), 100.0f + (float)(2 * i + j));
            }
        cr_assert_eq(wb_tensor_version(x), 1);
        cr_assert_eq(wb_tensor_version(base), 1, "one counter per storage");
        cr_assert_eq(o[0].t, y);
        cr_assert_eq(wb_tensor_refcount(v), 1, "the wrapper released v");

        /* A second call copies again and bumps again. */
        wb_tensor_release(o[0].t);
        WBT_OK(wb_call(w, a, 1, o, 1));
        cr_assert_eq(wb_tensor_version(x), 2);
        cr_assert_eq(wb_tensor_refcount(v), 1);

        wb_tensor_release(o[0].t);
        wbt_release_last(y);
        wbt_release_last(v);
        wbt_release_last(x);
        wbt_release_last(base);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, data_mutation_into_sliced_input)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("data_slice");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
        /* x is the middle 2x2 block of a 4x4 base: offset 5, strides 4, 1. */
        wb_tensor *base = wbt_f32(0, 2, 4, 4);
        wb_tensor *x = sem_view(base, 2, (int64_t[]){2, 2},
                                (int64_t[]){4, 1}, 5);
        wb_tensor *v = wbt_f32(100, 2, 2, 2);
        sem_ctx c = {.vals = {v}, .nvals = 1};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[1] = {{.t = x}};

        WBT_OK(wb_call(w, a, 1, NULL, 0));
        wbt_assert_view(x, 2, (int64_t[]){2, 2}, (int64_t[]){4, 1}, 5);
        for (int64_t i = 0; i < 16; i++) {
            float want = (float)i;
            if (i == 5) want = 100;
            if (i == 6) want = 101;
            if (i == 9) want = 102;
            if (i == 10) want = 103;
            cr_assert_eq(sem_elem(base, i), want, "storage element %d",
                         (int)i);
        }
        cr_assert_eq(wb_tensor_version(x), 1);
        cr_assert_eq(wb_tensor_refcount(v), 1);

        wbt_release_last(v);
        wbt_release_last(x);
        wbt_release_last(base);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, metadata_mutation_restrides_without_copying)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("meta");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_METADATA, 0, NULL));
        wb_tensor *x = wbt_f32(0, 2, 2, 3);
        /* The updated value lives elsewhere; only its view matters. */
        wb_tensor *vb = wbt_f32(100, 1, 8);
        wb_tensor *v = sem_view(vb, 2, (int64_t[]){2, 2},
                                (int64_t[]){1, 2}, 1);
        sem_ctx c = {.vals = {v}, .nvals = 1};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_storage *st = wb_tensor_storage(x);
        wb_arg a[1] = {{.t = x}};

        WBT_OK(wb_call(w, a, 1, NULL, 0));
        wbt_assert_view(x, 2, (int64_t[]){2, 2}, (int64_t[]){1, 2}, 1);
        cr_assert_eq(wb_tensor_storage(x), st);
        for (int64_t i = 0; i < 6; i++)
            cr_assert_eq(sem_elem(x, i), (float)i, "no data moved");
        cr_assert_eq(wbt_at(x, 1, 1), 4.0f, "x now reads element 1+1+2");
        cr_assert_eq(wb_tensor_version(x), 1,
                     "as_strided_ bumps once, as in AOTAutograd's epilogue");
        cr_assert_eq(wb_tensor_version(vb), 0);
        cr_assert_eq(wb_tensor_refcount(v), 1);

        wbt_release_last(v);
        wbt_release_last(vb);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, data_metadata_mutation_restrides_then_copies)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("data_meta");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA_METADATA, 0, NULL));
        wb_tensor *x = wbt_f32(0, 2, 2, 3);
        wb_tensor *vb = wbt_f32(100, 1, 8);
        wb_tensor *v = sem_view(vb, 2, (int64_t[]){2, 2},
                                (int64_t[]){1, 2}, 1);
        sem_ctx c = {.vals = {v}, .nvals = 1};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_storage *st = wb_tensor_storage(x);
        wb_arg a[1] = {{.t = x}};

        WBT_OK(wb_call(w, a, 1, NULL, 0));
        wbt_assert_view(x, 2, (int64_t[]){2, 2}, (int64_t[]){1, 2}, 1);
        cr_assert_eq(wb_tensor_storage(x), st);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                cr_assert_eq(wbt_at(x, i, j), wbt_at(v, i, j));
        /* Storage elements 1..4 now hold vb[1], vb[2], vb[3], vb[4]; the
           ends were not written. */
        cr_assert_eq(sem_elem(x, 0), 0.0f);
        for (int64_t i = 1; i <= 4; i++)
            cr_assert_eq(sem_elem(x, i), 100.0f + (float)i);
        cr_assert_eq(sem_elem(x, 5), 5.0f);
        cr_assert_eq(wb_tensor_version(x), 2, "as_strided_, then copy_");
        cr_assert_eq(wb_tensor_version(vb), 0, "the source is only read");
        cr_assert_eq(wb_tensor_refcount(v), 1);

        wbt_release_last(v);
        wbt_release_last(vb);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, storage_mutation_takes_storage_and_view)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("set");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_STORAGE, 0, NULL));
        wb_tensor *x = wbt_f32(0, 1, 2);
        wb_tensor *vb = wbt_f32(100, 1, 8);
        wb_tensor *v = sem_view(vb, 1, (int64_t[]){3}, (int64_t[]){2}, 1);
        sem_ctx c = {.vals = {v}, .nvals = 1};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_storage *old = wb_storage_retain(wb_tensor_storage(x));
        wb_arg a[1] = {{.t = x}};
        wb_tensor_set_requires_grad(x, true);

        WBT_OK(wb_call(w, a, 1, NULL, 0));
        cr_assert_eq(wb_tensor_storage(x), wb_tensor_storage(vb));
        wbt_assert_view(x, 1, (int64_t[]){3}, (int64_t[]){2}, 1);
        for (int k = 0; k < 3; k++)
            cr_assert_eq(wbt_at(x, k), 101.0f + (float)(2 * k));
        cr_assert(wb_tensor_requires_grad(x), "set_ keeps the flags");
        cr_assert_eq(wb_tensor_version(x), 1, "set_ bumps x's own counter");
        cr_assert_eq(wb_tensor_version(vb), 0, "and not the source's");
        cr_assert_eq(wb_tensor_version(v), 0);
        cr_assert_eq(wb_storage_refcount(old), 1, "x dropped its old storage");
        cr_assert_eq(wb_storage_version(old), 1, "x's counter stays there");
        cr_assert_eq(((const float *)wb_storage_data(old))[1], 1.0f);
        /* vb, v and x view the new storage. */
        cr_assert_eq(wb_storage_refcount(wb_tensor_storage(vb)), 3);
        cr_assert_eq(wb_tensor_refcount(v), 1);

        wb_storage_release(old);
        wbt_release_last(v);
        wbt_release_last(vb);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, resize_mutation_grows_storage_keeping_bytes)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("resize_grow");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_RESIZE, 0, NULL));
        /* x: elements 2 and 4 of a 6-float storage (offset 2, stride 2). */
        wb_tensor *base = wbt_f32(0, 1, 6);
        wb_tensor *x = sem_view(base, 1, (int64_t[]){2}, (int64_t[]){2}, 2);
        wb_tensor *v = wbt_f32(100, 2, 2, 3);
        sem_ctx c = {.vals = {v}, .nvals = 1};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_storage *st = wb_tensor_storage(x);
        wb_arg a[1] = {{.t = x}};

        WBT_OK(wb_call(w, a, 1, NULL, 0));
        /* Contiguous 2x3 at the same offset: 8 floats needed. */
        wbt_assert_view(x, 2, (int64_t[]){2, 3}, (int64_t[]){3, 1}, 2);
        cr_assert(wb_tensor_is_contiguous(x));
        cr_assert_eq(wb_tensor_storage(x), st, "the storage object stays");
        cr_assert_eq(wb_storage_nbytes(st), 8 * sizeof(float));
        cr_assert_eq(sem_elem(x, 0), 0.0f, "bytes before the view kept");
        cr_assert_eq(sem_elem(x, 1), 1.0f, "bytes before the view kept");
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                cr_assert_eq(wbt_at(x, i, j), 100.0f + (float)(3 * i + j));
        /* The base still views the grown storage. */
        cr_assert_eq(wbt_at(base, 2), 100.0f);
        cr_assert_eq(wb_tensor_version(x), 1, "resize_ bumps nothing, the "
                     "copy once");
        cr_assert_eq(wb_tensor_refcount(v), 1);

        wbt_release_last(v);
        wbt_release_last(x);
        wbt_release_last(base);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, resize_mutation_shrinks_to_contiguous)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("resize_shrink");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_RESIZE, 0, NULL));
        wb_tensor *base = wbt_f32(0, 2, 2, 3);
        wb_tensor *x = sem_view(base, 2, (int64_t[]){3, 2},
                                (int64_t[]){1, 3}, 0);
        wb_tensor *v = wbt_f32(100, 2, 2, 2);
        sem_ctx c = {.vals = {v}, .nvals = 1};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_storage *st = wb_tensor_storage(x);
        void *data = wb_storage_data(st);
        wb_arg a[1] = {{.t = x}};

        WBT_OK(wb_call(w, a, 1, NULL, 0));
        wbt_assert_view(x, 2, (int64_t[]){2, 2}, (int64_t[]){2, 1}, 0);
        cr_assert_eq(wb_storage_nbytes(st), 6 * sizeof(float));
        cr_assert_eq(wb_storage_data(st), data, "no growth, no new buffer");
        for (int64_t i = 0; i < 4; i++)
            cr_assert_eq(sem_elem(x, i), 100.0f + (float)i);
        cr_assert_eq(sem_elem(x, 4), 4.0f);
        cr_assert_eq(sem_elem(x, 5), 5.0f);
        cr_assert_eq(wb_tensor_version(x), 1, "resize_ bumps nothing");

        wbt_release_last(v);
        wbt_release_last(x);
        wbt_release_last(base);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, resize_mutation_same_sizes_keeps_strides)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("resize_same");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_RESIZE, 0, NULL));
        wb_tensor *base = wbt_f32(0, 2, 2, 3);
        wb_tensor *x = sem_view(base, 2, (int64_t[]){3, 2},
                                (int64_t[]){1, 3}, 0);
        wb_tensor *v = wbt_f32(100, 2, 3, 2);
        sem_ctx c = {.vals = {v}, .nvals = 1};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_storage *st = wb_tensor_storage(x);
        wb_arg a[1] = {{.t = x}};

        WBT_OK(wb_call(w, a, 1, NULL, 0));
        wbt_assert_view(x, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0);
        cr_assert_not(wb_tensor_is_contiguous(x));
        cr_assert_eq(wb_storage_nbytes(st), 6 * sizeof(float));
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 2; j++)
                cr_assert_eq(wbt_at(x, i, j), 100.0f + (float)(2 * i + j));
        cr_assert_eq(wb_tensor_version(x), 1);
        cr_assert_eq(wb_tensor_refcount(v), 1);

        wbt_release_last(v);
        wbt_release_last(x);
        wbt_release_last(base);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, in_graph_mutation_bumps_before_the_call)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("in_graph");
        WBT_OK(wb_spec_set_keep_input_mutations(s, true));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_IN_GRAPH, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "o", WB_OUT_NON_ALIAS, -1, false, 0,
                                  NULL));
        WBT_OK(wb_spec_validate(s));
        cr_assert_eq(wb_spec_num_updated(s), 0, "no value for in-graph");
        cr_assert_eq(wb_spec_num_values(s), 1);
        cr_assert_eq(wb_spec_direction(s, 0), WB_DIR_INOUT);
        wb_tensor *x = wbt_f32(0, 1, 4), *y = wbt_f32(0, 1, 4);
        wb_tensor *o = wbt_f32(9, 1, 1);
        sem_ctx c = {.vals = {o}, .nvals = 1, .tensor_args = 0x3};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[2] = {{.t = x}, {.t = y}};
        wb_value out[1] = {{NULL}};

        WBT_OK(wb_call(w, a, 2, out, 1));
        cr_assert_eq(c.nvalues, 1, "the graph was asked for 1 value");
        cr_assert_eq(c.versions[0], 1, "the graph sees the bump");
        cr_assert_eq(c.versions[1], 0);
        cr_assert_eq(wb_tensor_version(x), 1);
        cr_assert_eq(wb_tensor_version(y), 0);
        cr_assert_eq(out[0].t, o);
        wb_tensor_release(out[0].t);
        WBT_OK(wb_call(w, a, 2, out, 1));
        cr_assert_eq(c.versions[0], 2);
        cr_assert_eq(wb_tensor_version(x), 2);

        wb_tensor_release(out[0].t);
        wbt_release_last(o);
        wbt_release_last(x);
        wbt_release_last(y);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* The graph may move the counter of an input whose in-graph mutation is
   hidden from autograd (an eager copy_ in it would): the wrapper puts the
   counter back as it was, as torch.autograd._unsafe_preserve_version_counter
   does, also when the graph fails. */
static int sem_graph_writes(void *ctx, const wb_arg *args, int nargs,
                            wb_value *values, int nvalues)
{
    sem_ctx *c = ctx;
    wb_tensor *src = wbt_f32(9, 1, 4);
    (void)values;
    (void)nvalues;
    c->calls++;
    for (int i = 0; i < nargs; i++)
        WBT_OK(wb_tensor_copy_(args[i].t, src));
    wb_tensor_release(src);
    return c->nvals;
}

Test(semantics, in_graph_mutation_hidden_keeps_its_version)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("in_graph_keeps");
        WBT_OK(wb_spec_set_keep_input_mutations(s, true));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_IN_GRAPH, WB_INPUT_HIDDEN,
                                  NULL));
        WBT_OK(wb_spec_add_tensor(s, "z", WB_MUT_IN_GRAPH, 0, NULL));
        wb_tensor *x = wbt_f32(0, 1, 4), *z = wbt_f32(0, 1, 4);
        wb_tensor *xv = sem_view(x, 1, (int64_t[]){2}, (int64_t[]){1}, 0);
        sem_ctx c = {.nvals = 0};
        wb_wrapper *w = wbt_wrap(s, sem_graph_writes, &c, tier);
        wb_arg a[2] = {{.t = x}, {.t = z}};

        WBT_OK(wb_call(w, a, 2, NULL, 0));
        cr_assert_eq(wbt_at(x, 3), 12.0f, "the graph's write stands");
        cr_assert_eq(wb_tensor_version(x), 0, "its bump does not");
        cr_assert_eq(wb_tensor_version(xv), 0);
        cr_assert_eq(wb_tensor_version(z), 2, "bumped before, and by the "
                     "graph");
        c.nvals = -1;
        cr_assert_eq(wb_call(w, a, 2, NULL, 0), WB_ERR_GRAPH);
        cr_assert_eq(c.calls, 2);
        cr_assert_eq(wb_tensor_version(x), 0, "put back on failure too");
        cr_assert_eq(wb_tensor_version(z), 4);

        wbt_release_last(xv);
        wbt_release_last(x);
        wbt_release_last(z);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* A data mutation hidden from autograd, applied after the call (the
   mutation of a leaf that requires grad, made under no_grad or on a
   detached alias): AOTAutograd's epilogue writes it through a detached
   alias, original.detach().copy_(updated), which shares the counter and
   bumps it once, as any data mutation's copy does. */
Test(semantics, data_mutation_hidden_bumps_as_its_copy_does)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("data_hidden");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, WB_INPUT_HIDDEN,
                                  NULL));
        WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_DATA, 0, NULL));
        WBT_OK(wb_spec_declare_input(s, 0, WBT_F32, 1));
        wb_tensor *x = wbt_f32(0, 1, 4), *y = wbt_f32(0, 1, 4);
        wb_tensor *vx = wbt_f32(10, 1, 4), *vy = wbt_f32(20, 1, 4);
        sem_ctx c = {.vals = {vx, vy}, .nvals = 2};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[2] = {{.t = x}, {.t = y}};

        WBT_OK(wb_call(w, a, 2, NULL, 0));
        cr_assert_eq(wbt_at(x, 2), 12.0f);
        cr_assert_eq(wbt_at(y, 2), 22.0f);
        cr_assert_eq(wb_tensor_version(x), 1);
        cr_assert_eq(wb_tensor_version(y), 1);

        wbt_release_last(vx);
        wbt_release_last(vy);
        wbt_release_last(x);
        wbt_release_last(y);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* Under no_grad a mutation is still seen: the version moves. */
Test(semantics, data_mutation_under_no_grad_bumps)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("no_grad");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
        wb_tensor *x = wbt_f32(0, 1, 4), *v = wbt_f32(10, 1, 4);
        sem_ctx c = {.vals = {v}, .nvals = 1};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[1] = {{.t = x}};
        bool grad = wb_grad_enabled();

        wb_set_grad_enabled(false);
        WBT_OK(wb_call(w, a, 1, NULL, 0));
        wb_set_grad_enabled(grad);
        cr_assert_eq(wbt_at(x, 1), 11.0f);
        cr_assert_eq(wb_tensor_version(x), 1);

        wbt_release_last(v);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, in_graph_mutation_hidden_is_not_bumped)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("in_graph_hidden");
        WBT_OK(wb_spec_set_keep_input_mutations(s, true));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_IN_GRAPH, WB_INPUT_HIDDEN,
                                  NULL));
        WBT_OK(wb_spec_add_tensor(s, "z", WB_MUT_IN_GRAPH, 0, NULL));
        WBT_OK(wb_spec_validate(s));
        cr_assert_eq(wb_spec_num_values(s), 0);
        wb_tensor *x = wbt_f32(0, 1, 4), *z = wbt_f32(0, 1, 4);
        sem_ctx c = {.nvals = 0, .tensor_args = 0x3};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[2] = {{.t = x}, {.t = z}};

        WBT_OK(wb_call(w, a, 2, NULL, 0));
        cr_assert_eq(c.calls, 1);
        cr_assert_eq(c.versions[0], 0, "hidden from autograd: no bump");
        cr_assert_eq(c.versions[1], 1);
        cr_assert_eq(wb_tensor_version(x), 0);
        cr_assert_eq(wb_tensor_version(z), 1);

        wbt_release_last(x);
        wbt_release_last(z);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* ======================================================================= */
/* Outputs                                                                  */
/* ======================================================================= */

Test(semantics, non_alias_variants_return_the_value_itself)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("plain");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "a", WB_OUT_NON_ALIAS, -1, true, 0x2,
                                  NULL));
        WBT_OK(wb_spec_add_output(s, "b", WB_OUT_UNSAFE_VIEW_ALIAS, -1, false,
                                  0, NULL));
        WBT_OK(wb_spec_add_output(s, "c", WB_OUT_CUSTOM_FUNCTION_VIEW, -1,
                                  true, 0x1, NULL));
        wb_tensor *x = wbt_f32(0, 2, 2, 2);
        wb_tensor *va = wbt_f32(10, 1, 3), *vb = wbt_f32(20, 2, 2, 2);
        /* A custom-function view may share the input's storage; it is still
           returned as the graph made it. */
        wb_tensor *vc = sem_view(x, 1, (int64_t[]){2}, (int64_t[]){2}, 1);
        wb_tensor_set_dynamic_dims(va, 0x1);
        wb_tensor_set_requires_grad(vb, true);
        wb_tensor_set_dynamic_dims(vb, 0x8);
        sem_ctx c = {.vals = {va, vb, vc}, .nvals = 3};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[1] = {{.t = x}};
        wb_value o[3] = {{NULL}, {NULL}, {NULL}};

        WBT_OK(wb_call(w, a, 1, o, 3));
        cr_assert_eq(o[0].t, va);
        cr_assert_eq(o[1].t, vb);
        cr_assert_eq(o[2].t, vc);
        for (int k = 0; k < 3; k++)
            cr_assert_eq(wb_tensor_refcount(o[k].t), 2, "output %d", k);
        cr_assert(wb_tensor_requires_grad(va), "requires_grad set");
        cr_assert_not(wb_tensor_requires_grad(vb), "requires_grad cleared");
        cr_assert(wb_tensor_requires_grad(vc));
        cr_assert_eq(wb_tensor_dynamic_dims(va), 0x3, "dims or-ed in");
        cr_assert_eq(wb_tensor_dynamic_dims(vb), 0x8, "dims kept");
        cr_assert_eq(wb_tensor_dynamic_dims(vc), 0x1);
        wbt_assert_view(vc, 1, (int64_t[]){2}, (int64_t[]){2}, 1);
        cr_assert_eq(wb_tensor_storage(vc), wb_tensor_storage(x));
        cr_assert_eq(wbt_at(va, 2), 12.0f);
        cr_assert_not(wb_tensor_requires_grad(x), "x untouched");
        cr_assert_eq(wb_tensor_dynamic_dims(x), 0);

        for (int k = 0; k < 3; k++)
            wb_tensor_release(o[k].t);
        wbt_release_last(va);
        wbt_release_last(vb);
        wbt_release_last(vc);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, is_input_returns_the_same_object)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("is_input");
        WBT_OK(wb_spec_add_tensor(s, "a", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "ox", WB_OUT_IS_INPUT, 1, false, 0x4,
                                  NULL));
        WBT_OK(wb_spec_add_output(s, "oa", WB_OUT_IS_INPUT, 0, false, 0,
                                  NULL));
        wb_tensor *ta = wbt_f32(0, 1, 2), *x = wbt_f32(0, 1, 3);
        wb_tensor *xu = wbt_f32(30, 1, 3);
        /* What the graph returns for is-input outputs is dropped. */
        wb_tensor *g0 = wbt_f32(-1, 1, 3), *g1 = wbt_f32(-2, 1, 2);
        wb_tensor_set_requires_grad(x, true);
        wb_tensor_set_dynamic_dims(x, 0x1);
        sem_ctx c = {.vals = {xu, g0, g1}, .nvals = 3};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[2] = {{.t = ta}, {.t = x}};
        wb_value o[2] = {{NULL}, {NULL}};

        WBT_OK(wb_call(w, a, 2, o, 2));
        cr_assert_eq(o[0].t, x, "the very same object");
        cr_assert_eq(o[1].t, ta);
        cr_assert_eq(wb_tensor_refcount(x), 2, "one more reference");
        cr_assert_eq(wb_tensor_refcount(ta), 2);
        cr_assert_eq(wbt_at(o[0].t, 2), 32.0f, "after its mutation");
        cr_assert(wb_tensor_requires_grad(x), "requires_grad left alone");
        cr_assert_not(wb_tensor_requires_grad(ta));
        cr_assert_eq(wb_tensor_dynamic_dims(x), 0x5, "dims or-ed in");
        cr_assert_eq(wb_tensor_dynamic_dims(ta), 0);
        cr_assert_eq(wb_tensor_refcount(g0), 1, "graph value dropped");
        cr_assert_eq(wb_tensor_refcount(g1), 1, "graph value dropped");
        cr_assert_eq(wb_tensor_refcount(xu), 1);

        wb_tensor_release(o[0].t);
        wb_tensor_release(o[1].t);
        wbt_release_last(g0);
        wbt_release_last(g1);
        wbt_release_last(xu);
        wbt_release_last(ta);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, alias_of_input_is_a_new_view_of_its_storage)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("alias_in");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "blk", WB_OUT_ALIAS_OF_INPUT, 0, true,
                                  0x3, NULL));
        WBT_OK(wb_spec_add_output(s, "raw", WB_OUT_ALIAS_OF_INPUT, 0, false,
                                  0, NULL));
        wb_tensor *x = wbt_f32(0, 2, 4, 4);
        /* The graph's values live in storages of their own; the wrapper
           keeps only their dtype and view. */
        wb_tensor *gb = wbt_f32(500, 1, 16);
        wb_tensor *g0 = sem_view(gb, 2, (int64_t[]){2, 2},
                                 (int64_t[]){1, 4}, 5);
        wb_tensor *u8 = NULL;
        WBT_OK(wb_tensor_new(WBT_U8, WBT_CPU, 1, (int64_t[]){16}, &u8));
        wb_tensor *g1 = sem_view(u8, 1, (int64_t[]){4}, (int64_t[]){1}, 4);
        wb_tensor_set_dynamic_dims(g0, 0x4);
        wb_tensor_set_requires_grad(g1, true);
        sem_ctx c = {.vals = {g0, g1}, .nvals = 2};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[1] = {{.t = x}};
        wb_value o[2] = {{NULL}, {NULL}};

        WBT_OK(wb_call(w, a, 1, o, 2));
        cr_assert(o[0].t != x && o[0].t != g0, "a new tensor object");
        cr_assert_eq(wb_tensor_storage(o[0].t), wb_tensor_storage(x));
        wbt_assert_view(o[0].t, 2, (int64_t[]){2, 2}, (int64_t[]){1, 4}, 5);
        cr_assert(wb_tensor_dtype(o[0].t).code == kDLFloat &&
                  wb_tensor_dtype(o[0].t).bits == 32);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                cr_assert_eq(wbt_at(o[0].t, i, j), (float)(5 + i + 4 * j));
        cr_assert(wb_tensor_requires_grad(o[0].t));
        cr_assert_eq(wb_tensor_dynamic_dims(o[0].t), 0x3);
        cr_assert_eq(wb_tensor_refcount(o[0].t), 1);

        /* The second view takes the graph value's dtype: bytes 4..7 of x,
           which hold the float 1.0f. */
        cr_assert(o[1].t != x && o[1].t != g1);
        cr_assert_eq(wb_tensor_storage(o[1].t), wb_tensor_storage(x));
        cr_assert(wb_tensor_dtype(o[1].t).code == kDLUInt &&
                  wb_tensor_dtype(o[1].t).bits == 8);
        wbt_assert_view(o[1].t, 1, (int64_t[]){4}, (int64_t[]){1}, 4);
        float one = 1.0f;
        cr_assert(memcmp(wb_tensor_data(o[1].t), &one, 4) == 0);
        cr_assert_not(wb_tensor_requires_grad(o[1].t), "cleared on the view");
        cr_assert_eq(wb_tensor_dynamic_dims(o[1].t), 0);

        cr_assert_eq(wb_tensor_refcount(g0), 1, "graph values released");
        cr_assert_eq(wb_tensor_refcount(g1), 1);
        cr_assert_eq(wb_storage_refcount(wb_tensor_storage(x)), 3);
        cr_assert_eq(wb_tensor_refcount(x), 1);

        /* One storage, one version counter: writing the view bumps x. */
        wb_tensor *src = wbt_f32(-1, 2, 2, 2);
        WBT_OK(wb_tensor_copy_(o[0].t, src));
        cr_assert_eq(wb_tensor_version(x), 1);
        cr_assert_eq(wb_tensor_version(o[1].t), 1);
        cr_assert_eq(wbt_at(x, 1, 1), -1.0f);
        cr_assert_eq(wbt_at(x, 1, 2), 1.0f);
        cr_assert_eq(wb_tensor_version(gb), 0);

        wbt_release_last(src);
        wbt_release_last(o[0].t);
        wbt_release_last(o[1].t);
        wbt_release_last(g0);
        wbt_release_last(g1);
        wbt_release_last(gb);
        wbt_release_last(u8);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* A view output shares its input's version counter, as a view made by
   gen_alias_from_base does, whatever counter the graph's value had: one
   made on the input's storage as a tensor of its own (its own counter) is
   not handed out as the view, even with its only reference. */
Test(semantics, alias_of_input_shares_the_input_counter)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("alias_counter");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "a", WB_OUT_ALIAS_OF_INPUT, 0, false,
                                  0, NULL));
        WBT_OK(wb_spec_add_output(s, "b", WB_OUT_NON_ALIAS, -1, false, 0,
                                  NULL));
        wb_tensor *x = wbt_f32(0, 1, 8), *g = NULL;
        wb_tensor *ones = wbt_f32(1, 1, 4), *two = wbt_f32(2, 1, 2);
        WBT_OK(wb_tensor_from_storage(wb_tensor_storage(x), WBT_F32, 1,
                                      (int64_t[]){4}, NULL, 2, &g));
        WBT_OK(wb_tensor_copy_(g, ones));
        cr_assert_eq(wb_tensor_version(g), 1);
        cr_assert_eq(wb_tensor_version(x), 0, "g has a counter of its own");
        wb_tensor *nb = wbt_f32(5, 1, 4);
        /* The graph hands over the test's references to g and nb. */
        sem_ctx c = {.vals = {g, nb}, .nvals = 2, .hand_over = 0x3};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[1] = {{.t = x}};
        wb_value o[2] = {{NULL}, {NULL}};

        WBT_OK(wb_call(w, a, 1, o, 2));
        cr_assert_eq(wb_tensor_storage(o[0].t), wb_tensor_storage(x));
        wbt_assert_view(o[0].t, 1, (int64_t[]){4}, (int64_t[]){1}, 2);
        cr_assert_eq(wb_tensor_version(o[0].t), 0, "x's counter, not g's");
        cr_assert_eq(o[1].t, nb);
        WBT_OK(wb_tensor_copy_(o[0].t, ones));
        cr_assert_eq(wb_tensor_version(x), 1);
        cr_assert_eq(wb_tensor_version(o[0].t), 1);
        wb_tensor *xs = sem_view(x, 1, (int64_t[]){2}, (int64_t[]){1}, 0);
        WBT_OK(wb_tensor_copy_(xs, two));
        cr_assert_eq(wb_tensor_version(o[0].t), 2, "any view of x moves it");
        cr_assert_eq(wb_tensor_version(o[1].t), 0, "the non-alias output "
                     "has a counter of its own");

        wbt_release_last(xs);
        wbt_release_last(o[0].t);
        wbt_release_last(o[1].t);
        wbt_release_last(ones);
        wbt_release_last(two);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* A graph that hands over its only reference to a value that already lies
   on the base's storage gives the wrapper that very tensor as the view, with
   the spec's flags; a value it keeps a reference to, or one on a storage of
   its own, gets a new view. */
Test(semantics, alias_of_input_handed_over_is_the_view_itself)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("alias_own");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "own", WB_OUT_ALIAS_OF_INPUT, 0, true,
                                  0x2, NULL));
        WBT_OK(wb_spec_add_output(s, "cleared", WB_OUT_ALIAS_OF_INPUT, 0,
                                  false, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "kept", WB_OUT_ALIAS_OF_INPUT, 0, false,
                                  0, NULL));
        WBT_OK(wb_spec_add_output(s, "elsewhere", WB_OUT_ALIAS_OF_INPUT, 0,
                                  false, 0, NULL));
        wb_tensor *x = wbt_f32(0, 2, 4, 4);
        wb_storage *xs = wb_tensor_storage(x);
        wb_tensor *g0 = sem_view(x, 2, (int64_t[]){2, 2}, (int64_t[]){1, 4},
                                 5);
        wb_tensor *g1 = sem_view(x, 1, (int64_t[]){4}, (int64_t[]){4}, 1);
        wb_tensor *g2 = sem_view(x, 1, (int64_t[]){3}, (int64_t[]){1}, 12);
        wb_tensor *sc = wbt_f32(100, 1, 8);
        wb_storage *scs = wb_storage_retain(wb_tensor_storage(sc));
        wb_tensor *g3 = sem_view(sc, 1, (int64_t[]){2}, (int64_t[]){1}, 6);
        wbt_release_last(sc);
        wb_tensor_set_dynamic_dims(g0, 0x4);
        wb_tensor_set_requires_grad(g1, true);
        /* g0, g1 and g3 go to the wrapper; the test keeps g2. */
        sem_ctx c = {.vals = {g0, g1, g2, g3}, .nvals = 4,
                     .hand_over = 0xb};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[1] = {{.t = x}};
        wb_value o[4] = {{NULL}, {NULL}, {NULL}, {NULL}};
        cr_assert_eq(wb_storage_refcount(xs), 4, "x, g0, g1 and g2");

        WBT_OK(wb_call(w, a, 1, o, 4));
        cr_assert_eq(o[0].t, g0, "the graph's own tensor, as the view");
        wbt_assert_view(o[0].t, 2, (int64_t[]){2, 2}, (int64_t[]){1, 4}, 5);
        cr_assert(wb_tensor_requires_grad(o[0].t));
        cr_assert_eq(wb_tensor_dynamic_dims(o[0].t), 0x2, "the spec's dims");
        cr_assert_eq(wb_tensor_refcount(o[0].t), 1);
        cr_assert_eq(o[1].t, g1);
        cr_assert_not(wb_tensor_requires_grad(o[1].t), "cleared");
        cr_assert_eq(wb_tensor_dynamic_dims(o[1].t), 0);
        cr_assert(o[2].t != g2, "a value the graph keeps is not given away");
        cr_assert_eq(wb_tensor_storage(o[2].t), xs);
        wbt_assert_view(o[2].t, 1, (int64_t[]){3}, (int64_t[]){1}, 12);
        cr_assert_eq(wb_tensor_refcount(g2), 1, "its reference dropped");
        cr_assert_eq(wb_tensor_storage(o[3].t), xs, "a new view of x");
        wbt_assert_view(o[3].t, 1, (int64_t[]){2}, (int64_t[]){1}, 6);
        cr_assert_eq(wbt_at(o[3].t, 1), 7.0f, "x's bytes, not the scratch's");
        cr_assert_eq(wb_storage_refcount(scs), 1, "g3 freed");
        cr_assert_eq(wb_storage_refcount(xs), 6, "x, g2 and four views");

        for (int k = 0; k < 4; k++)
            wbt_release_last(o[k].t);
        wbt_release_last(g2);
        cr_assert_eq(wb_storage_refcount(xs), 1);
        wb_storage_release(scs);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* The same in a run of views (three of consecutive inputs, one call of the
   runtime's loop under libtcc), with and without flags (the run helper for
   plain outputs takes none). */
static void sem_alias_run(wb_tier tier, bool plain)
{
    wb_spec *s = sem_spec("alias_run");
    wb_tensor *x[3], *g[3];
    for (int i = 0; i < 3; i++) {
        char name[4] = {'x', (char)('0' + i), 0};
        WBT_OK(wb_spec_add_tensor(s, name, WB_MUT_NONE, 0, NULL));
        name[0] = 'v';
        WBT_OK(wb_spec_add_output(s, name, WB_OUT_ALIAS_OF_INPUT, i,
                                  !plain, plain ? 0 : 0x1, NULL));
        x[i] = wbt_f32((float)(10 * i), 1, 4);
    }
    /* Handed over on x0's storage; kept on x1's; handed over on x1's
       storage for x2. */
    g[0] = sem_view(x[0], 1, (int64_t[]){2}, (int64_t[]){2}, 0);
    g[1] = sem_view(x[1], 1, (int64_t[]){2}, (int64_t[]){1}, 2);
    g[2] = sem_view(x[1], 1, (int64_t[]){3}, (int64_t[]){1}, 1);
    wb_tensor_set_requires_grad(g[0], true);
    sem_ctx c = {.vals = {g[0], g[1], g[2]}, .nvals = 3,
                 .hand_over = 0x5};
    wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
    if (tier == WB_TIER_TCC)
        cr_assert(strstr(wb_wrapper_source(w),
                         plain ? "wb_rt_commit_views_plain("
                               : "wb_rt_commit_views("),
                  "the views are a run under libtcc");
    wb_arg a[3] = {{.t = x[0]}, {.t = x[1]}, {.t = x[2]}};
    wb_value o[3] = {{NULL}, {NULL}, {NULL}};

    WBT_OK(wb_call(w, a, 3, o, 3));
    cr_assert_eq(o[0].t, g[0]);
    cr_assert(o[1].t != g[1]);
    cr_assert(o[2].t != g[2], "its value lies on another input's storage");
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(wb_tensor_storage(o[i].t), wb_tensor_storage(x[i]));
        cr_assert_eq(wb_tensor_requires_grad(o[i].t), !plain);
        cr_assert_eq(wb_tensor_dynamic_dims(o[i].t), plain ? 0 : 0x1);
        cr_assert_eq(wb_tensor_refcount(o[i].t), 1);
    }
    cr_assert_eq(wbt_at(o[0].t, 1), 2.0f);
    cr_assert_eq(wbt_at(o[2].t, 2), 23.0f);
    cr_assert_eq(wb_storage_refcount(wb_tensor_storage(x[1])), 3,
                 "x1, g1 and o1: g2 freed");

    for (int i = 0; i < 3; i++)
        wbt_release_last(o[i].t);
    wbt_release_last(g[1]);
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(wb_storage_refcount(wb_tensor_storage(x[i])), 1);
        wbt_release_last(x[i]);
    }
    wb_wrapper_free(w);
    wb_spec_free(s);
}

Test(semantics, alias_of_input_run_hands_over_the_same)
{
    WBT_EACH_TIER(tier) {
        sem_alias_run(tier, false);
        sem_alias_run(tier, true);
    }
}

Test(semantics, alias_of_input_after_storage_mutation_uses_new_storage)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("alias_set");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_STORAGE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "tail", WB_OUT_ALIAS_OF_INPUT, 0, false,
                                  0, NULL));
        /* x's own storage holds 2 floats; the view needs 8. */
        wb_tensor *x = wbt_f32(0, 1, 2);
        wb_tensor *nb = wbt_f32(100, 1, 8);
        wb_tensor *g = sem_view(nb, 1, (int64_t[]){4}, (int64_t[]){1}, 4);
        sem_ctx c = {.vals = {nb, g}, .nvals = 2};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_storage *old = wb_storage_retain(wb_tensor_storage(x));
        wb_arg a[1] = {{.t = x}};
        wb_value o[1] = {{NULL}};

        WBT_OK(wb_call(w, a, 1, o, 1));
        cr_assert_eq(wb_tensor_storage(x), wb_tensor_storage(nb));
        cr_assert_eq(wb_tensor_storage(o[0].t), wb_tensor_storage(nb));
        cr_assert(o[0].t != g);
        wbt_assert_view(x, 1, (int64_t[]){8}, (int64_t[]){1}, 0);
        wbt_assert_view(o[0].t, 1, (int64_t[]){4}, (int64_t[]){1}, 4);
        for (int k = 0; k < 4; k++)
            cr_assert_eq(wbt_at(o[0].t, k), 104.0f + (float)k);
        cr_assert_eq(wb_storage_refcount(old), 1);
        cr_assert_eq(wb_tensor_refcount(nb), 1);
        cr_assert_eq(wb_tensor_refcount(g), 1);
        /* The view is of x, so it shares the counter x's set_ kept, not
           that of the tensor whose storage x took. */
        cr_assert_eq(wb_tensor_version(x), 1);
        cr_assert_eq(wb_tensor_version(o[0].t), 1);
        cr_assert_eq(wb_tensor_version(nb), 0);
        wb_tensor *src = wbt_f32(-1, 1, 4);
        WBT_OK(wb_tensor_copy_(o[0].t, src));
        cr_assert_eq(wb_tensor_version(x), 2);
        cr_assert_eq(wb_tensor_version(nb), 0);
        wbt_release_last(src);

        wb_storage_release(old);
        wbt_release_last(o[0].t);
        wbt_release_last(g);
        wbt_release_last(nb);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, alias_of_input_after_resize_growth_fits_grown_storage)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("alias_resize");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_RESIZE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "tail", WB_OUT_ALIAS_OF_INPUT, 0, false,
                                  0, NULL));
        wb_tensor *x = wbt_f32(0, 1, 2);
        wb_tensor *v = wbt_f32(100, 1, 8);
        wb_tensor *g = sem_view(v, 1, (int64_t[]){4}, (int64_t[]){1}, 4);
        sem_ctx c = {.vals = {v, g}, .nvals = 2};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_storage *st = wb_tensor_storage(x);
        wb_arg a[1] = {{.t = x}};
        wb_value o[1] = {{NULL}};

        WBT_OK(wb_call(w, a, 1, o, 1));
        cr_assert_eq(wb_tensor_storage(x), st);
        cr_assert_eq(wb_storage_nbytes(st), 8 * sizeof(float));
        wbt_assert_view(x, 1, (int64_t[]){8}, (int64_t[]){1}, 0);
        cr_assert_eq(wb_tensor_storage(o[0].t), st);
        wbt_assert_view(o[0].t, 1, (int64_t[]){4}, (int64_t[]){1}, 4);
        for (int k = 0; k < 4; k++)
            cr_assert_eq(wbt_at(o[0].t, k), 104.0f + (float)k);
        cr_assert_eq(wb_tensor_version(x), 1);
        cr_assert_eq(wb_tensor_version(o[0].t), 1, "the view shares x's counter");
        cr_assert_eq(wb_tensor_refcount(v), 1);
        cr_assert_eq(wb_tensor_refcount(g), 1);

        wbt_release_last(o[0].t);
        wbt_release_last(g);
        wbt_release_last(v);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, alias_of_intermediate_views_a_dropped_base)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("alias_mid");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_set_intermediate_bases(s, 2));
        WBT_OK(wb_spec_add_output(s, "p", WB_OUT_ALIAS_OF_INTERMEDIATE, 1,
                                  true, 0x1, NULL));
        WBT_OK(wb_spec_add_output(s, "q",
                                  WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT,
                                  0, false, 0x2, NULL));
        WBT_OK(wb_spec_validate(s));
        cr_assert_eq(wb_spec_num_values(s), 4);
        wb_tensor *x = wbt_f32(0, 1, 2);
        wb_tensor *b0 = wbt_f32(10, 1, 6), *b1 = wbt_f32(20, 2, 3, 3);
        /* The graph's view values sit in scratch storages. */
        wb_tensor *s0 = wbt_f32(0, 1, 9), *s1 = wbt_f32(0, 1, 9);
        wb_tensor *gp = sem_view(s1, 1, (int64_t[]){3}, (int64_t[]){3}, 2);
        wb_tensor *gq = sem_view(s0, 2, (int64_t[]){2, 2},
                                 (int64_t[]){1, 2}, 1);
        sem_ctx c = {.vals = {gp, gq, b0, b1}, .nvals = 4};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[1] = {{.t = x}};
        static char sentinel;
        wb_tensor *mark = (wb_tensor *)(void *)&sentinel;
        wb_value o[4] = {{NULL}, {NULL}, {mark}, {mark}};

        WBT_OK(wb_call(w, a, 1, o, 4));
        cr_assert_eq(o[2].t, mark, "the bases are not returned");
        cr_assert_eq(o[3].t, mark, "the bases are not returned");
        cr_assert_eq(wb_tensor_storage(o[0].t), wb_tensor_storage(b1));
        wbt_assert_view(o[0].t, 1, (int64_t[]){3}, (int64_t[]){3}, 2);
        for (int k = 0; k < 3; k++)
            cr_assert_eq(wbt_at(o[0].t, k), 22.0f + (float)(3 * k));
        cr_assert(wb_tensor_requires_grad(o[0].t));
        cr_assert_eq(wb_tensor_dynamic_dims(o[0].t), 0x1);
        cr_assert_eq(wb_tensor_storage(o[1].t), wb_tensor_storage(b0));
        wbt_assert_view(o[1].t, 2, (int64_t[]){2, 2}, (int64_t[]){1, 2}, 1);
        cr_assert_eq(wbt_at(o[1].t, 1, 1), 14.0f);
        cr_assert_not(wb_tensor_requires_grad(o[1].t));
        cr_assert_eq(wb_tensor_dynamic_dims(o[1].t), 0x2);
        cr_assert(o[0].t != b1 && o[1].t != b0);
        /* Every graph value was released: the bases' references dropped. */
        cr_assert_eq(wb_tensor_refcount(b0), 1);
        cr_assert_eq(wb_tensor_refcount(b1), 1);
        cr_assert_eq(wb_tensor_refcount(gp), 1);
        cr_assert_eq(wb_tensor_refcount(gq), 1);
        cr_assert_eq(wb_storage_refcount(wb_tensor_storage(b1)), 2);

        /* The views keep the bases' storages alive after the bases go. */
        wbt_release_last(b0);
        wbt_release_last(b1);
        cr_assert_eq(wbt_at(o[0].t, 2), 28.0f);
        cr_assert_eq(wbt_at(o[1].t, 0, 1), 13.0f);

        wbt_release_last(o[0].t);
        wbt_release_last(o[1].t);
        wbt_release_last(gp);
        wbt_release_last(gq);
        wbt_release_last(s0);
        wbt_release_last(s1);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, alias_of_intermediate_base_is_user_output)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("alias_out");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        /* The view before its base and one after it. */
        WBT_OK(wb_spec_add_output(s, "head",
                                  WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT,
                                  1, true, 0x1, NULL));
        WBT_OK(wb_spec_add_output(s, "base", WB_OUT_NON_ALIAS, -1, false, 0,
                                  NULL));
        WBT_OK(wb_spec_add_output(s, "tail",
                                  WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT,
                                  1, false, 0, NULL));
        wb_tensor *x = wbt_f32(0, 1, 2);
        wb_tensor *base = wbt_f32(40, 1, 8);
        wb_tensor *sc = wbt_f32(0, 1, 8);
        wb_tensor *gh = sem_view(sc, 1, (int64_t[]){2}, (int64_t[]){1}, 0);
        wb_tensor *gt = sem_view(sc, 1, (int64_t[]){3}, (int64_t[]){2}, 3);
        wb_tensor_set_requires_grad(base, true);
        sem_ctx c = {.vals = {gh, base, gt}, .nvals = 3};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[1] = {{.t = x}};
        wb_value o[3] = {{NULL}, {NULL}, {NULL}};

        WBT_OK(wb_call(w, a, 1, o, 3));
        cr_assert_eq(o[1].t, base);
        cr_assert_not(wb_tensor_requires_grad(base), "cleared by the spec");
        cr_assert_eq(wb_tensor_storage(o[0].t), wb_tensor_storage(base));
        cr_assert_eq(wb_tensor_storage(o[2].t), wb_tensor_storage(base));
        wbt_assert_view(o[0].t, 1, (int64_t[]){2}, (int64_t[]){1}, 0);
        wbt_assert_view(o[2].t, 1, (int64_t[]){3}, (int64_t[]){2}, 3);
        cr_assert_eq(wbt_at(o[0].t, 1), 41.0f);
        cr_assert_eq(wbt_at(o[2].t, 2), 47.0f);
        cr_assert(wb_tensor_requires_grad(o[0].t));
        cr_assert_eq(wb_tensor_dynamic_dims(o[0].t), 0x1);
        cr_assert_not(wb_tensor_requires_grad(o[2].t));
        cr_assert_eq(wb_tensor_refcount(base), 2, "the test and outs[1]");
        cr_assert_eq(wb_tensor_refcount(gh), 1);
        cr_assert_eq(wb_tensor_refcount(gt), 1);
        cr_assert_eq(wb_storage_refcount(wb_tensor_storage(base)), 3);

        wbt_release_last(o[0].t);
        wbt_release_last(o[2].t);
        wb_tensor_release(o[1].t);
        wbt_release_last(base);
        wbt_release_last(gh);
        wbt_release_last(gt);
        wbt_release_last(sc);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* ======================================================================= */
/* Training, inference, hooks, guards, grad mode                            */
/* ======================================================================= */

/* In training the write-back of data is original.copy_(updated) in the
   caller's grad mode: with grad on, an input whose data is written back
   from a value that requires grad requires grad afterwards (x by data, y
   by data and metadata); not one whose value does not (z), nor a view
   changed alone (w: as_strided_), nor any with grad off or in inference,
   whose values come from a graph run without grad. */
Test(semantics, training_write_back_takes_requires_grad_from_the_value)
{
    WBT_EACH_TIER(tier) {
        for (int k = 0; k < 4; k++) {
            bool training = k & 1, grad = k & 2;
            wb_spec *s = sem_spec("grad_writes");
            WBT_OK(wb_spec_set_training(s, training));
            WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
            WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_DATA_METADATA, 0, NULL));
            WBT_OK(wb_spec_add_tensor(s, "z", WB_MUT_DATA, 0, NULL));
            WBT_OK(wb_spec_add_tensor(s, "w", WB_MUT_METADATA, 0, NULL));
            wb_tensor *in[4], *v[4];
            for (int i = 0; i < 4; i++)
                in[i] = wbt_f32(0, 1, 4);
            v[0] = wbt_f32(10, 1, 4);
            v[1] = wbt_f32(20, 1, 4);
            v[2] = wbt_f32(30, 1, 4);
            WBT_OK(wb_tensor_as_strided(in[3], 1, (int64_t[]){2}, NULL, 1,
                                        &v[3]));
            for (int i = 0; i < 4; i++)
                wb_tensor_set_requires_grad(v[i], i != 2);
            sem_ctx c = {.vals = {v[0], v[1], v[2], v[3]}, .nvals = 4};
            wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
            wb_arg a[4] = {{.t = in[0]}, {.t = in[1]}, {.t = in[2]},
                           {.t = in[3]}};
            wb_set_grad_enabled(grad);
            WBT_OK(wb_call(w, a, 4, NULL, 0));
            wb_set_grad_enabled(true);
            bool took = training && grad;
            cr_assert_eq(wb_tensor_requires_grad(in[0]), took, "%s k=%d x",
                         wb_tier_name(tier), k);
            cr_assert_eq(wb_tensor_requires_grad(in[1]), took, "%s k=%d y",
                         wb_tier_name(tier), k);
            cr_assert_not(wb_tensor_requires_grad(in[2]), "z");
            cr_assert_not(wb_tensor_requires_grad(in[3]), "w");
            cr_assert_eq(wbt_at(in[0], 3), 13.0f);
            cr_assert_eq(wb_tensor_version(in[1]), 2);
            wb_wrapper_free(w);
            for (int i = 3; i >= 0; i--)
                wbt_release_last(v[i]);
            for (int i = 0; i < 4; i++)
                wbt_release_last(in[i]);
            wb_spec_free(s);
        }
    }
}

Test(semantics, training_detaches_and_enables_grad)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("train");
        WBT_OK(wb_spec_set_training(s, true));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, WB_INPUT_DETACH, NULL));
        WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "o", WB_OUT_NON_ALIAS, -1, true, 0,
                                  NULL));
        wb_tensor *base = wbt_f32(0, 2, 3, 3);
        wb_tensor *x = sem_view(base, 2, (int64_t[]){2, 2},
                                (int64_t[]){1, 3}, 4);
        wb_tensor *y = wbt_f32(0, 1, 2), *o = wbt_f32(0, 1, 1);
        wb_tensor_set_requires_grad(x, true);
        wb_tensor_set_requires_grad(y, true);
        wb_tensor_set_dynamic_dims(x, 0x2);
        sem_ctx c = {.vals = {o}, .nvals = 1, .tensor_args = 0x3,
                     .keep_args = true};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[2] = {{.t = x}, {.t = y}};
        wb_value out[1] = {{NULL}};

        for (int before = 0; before < 2; before++) {
            wb_set_grad_enabled(before);
            WBT_OK(wb_call(w, a, 2, out, 1));
            cr_assert(c.grad, "grad mode on during a training call");
            cr_assert_eq(wb_grad_enabled(), (bool)before, "restored after");
            wb_tensor *d = c.kept[0];
            cr_assert(d != x, "a detached tensor object reaches the graph");
            cr_assert_eq(wb_tensor_storage(d), wb_tensor_storage(x));
            wbt_assert_view(d, 2, (int64_t[]){2, 2}, (int64_t[]){1, 3}, 4);
            cr_assert_not(c.requires_grad[0], "detached: requires_grad off");
            cr_assert_eq(wb_tensor_refcount(d), 1, "the wrapper released it");
            cr_assert_eq(c.kept[1], y, "a plain input passes as is");
            cr_assert(c.requires_grad[1]);
            cr_assert(wb_tensor_requires_grad(x), "the caller's x untouched");
            cr_assert_eq(wb_tensor_dynamic_dims(x), 0x2);
            cr_assert_eq(wb_tensor_refcount(x), 1);
            wbt_assert_view(x, 2, (int64_t[]){2, 2}, (int64_t[]){1, 3}, 4);
            cr_assert_eq(out[0].t, o);
            wb_tensor_release(out[0].t);
        }
        sem_ctx_drop(&c);
        wb_set_grad_enabled(true);

        wbt_release_last(o);
        wbt_release_last(x);
        wbt_release_last(y);
        wbt_release_last(base);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* A graph that turns grad mode on, as a graph may. */
static int sem_graph_grad_on(void *ctx, const wb_arg *args, int nargs,
                             wb_value *values, int nvalues)
{
    wb_set_grad_enabled(true);
    return sem_graph(ctx, args, nargs, values, nvalues);
}

static int sem_hook_ok(void *ud)
{
    (void)ud;
    return 0;
}

/* AOTAutograd's runtime wrapper turns grad mode off around an inference
   call only when it is on, and then back on: called with it off, the
   wrapper touches nothing, and a mode the graph set stays, on the call's
   own path and on the one with a hook around the graph alike. */
Test(semantics, inference_with_grad_off_keeps_the_graph_s_grad_mode)
{
    WBT_EACH_TIER(tier) {
        for (int hooked = 0; hooked < 2; hooked++) {
            wb_spec *s = sem_spec("grad_on");
            WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
            if (hooked)
                WBT_OK(wb_spec_set_before_call(s, sem_hook_ok, NULL));
            wb_tensor *x = wbt_f32(0, 1, 2);
            sem_ctx c = {.nvals = 0, .tensor_args = 0x1};
            wb_wrapper *w = wbt_wrap(s, sem_graph_grad_on, &c, tier);
            wb_arg a[1] = {{.t = x}};

            wb_set_grad_enabled(false);
            WBT_OK(wb_call(w, a, 1, NULL, 0));
            cr_assert(wb_grad_enabled(), "the graph's mode was undone");
            wb_set_grad_enabled(true);
            WBT_OK(wb_call(w, a, 1, NULL, 0));
            cr_assert(wb_grad_enabled());

            wbt_release_last(x);
            wb_wrapper_free(w);
            wb_spec_free(s);
        }
    }
}

Test(semantics, inference_disables_grad_during_the_call)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("infer");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        wb_tensor *x = wbt_f32(0, 1, 2);
        wb_tensor_set_requires_grad(x, true);
        sem_ctx c = {.nvals = 0, .tensor_args = 0x1};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[1] = {{.t = x}};

        for (int before = 1; before >= 0; before--) {
            wb_set_grad_enabled(before);
            c.grad = true;
            WBT_OK(wb_call(w, a, 1, NULL, 0));
            cr_assert_not(c.grad, "grad mode off during an inference call");
            cr_assert_eq(wb_grad_enabled(), (bool)before, "restored after");
            cr_assert_eq(c.args[0].t, x, "no detach in inference");
            cr_assert(c.requires_grad[0]);
        }
        cr_assert_eq(c.calls, 2);
        wb_set_grad_enabled(true);

        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, hooks_and_guards_run_in_order)
{
    WBT_EACH_TIER(tier) {
        sem_log log = {{0}, 0};
        sem_hook first = {&log, 'f', 0, false};
        sem_hook before = {&log, 'b', 0, true};
        sem_guard g[3] = {{&log, '0', 'A'}, {&log, '1', 'B'},
                          {&log, '2', 'C'}};
        wb_spec *s = sem_spec("hooks");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_set_first_call(s, sem_hook_fn, &first));
        WBT_OK(wb_spec_set_before_call(s, sem_hook_fn, &before));
        for (int i = 0; i < 3; i++)
            WBT_OK(wb_spec_add_guard(s, sem_guard_enter, sem_guard_leave,
                                     &g[i]));
        wb_tensor *x = wbt_f32(0, 1, 2);
        sem_ctx c = {.nvals = 0, .log = &log};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[1] = {{.t = x}};

        wb_set_grad_enabled(true);
        for (int k = 0; k < 3; k++)
            WBT_OK(wb_call(w, a, 1, NULL, 0));
        cr_assert_str_eq(log.s, "f012bgCBA012bgCBA012bgCBA");
        cr_assert_eq(first.count, 1);
        cr_assert_eq(before.count, 3);
        cr_assert_not(before.grad, "the hook runs in the call's grad mode");
        cr_assert(first.grad, "the first-call hook runs before the switch");
        cr_assert_eq(c.calls, 3);

        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, first_call_hook_runs_once)
{
    WBT_EACH_TIER(tier) {
        sem_hook first = {NULL, 'f', 0, false};
        wb_spec *s = sem_spec("once");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_set_first_call(s, sem_hook_fn, &first));
        wb_tensor *x = wbt_f32(0, 1, 2);
        sem_ctx c = {.nvals = 0};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[2] = {{.t = x}, {.t = x}};

        /* A call refused for its arguments is not the first call. */
        WBT_FAILS(wb_call(w, a, 2, NULL, 0), WB_ERR_ARITY, "2 arguments");
        cr_assert_eq(first.count, 0);
        for (int k = 0; k < 50; k++)
            WBT_OK(wb_call(w, a, 1, NULL, 0));
        cr_assert_eq(first.count, 1);
        cr_assert_eq(c.calls, 50);

        /* A second wrapper over the same spec has a first call of its own. */
        wb_wrapper *w2 = wbt_wrap(s, sem_graph, &c, tier);
        for (int k = 0; k < 5; k++)
            WBT_OK(wb_call(w2, a, 1, NULL, 0));
        cr_assert_eq(first.count, 2);

        wbt_release_last(x);
        wb_wrapper_free(w2);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* Several threads race through the first calls of one wrapper: the hook
   must run once, and no graph call may start before it has finished. */
typedef struct sem_race {
    atomic_int in_hook;      /* 1 while the hook runs */
    atomic_int hook_runs;
    atomic_int early;        /* graph calls that overlapped the hook */
    atomic_int graph_calls;
    atomic_int go;
    wb_wrapper *w;
    wb_tensor *x;
} sem_race;

static int sem_race_hook(void *ud)
{
    sem_race *r = ud;
    atomic_store(&r->in_hook, 1);
    atomic_fetch_add(&r->hook_runs, 1);
    /* Long enough for the other threads to reach their graph calls. */
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    atomic_store(&r->in_hook, 0);
    return 0;
}

static int sem_race_graph(void *ctx, const wb_arg *args, int nargs,
                          wb_value *values, int nvalues)
{
    sem_race *r = ctx;
    (void)args; (void)nargs; (void)values; (void)nvalues;
    if (atomic_load(&r->in_hook) || atomic_load(&r->hook_runs) == 0)
        atomic_fetch_add(&r->early, 1);
    atomic_fetch_add(&r->graph_calls, 1);
    return 0;
}

static int sem_race_graph_none(void *ctx, const wb_arg *args, int nargs,
                               wb_value *values, int nvalues)
{
    (void)ctx; (void)args; (void)nargs; (void)values; (void)nvalues;
    return 0;
}

static void *sem_race_thread(void *ud)
{
    sem_race *r = ud;
    wb_arg a[1] = {{.t = r->x}};
    while (!atomic_load(&r->go))
        ;
    for (int k = 0; k < 20; k++)
        if (wb_call(r->w, a, 1, NULL, 0) != WB_OK)
            return (void *)1;
    return NULL;
}

Test(semantics, first_call_hook_finishes_before_any_graph_call)
{
    WBT_EACH_TIER(tier) {
        sem_race r;
        atomic_init(&r.in_hook, 0);
        atomic_init(&r.hook_runs, 0);
        atomic_init(&r.early, 0);
        atomic_init(&r.graph_calls, 0);
        atomic_init(&r.go, 0);
        wb_spec *s = sem_spec("once_mt");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_set_first_call(s, sem_race_hook, &r));
        r.x = wbt_f32(0, 1, 2);
        r.w = wbt_wrap(s, sem_race_graph, &r, tier);
        pthread_t th[4];
        for (int i = 0; i < 4; i++)
            cr_assert_eq(pthread_create(&th[i], NULL, sem_race_thread, &r), 0);
        atomic_store(&r.go, 1);
        for (int i = 0; i < 4; i++) {
            void *rc;
            pthread_join(th[i], &rc);
            cr_assert_null(rc, "a call in thread %d failed", i);
        }
        cr_assert_eq(atomic_load(&r.hook_runs), 1);
        cr_assert_eq(atomic_load(&r.graph_calls), 80);
        cr_assert_eq(atomic_load(&r.early), 0,
                     "%d graph calls ran before the first-call hook ended",
                     atomic_load(&r.early));

        wbt_release_last(r.x);
        wb_wrapper_free(r.w);
        wb_spec_free(s);
    }
}

/* The calls that wait for another thread's first-call hook sleep: while
   the hook takes 300 ms, the four waiting threads take little CPU time
   between them, where waiting by spinning would take a core's worth. */
typedef struct sem_sleepers {
    wb_wrapper *w;
    wb_tensor *x;
    atomic_int in_hook;
    atomic_llong waiters_ns;
} sem_sleepers;

static int sem_sleepers_hook(void *ud)
{
    sem_sleepers *r = ud;
    atomic_store(&r->in_hook, 1);
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return 0;
}

static void *sem_sleepers_call(void *ud)
{
    sem_sleepers *r = ud;
    wb_arg a[1] = {{.t = r->x}};
    return wb_call(r->w, a, 1, NULL, 0) == WB_OK ? NULL : (void *)1;
}

static void *sem_sleepers_wait(void *ud)
{
    sem_sleepers *r = ud;
    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    void *rc = sem_sleepers_call(r);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    atomic_fetch_add(&r->waiters_ns, (t1.tv_sec - t0.tv_sec) * 1000000000LL +
                                         (t1.tv_nsec - t0.tv_nsec));
    return rc;
}

/* Makes r's wrapper (on spec name, which it returns) and starts a call
   of it on *hook, which returns once that call is inside the hook. */
static wb_spec *sem_sleepers_start(sem_sleepers *r, const char *name,
                                   pthread_t *hook)
{
    atomic_init(&r->in_hook, 0);
    atomic_init(&r->waiters_ns, 0);
    wb_spec *s = sem_spec(name);
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_set_first_call(s, sem_sleepers_hook, r));
    r->x = wbt_f32(0, 1, 2);
    r->w = wbt_wrap(s, sem_race_graph_none, NULL, WB_TIER_TCC);
    cr_assert_eq(pthread_create(hook, NULL, sem_sleepers_call, r), 0);
    while (!atomic_load(&r->in_hook)) {
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return s;
}

Test(semantics, calls_waiting_for_a_first_call_hook_sleep)
{
    sem_sleepers r;
    pthread_t hook, th[4];
    wb_spec *s = sem_sleepers_start(&r, "sleepers", &hook);
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, sem_sleepers_wait, &r), 0);
    void *rc;
    cr_assert_eq(pthread_join(hook, &rc), 0);
    cr_assert_null(rc, "the call that ran the hook failed");
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(pthread_join(th[i], &rc), 0);
        cr_assert_null(rc, "a waiting call in thread %d failed", i);
    }
    long long ms = atomic_load(&r.waiters_ns) / 1000000;
    cr_assert_lt(ms, 100, "the waiting calls took %lld ms of CPU time "
                 "while the hook slept 300 ms", ms);
    wbt_release_last(r.x);
    wb_wrapper_free(r.w);
    wb_spec_free(s);
}

/* A thread cancelled while it waits for another thread's first-call hook
   is cancelled once its call is over: the hook's call, and later calls,
   go on. */
static void *sem_cancelled_wait(void *ud)
{
    sem_sleepers *r = ud;
    void *rc = sem_sleepers_call(r);
    pthread_testcancel();
    return rc;
}

Test(semantics, a_thread_cancelled_waiting_for_a_first_call_hook, .timeout = 30)
{
    sem_sleepers r;
    pthread_t hook, waiter;
    wb_spec *s = sem_sleepers_start(&r, "cancelled", &hook);
    cr_assert_eq(pthread_create(&waiter, NULL, sem_cancelled_wait, &r), 0);
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    cr_assert_eq(pthread_cancel(waiter), 0);
    void *rc;
    cr_assert_eq(pthread_join(waiter, &rc), 0);
    cr_assert_eq(rc, PTHREAD_CANCELED);
    cr_assert_eq(pthread_join(hook, &rc), 0);
    cr_assert_null(rc, "the call that ran the hook failed");
    cr_assert_null(sem_sleepers_call(&r));
    wbt_release_last(r.x);
    wb_wrapper_free(r.w);
    wb_spec_free(s);
}

/* A first-call hook that calls its own wrapper does not wait for itself:
   the inner call goes through without running the hook again. */
typedef struct sem_reenter {
    wb_wrapper *w;
    wb_tensor *x;
    int count;
    wb_status inner;
} sem_reenter;

static int sem_reenter_hook(void *ud)
{
    sem_reenter *r = ud;
    wb_arg a[1] = {{.t = r->x}};
    r->count++;
    r->inner = wb_call(r->w, a, 1, NULL, 0);
    return 0;
}

Test(semantics, first_call_hook_may_call_its_own_wrapper)
{
    WBT_EACH_TIER(tier) {
        sem_reenter r = {NULL, NULL, 0, WB_ERR_INVALID};
        wb_spec *s = sem_spec("reenter");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_set_first_call(s, sem_reenter_hook, &r));
        r.x = wbt_f32(0, 1, 2);
        sem_ctx c = {.nvals = 0};
        r.w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[1] = {{.t = r.x}};

        WBT_OK(wb_call(r.w, a, 1, NULL, 0));
        cr_assert_eq(r.count, 1);
        cr_assert_eq(r.inner, WB_OK, "the inner call: %s",
                     wb_status_str(r.inner));
        cr_assert_eq(c.calls, 2);
        WBT_OK(wb_call(r.w, a, 1, NULL, 0));
        cr_assert_eq(r.count, 1);
        cr_assert_eq(c.calls, 3);

        wbt_release_last(r.x);
        wb_wrapper_free(r.w);
        wb_spec_free(s);
    }
}

Test(semantics, grad_mode_at_end_is_set_after_the_call)
{
    WBT_EACH_TIER(tier) {
        wb_tensor *x = wbt_f32(0, 1, 2);
        wb_arg a[1] = {{.t = x}};
        sem_ctx c = {.nvals = 0};

        /* Training, off at the end: on during the call, off after. */
        wb_spec *s = sem_spec("grad_end_off");
        WBT_OK(wb_spec_set_training(s, true));
        WBT_OK(wb_spec_set_grad_mode_at_end(s, 0));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_set_grad_enabled(true);
        WBT_OK(wb_call(w, a, 1, NULL, 0));
        cr_assert(c.grad);
        cr_assert_not(wb_grad_enabled(), "set off at the end");
        wb_wrapper_free(w);
        wb_spec_free(s);

        /* Inference, on at the end: off during the call, on after. */
        s = sem_spec("grad_end_on");
        WBT_OK(wb_spec_set_grad_mode_at_end(s, 1));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        w = wbt_wrap(s, sem_graph, &c, tier);
        wb_set_grad_enabled(false);
        c.grad = true;
        WBT_OK(wb_call(w, a, 1, NULL, 0));
        cr_assert_not(c.grad);
        cr_assert(wb_grad_enabled(), "set on at the end");
        wb_wrapper_free(w);
        wb_spec_free(s);

        /* -1 leaves the restored mode alone. */
        s = sem_spec("grad_end_keep");
        WBT_OK(wb_spec_set_grad_mode_at_end(s, -1));
        WBT_OK(wb_spec_set_training(s, true));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        w = wbt_wrap(s, sem_graph, &c, tier);
        wb_set_grad_enabled(false);
        WBT_OK(wb_call(w, a, 1, NULL, 0));
        cr_assert(c.grad);
        cr_assert_not(wb_grad_enabled());
        wb_wrapper_free(w);
        wb_spec_free(s);

        wb_set_grad_enabled(true);
        wbt_release_last(x);
    }
}

/* ======================================================================= */
/* Mixed specs and scalars                                                  */
/* ======================================================================= */

Test(semantics, declared_inputs_that_match_pass)
{
    WBT_EACH_TIER(tier) {
        DLDataType any = {0, 0, 0}, f32x2 = {kDLFloat, 32, 2};
        wb_spec *s = sem_spec("declared");
        WBT_OK(wb_spec_add_tensor(s, "a", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "b", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "c", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "d", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "e", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_declare_input(s, 0, WBT_F64, 2));
        WBT_OK(wb_spec_declare_input(s, 1, WBT_I64, -1));
        WBT_OK(wb_spec_declare_input(s, 2, WBT_U8, 0));
        WBT_OK(wb_spec_declare_input(s, 3, any, 3));
        WBT_OK(wb_spec_declare_input(s, 4, f32x2, 1));
        wb_tensor *t[5] = {NULL};
        WBT_OK(wb_tensor_new(WBT_F64, WBT_CPU, 2, (int64_t[]){2, 2}, &t[0]));
        WBT_OK(wb_tensor_new(WBT_I64, WBT_CPU, 4, (int64_t[]){1, 1, 1, 1},
                             &t[1]));
        WBT_OK(wb_tensor_new(WBT_U8, WBT_CPU, 0, NULL, &t[2]));
        WBT_OK(wb_tensor_new(WBT_U8, WBT_CPU, 3, (int64_t[]){1, 2, 3},
                             &t[3]));
        WBT_OK(wb_tensor_new(f32x2, WBT_CPU, 1, (int64_t[]){3}, &t[4]));
        sem_ctx c = {.nvals = 0};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[5];
        for (int i = 0; i < 5; i++)
            a[i].t = t[i];

        WBT_OK(wb_call(w, a, 5, NULL, 0));
        cr_assert_eq(c.calls, 1);
        /* Any dtype with 3 dimensions fits input d. */
        wb_tensor *f = wbt_f32(0, 3, 1, 1, 1);
        a[3].t = f;
        WBT_OK(wb_call(w, a, 5, NULL, 0));
        cr_assert_eq(c.calls, 2);

        wbt_release_last(f);
        for (int i = 0; i < 5; i++)
            wbt_release_last(t[i]);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, mixed_mutations_and_aliases)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("mixed");
        WBT_OK(wb_spec_set_keep_input_mutations(s, true));
        WBT_OK(wb_spec_add_tensor(s, "a", WB_MUT_DATA, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "b", WB_MUT_METADATA, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "c", WB_MUT_STORAGE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "d", WB_MUT_IN_GRAPH, 0, NULL));
        WBT_OK(wb_spec_add_scalar(s, "n", WB_SCALAR_INT, NULL));
        WBT_OK(wb_spec_add_tensor(s, "f", WB_MUT_RESIZE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "e", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_set_intermediate_bases(s, 1));
        WBT_OK(wb_spec_add_output(s, "o0", WB_OUT_IS_INPUT, 0, false, 0x1,
                                  NULL));
        WBT_OK(wb_spec_add_output(s, "o1", WB_OUT_ALIAS_OF_INPUT, 2, true, 0,
                                  NULL));
        WBT_OK(wb_spec_add_output(s, "o2", WB_OUT_NON_ALIAS, -1, false, 0x2,
                                  NULL));
        WBT_OK(wb_spec_add_output(s, "o3",
                                  WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT,
                                  2, true, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "o4", WB_OUT_ALIAS_OF_INTERMEDIATE, 0,
                                  false, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "o5", WB_OUT_ALIAS_OF_INPUT, 5, false, 0,
                                  NULL));
        WBT_OK(wb_spec_add_output(s, "o6", WB_OUT_ALIAS_OF_INPUT, 6, false, 0,
                                  NULL));
        WBT_OK(wb_spec_validate(s));
        cr_assert_eq(wb_spec_num_updated(s), 4);
        cr_assert_eq(wb_spec_num_values(s), 4 + 7 + 1);
        cr_assert_eq(wb_spec_direction(s, 4), WB_DIR_SCALAR);

        wb_tensor *ta = wbt_f32(0, 1, 3), *tb = wbt_f32(0, 2, 2, 2);
        wb_tensor *tc = wbt_f32(0, 1, 1), *td = wbt_f32(0, 1, 2);
        wb_tensor *tf = wbt_f32(0, 1, 1), *te = wbt_f32(60, 1, 4);
        /* Updated values, in input order. */
        wb_tensor *ua = wbt_f32(10, 1, 3);
        wb_tensor *ub = sem_view(tb, 1, (int64_t[]){2}, (int64_t[]){2}, 1);
        wb_tensor *uc = wbt_f32(200, 1, 6);
        wb_tensor *uf = wbt_f32(300, 1, 5);
        /* Output values; scratch views give the aliased outputs' layout. */
        wb_tensor *sc = wbt_f32(0, 1, 8);
        wb_tensor *g0 = wbt_f32(0, 1, 3);
        wb_tensor *g1 = sem_view(sc, 1, (int64_t[]){2}, (int64_t[]){2}, 2);
        wb_tensor *g2 = wbt_f32(70, 2, 2, 2);
        wb_tensor *g3 = sem_view(sc, 1, (int64_t[]){2}, (int64_t[]){1}, 2);
        wb_tensor *g4 = sem_view(sc, 1, (int64_t[]){3}, (int64_t[]){1}, 1);
        wb_tensor *g5 = sem_view(sc, 1, (int64_t[]){2}, (int64_t[]){1}, 3);
        wb_tensor *g6 = sem_view(sc, 1, (int64_t[]){2}, (int64_t[]){2}, 0);
        wb_tensor *ib = wbt_f32(90, 1, 4);
        sem_ctx c = {.vals = {ua, ub, uc, uf, g0, g1, g2, g3, g4, g5, g6, ib},
                     .nvals = 12, .tensor_args = 0x6f};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[7] = {{.t = ta}, {.t = tb}, {.t = tc}, {.t = td}, {.i = -5},
                       {.t = tf}, {.t = te}};
        wb_value o[7] = {{NULL}};

        WBT_OK(wb_call(w, a, 7, o, 7));
        cr_assert_eq(c.args[4].i, -5);
        cr_assert_eq(c.versions[3], 1, "d bumped before the call");
        /* a: data copied, returned as itself. */
        cr_assert_eq(o[0].t, ta);
        cr_assert_eq(wbt_at(ta, 2), 12.0f);
        cr_assert_eq(wb_tensor_version(ta), 1);
        cr_assert_eq(wb_tensor_dynamic_dims(ta), 0x1);
        /* b: restrided onto its own storage, no write. */
        wbt_assert_view(tb, 1, (int64_t[]){2}, (int64_t[]){2}, 1);
        cr_assert_eq(wbt_at(tb, 1), 3.0f);
        cr_assert_eq(wb_tensor_version(tb), 1);
        /* c: took uc's storage; o1 views that storage. */
        cr_assert_eq(wb_tensor_storage(tc), wb_tensor_storage(uc));
        cr_assert_eq(wb_tensor_storage(o[1].t), wb_tensor_storage(uc));
        wbt_assert_view(o[1].t, 1, (int64_t[]){2}, (int64_t[]){2}, 2);
        cr_assert_eq(wbt_at(o[1].t, 1), 204.0f);
        cr_assert(wb_tensor_requires_grad(o[1].t));
        /* d: bumped once, no value. */
        cr_assert_eq(wb_tensor_version(td), 1);
        /* f: grown to 5 elements; o5 views the grown storage. */
        wbt_assert_view(tf, 1, (int64_t[]){5}, (int64_t[]){1}, 0);
        cr_assert_eq(wbt_at(tf, 4), 304.0f);
        cr_assert_eq(wb_tensor_storage(o[5].t), wb_tensor_storage(tf));
        wbt_assert_view(o[5].t, 1, (int64_t[]){2}, (int64_t[]){1}, 3);
        cr_assert_eq(wbt_at(o[5].t, 1), 304.0f);
        /* e: not mutated; o6 views it. */
        cr_assert_eq(wb_tensor_storage(o[6].t), wb_tensor_storage(te));
        cr_assert_eq(wbt_at(o[6].t, 1), 62.0f);
        cr_assert_eq(wb_tensor_version(te), 0);
        /* o2 plain, o3 a view of o2, o4 a view of the dropped base. */
        cr_assert_eq(o[2].t, g2);
        cr_assert_eq(wb_tensor_dynamic_dims(g2), 0x2);
        cr_assert_eq(wb_tensor_storage(o[3].t), wb_tensor_storage(g2));
        cr_assert_eq(wbt_at(o[3].t, 1), 73.0f);
        cr_assert(wb_tensor_requires_grad(o[3].t));
        cr_assert_eq(wb_tensor_storage(o[4].t), wb_tensor_storage(ib));
        cr_assert_eq(wbt_at(o[4].t, 2), 93.0f);
        /* Every graph value but the returned o2 was released. */
        for (int i = 0; i < 12; i++)
            cr_assert_eq(wb_tensor_refcount(c.vals[i]), i == 6 ? 2 : 1,
                         "value %d", i);
        cr_assert_eq(wb_tensor_refcount(ta), 2);

        for (int k = 0; k < 7; k++)
            wb_tensor_release(o[k].t);
        for (int i = 0; i < 12; i++)
            wbt_release_last(c.vals[i]);
        wbt_release_last(sc);
        wbt_release_last(ta);
        wbt_release_last(tb);
        wbt_release_last(tc);
        wbt_release_last(td);
        wbt_release_last(tf);
        wbt_release_last(te);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

Test(semantics, scalars_pass_through_unchanged)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("scalars");
        WBT_OK(wb_spec_add_scalar(s, "i", WB_SCALAR_INT, NULL));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_scalar(s, "f", WB_SCALAR_FLOAT, NULL));
        WBT_OK(wb_spec_add_scalar(s, "b", WB_SCALAR_BOOL, NULL));
        WBT_OK(wb_spec_add_scalar(s, "j", WB_SCALAR_INT, NULL));
        WBT_OK(wb_spec_add_output(s, "o", WB_OUT_IS_INPUT, 1, false, 0,
                                  NULL));
        WBT_OK(wb_spec_validate(s));
        cr_assert_str_eq(wb_spec_c_type(s, 0), "int64_t");
        cr_assert_str_eq(wb_spec_c_type(s, 2), "double");
        cr_assert_str_eq(wb_spec_c_type(s, 3), "bool");
        wb_tensor *x = wbt_f32(0, 1, 2), *g = wbt_f32(0, 1, 2);
        sem_ctx c = {.vals = {g}, .nvals = 1, .tensor_args = 0x2};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_value o[1] = {{NULL}};

        wb_arg a[5] = {{.i = INT64_MIN}, {.t = x}, {.f = -1.5e300},
                       {.b = true}, {.i = INT64_MAX}};
        WBT_OK(wb_call(w, a, 5, o, 1));
        cr_assert_eq(c.nargs, 5);
        cr_assert_eq(c.args[0].i, INT64_MIN);
        cr_assert_eq(c.args[1].t, x);
        cr_assert(c.args[2].f == -1.5e300);
        cr_assert(c.args[3].b);
        cr_assert_eq(c.args[4].i, INT64_MAX);
        cr_assert_eq(o[0].t, x);
        wb_tensor_release(o[0].t);

        wb_arg b[5] = {{.i = 0}, {.t = x}, {.f = NAN}, {.b = false},
                       {.i = -1}};
        WBT_OK(wb_call(w, b, 5, o, 1));
        cr_assert_eq(c.args[0].i, 0);
        cr_assert(isnan(c.args[2].f));
        cr_assert_not(c.args[3].b);
        cr_assert_eq(c.args[4].i, -1);
        cr_assert_eq(wb_tensor_refcount(g), 1);
        wb_tensor_release(o[0].t);

        wbt_release_last(g);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* ---- fixed storage ---- */

/* A view of a fixed graph value keeps the value instead of a reference to
   its storage, whether its header came from the heap (the process's first
   call, its thread cache empty) or from the cache (every later one), in a
   run of views (three outputs) and alone (one); an unfixed value beside it
   still gets a storage reference.
   The view outlives the graph's own reference, drops the value when set_
   gives it another storage, and is an ordinary view to detach. */
static void sem_fixed_views(wb_tier tier, int nviews)
{
    wb_spec *s = sem_spec("fixed_views");
    wb_tensor *x[3], *g[3];
    wb_storage *st[3];
    for (int i = 0; i < nviews; i++) {
        char name[4] = {'x', (char)('0' + i), 0};
        WBT_OK(wb_spec_add_tensor(s, name, WB_MUT_NONE, 0, NULL));
        name[0] = 'v';
        WBT_OK(wb_spec_add_output(s, name, WB_OUT_ALIAS_OF_INPUT, i, false,
                                  0, NULL));
        x[i] = wbt_f32((float)(10 * i), 1, 4);
        st[i] = wb_tensor_storage(x[i]);
        g[i] = sem_view(x[i], 1, (int64_t[]){2}, (int64_t[]){1}, 1 + i % 2);
        if (i != 2)
            wb_tensor_fix_storage(g[i]);
    }
    cr_assert(wb_tensor_storage_fixed(g[0]));
    cr_assert_not(wb_tensor_storage_fixed(x[0]));
    sem_ctx c = {.vals = {g[0], g[1], g[2]}, .nvals = nviews};
    wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
    wb_arg a[3] = {{.t = x[0]}, {.t = x[1]}, {.t = x[2]}};
    wb_value o[3] = {{NULL}, {NULL}, {NULL}};

    for (int call = 0; call < 2; call++) {
        WBT_OK(wb_call(w, a, nviews, o, nviews));
        for (int i = 0; i < nviews; i++) {
            bool fixed = i != 2;
            cr_assert(o[i].t != g[i]);
            cr_assert_not(wb_tensor_storage_fixed(o[i].t));
            cr_assert_eq(wb_tensor_storage(o[i].t), st[i]);
            wbt_assert_view(o[i].t, 1, (int64_t[]){2}, (int64_t[]){1},
                            1 + i % 2);
            cr_assert_eq(wbt_at(o[i].t, 1), (float)(10 * i + 2 + i % 2));
            cr_assert_eq(wb_tensor_refcount(o[i].t), 1);
            cr_assert_eq(wb_tensor_refcount(g[i]), fixed ? 2 : 1,
                         "%s, call %d: the view keeps fixed value %d",
                         wb_tier_name(tier), call, i);
            cr_assert_eq(wb_storage_refcount(st[i]), fixed ? 2 : 3,
                         "%s, call %d: storage references of view %d",
                         wb_tier_name(tier), call, i);
        }
        if (call == 0)
            for (int i = 0; i < nviews; i++)
                wb_tensor_release(o[i].t);
    }

    /* Detached, a kept view makes a tensor holding the storage. */
    wb_tensor *d = NULL;
    WBT_OK(wb_tensor_detach(o[0].t, &d));
    cr_assert_eq(wb_storage_refcount(st[0]), 3);
    wbt_release_last(d);
    /* The graph drops its value; the view still holds it, and through it
       the storage, until the view goes. */
    wb_tensor_release(g[0]);
    cr_assert_eq(wb_storage_refcount(st[0]), 2);
    ((float *)wb_storage_data(st[0]))[2] = 42.0f;
    cr_assert_eq(wbt_at(o[0].t, 1), 42.0f);
    wbt_release_last(o[0].t);
    cr_assert_eq(wb_storage_refcount(st[0]), 1, "the value went with it");
    if (nviews == 3) {
        /* set_ onto another storage drops the value it kept. */
        WBT_OK(wb_tensor_set_(o[1].t, x[2]));
        cr_assert_eq(wb_tensor_refcount(g[1]), 1);
        cr_assert_eq(wb_storage_refcount(st[1]), 2, "x1 and g1");
        cr_assert_eq(wb_tensor_storage(o[1].t), st[2]);
        cr_assert_eq(wb_storage_refcount(st[2]), 4, "x2, g2, o1 and o2");
        wbt_release_last(o[1].t);
        wbt_release_last(o[2].t);
        wbt_release_last(g[1]);
        wbt_release_last(g[2]);
    }
    for (int i = 0; i < nviews; i++) {
        cr_assert_eq(wb_storage_refcount(st[i]), 1);
        wbt_release_last(x[i]);
    }
    wb_wrapper_free(w);
    wb_spec_free(s);
}

Test(semantics, view_of_a_fixed_value_keeps_the_value)
{
    WBT_EACH_TIER(tier) {
        sem_fixed_views(tier, 1);
        sem_fixed_views(tier, 3);
    }
}

/* set_ on a fixed tensor is refused and changes nothing; a fixed updated
   value may still be set_'s source. */
Test(semantics, fixed_storage_refuses_set_)
{
    wb_tensor *t = wbt_f32(0, 1, 4), *src = wbt_f32(10, 1, 8);
    wb_storage *st = wb_tensor_storage(t);
    wb_tensor_fix_storage(t);
    wb_tensor_fix_storage(t);
    uint64_t version = wb_tensor_version(t);
    WBT_FAILS(wb_tensor_set_(t, src), WB_ERR_INVALID, "storage is fixed");
    cr_assert_eq(wb_tensor_storage(t), st);
    cr_assert_eq(wb_tensor_version(t), version);
    wbt_assert_view(t, 1, (int64_t[]){4}, (int64_t[]){1}, 0);
    cr_assert_eq(wb_storage_refcount(wb_tensor_storage(src)), 1);
    cr_assert(wb_tensor_storage_fixed(t));
    cr_assert_not(wb_tensor_storage_fixed(NULL));
    wb_tensor_fix_storage(NULL);

    wb_tensor *u = wbt_f32(0, 1, 2);
    WBT_OK(wb_tensor_set_(u, t));
    cr_assert_eq(wb_tensor_storage(u), st);
    cr_assert_not(wb_tensor_storage_fixed(u), "set_ takes no fixedness");
    wbt_release_last(u);
    wbt_release_last(src);
    wbt_release_last(t);
}

/* An op that returns its input as it is, unmutated (contiguous() of a
   contiguous tensor): AOTAutograd returns the input object itself, and so
   does the wrapper, from a spec of the builder or of the text format. */
static int sem_return_self(void *ctx, const wb_arg *a, int na, wb_value *v,
                           int nv)
{
    (void)ctx; (void)na; (void)nv;
    const wb_tensor *x = a[0].t;
    return wb_tensor_as_strided(x, wb_tensor_ndim(x), wb_tensor_sizes(x),
                                wb_tensor_strides(x), wb_tensor_offset(x),
                                &v[0].t) == WB_OK ? 1 : -1;
}

Test(semantics, is_input_of_an_unmutated_input_is_the_input_itself)
{
    wb_spec *s;
    WBT_OK(wb_spec_parse("contiguous(Tensor(a) self) -> Tensor(a) "
                         "[is_input]", &s));
    WBT_EACH_TIER(tier) {
        wb_wrapper *w = wbt_wrap(s, sem_return_self, NULL, tier);
        wb_tensor *x = wbt_f32(1, 2, 2, 3);
        wb_value out = {NULL};
        wb_arg a[1] = {{.t = x}};
        for (int call = 0; call < 3; call++) {
            WBT_OK(wb_call(w, a, 1, &out, 1));
            cr_assert_eq(out.t, x, "%s: not the input itself",
                         wb_tier_name(tier));
            cr_assert_eq(wb_tensor_refcount(x), 2);
            cr_assert_eq(wb_tensor_version(x), 0, "nothing was mutated");
            wb_tensor_release(out.t);
        }
        wbt_release_last(x);
        wb_wrapper_free(w);
    }
    wb_spec_free(s);
}

/* ======================================================================= */
/* The argument list: deduplicated inputs, effect tokens                    */
/* ======================================================================= */

/* AOTAutograd's AOTDedupeWrapper: the graph gets the kept inputs alone, and
   the tensor's mutations and aliases are the kept input's; a call whose
   duplicate is another tensor fails before anything happens. */
Test(semantics, deduplicated_inputs_reach_the_graph_once)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("dedup");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA_METADATA, 0, NULL));
        WBT_OK(wb_spec_add_scalar(s, "k", WB_SCALAR_INT, NULL));
        WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "z", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_set_duplicate(s, 2, 0));
        WBT_OK(wb_spec_add_output(s, "xt", WB_OUT_ALIAS_OF_INPUT, 0, false,
                                  0, NULL));
        WBT_OK(wb_spec_validate(s));
        cr_assert_eq(wb_spec_num_graph_args(s), 3);
        wb_tensor *x = wbt_f32(0, 2, 2, 3), *z = wbt_f32(0, 1, 2);
        wb_tensor *vb = wbt_f32(10, 1, 6);
        wb_tensor *v = sem_view(vb, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3},
                                0);
        wb_tensor *g = sem_view(vb, 1, (int64_t[]){2}, (int64_t[]){1}, 1);
        sem_ctx c = {.vals = {v, g}, .nvals = 2, .tensor_args = 0x5};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_value o[1] = {{NULL}};

        /* Another tensor for the duplicate: refused, nothing touched. */
        wb_arg bad[4] = {{.t = x}, {.i = 7}, {.t = z}, {.t = z}};
        WBT_FAILS(wb_call(w, bad, 4, o, 1), WB_ERR_INVALID,
                  "input 2 'y' is not the same tensor as input 0 'x', which "
                  "it duplicates");
        cr_assert_eq(c.calls, 0);
        cr_assert_eq(wb_tensor_version(x), 0);
        cr_assert_null(o[0].t);

        /* The same tensor twice: the graph sees x, k, z; x is restrided
           and written once, as the one tensor it is. */
        wb_arg a[4] = {{.t = x}, {.i = 7}, {.t = x}, {.t = z}};
        WBT_OK(wb_call(w, a, 4, o, 1));
        cr_assert_eq(c.nargs, 3);
        cr_assert_eq(c.args[0].t, x);
        cr_assert_eq(c.args[1].i, 7);
        cr_assert_eq(c.args[2].t, z);
        wbt_assert_view(x, 2, (int64_t[]){3, 2}, (int64_t[]){1, 3}, 0);
        cr_assert_eq(wbt_at(x, 2, 1), 15.0f);
        cr_assert_eq(wb_tensor_version(x), 2, "as_strided_, then copy_");
        cr_assert_eq(wb_tensor_storage(o[0].t), wb_tensor_storage(x));
        cr_assert_eq(wb_tensor_version(o[0].t), 2, "x's counter");

        wbt_release_last(o[0].t);
        wbt_release_last(v);
        wbt_release_last(g);
        wbt_release_last(vb);
        wbt_release_last(x);
        wbt_release_last(z);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* AOTAutograd's EffectTokensWrapper: the graph gets the tokens first
   (None: NULL tensors) and returns them first; the wrapper drops them. */
Test(semantics, effect_tokens_come_first_and_are_dropped)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = sem_spec("tokens");
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "y", WB_OUT_NON_ALIAS, -1, false, 0,
                                  NULL));
        WBT_OK(wb_spec_set_effect_tokens(s, 2));
        WBT_OK(wb_spec_validate(s));
        cr_assert_eq(wb_spec_num_graph_args(s), 3);
        cr_assert_eq(wb_spec_num_values(s), 2 + 1 + 1);
        wb_tensor *x = wbt_f32(0, 1, 3), *tok = wbt_f32(0, 1, 1);
        wb_tensor *v = wbt_f32(5, 1, 3), *y = wbt_f32(9, 1, 2);
        /* A token returned as None (NULL), and one as a tensor. */
        sem_ctx c = {.vals = {NULL, tok, v, y}, .nvals = 4,
                     .tensor_args = 0x4};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[1] = {{.t = x}};
        wb_value o[1] = {{NULL}};

        WBT_OK(wb_call(w, a, 1, o, 1));
        cr_assert_eq(c.nargs, 3);
        cr_assert_null(c.args[0].t);
        cr_assert_null(c.args[1].t);
        cr_assert_eq(c.args[2].t, x);
        cr_assert_eq(c.nvalues, 4);
        cr_assert_eq(o[0].t, y);
        cr_assert_eq(wbt_at(x, 2), 7.0f);
        cr_assert_eq(wb_tensor_refcount(tok), 1, "the token was dropped");
        cr_assert_eq(wb_tensor_refcount(y), 2, "the test's and the output's");
        wb_tensor_release(o[0].t);

        /* The count includes the tokens; a missing value is named with
           its place after them. */
        c.nvals = 3;
        WBT_FAILS(wb_call(w, a, 1, o, 1), WB_ERR_ARITY,
                  "the graph returned 3 values; expected 4 (2 effect tokens, "
                  "1 updated input, 1 output, 0 intermediate bases)");
        cr_assert_eq(wb_tensor_refcount(tok), 1);
        cr_assert_eq(wb_tensor_version(x), 1, "the failed call wrote nothing");
        c.vals[2] = NULL;
        c.nvals = 4;
        WBT_FAILS(wb_call(w, a, 1, o, 1), WB_ERR_GRAPH,
                  "the graph returned NULL as value 2");
        cr_assert_eq(wb_tensor_refcount(tok), 1);

        wbt_release_last(tok);
        wbt_release_last(v);
        wbt_release_last(y);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* AOTAutograd's FunctionalizedRngRuntimeWrapper: the generator's seed and
   offset go after the graph's other arguments, and its new offset, the
   graph's last value, reaches the generator only once the call has
   succeeded. */
typedef struct sem_rng {
    wb_tensor *seed, *offset;  /* what get hands out, a new reference each */
    wb_tensor *last;           /* what set received last (retained) */
    int gets, sets, fail;
} sem_rng;

static int sem_rng_get(void *ud, wb_tensor **seed, wb_tensor **offset)
{
    sem_rng *g = ud;
    g->gets++;
    if (g->fail)
        return g->fail;
    *seed = wb_tensor_retain(g->seed);
    *offset = wb_tensor_retain(g->offset);
    return 0;
}

static void sem_rng_set(void *ud, wb_tensor *offset)
{
    sem_rng *g = ud;
    g->sets++;
    wb_tensor_release(g->last);
    g->last = wb_tensor_retain(offset);
}

Test(semantics, functionalized_rng_threads_seed_and_offset)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = NULL;
        WBT_OK(wb_spec_parse("drop(Tensor(a!) x, float p) -> Tensor "
                             "with functional_rng", &s));
        /* Asked for in the text, the callbacks come from the caller. */
        wb_wrapper *none = NULL;
        WBT_FAILS(wb_wrapper_new(s, sem_graph, NULL,
                                 &(wb_options){.tier = tier}, &none),
                  WB_ERR_SPEC, "spec 'drop': it asks for functionalized RNG "
                  "and has no callbacks; give them with wb_spec_set_rng");
        WBT_FAILS(wb_spec_set_rng(s, sem_rng_get, NULL, NULL),
                  WB_ERR_INVALID, "get and set go together");
        sem_rng g = {.seed = wbt_f32(7, 1, 1), .offset = wbt_f32(0, 1, 1)};
        WBT_OK(wb_spec_set_rng(s, sem_rng_get, sem_rng_set, &g));
        WBT_OK(wb_spec_validate(s));
        cr_assert_eq(wb_spec_num_graph_args(s), 2 + 2);
        cr_assert_eq(wb_spec_num_values(s), 1 + 1 + 1);
        wb_tensor *x = wbt_f32(0, 1, 2), *v = wbt_f32(3, 1, 2);
        wb_tensor *y = wbt_f32(1, 1, 2), *next = wbt_f32(4, 1, 1);
        sem_ctx c = {.vals = {v, y, next}, .nvals = 3, .tensor_args = 0xd};
        wb_wrapper *w = wbt_wrap(s, sem_graph, &c, tier);
        wb_arg a[2] = {{.t = x}, {.f = 0.5}};
        wb_value o[1] = {{NULL}};

        WBT_OK(wb_call(w, a, 2, o, 1));
        cr_assert_eq(c.nargs, 4);
        cr_assert_eq(c.args[0].t, x);
        cr_assert_eq(c.args[1].f, 0.5);
        cr_assert_eq(c.args[2].t, g.seed);
        cr_assert_eq(c.args[3].t, g.offset);
        cr_assert_eq(g.gets, 1);
        cr_assert_eq(g.sets, 1);
        cr_assert_eq(g.last, next, "the graph's last value");
        cr_assert_eq(wbt_at(x, 1), 4.0f);
        cr_assert_eq(o[0].t, y);
        cr_assert_eq(wb_tensor_refcount(g.seed), 1, "handed back");
        cr_assert_eq(wb_tensor_refcount(g.offset), 1);
        cr_assert_eq(wb_tensor_refcount(next), 2, "the test's and set's");
        wb_tensor_release(o[0].t);

        /* A call that fails after the graph ran: no set. */
        c.nvals = 2;
        WBT_FAILS(wb_call(w, a, 2, o, 1), WB_ERR_ARITY,
                  "expected 3 (1 updated input, 1 output, 0 intermediate "
                  "bases, the RNG offset)");
        cr_assert_eq(g.gets, 2);
        cr_assert_eq(g.sets, 1, "the generator is left as it was");
        c.nvals = 3;
        /* get fails: the graph does not run. */
        g.fail = 5;
        WBT_FAILS(wb_call(w, a, 2, o, 1), WB_ERR_HOOK,
                  "the RNG's get callback failed with code 5");
        cr_assert_eq(c.calls, 2);
        cr_assert_eq(g.sets, 1);
        cr_assert_eq(wb_tensor_version(x), 1);
        cr_assert_eq(wb_tensor_refcount(g.seed), 1);

        wb_tensor_release(g.last);
        wbt_release_last(g.seed);
        wbt_release_last(g.offset);
        wbt_release_last(next);
        wbt_release_last(v);
        wbt_release_last(y);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* A graph returning numbers among its values: x's new value, y, then a
   SymInt, a float, a bool and None.  fault 1 leaves y NULL, fault 2
   returns one value too few; both after writing every number. */
typedef struct sem_numbers {
    wb_tensor *y;
    int fault;
} sem_numbers;

static int sem_numbers_graph(void *ctx, const wb_arg *a, int na,
                             wb_value *v, int nv)
{
    sem_numbers *c = ctx;
    (void)na;
    if (nv != 6)
        return -1;
    v[0].t = wbt_f32(5, 1, 3);
    v[1].t = c->fault == 1 ? NULL : wb_tensor_retain(c->y);
    v[2].i = wb_tensor_numel(a[0].t) - 3;  /* 0: a number, not NULL */
    v[3].f = 2.5;
    v[4].b = true;  /* one byte of the slot: the rest is not a pointer */
    return c->fault == 2 ? 5 : 6;
}

Test(semantics, outputs_that_are_numbers_pass_through)
{
    wb_spec *s;
    WBT_OK(wb_spec_parse("sizes(Tensor(a!) x) -> (Tensor y, SymInt n, "
                         "float m, bool ok, NoneType nothing)", &s));
    for (int t = 0; t < 3; t++) {
        wb_tier tier = t < WBT_NTIERS ? WBT_TIERS[t] : WB_TIER_CC;
        wb_tensor *x = wbt_f32(1, 1, 3), *y = wbt_f32(7, 1, 2);
        sem_numbers c = {.y = y};
        wb_wrapper *w = wbt_wrap(s, sem_numbers_graph, &c, tier);
        wb_arg a[1] = {{.t = x}};
        wb_value o[5];
        memset(o, 0xab, sizeof o);
        WBT_OK(wb_call(w, a, 1, o, 5));
        cr_assert_eq(o[0].t, y, "%s", wb_tier_name(tier));
        cr_assert_eq(o[1].i, 0);
        cr_assert_eq(o[2].f, 2.5);
        cr_assert(o[3].b);
        cr_assert_null(o[4].p, "None is NULL");
        cr_assert_eq(wbt_at(x, 0), 5.0f);
        cr_assert_eq(wb_tensor_version(x), 1);
        wb_tensor_release(o[0].t);
        cr_assert_eq(wb_tensor_refcount(y), 1);

        /* A NULL tensor is found among the numbers, and a short count
           fails too; neither releases a number as a reference. */
        for (c.fault = 1; c.fault <= 2; c.fault++) {
            memset(o, 0xab, sizeof o);
            WBT_FAILS(wb_call(w, a, 1, o, 5),
                      c.fault == 1 ? WB_ERR_GRAPH : WB_ERR_ARITY,
                      c.fault == 1 ? "returned NULL as value 1; expected a "
                                     "tensor"
                                   : "the graph returned 5 values; expected 6");
            cr_assert_eq(o[0].i, (int64_t)0xabababababababab,
                         "an output was written");
            cr_assert_eq(wb_tensor_version(x), 1, "x was written back");
            cr_assert_eq(wb_tensor_refcount(y), 1);
        }
        wb_wrapper_free(w);
        wbt_release_last(x);
        wbt_release_last(y);
    }
    wb_spec_free(s);
}

/* ---- synthetic bases ---- */

/* The graph of sem_synth_spec: it checks that it got the base (the whole
   8-element storage, 1-D) and the members' views after the other input,
   then returns the base's new data (100, 101, ...), the output (a view of
   the base, elements 3 and 4), then y's new view (elements 5..7) when y's
   view changes.  fault 1 returns a base value of the wrong size. */
typedef struct sem_synth {
    bool meta;      /* y has a data+metadata mutation */
    int fault;
    int calls;
    const wb_tensor *x, *y;
} sem_synth;

static int sem_synth_graph(void *ctx, const wb_arg *a, int na, wb_value *v,
                           int nv)
{
    sem_synth *c = ctx;
    c->calls++;
    /* base, z, x's view, y's view */
    if (na != 4 || nv != 2 + c->meta || wb_tensor_ndim(a[0].t) != 1 ||
        wb_tensor_sizes(a[0].t)[0] != 8 || wb_tensor_offset(a[0].t) != 0 ||
        wb_tensor_storage(a[0].t) != wb_tensor_storage(c->x) ||
        a[2].t != c->x || a[3].t != c->y || wb_tensor_numel(a[1].t) != 2)
        return -1;
    v[0].t = wbt_f32(100, 1, c->fault == 1 ? 7 : 8);
    if (wb_tensor_as_strided(a[0].t, 1, (int64_t[]){2}, (int64_t[]){1}, 3,
                             &v[1].t) != WB_OK)
        return -2;
    if (c->meta && wb_tensor_as_strided(a[0].t, 1, (int64_t[]){3},
                                        (int64_t[]){1}, 5, &v[2].t) != WB_OK)
        return -3;
    return nv;
}

static wb_spec *sem_synth_spec(bool meta, bool training)
{
    wb_spec *s;
    WBT_OK(wb_spec_parse(meta ? "f(Tensor(a!) x, Tensor(b!) y [data_metadata, "
                                "aliases=x], Tensor z) -> Tensor(b)"
                              : "f(Tensor(a!) x, Tensor(b) y [aliases=x], "
                                "Tensor z) -> Tensor(b)", &s));
    WBT_OK(wb_spec_set_training(s, training));
    return s;
}

/* x = elements 0..3 and y = 2..5 of one 8-element storage: views of one
   tensor (one counter), or made apart on it (a counter each). */
static void sem_synth_inputs(bool one_counter, wb_tensor **x, wb_tensor **y)
{
    wb_tensor *all = wbt_f32(0, 1, 8);
    if (one_counter) {
        WBT_OK(wb_tensor_as_strided(all, 1, (int64_t[]){4}, NULL, 0, x));
        WBT_OK(wb_tensor_as_strided(all, 1, (int64_t[]){4}, NULL, 2, y));
    } else {
        wb_storage *st = wb_tensor_storage(all);
        WBT_OK(wb_tensor_from_storage(st, WBT_F32, 1, (int64_t[]){4}, NULL, 0,
                                      x));
        WBT_OK(wb_tensor_from_storage(st, WBT_F32, 1, (int64_t[]){4}, NULL, 2,
                                      y));
    }
    wb_tensor_release(all);
}

/* The base takes the graph's data whole; the members' versions move with
   it when they share its counter (views of one tensor, as PyTorch's
   _base), and stay when the base has its own; the output is a view of
   the storage that shares the base's counter; a member's new view comes
   after; the base is released. */
Test(semantics, synthetic_base_takes_the_data_and_the_counter)
{
    for (int t = 0; t < 3; t++)
        for (int mode = 0; mode < 4; mode++) {
            bool one_counter = mode & 1, meta = mode & 2;
            wb_tier tier = t < WBT_NTIERS ? WBT_TIERS[t] : WB_TIER_CC;
            wb_spec *s = sem_synth_spec(meta, false);
            wb_tensor *x, *y, *z = wbt_f32(0, 1, 2);
            sem_synth_inputs(one_counter, &x, &y);
            wb_storage *st = wb_tensor_storage(x);
            long refs = wb_storage_refcount(st);
            sem_synth c = {.meta = meta, .x = x, .y = y};
            wb_wrapper *w = wbt_wrap(s, sem_synth_graph, &c, tier);
            wb_arg a[3] = {{.t = x}, {.t = y}, {.t = z}};
            wb_value o[1];
            WBT_OK(wb_call(w, a, 3, o, 1));
            cr_assert_eq(c.calls, 1);
            for (int i = 0; i < 8; i++)
                cr_assert_eq(((float *)wb_storage_data(st))[i], 100.0f + i,
                             "%s mode %d: element %d", wb_tier_name(tier),
                             mode, i);
            /* One counter: the base's copy bumps it once, and y's
               as_strided_ once more.  Apart: only y's as_strided_. */
            uint64_t bump = one_counter ? 1 + meta : meta;
            cr_assert_eq(wb_tensor_version(y), bump, "%s mode %d",
                         wb_tier_name(tier), mode);
            cr_assert_eq(wb_tensor_version(x), one_counter ? bump : 0);
            if (meta)
                wbt_assert_view(y, 1, (int64_t[]){3}, (int64_t[]){1}, 5);
            else
                wbt_assert_view(y, 1, (int64_t[]){4}, (int64_t[]){1}, 2);
            cr_assert_eq(wb_tensor_storage(o[0].t), st);
            cr_assert_eq(wb_tensor_offset(o[0].t), 3);
            uint64_t ov = wb_tensor_version(o[0].t);
            WBT_OK(wb_tensor_copy_(x, x));  /* x's counter moves */
            cr_assert_eq(wb_tensor_version(o[0].t) - ov, one_counter ? 1 : 0,
                         "the output shares the base's counter");
            wb_tensor_release(o[0].t);
            cr_assert_eq(wb_storage_refcount(st), refs, "the base leaked");
            wb_wrapper_free(w);
            wbt_release_last(x);
            wbt_release_last(y);
            wbt_release_last(z);
            wb_spec_free(s);
        }
}

/* In training, with grad on, the members of a synthetic base whose data
   is written back from a value that requires grad require grad after, as
   the views of a tensor copied into do; with grad off they do not. */
static int sem_synth_grad_graph(void *ctx, const wb_arg *a, int na,
                                wb_value *v, int nv)
{
    (void)ctx; (void)a; (void)na; (void)nv;
    v[0].t = wbt_f32(100, 1, 8);
    wb_tensor_set_requires_grad(v[0].t, true);
    return 1;
}

Test(semantics, synthetic_base_members_take_requires_grad_in_training)
{
    WBT_EACH_TIER(tier) {
        for (int grad = 0; grad < 2; grad++) {
            wb_spec *s;
            WBT_OK(wb_spec_parse("f(Tensor(a!) x, Tensor(b) y [aliases=x]) "
                                 "-> () with training", &s));
            wb_tensor *x, *y;
            sem_synth_inputs(true, &x, &y);
            wb_wrapper *w = wbt_wrap(s, sem_synth_grad_graph, NULL, tier);
            wb_arg a[2] = {{.t = x}, {.t = y}};
            wb_set_grad_enabled(grad);
            WBT_OK(wb_call(w, a, 2, NULL, 0));
            wb_set_grad_enabled(true);
            cr_assert_eq(wb_tensor_requires_grad(x), (bool)grad, "%s grad %d",
                         wb_tier_name(tier), grad);
            cr_assert_eq(wb_tensor_requires_grad(y), (bool)grad);
            cr_assert_eq(wbt_at(y, 0), 102.0f);
            wb_wrapper_free(w);
            wbt_release_last(x);
            wbt_release_last(y);
            wb_spec_free(s);
        }
    }
}

/* The base's new data, and the member y itself as the output's value. */
static int sem_synth_is_input_graph(void *ctx, const wb_arg *a, int na,
                                    wb_value *v, int nv)
{
    (void)ctx; (void)na; (void)nv;
    v[0].t = wbt_f32(100, 1, 8);
    v[1].t = wb_tensor_retain(a[2].t);
    return 2;
}

/* A member returned itself is, as AOTAutograd's synthetic-base wrapper
   makes it (is-input turned alias-of-input), a new view of the base: the
   member's storage and view, the base's counter. */
Test(semantics, synthetic_base_member_returned_is_a_view_of_the_base)
{
    for (int t = 0; t < 3; t++)
        for (int mode = 0; mode < 4; mode++) {
            bool one_counter = mode & 1, rg = mode & 2;
            wb_tier tier = t < WBT_NTIERS ? WBT_TIERS[t] : WB_TIER_CC;
            wb_spec *s;
            WBT_OK(wb_spec_parse(rg ? "f(Tensor(a!) x, Tensor(b) y [aliases="
                                      "x]) -> Tensor(b) [is_input, "
                                      "requires_grad]"
                                    : "f(Tensor(a!) x, Tensor(b) y [aliases="
                                      "x]) -> Tensor(b) [is_input]", &s));
            wb_tensor *x, *y;
            sem_synth_inputs(one_counter, &x, &y);
            wb_wrapper *w = wbt_wrap(s, sem_synth_is_input_graph, NULL, tier);
            wb_value o[1];
            WBT_OK(wb_call(w, (wb_arg[]){{.t = x}, {.t = y}}, 2, o, 1));
            cr_assert_neq(o[0].t, y, "%s: the member itself",
                          wb_tier_name(tier));
            cr_assert_eq(wb_tensor_storage(o[0].t), wb_tensor_storage(y));
            wbt_assert_view(o[0].t, 1, (int64_t[]){4}, (int64_t[]){1}, 2);
            cr_assert_eq(wb_tensor_requires_grad(o[0].t), rg,
                         "%s: the spec's requires-grad", wb_tier_name(tier));
            uint64_t ov = wb_tensor_version(o[0].t);
            WBT_OK(wb_tensor_copy_(y, y));  /* y's counter moves */
            cr_assert_eq(wb_tensor_version(o[0].t) - ov, one_counter ? 1 : 0,
                         "%s: the output shares the base's counter",
                         wb_tier_name(tier));
            wb_tensor_release(o[0].t);
            wb_wrapper_free(w);
            wbt_release_last(x);
            wbt_release_last(y);
            wb_spec_free(s);
        }
}

/* Writes the base in place, as a graph that keeps input mutations does;
   with ctx, through an op that bumps the base's version too. */
static int sem_synth_in_graph_graph(void *ctx, const wb_arg *a, int na,
                                    wb_value *v, int nv)
{
    (void)na; (void)nv;
    float *d = wb_tensor_data(a[0].t);
    for (int i = 0; i < 8; i++)
        d[i] = 100.0f + i;
    if (ctx && wb_tensor_copy_(a[0].t, a[0].t) != WB_OK)
        return -1;
    v[0].t = wbt_f32(0, 1, 2);
    return 1;
}

/* A synthetic base mutated in the graph (inductor's kept input
   mutations): no value for it, one bump of the base before the call,
   which reaches the members when they share its counter, and none when
   the mutation is hidden from autograd, whatever the graph bumps. */
Test(semantics, synthetic_base_mutated_in_the_graph)
{
    for (int t = 0; t < 3; t++)
        for (int mode = 0; mode < 4; mode++) {
            bool one_counter = mode & 1, hidden = mode & 2;
            wb_tier tier = t < WBT_NTIERS ? WBT_TIERS[t] : WB_TIER_CC;
            wb_spec *s;
            WBT_OK(wb_spec_parse(
                hidden ? "f(Tensor(a!) x [in_graph, hidden], Tensor(b!) y "
                         "[in_graph, hidden, aliases=x]) -> Tensor with "
                         "keep_input_mutations"
                       : "f(Tensor(a!) x [in_graph], Tensor(b) y "
                         "[aliases=x]) -> Tensor with keep_input_mutations",
                &s));
            WBT_OK(wb_spec_validate(s));
            cr_assert_eq(wb_spec_num_values(s), 1, "no value for the base");
            wb_tensor *x, *y;
            sem_synth_inputs(one_counter, &x, &y);
            wb_storage *st = wb_tensor_storage(x);
            wb_wrapper *w = wbt_wrap(s, sem_synth_in_graph_graph,
                                     hidden ? s : NULL, tier);
            wb_value o[1];
            WBT_OK(wb_call(w, (wb_arg[]){{.t = x}, {.t = y}}, 2, o, 1));
            cr_assert_eq(((float *)wb_storage_data(st))[7], 107.0f);
            uint64_t bump = one_counter && !hidden ? 1 : 0;
            cr_assert_eq(wb_tensor_version(x), bump, "%s mode %d: x",
                         wb_tier_name(tier), mode);
            cr_assert_eq(wb_tensor_version(y), bump, "%s mode %d: y",
                         wb_tier_name(tier), mode);
            wb_tensor_release(o[0].t);
            wb_wrapper_free(w);
            wbt_release_last(x);
            wbt_release_last(y);
            wb_spec_free(s);
        }
}

static int sem_guard_fails(void *ud) { (void)ud; return -1; }
static void sem_guard_never(void *ud) { (void)ud; }

/* The base's bump is undone when the call fails before the graph (a
   guard); a base is hidden only when every member that writes is; and a
   member's data mutation may be hidden (it is copied all the same). */
Test(semantics, synthetic_base_mutated_in_the_graph_undone_and_mixed)
{
    for (int t = 0; t < 3; t++) {
        wb_tier tier = t < WBT_NTIERS ? WBT_TIERS[t] : WB_TIER_CC;
        wb_spec *s;
        wb_tensor *x, *y;
        wb_value o[1];
        WBT_OK(wb_spec_parse("f(Tensor(a!) x [in_graph], Tensor(b) y "
                             "[aliases=x]) -> Tensor with "
                             "keep_input_mutations", &s));
        WBT_OK(wb_spec_add_guard(s, sem_guard_fails, sem_guard_never, NULL));
        sem_synth_inputs(true, &x, &y);
        wb_wrapper *w = wbt_wrap(s, sem_synth_in_graph_graph, NULL, tier);
        cr_assert_neq(wb_call(w, (wb_arg[]){{.t = x}, {.t = y}}, 2, o, 1),
                      WB_OK);
        cr_assert_eq(wb_tensor_version(x), 0, "%s: the bump stayed",
                     wb_tier_name(tier));
        cr_assert_eq(((float *)wb_tensor_data(x))[0], 0.0f);
        wb_wrapper_free(w);
        wb_spec_free(s);

        /* One member hidden, the other not: bumped once. */
        WBT_OK(wb_spec_parse("f(Tensor(a!) x [in_graph, hidden], Tensor(b!) "
                             "y [in_graph, aliases=x]) -> Tensor with "
                             "keep_input_mutations", &s));
        w = wbt_wrap(s, sem_synth_in_graph_graph, NULL, tier);
        WBT_OK(wb_call(w, (wb_arg[]){{.t = x}, {.t = y}}, 2, o, 1));
        cr_assert_eq(wb_tensor_version(y), 1, "%s: mixed hidden",
                     wb_tier_name(tier));
        wb_tensor_release(o[0].t);
        wb_wrapper_free(w);
        wb_spec_free(s);
        wbt_release_last(x);
        wbt_release_last(y);
    }
    wb_spec *s;
    WBT_OK(wb_spec_parse("f(Tensor(a!) x [data, hidden], Tensor(b) y "
                         "[aliases=x]) -> Tensor", &s));
    WBT_OK(wb_spec_validate(s));
    cr_assert_eq(wb_spec_num_values(s), 2, "the base's value, the output");
    wb_spec_free(s);
}

/* What a synthetic base refuses, before anything changes: members on two
   storages, of two dtypes, members apart in training; and a base value
   of the wrong size, after the graph, with the base released. */
Test(semantics, synthetic_base_refusals_change_nothing)
{
    WBT_EACH_TIER(tier) {
        for (int k = 0; k < 4; k++) {
            wb_spec *s = sem_synth_spec(false, k == 2);
            wb_tensor *x, *y, *z = wbt_f32(0, 1, 2);
            sem_synth_inputs(k != 2, &x, &y);
            if (k == 0) {
                wb_tensor_release(y);
                y = wbt_f32(2, 1, 4);
            } else if (k == 1) {
                wb_tensor *u = NULL;
                WBT_OK(wb_tensor_from_storage(wb_tensor_storage(x),
                                              (DLDataType){kDLInt, 32, 1}, 1,
                                              (int64_t[]){4}, NULL, 2, &u));
                wb_tensor_release(y);
                y = u;
            }
            wb_storage *st = wb_tensor_storage(x);
            long refs = wb_storage_refcount(st);
            sem_synth c = {.x = x, .y = y, .fault = k == 3};
            wb_wrapper *w = wbt_wrap(s, sem_synth_graph, &c, tier);
            wb_arg a[3] = {{.t = x}, {.t = y}, {.t = z}};
            wb_value o[1] = {{NULL}};
            static const char *const why[] = {
                "input 0 'x' and input 1 'y' make one synthetic base, but "
                "lie on different storages",
                "make one synthetic base, but have dtypes float32 and int32",
                "the members of the synthetic base of input 0 'x' are not "
                "views of one tensor",
                "the synthetic base of input 0 'x'"};
            WBT_FAILS(wb_call(w, a, 3, o, 1),
                      k < 3 ? WB_ERR_HOOK : WB_ERR_SHAPE, why[k]);
            cr_assert_eq(c.calls, k == 3, "%s case %d", wb_tier_name(tier), k);
            cr_assert_null(o[0].t);
            cr_assert_eq(((float *)wb_storage_data(st))[0], 0.0f);
            cr_assert_eq(wb_tensor_version(x), 0);
            cr_assert_eq(wb_storage_refcount(st), refs, "the base leaked");
            wb_wrapper_free(w);
            wbt_release_last(x);
            wbt_release_last(y);
            wbt_release_last(z);
            wb_spec_free(s);
        }
    }
}
