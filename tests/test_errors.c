/*
 * test_errors.c -- calls that fail, on both tiers: the status, a distinctive
 * part of the message, and proof that nothing changed.
 *
 * Every failing call is surrounded by snapshots of its tensor inputs (data
 * byte for byte, view, storage, version, flags, reference counts), an
 * outputs array filled with a sentinel, the grad mode, and the reference
 * counts of every value the scripted graph handed back.  After the failure
 * all of it must be as it was: a failed call mutates nothing, writes no
 * output, undoes its in-graph version bumps and leaks no reference.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

/* ---- a scripted graph ---- */

#define ERR_MAXV 24

typedef struct err_ctx {
    wb_tensor *vals[ERR_MAXV]; /* written in order; NULL entries stay NULL */
    int nwrite;                /* how many slots to write */
    int ret;                   /* what to return */
    int watch;                 /* argument whose version it records, or -1 */
    int calls;
    uint64_t watched_version;
} err_ctx;

static int err_graph(void *ctx, const wb_arg *args, int nargs,
                     wb_value *values, int nvalues)
{
    err_ctx *c = ctx;
    c->calls++;
    if (c->watch >= 0 && c->watch < nargs)
        c->watched_version = wb_tensor_version(args[c->watch].t);
    for (int i = 0; i < c->nwrite && i < nvalues; i++)
        values[i].t = c->vals[i] ? wb_tensor_retain(c->vals[i]) : NULL;
    return c->ret;
}

/* ---- hooks and guards ---- */

typedef struct err_log {
    char s[64];
    int n;
} err_log;

static void err_log_put(err_log *l, char c)
{
    if (l->n < (int)sizeof l->s - 1) {
        l->s[l->n++] = c;
        l->s[l->n] = '\0';
    }
}

typedef struct err_hook {
    err_log *log;
    char tag;
    int rc;
    int count;
} err_hook;

static int err_hook_fn(void *ud)
{
    err_hook *h = ud;
    h->count++;
    err_log_put(h->log, h->tag);
    return h->rc;
}

typedef struct err_guard {
    err_log *log;
    char enter, leave;
    int rc;
} err_guard;

static int err_guard_enter(void *ud)
{
    err_guard *g = ud;
    err_log_put(g->log, g->enter);
    return g->rc;
}

static void err_guard_leave(void *ud)
{
    err_guard *g = ud;
    err_log_put(g->log, g->leave);
}

/* ---- the standard fixture ---- */

/*
 * Spec 'err':
 *   input 0 'x': mutation xmut (a 2x3 transposed view of a 3x2 base)
 *   input 1 'y': not mutated, 4x4
 *   input 2 'k': in-graph mutation, 3 elements
 *   input 3 'n': int
 *   output 0 'o': non-alias
 *   output 1 'v': alias of input 1
 * The graph returns N = 3 values: x's updated value, o, v.  By default they
 * are all good; each test spoils one thing.
 */
typedef struct err_fix {
    wb_spec *spec;
    wb_wrapper *w;
    wb_tensor *base, *x, *y, *k;
    wb_tensor *xu, *o, *vb, *v; /* the good values (vb: v's storage) */
    wb_arg args[5];
    wb_value outs[3];
    err_ctx c;
    wbt_snap snaps[4];
    err_log log;
    bool grad;
    int calls;  /* graph calls when the snapshot was taken */
} err_fix;

static char err_sentinel;
#define ERR_MARK ((wb_tensor *)(void *)&err_sentinel)

static void err_fix_spec(err_fix *f, wb_mutation xmut)
{
    WBT_OK(wb_spec_new("err", &f->spec));
    WBT_OK(wb_spec_set_keep_input_mutations(f->spec, true));
    WBT_OK(wb_spec_add_tensor(f->spec, "x", xmut, 0, NULL));
    WBT_OK(wb_spec_add_tensor(f->spec, "y", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_add_tensor(f->spec, "k", WB_MUT_IN_GRAPH, 0, NULL));
    WBT_OK(wb_spec_add_scalar(f->spec, "n", WB_SCALAR_INT, NULL));
    WBT_OK(wb_spec_add_output(f->spec, "o", WB_OUT_NON_ALIAS, -1, true, 0x1,
                              NULL));
    WBT_OK(wb_spec_add_output(f->spec, "v", WB_OUT_ALIAS_OF_INPUT, 1, false,
                              0, NULL));
}

/* Tensors and values; call after the spec is complete. */
static void err_fix_start(err_fix *f, wb_tier tier)
{
    f->base = wbt_f32(0, 2, 3, 2);
    WBT_OK(wb_tensor_as_strided(f->base, 2, (int64_t[]){2, 3},
                                (int64_t[]){1, 2}, 0, &f->x));
    f->y = wbt_f32(50, 2, 4, 4);
    f->k = wbt_f32(-10, 1, 3);
    wb_tensor_set_requires_grad(f->y, true);
    wb_tensor_set_dynamic_dims(f->k, 0x1);
    f->xu = wbt_f32(100, 2, 2, 3);
    f->o = wbt_f32(7, 1, 2);
    f->vb = wbt_f32(0, 1, 16);
    WBT_OK(wb_tensor_as_strided(f->vb, 1, (int64_t[]){4}, (int64_t[]){1}, 4,
                                &f->v));
    f->c.vals[0] = f->xu;
    f->c.vals[1] = f->o;
    f->c.vals[2] = f->v;
    f->c.nwrite = 3;
    f->c.ret = 3;
    f->c.watch = 2;
    f->args[0].t = f->x;
    f->args[1].t = f->y;
    f->args[2].t = f->k;
    f->args[3].i = 42;
    f->args[4].t = f->y;
    for (int i = 0; i < 3; i++)
        f->outs[i].t = ERR_MARK;
    f->w = wbt_wrap(f->spec, err_graph, &f->c, tier);
}

static void err_fix_snap(err_fix *f)
{
    wbt_snap_take(&f->snaps[0], f->x, NULL);
    wbt_snap_take(&f->snaps[1], f->y, NULL);
    wbt_snap_take(&f->snaps[2], f->k, NULL);
    wbt_snap_take(&f->snaps[3], f->base, NULL);
    f->grad = wb_grad_enabled();
    f->calls = f->c.calls;
}

/* Everything as it was: inputs, outputs, grad mode, and every value the
   graph returned released again. */
static void err_fix_check(err_fix *f)
{
    /* Once the graph has run, its in-graph write of k stands, and so does
       the version bump that announced it; before that, the bump is undone. */
    if (f->c.calls != f->calls)
        f->snaps[2].version++;
    wbt_snap_check(&f->snaps[0], 0, "x");
    wbt_snap_check(&f->snaps[1], 0, "y");
    wbt_snap_check(&f->snaps[2], 0, "k");
    wbt_snap_check(&f->snaps[3], 0, "base");
    for (int i = 0; i < 3; i++)
        cr_assert_eq(f->outs[i].t, ERR_MARK, "outs[%d] was written", i);
    cr_assert_eq(wb_grad_enabled(), f->grad, "grad mode changed");
    cr_assert_eq(wb_tensor_refcount(f->xu), 1, "value 0 leaked");
    cr_assert_eq(wb_tensor_refcount(f->o), 1, "value 1 leaked");
    cr_assert_eq(wb_tensor_refcount(f->v), 1, "value 2 leaked");
}

static void err_fix_end(err_fix *f)
{
    wbt_release_last(f->xu);
    wbt_release_last(f->o);
    wbt_release_last(f->v);
    wbt_release_last(f->vb);
    wbt_release_last(f->x);
    wbt_release_last(f->base);
    wbt_release_last(f->y);
    wbt_release_last(f->k);
    wb_wrapper_free(f->w);
    wb_spec_free(f->spec);
}

/* One failing call through the fixture: snapshot, call, compare. */
#define ERR_CALL(f, nargs, nouts, status, needle)                            \
    do {                                                                     \
        err_fix_snap(f);                                                     \
        WBT_FAILS(wb_call((f)->w, (f)->args, (nargs), (f)->outs, (nouts)),   \
                  (status), (needle));                                       \
        err_fix_check(f);                                                    \
    } while (0)

/* The fixture still works after the failures a test provoked. */
static void err_fix_good_call(err_fix *f)
{
    for (int i = 0; i < 3; i++)
        f->c.vals[i] = i == 0 ? f->xu : i == 1 ? f->o : f->v;
    f->c.nwrite = 3;
    f->c.ret = 3;
    uint64_t kv = wb_tensor_version(f->k);
    WBT_OK(wb_call(f->w, f->args, 4, f->outs, 2));
    cr_assert_eq(f->outs[0].t, f->o);
    cr_assert_eq(wb_tensor_storage(f->outs[1].t), wb_tensor_storage(f->y));
    cr_assert_eq(wb_tensor_version(f->k), kv + 1);
    wb_tensor_release(f->outs[0].t);
    wbt_release_last(f->outs[1].t);
    for (int i = 0; i < 3; i++)
        f->outs[i].t = ERR_MARK;
}

/* ======================================================================= */
/* Arguments                                                                */
/* ======================================================================= */

Test(errors, wrong_argument_count)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_fix_spec(&f, WB_MUT_DATA);
        err_fix_start(&f, tier);
        ERR_CALL(&f, 3, 2, WB_ERR_ARITY, "called with 3 arguments; expected 4");
        ERR_CALL(&f, 5, 2, WB_ERR_ARITY, "called with 5 arguments; expected 4");
        ERR_CALL(&f, 0, 2, WB_ERR_ARITY, "called with 0 arguments");
        cr_assert(strstr(wb_last_error(), "spec 'err'") != NULL,
                  "the message names the spec: %s", wb_last_error());
        cr_assert_eq(f.c.calls, 0, "the graph was called");
        err_fix_good_call(&f);
        err_fix_end(&f);
    }
}

Test(errors, too_few_output_slots)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_fix_spec(&f, WB_MUT_DATA);
        err_fix_start(&f, tier);
        ERR_CALL(&f, 4, 1, WB_ERR_ARITY,
                 "called with room for 1 output; expected at least 2");
        ERR_CALL(&f, 4, 0, WB_ERR_ARITY, "room for 0 outputs");
        cr_assert_eq(f.c.calls, 0);
        err_fix_good_call(&f);
        err_fix_end(&f);
    }
}

Test(errors, null_tensor_argument)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_fix_spec(&f, WB_MUT_DATA);
        err_fix_start(&f, tier);
        f.args[1].t = NULL;
        ERR_CALL(&f, 4, 2, WB_ERR_TYPE,
                 "input 1 'y': got NULL; expected a tensor");
        f.args[2].t = NULL;
        ERR_CALL(&f, 4, 2, WB_ERR_TYPE, "input 1 'y': got NULL");
        f.args[1].t = f.y;
        ERR_CALL(&f, 4, 2, WB_ERR_TYPE, "input 2 'k': got NULL");
        f.args[2].t = f.k;
        f.args[0].t = NULL;
        ERR_CALL(&f, 4, 2, WB_ERR_TYPE, "input 0 'x': got NULL");
        f.args[0].t = f.x;
        cr_assert_eq(f.c.calls, 0);
        err_fix_good_call(&f);
        err_fix_end(&f);
    }
}

Test(errors, declared_dtype_mismatch)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_fix_spec(&f, WB_MUT_DATA);
        WBT_OK(wb_spec_declare_input(f.spec, 2, WBT_F64, -1));
        err_fix_start(&f, tier);
        ERR_CALL(&f, 4, 2, WB_ERR_TYPE,
                 "input 2 'k': dtype float32; expected float64");
        cr_assert_eq(f.c.calls, 0);
        err_fix_end(&f);
    }
}

Test(errors, declared_ndim_mismatch)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        DLDataType any = {0, 0, 0};
        err_fix_spec(&f, WB_MUT_DATA);
        WBT_OK(wb_spec_declare_input(f.spec, 0, WBT_F32, 2));
        WBT_OK(wb_spec_declare_input(f.spec, 1, any, 3));
        err_fix_start(&f, tier);
        ERR_CALL(&f, 4, 2, WB_ERR_SHAPE,
                 "input 1 'y': 2 dimensions; expected 3");
        /* The first declared input that differs is the one named. */
        f.args[0].t = f.k;
        ERR_CALL(&f, 4, 2, WB_ERR_SHAPE,
                 "input 0 'x': 1 dimension; expected 2");
        cr_assert_eq(f.c.calls, 0);
        err_fix_end(&f);
    }
}

Test(errors, declared_dtype_differs_in_lanes_only)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        DLDataType f32x2 = {kDLFloat, 32, 2};
        wb_tensor *pair = NULL;
        err_fix_spec(&f, WB_MUT_DATA);
        WBT_OK(wb_spec_declare_input(f.spec, 1, WBT_F32, 2));
        err_fix_start(&f, tier);
        WBT_OK(wb_tensor_new(f32x2, WBT_CPU, 2, (int64_t[]){4, 4}, &pair));
        f.args[1].t = pair;
        wbt_snap sp;
        wbt_snap_take(&sp, pair, NULL);
        ERR_CALL(&f, 4, 2, WB_ERR_TYPE,
                 "input 1 'y': dtype float32x2; expected float32");
        wbt_snap_check(&sp, 0, "pair");
        cr_assert_eq(f.c.calls, 0);
        f.args[1].t = f.y;
        err_fix_good_call(&f);
        wbt_release_last(pair);
        err_fix_end(&f);
    }
}

/* A float32 [4, 4] tensor on a CPU storage numbered 1, wrapping buf. */
static wb_tensor *err_on_cpu1(float *buf)
{
    wb_storage *s;
    wb_tensor *t;
    WBT_OK(wb_storage_wrap(buf, 16 * sizeof *buf, (DLDevice){kDLCPU, 1},
                           NULL, NULL, &s));
    WBT_OK(wb_tensor_from_storage(s, WBT_F32, 2, (int64_t[]){4, 4}, NULL, 0,
                                  &t));
    wb_storage_release(s);
    return t;
}

/* The declared device is part of the word each argument is checked with,
   and a tensor's device follows its storage through set_. */
Test(errors, declared_device_mismatch)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        float buf[16] = {0};
        err_fix_spec(&f, WB_MUT_DATA);
        WBT_OK(wb_spec_declare_input(f.spec, 1, WBT_F32, 2));
        WBT_OK(wb_spec_declare_device(f.spec, 1, WBT_CPU));
        err_fix_start(&f, tier);
        wb_tensor *elsewhere = err_on_cpu1(buf), *moved = wbt_f32(0, 2, 4, 4);
        f.args[1].t = elsewhere;
        ERR_CALL(&f, 4, 2, WB_ERR_DEVICE,
                 "input 1 'y': on device 1:1; expected cpu");
        /* set_ moves no tensor to another device, as torch.Tensor.set_
           moves none. */
        WBT_FAILS(wb_tensor_set_(moved, elsewhere), WB_ERR_DEVICE,
                  "wb_tensor_set_: the source is on device 1:1; the tensor "
                  "on cpu");
        cr_assert_eq(f.c.calls, 0);
        WBT_OK(wb_tensor_set_(moved, f.y));
        f.args[1].t = moved;
        err_fix_good_call(&f);
        wbt_release_last(moved);
        wbt_release_last(elsewhere);
        err_fix_end(&f);
    }
}

/* Storages are numbered 0 to 255 on a device: the id is the top byte of
   that word. */
Test(errors, device_id_out_of_range)
{
    float buf[4];
    wb_storage *s = NULL;
    WBT_FAILS(wb_storage_wrap(buf, sizeof buf, (DLDevice){kDLCPU, 256}, NULL,
                              NULL, &s), WB_ERR_DEVICE,
              "device id 256 is outside 0..255");
    WBT_FAILS(wb_storage_wrap(buf, sizeof buf, (DLDevice){kDLCPU, -1}, NULL,
                              NULL, &s), WB_ERR_DEVICE,
              "device id -1 is outside 0..255");
    cr_assert_null(s);
    /* A spec declares only devices a storage can be on. */
    wb_spec *spec;
    WBT_OK(wb_spec_new("dev", &spec));
    WBT_OK(wb_spec_add_tensor(spec, "x", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_declare_device(spec, 0, (DLDevice){kDLCUDA, 255}));
    WBT_FAILS(wb_spec_declare_device(spec, 0, (DLDevice){kDLCUDA, 256}),
              WB_ERR_SPEC, "input 0: device 2:256 is neither cpu nor cuda:N "
              "with N at most 255");
    WBT_FAILS(wb_spec_declare_device(spec, 0, (DLDevice){kDLCPU, 1}),
              WB_ERR_SPEC, "is neither cpu nor cuda:N");
    wb_spec_free(spec);
}

/* ======================================================================= */
/* The graph                                                                */
/* ======================================================================= */

Test(errors, graph_negative_code)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_fix_spec(&f, WB_MUT_DATA);
        WBT_OK(wb_spec_set_grad_mode_at_end(f.spec, 0));
        err_fix_start(&f, tier);
        /* It wrote every value before failing: all must be released. */
        f.c.ret = -7;
        ERR_CALL(&f, 4, 2, WB_ERR_GRAPH, "the graph failed with code -7");
        cr_assert_eq(f.c.calls, 1);
        cr_assert_eq(f.c.watched_version, 1, "k was bumped before the call");
        cr_assert(wb_grad_enabled(), "no grad mode at the end of a failure");
        /* Half written. */
        f.c.nwrite = 1;
        f.c.ret = -1;
        ERR_CALL(&f, 4, 2, WB_ERR_GRAPH, "failed with code -1");
        err_fix_good_call(&f);
        cr_assert_not(wb_grad_enabled(), "grad mode at the end on success");
        wb_set_grad_enabled(true);
        err_fix_end(&f);
    }
}

Test(errors, graph_returns_too_few_values)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_fix_spec(&f, WB_MUT_DATA);
        err_fix_start(&f, tier);
        f.c.nwrite = 2;
        f.c.ret = 2;
        ERR_CALL(&f, 4, 2, WB_ERR_ARITY,
                 "the graph returned 2 values; expected 3");
        /* It wrote all three but counted two. */
        f.c.nwrite = 3;
        ERR_CALL(&f, 4, 2, WB_ERR_ARITY, "returned 2 values; expected 3");
        f.c.ret = 0;
        ERR_CALL(&f, 4, 2, WB_ERR_ARITY, "returned 0 values");
        cr_assert_eq(f.c.calls, 3);
        err_fix_good_call(&f);
        err_fix_end(&f);
    }
}

Test(errors, graph_returns_too_many_values)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_fix_spec(&f, WB_MUT_DATA);
        err_fix_start(&f, tier);
        f.c.ret = 4;
        ERR_CALL(&f, 4, 2, WB_ERR_ARITY,
                 "the graph returned 4 values; expected 3 (1 updated input, "
                 "2 outputs, 0 intermediate bases)");
        cr_assert_eq(f.c.watched_version, 1);
        err_fix_good_call(&f);
        err_fix_end(&f);
    }
}

Test(errors, graph_returns_null_value)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_fix_spec(&f, WB_MUT_DATA);
        err_fix_start(&f, tier);
        f.c.vals[1] = NULL;
        ERR_CALL(&f, 4, 2, WB_ERR_GRAPH,
                 "the graph returned NULL as value 1; expected a tensor");
        f.c.vals[1] = f.o;
        f.c.vals[0] = NULL;
        f.c.vals[2] = NULL;
        ERR_CALL(&f, 4, 2, WB_ERR_GRAPH, "returned NULL as value 0");
        f.c.vals[0] = f.xu;
        ERR_CALL(&f, 4, 2, WB_ERR_GRAPH, "returned NULL as value 2");
        err_fix_good_call(&f);
        err_fix_end(&f);
    }
}

/* ======================================================================= */
/* Updated values and views                                                 */
/* ======================================================================= */

Test(errors, data_mutation_wrong_dtype)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        wb_tensor *bad = NULL;
        err_fix_spec(&f, WB_MUT_DATA);
        err_fix_start(&f, tier);
        WBT_OK(wb_tensor_new(WBT_F64, WBT_CPU, 2, (int64_t[]){2, 3}, &bad));
        f.c.vals[0] = bad;
        ERR_CALL(&f, 4, 2, WB_ERR_TYPE,
                 "input 0 'x': the updated value has dtype float64; "
                 "expected float32");
        cr_assert_eq(wb_tensor_refcount(bad), 1);
        wbt_release_last(bad);
        err_fix_good_call(&f);
        err_fix_end(&f);
    }
}

/* x is declared 2-d, so its data mutation takes the unrolled CPU copy; a
   value on another CPU device is refused there as in the interpreter. */
Test(errors, data_mutation_value_on_another_device)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        float buf[16] = {0};
        err_fix_spec(&f, WB_MUT_DATA);
        WBT_OK(wb_spec_declare_input(f.spec, 0, WBT_F32, 2));
        err_fix_start(&f, tier);
        wb_tensor *elsewhere = err_on_cpu1(buf), *bad;
        WBT_OK(wb_tensor_as_strided(elsewhere, 2, (int64_t[]){2, 3}, NULL, 0,
                                    &bad));
        f.c.vals[0] = bad;
        ERR_CALL(&f, 4, 2, WB_ERR_DEVICE,
                 "input 0 'x': the updated value is on device 1:1");
        wbt_release_last(bad);
        wbt_release_last(elsewhere);
        err_fix_good_call(&f);
        err_fix_end(&f);
    }
}

Test(errors, data_mutation_wrong_sizes)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_fix_spec(&f, WB_MUT_DATA);
        err_fix_start(&f, tier);
        /* The transpose of what x is, then one more dimension. */
        wb_tensor *t = wbt_f32(0, 2, 3, 2), *u = wbt_f32(0, 3, 2, 3, 1);
        f.c.vals[0] = t;
        ERR_CALL(&f, 4, 2, WB_ERR_SHAPE,
                 "input 0 'x': the updated value's sizes [3, 2] differ from "
                 "the input's [2, 3]");
        f.c.vals[0] = u;
        ERR_CALL(&f, 4, 2, WB_ERR_SHAPE, "sizes [2, 3, 1] differ from the "
                 "input's [2, 3]");
        cr_assert_eq(wb_tensor_refcount(t), 1);
        cr_assert_eq(wb_tensor_refcount(u), 1);
        wbt_release_last(t);
        wbt_release_last(u);
        err_fix_good_call(&f);
        err_fix_end(&f);
    }
}

Test(errors, data_mutation_value_overlaps_input)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_fix_spec(&f, WB_MUT_DATA);
        err_fix_start(&f, tier);
        /* Same storage, same sizes, other strides: a copy would read what
           it has already written. */
        wb_tensor *ov = NULL;
        WBT_OK(wb_tensor_as_strided(f.base, 2, (int64_t[]){2, 3},
                                    (int64_t[]){3, 1}, 0, &ov));
        f.c.vals[0] = ov;
        ERR_CALL(&f, 4, 2, WB_ERR_SHAPE,
                 "input 0 'x': the updated value overlaps the input");
        cr_assert_eq(wb_tensor_refcount(ov), 1);
        wbt_release_last(ov);
        err_fix_good_call(&f);
        err_fix_end(&f);
    }
}

Test(errors, metadata_mutation_view_does_not_fit)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_fix_spec(&f, WB_MUT_METADATA);
        err_fix_start(&f, tier);
        /* x's storage holds 6 floats; a 7-float view cannot be put on it. */
        wb_tensor *big = wbt_f32(0, 1, 7);
        f.c.vals[0] = big;
        ERR_CALL(&f, 4, 2, WB_ERR_SHAPE,
                 "input 0 'x': the updated view does not fit the input's "
                 "storage");
        /* Nor can one that starts past its end. */
        wb_tensor *late = NULL;
        WBT_OK(wb_tensor_as_strided(big, 1, (int64_t[]){1}, (int64_t[]){1},
                                    6, &late));
        f.c.vals[0] = late;
        ERR_CALL(&f, 4, 2, WB_ERR_SHAPE, "does not fit the input's storage");
        wbt_release_last(late);
        wbt_release_last(big);
        err_fix_end(&f);
    }
}

Test(errors, data_metadata_mutation_view_does_not_fit)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_fix_spec(&f, WB_MUT_DATA_METADATA);
        err_fix_start(&f, tier);
        wb_tensor *big = wbt_f32(0, 2, 2, 4);
        f.c.vals[0] = big;
        ERR_CALL(&f, 4, 2, WB_ERR_SHAPE, "the updated view does not fit");
        wbt_release_last(big);
        err_fix_end(&f);
    }
}

Test(errors, aliased_output_view_does_not_fit)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_fix_spec(&f, WB_MUT_DATA);
        err_fix_start(&f, tier);
        /* y holds 16 floats; this view ends at float 24. */
        wb_tensor *sc = wbt_f32(0, 1, 32), *far = NULL;
        WBT_OK(wb_tensor_as_strided(sc, 1, (int64_t[]){4}, (int64_t[]){1},
                                    20, &far));
        f.c.vals[2] = far;
        ERR_CALL(&f, 4, 2, WB_ERR_SHAPE,
                 "output 1 'v' (alias-of-input): the graph's view does not "
                 "fit its base's storage");
        cr_assert_eq(f.c.watched_version, 1);
        wbt_release_last(far);
        wbt_release_last(sc);
        err_fix_good_call(&f);
        err_fix_end(&f);
    }
}

/* A resize that would grow x and a view that was already prepared are
   both dropped when a later view fails. */
Test(errors, late_view_failure_after_resize_and_earlier_view)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        WBT_OK(wb_spec_new("err", &f.spec));
        WBT_OK(wb_spec_set_keep_input_mutations(f.spec, true));
        WBT_OK(wb_spec_add_tensor(f.spec, "x", WB_MUT_RESIZE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(f.spec, "y", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(f.spec, "k", WB_MUT_IN_GRAPH, 0, NULL));
        WBT_OK(wb_spec_add_scalar(f.spec, "n", WB_SCALAR_INT, NULL));
        WBT_OK(wb_spec_add_output(f.spec, "x_tail", WB_OUT_ALIAS_OF_INPUT, 0,
                                  false, 0, NULL));
        WBT_OK(wb_spec_add_output(f.spec, "v", WB_OUT_ALIAS_OF_INPUT, 1,
                                  false, 0, NULL));
        err_fix_start(&f, tier);
        /* x grows from 6 to 12 floats; the first view needs the growth. */
        wb_tensor *grow = wbt_f32(100, 2, 3, 4), *tail = NULL;
        WBT_OK(wb_tensor_as_strided(grow, 1, (int64_t[]){4}, (int64_t[]){1},
                                    8, &tail));
        wb_tensor *sc = wbt_f32(0, 1, 32), *far = NULL;
        WBT_OK(wb_tensor_as_strided(sc, 1, (int64_t[]){4}, (int64_t[]){1},
                                    20, &far));
        f.c.vals[0] = grow;
        f.c.vals[1] = tail;
        f.c.vals[2] = far;
        ERR_CALL(&f, 4, 2, WB_ERR_SHAPE, "output 1 'v' (alias-of-input)");
        cr_assert_eq(wb_tensor_refcount(grow), 1);
        cr_assert_eq(wb_tensor_refcount(tail), 1);
        cr_assert_eq(wb_tensor_refcount(far), 1);

        /* With a good second view the same call goes through. */
        f.c.vals[2] = f.v;
        WBT_OK(wb_call(f.w, f.args, 4, f.outs, 2));
        cr_assert_eq(wb_storage_nbytes(wb_tensor_storage(f.x)),
                     12 * sizeof(float));
        cr_assert_eq(wbt_at(f.outs[0].t, 3), 111.0f);
        wbt_release_last(f.outs[0].t);
        wbt_release_last(f.outs[1].t);

        wbt_release_last(tail);
        wbt_release_last(grow);
        wbt_release_last(far);
        wbt_release_last(sc);
        /* x changed on purpose above; the fixture's snapshots are done. */
        err_fix_end(&f);
    }
}

/* A data mutation that passes its checks is not applied when a later
   mutation fails. */
Test(errors, second_mutation_failure_keeps_the_first_unapplied)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s = NULL;
        WBT_OK(wb_spec_new("two", &s));
        WBT_OK(wb_spec_add_tensor(s, "a", WB_MUT_DATA, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "b", WB_MUT_STORAGE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "c", WB_MUT_DATA, 0, NULL));
        wb_tensor *a = wbt_f32(0, 1, 4), *b = wbt_f32(0, 1, 2);
        wb_tensor *cc = wbt_f32(0, 1, 4);
        wb_tensor *ua = wbt_f32(10, 1, 4), *ub = wbt_f32(20, 1, 8);
        wb_tensor *uc = wbt_f32(30, 1, 5);
        err_ctx c = {.vals = {ua, ub, uc}, .nwrite = 3, .ret = 3,
                     .watch = -1};
        wb_wrapper *w = wbt_wrap(s, err_graph, &c, tier);
        wb_arg args[3] = {{.t = a}, {.t = b}, {.t = cc}};
        wbt_snap sa, sb, sc;
        wbt_snap_take(&sa, a, NULL);
        wbt_snap_take(&sb, b, NULL);
        wbt_snap_take(&sc, cc, NULL);
        WBT_FAILS(wb_call(w, args, 3, NULL, 0), WB_ERR_SHAPE,
                  "input 2 'c': the updated value's sizes [5] differ from "
                  "the input's [4]");
        wbt_snap_check(&sa, 0, "a");
        wbt_snap_check(&sb, 0, "b");
        wbt_snap_check(&sc, 0, "c");
        cr_assert_eq(wb_storage_refcount(wb_tensor_storage(ub)), 1);
        for (int i = 0; i < 3; i++)
            cr_assert_eq(wb_tensor_refcount(c.vals[i]), 1);
        wbt_release_last(ua);
        wbt_release_last(ub);
        wbt_release_last(uc);
        wbt_release_last(a);
        wbt_release_last(b);
        wbt_release_last(cc);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* ======================================================================= */
/* Hooks and guards                                                         */
/* ======================================================================= */

Test(errors, before_call_hook_fails)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_hook h = {&f.log, 'b', 3, 0};
        err_guard g = {&f.log, '0', 'A', 0};
        err_fix_spec(&f, WB_MUT_DATA);
        WBT_OK(wb_spec_set_before_call(f.spec, err_hook_fn, &h));
        WBT_OK(wb_spec_add_guard(f.spec, err_guard_enter, err_guard_leave,
                                 &g));
        WBT_OK(wb_spec_set_grad_mode_at_end(f.spec, 0));
        err_fix_start(&f, tier);
        wb_set_grad_enabled(true);
        ERR_CALL(&f, 4, 2, WB_ERR_HOOK,
                 "the before-call hook failed with code 3");
        cr_assert_eq(f.c.calls, 0, "the graph ran");
        cr_assert_str_eq(f.log.s, "0bA", "the guard was left");
        cr_assert(wb_grad_enabled(), "grad mode restored, not set at end");
        err_fix_end(&f);
    }
}

Test(errors, before_call_hook_fails_in_training_with_detach)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_hook h = {&f.log, 'b', 4, 0};
        WBT_OK(wb_spec_new("err", &f.spec));
        WBT_OK(wb_spec_set_training(f.spec, true));
        WBT_OK(wb_spec_set_keep_input_mutations(f.spec, true));
        WBT_OK(wb_spec_add_tensor(f.spec, "x", WB_MUT_DATA, WB_INPUT_DETACH,
                                  NULL));
        WBT_OK(wb_spec_add_tensor(f.spec, "y", WB_MUT_NONE, WB_INPUT_DETACH,
                                  NULL));
        WBT_OK(wb_spec_add_tensor(f.spec, "k", WB_MUT_IN_GRAPH, 0, NULL));
        WBT_OK(wb_spec_add_scalar(f.spec, "n", WB_SCALAR_INT, NULL));
        WBT_OK(wb_spec_add_output(f.spec, "o", WB_OUT_NON_ALIAS, -1, true, 0,
                                  NULL));
        WBT_OK(wb_spec_add_output(f.spec, "v", WB_OUT_ALIAS_OF_INPUT, 1,
                                  false, 0, NULL));
        WBT_OK(wb_spec_set_before_call(f.spec, err_hook_fn, &h));
        err_fix_start(&f, tier);
        wb_set_grad_enabled(false);
        /* The detached aliases share y's storage: its refcount shows
           whether they were released. */
        ERR_CALL(&f, 4, 2, WB_ERR_HOOK, "before-call hook failed with code 4");
        cr_assert_not(wb_grad_enabled());
        cr_assert_eq(f.c.calls, 0);
        wb_set_grad_enabled(true);
        err_fix_end(&f);
    }
}

Test(errors, guard_enter_fails_and_entered_guards_are_left)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_guard g[4] = {{&f.log, '0', 'A', 0}, {&f.log, '1', 'B', 0},
                          {&f.log, '2', 'C', 5}, {&f.log, '3', 'D', 0}};
        err_fix_spec(&f, WB_MUT_DATA);
        for (int i = 0; i < 4; i++)
            WBT_OK(wb_spec_add_guard(f.spec, err_guard_enter,
                                     err_guard_leave, &g[i]));
        err_fix_start(&f, tier);
        ERR_CALL(&f, 4, 2, WB_ERR_HOOK, "guard 2 failed to enter with code 5");
        cr_assert_str_eq(f.log.s, "012BA");
        cr_assert_eq(f.c.calls, 0);
        /* The first guard failing leaves nothing. */
        f.log.n = 0;
        f.log.s[0] = '\0';
        g[2].rc = 0;
        g[0].rc = -2;
        ERR_CALL(&f, 4, 2, WB_ERR_HOOK, "guard 0 failed to enter with code -2");
        cr_assert_str_eq(f.log.s, "0");
        /* And all of them entered and left around a good call. */
        f.log.n = 0;
        f.log.s[0] = '\0';
        g[0].rc = 0;
        err_fix_good_call(&f);
        cr_assert_str_eq(f.log.s, "0123DCBA");
        err_fix_end(&f);
    }
}

Test(errors, first_call_hook_fails)
{
    WBT_EACH_TIER(tier) {
        err_fix f = {0};
        err_hook h = {&f.log, 'f', 9, 0};
        err_guard g = {&f.log, '0', 'A', 0};
        err_fix_spec(&f, WB_MUT_DATA);
        WBT_OK(wb_spec_set_first_call(f.spec, err_hook_fn, &h));
        WBT_OK(wb_spec_add_guard(f.spec, err_guard_enter, err_guard_leave,
                                 &g));
        err_fix_start(&f, tier);
        ERR_CALL(&f, 4, 2, WB_ERR_HOOK, "the first-call hook failed with "
                 "code 9");
        cr_assert_str_eq(f.log.s, "f", "nothing ran after the hook");
        cr_assert_eq(f.c.calls, 0);
        /* The failed call changed nothing, so the next call is still the
           first and runs the hook again; once it succeeds it never runs
           again. */
        ERR_CALL(&f, 4, 2, WB_ERR_HOOK, "code 9");
        cr_assert_eq(h.count, 2);
        h.rc = 0;
        err_fix_good_call(&f);
        err_fix_good_call(&f);
        cr_assert_eq(h.count, 3);
        cr_assert_str_eq(f.log.s, "fff0A0A");
        err_fix_end(&f);
    }
}

/* ======================================================================= */
/* wb_wrapper_new and wb_call arguments                                     */
/* ======================================================================= */

static int err_noop_graph(void *ctx, const wb_arg *args, int nargs,
                          wb_value *values, int nvalues)
{
    (void)ctx; (void)args; (void)nargs; (void)values; (void)nvalues;
    return 0;
}

Test(errors, wrapper_new_bad_arguments)
{
    wb_spec *s = NULL;
    WBT_OK(wb_spec_new("ok", &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    wb_wrapper *w = (wb_wrapper *)(void *)&err_sentinel;
    wb_options bad = {.tier = (wb_tier)99};

    WBT_FAILS(wb_wrapper_new(NULL, err_noop_graph, NULL, NULL, &w),
              WB_ERR_INVALID, "wb_wrapper_new: NULL spec");
    cr_assert_eq(w, (wb_wrapper *)(void *)&err_sentinel, "out written");
    WBT_FAILS(wb_wrapper_new(s, NULL, NULL, NULL, &w), WB_ERR_INVALID,
              "graph");
    cr_assert_eq(w, (wb_wrapper *)(void *)&err_sentinel, "out written");
    WBT_FAILS(wb_wrapper_new(s, err_noop_graph, NULL, NULL, NULL),
              WB_ERR_INVALID, "out");
    WBT_FAILS(wb_wrapper_new(s, err_noop_graph, NULL, &bad, &w),
              WB_ERR_INVALID, "wb_wrapper_new: unknown tier 99");
    cr_assert_eq(w, (wb_wrapper *)(void *)&err_sentinel, "out written");

    /* The default tier works and is tcc. */
    w = NULL;
    WBT_OK(wb_wrapper_new(s, err_noop_graph, NULL, NULL, &w));
    cr_assert_eq(wb_wrapper_tier(w), WB_TIER_TCC);
    wb_wrapper_free(w);
    wb_spec_free(s);
}

Test(errors, wrapper_new_invalid_spec)
{
    WBT_EACH_TIER(tier) {
        wb_options o = {.tier = tier};
        wb_wrapper *w = (wb_wrapper *)(void *)&err_sentinel;
        wb_spec *s = NULL;
        WBT_OK(wb_spec_new("broken", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "o", WB_OUT_IS_INPUT, 3, false, 0,
                                  NULL));
        WBT_FAILS(wb_wrapper_new(s, err_noop_graph, NULL, &o, &w),
                  WB_ERR_SPEC, "spec 'broken': output 0 'o': is-input base 3 "
                  "is out of range");
        cr_assert_eq(w, (wb_wrapper *)(void *)&err_sentinel, "out written");

        /* An in-graph mutation without keep-input-mutations. */
        wb_spec *s2 = NULL;
        WBT_OK(wb_spec_new("broken2", &s2));
        WBT_OK(wb_spec_add_tensor(s2, "x", WB_MUT_IN_GRAPH, 0, NULL));
        WBT_FAILS(wb_wrapper_new(s2, err_noop_graph, NULL, &o, &w),
                  WB_ERR_SPEC, "needs keep-input-mutations");
        cr_assert_eq(w, (wb_wrapper *)(void *)&err_sentinel, "out written");
        wb_spec_free(s2);
        wb_spec_free(s);
    }
}

Test(errors, call_null_wrapper_args_or_outs)
{
    WBT_FAILS(wb_call(NULL, NULL, 0, NULL, 0), WB_ERR_INVALID,
              "wb_call: NULL wrapper");
    WBT_EACH_TIER(tier) {
        wb_spec *s = NULL;
        WBT_OK(wb_spec_new("nulls", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "o", WB_OUT_IS_INPUT, 0, false, 0,
                                  NULL));
        err_ctx c = {.nwrite = 0, .ret = 1, .watch = -1};
        wb_wrapper *w = wbt_wrap(s, err_graph, &c, tier);
        wb_tensor *x = wbt_f32(0, 1, 2);
        wb_arg a[1] = {{.t = x}};
        wb_value o[1] = {{ERR_MARK}};
        WBT_FAILS(wb_call(w, NULL, 1, o, 1), WB_ERR_INVALID,
                  "NULL wrapper, args or outs");
        WBT_FAILS(wb_call(w, a, 1, NULL, 1), WB_ERR_INVALID,
                  "NULL wrapper, args or outs");
        cr_assert_eq(o[0].t, ERR_MARK);
        cr_assert_eq(c.calls, 0);
        cr_assert_eq(wb_tensor_refcount(x), 1);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);

        /* NULL arrays with counts of 0 are no error: a graph of no
           arguments and no returns is called. */
        WBT_OK(wb_spec_parse("empty() -> ()", &s));
        c = (err_ctx){.nwrite = 0, .ret = 0, .watch = -1};
        w = wbt_wrap(s, err_graph, &c, tier);
        WBT_OK(wb_call(w, NULL, 0, NULL, 0));
        cr_assert_eq(c.calls, 1);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* Under libtcc, runs of like argument checks are one call each of the
   runtime's unrolled loops (wb_rt_args_bad and its kin); a bad argument
   anywhere in a run must be named exactly as the interpreter names it.
   Inputs 0-9 declare their whole word (a run of a known count, ten), 10
   is a scalar, 11-13 declare dtype and ndim, 14-20 declare nothing (NULL
   checks only) and 21-37 declare their whole word again (more than the
   known counts: two loops of eight, then one). */
#define RUNS_N 38
Test(errors, argument_runs_name_each_bad_argument)
{
    char text[4096];
    int len = snprintf(text, sizeof text, "runs(");
    for (int i = 0; i < RUNS_N; i++) {
        const char *decl = i == 10 ? "" :
                           i >= 11 && i <= 13 ? " [dtype=float32, ndim=1]" :
                           i >= 14 && i <= 20 ? "" :
                           " [dtype=float32, ndim=2, device=cpu]";
        len += snprintf(text + len, sizeof text - (size_t)len, "%s%s x%d%s",
                        i ? ", " : "", i == 10 ? "int" : "Tensor", i, decl);
    }
    snprintf(text + len, sizeof text - (size_t)len, ") -> Tensor out");
    wb_spec *s = NULL;
    WBT_OK(wb_spec_parse(text, &s));
    wb_tensor *m2 = wbt_f32(0, 2, 2, 2), *v1 = wbt_f32(0, 1, 4);
    wb_tensor *bad = wbt_f32(0, 3, 1, 1, 1), *out = wbt_f32(0, 1, 1);
    wb_arg a[RUNS_N];
    for (int i = 0; i < RUNS_N; i++)
        a[i].t = i >= 11 && i <= 13 ? v1 : m2;
    a[10] = (wb_arg){.i = 3};
    WBT_EACH_TIER(tier) {
        err_ctx c = {.nwrite = 1, .ret = 1, .watch = -1, .vals = {out}};
        wb_wrapper *w = wbt_wrap(s, err_graph, &c, tier);
        if (tier == WB_TIER_TCC) {
            const char *src = wb_wrapper_source(w);
            cr_assert(strstr(src, "wb_rt_args_bad10(a, "));
            cr_assert(strstr(src, "wb_rt_args_bad_masked(a + 11, 3, "));
            cr_assert(strstr(src, "wb_rt_args_missing(a + 14, 7)"));
            cr_assert(strstr(src, "wb_rt_args_bad(a + 21, 17, "));
        }
        for (int i = 0; i < RUNS_N; i++) {
            if (i == 10)
                continue;
            char want[64];
            wb_value o[1] = {{ERR_MARK}};
            wb_tensor *keep = a[i].t;
            a[i].t = NULL;
            snprintf(want, sizeof want, "input %d 'x%d': got NULL", i, i);
            WBT_FAILS(wb_call(w, a, RUNS_N, o, 1), WB_ERR_TYPE, want);
            if (i < 14 || i > 20) {
                a[i].t = bad;
                snprintf(want, sizeof want, "input %d 'x%d': 3 dimensions", i,
                         i);
                WBT_FAILS(wb_call(w, a, RUNS_N, o, 1), WB_ERR_SHAPE, want);
            }
            a[i].t = keep;
            cr_assert_eq(o[0].t, ERR_MARK);
        }
        cr_assert_eq(c.calls, 0, "the graph ran after a bad argument");
        wb_value o[1] = {{NULL}};
        WBT_OK(wb_call(w, a, RUNS_N, o, 1));
        cr_assert_eq(o[0].t, out);
        wb_tensor_release(o[0].t);
        wb_wrapper_free(w);
    }
    wbt_release_last(m2);
    wbt_release_last(v1);
    wbt_release_last(bad);
    wbt_release_last(out);
    wb_spec_free(s);
}

/* The tcc wrapper w's text holds each of the n calls. */
static void err_assert_calls(wb_wrapper *w, const char *const *calls,
                             size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(strstr(wb_wrapper_source(w), calls[i]), "no %s", calls[i]);
}

/* Runs of data mutations and of views reach libtcc as one call each of the
   runtime's loops (wb_rt_prep_data_1d_run and its kin, wb_rt_prep_views
   and their commits); a failure anywhere in a run must be named as the
   interpreter names it and leave every input as it was.  The spec puts
   every run at offsets of its own: argument 0 is a scalar and 1 a plain
   tensor; 2-3 are data mutations of one dimension (values 0-1) and 4-5 of
   two (values 2-3), two runs; value 4 is output 0, not an alias; output 1
   is a lone view of 6 (view 0), and outputs 2-4 a run of views of 8-10
   (values 6-8, views 1-3), after the plain tensor 7. */
#define VRUNS_ARGS 11
#define VRUNS_VALUES 9
Test(errors, mutation_and_view_runs_name_each_failure)
{
    const char *text =
        "vruns(int s, Tensor p, "
        "Tensor(m0!) x0 [dtype=float32, ndim=1, device=cpu], "
        "Tensor(m1!) x1 [dtype=float32, ndim=1, device=cpu], "
        "Tensor(m2!) x2 [dtype=float32, ndim=2, device=cpu], "
        "Tensor(m3!) x3 [dtype=float32, ndim=2, device=cpu], "
        "Tensor(a0) y0, Tensor q, Tensor(a1) y1, Tensor(a2) y2, "
        "Tensor(a3) y3) -> "
        "(Tensor o0, Tensor(a0) w0, Tensor(a1) w1, Tensor(a2) w2, "
        "Tensor(a3) w3)";
    wb_spec *s = NULL;
    WBT_OK(wb_spec_parse(text, &s));
    WBT_EACH_TIER(tier) {
        wb_tensor *x[4], *u[4], *y[4], *v[4], *out = wbt_f32(0, 1, 1);
        wb_tensor *p = wbt_f32(0, 1, 2), *q = wbt_f32(0, 1, 2);
        wb_tensor *long1 = wbt_f32(0, 1, 5), *wide2 = wbt_f32(0, 2, 2, 3);
        wb_tensor *far = wbt_f32(0, 1, 64);
        for (int i = 0; i < 4; i++) {
            float f = (float)(10 * i);
            x[i] = i < 2 ? wbt_f32(f, 1, 4) : wbt_f32(f, 2, 2, 2);
            u[i] = i < 2 ? wbt_f32(100 + f, 1, 4) : wbt_f32(100 + f, 2, 2, 2);
            y[i] = wbt_f32(0, 1, 8);
        }
        /* v[2] lies on a storage of its own, small enough for y[2]'s: the
           full check makes the view. */
        WBT_OK(wb_tensor_as_strided(y[0], 1, (int64_t[]){4}, (int64_t[]){1},
                                    2, &v[0]));
        WBT_OK(wb_tensor_as_strided(y[1], 1, (int64_t[]){2}, (int64_t[]){2},
                                    1, &v[1]));
        v[2] = wbt_f32(0, 1, 3);
        WBT_OK(wb_tensor_as_strided(y[3], 2, (int64_t[]){2, 2},
                                    (int64_t[]){1, 2}, 0, &v[3]));
        wb_arg a[VRUNS_ARGS] = {
            {.i = 7}, {.t = p}, {.t = x[0]}, {.t = x[1]}, {.t = x[2]},
            {.t = x[3]}, {.t = y[0]}, {.t = q}, {.t = y[1]}, {.t = y[2]},
            {.t = y[3]}};
        err_ctx c = {.vals = {u[0], u[1], u[2], u[3], out, v[0], v[1], v[2],
                              v[3]},
                     .nwrite = VRUNS_VALUES, .ret = VRUNS_VALUES,
                     .watch = -1};
        wb_wrapper *w = wbt_wrap(s, err_graph, &c, tier);
        if (tier == WB_TIER_TCC) {
            static const char *const calls[] = {
                "wb_rt_prep_data_1d_run(e, 2, a + 2, r, 2)",
                "wb_rt_prep_data_2d_run(e, 4, a + 4, r + 2, 2)",
                "wb_rt_prep_views(e, 2, a + 8, r + 6, v + 1, 3)",
                "wb_rt_commit_data_1d_run(a + 2, r, 2)",
                "wb_rt_commit_data_2d_run(a + 4, r + 2, 2)",
                "wb_rt_commit_views_plain(outs + 2, v + 1, r + 6, 3)"};
            err_assert_calls(w, calls, sizeof calls / sizeof *calls);
        }
        /* Each value in turn spoiled: a mutation's of the wrong sizes, a
           view's past the end of its base. */
        for (int f = 0; f < VRUNS_VALUES; f++) {
            if (f == 4)
                continue;  /* output 0 aliases nothing: nothing to check */
            wb_tensor **slot = &c.vals[f], *keep = *slot;
            *slot = f < 2 ? long1 : f < 4 ? wide2 : far;
            wbt_snap snap[VRUNS_ARGS];
            for (int i = 1; i < VRUNS_ARGS; i++)
                wbt_snap_take(&snap[i], a[i].t, NULL);
            wb_value o[5] = {{ERR_MARK}, {ERR_MARK}, {ERR_MARK}, {ERR_MARK},
                             {ERR_MARK}};
            char want[96];
            if (f < 4)
                snprintf(want, sizeof want, "input %d 'x%d': the updated "
                         "value's sizes %s differ from the input's %s",
                         f + 2, f, f < 2 ? "[5]" : "[2, 3]",
                         f < 2 ? "[4]" : "[2, 2]");
            else
                snprintf(want, sizeof want, "output %d 'w%d' "
                         "(alias-of-input): the graph's view does not fit",
                         f - 4, f - 5);
            WBT_FAILS(wb_call(w, a, VRUNS_ARGS, o, 5), WB_ERR_SHAPE, want);
            for (int i = 1; i < VRUNS_ARGS; i++)
                wbt_snap_check(&snap[i], 0, "an argument");
            for (int k = 0; k < 5; k++)
                cr_assert_eq(o[k].t, ERR_MARK, "outs[%d] was written", k);
            for (int i = 0; i < VRUNS_VALUES; i++)
                cr_assert_eq(wb_tensor_refcount(c.vals[i]), 1,
                             "value %d leaked", i);
            *slot = keep;
        }
        wb_value o[5] = {{NULL}};
        WBT_OK(wb_call(w, a, VRUNS_ARGS, o, 5));
        for (int i = 0; i < 4; i++) {
            float last = i < 2 ? wbt_at(x[i], 3) : wbt_at(x[i], 1, 1);
            cr_assert_eq(last, 103.0f + 10 * i, "x%d: %g", i, last);
            cr_assert_eq(wb_tensor_version(x[i]), 1);
            cr_assert_eq(wb_tensor_storage(o[1 + i].t),
                         wb_tensor_storage(y[i]));
            cr_assert_eq(wb_tensor_ndim(o[1 + i].t), wb_tensor_ndim(v[i]));
            wbt_release_last(o[1 + i].t);
        }
        cr_assert_eq(o[0].t, out);
        wb_tensor_release(o[0].t);
        for (int i = 0; i < 4; i++) {
            wbt_release_last(x[i]);
            wbt_release_last(u[i]);
            wbt_release_last(v[i]);
            wbt_release_last(y[i]);
        }
        wbt_release_last(out);
        wbt_release_last(p);
        wbt_release_last(q);
        wbt_release_last(long1);
        wbt_release_last(wide2);
        wbt_release_last(far);
        wb_wrapper_free(w);
    }
    wb_spec_free(s);
}

/* Views that split one input (split, chunk, unbind) reach libtcc as one
   call of wb_rt_prep_views_of and one of the views' commit, and more than
   16 tensor values have their check that none is NULL in one call of
   wb_rt_args_missing; a value that is NULL or a view that does not fit,
   anywhere in those runs, is named as the interpreter names it, and
   nothing changes.  Value 0 is output 0, not an alias; values 1-20 are
   outputs 1-20, views of y. */
#define VSPLIT_VIEWS 20
#define VSPLIT_VALUES (VSPLIT_VIEWS + 1)
Test(errors, views_of_one_input_name_each_failure)
{
    char text[1024];
    int len = snprintf(text, sizeof text, "vsplit(Tensor p, Tensor(a) y) -> "
                       "(Tensor o0");
    for (int i = 0; i < VSPLIT_VIEWS; i++)
        len += snprintf(text + len, sizeof text - (size_t)len,
                        ", Tensor(a) w%d", i);
    snprintf(text + len, sizeof text - (size_t)len, ")");
    wb_spec *s = NULL;
    WBT_OK(wb_spec_parse(text, &s));
    WBT_EACH_TIER(tier) {
        wb_tensor *p = wbt_f32(0, 1, 2), *y = wbt_f32(0, 1, 2 * VSPLIT_VIEWS);
        wb_tensor *out = wbt_f32(0, 1, 1), *far = wbt_f32(0, 1, 64);
        err_ctx c = {.vals = {out}, .nwrite = VSPLIT_VALUES,
                     .ret = VSPLIT_VALUES, .watch = -1};
        for (int i = 0; i < VSPLIT_VIEWS; i++)
            WBT_OK(wb_tensor_as_strided(y, 1, (int64_t[]){2}, (int64_t[]){1},
                                        2 * i, &c.vals[1 + i]));
        wb_arg a[2] = {{.t = p}, {.t = y}};
        wb_wrapper *w = wbt_wrap(s, err_graph, &c, tier);
        if (tier == WB_TIER_TCC) {
            static const char *const calls[] = {
                "wb_rt_args_missing(r, 21)",
                "wb_rt_prep_views_of(e, 1, a + 1, r + 1, v, 20)",
                "wb_rt_commit_views_plain(outs + 1, v, r + 1, 20)"};
            err_assert_calls(w, calls, sizeof calls / sizeof *calls);
        }
        /* Each value in turn NULL, then each view's too far. */
        for (int f = 0; f < 2 * VSPLIT_VALUES; f++) {
            int at = f % VSPLIT_VALUES;
            bool null = f < VSPLIT_VALUES;
            if (!null && at == 0)
                continue;  /* output 0 aliases nothing: nothing to fit */
            wb_tensor *keep = c.vals[at];
            c.vals[at] = null ? NULL : far;
            wbt_snap snap[2];
            for (int i = 0; i < 2; i++)
                wbt_snap_take(&snap[i], a[i].t, NULL);
            wb_value o[VSPLIT_VALUES];
            for (int k = 0; k < VSPLIT_VALUES; k++)
                o[k].t = ERR_MARK;
            char want[96];
            if (null)
                snprintf(want, sizeof want, "returned NULL as value %d", at);
            else
                snprintf(want, sizeof want, "output %d 'w%d' "
                         "(alias-of-input): the graph's view does not fit",
                         at, at - 1);
            WBT_FAILS(wb_call(w, a, 2, o, VSPLIT_VALUES),
                      null ? WB_ERR_GRAPH : WB_ERR_SHAPE, want);
            for (int i = 0; i < 2; i++)
                wbt_snap_check(&snap[i], 0, "an argument");
            for (int k = 0; k < VSPLIT_VALUES; k++)
                cr_assert_eq(o[k].t, ERR_MARK, "outs[%d] was written", k);
            c.vals[at] = keep;
            for (int i = 0; i < VSPLIT_VALUES; i++)
                cr_assert_eq(wb_tensor_refcount(c.vals[i]), 1,
                             "value %d leaked", i);
        }
        wb_value o[VSPLIT_VALUES] = {{NULL}};
        WBT_OK(wb_call(w, a, 2, o, VSPLIT_VALUES));
        cr_assert_eq(o[0].t, out);
        wb_tensor_release(o[0].t);
        for (int i = 0; i < VSPLIT_VIEWS; i++) {
            cr_assert_eq(wb_tensor_storage(o[1 + i].t), wb_tensor_storage(y));
            cr_assert_eq(wb_tensor_offset(o[1 + i].t), 2 * i);
            wbt_release_last(o[1 + i].t);
            wbt_release_last(c.vals[1 + i]);
        }
        wbt_release_last(out);
        wbt_release_last(p);
        wbt_release_last(y);
        wbt_release_last(far);
        wb_wrapper_free(w);
    }
    wb_spec_free(s);
}

/* ---- what wrapper constructors refuse, named after the one called ---- */

/* Option flags this version does not know are refused, not ignored: a
   program built against a newer header would otherwise lose what it
   asked for without a word. */
Test(errors, wrapper_new_unknown_option_flags)
{
    wb_spec *s = NULL;
    WBT_OK(wb_spec_new("ok", &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    const wb_spec *specs[1] = {s};
    wb_graph_fn graphs[1] = {err_noop_graph};
    WBT_EACH_TIER(tier) {
        wb_wrapper *w = (wb_wrapper *)(void *)&err_sentinel;
        wb_options o = {.tier = tier, .flags = WB_OPT_NO_SHARE | 0x4u};
        WBT_FAILS(wb_wrapper_new(s, err_noop_graph, NULL, &o, &w),
                  WB_ERR_INVALID, "wb_wrapper_new: unknown option flags 0x4");
        cr_assert_eq(w, (wb_wrapper *)(void *)&err_sentinel, "out written");
        o.flags = 0x80000010u;
        WBT_FAILS(wb_wrappers_new(1, specs, graphs, NULL, &o, &w),
                  WB_ERR_INVALID,
                  "wb_wrappers_new: unknown option flags 0x80000010");
        cr_assert_eq(w, (wb_wrapper *)(void *)&err_sentinel, "out written");
        /* Every known flag is still taken. */
        o.flags = WB_OPT_ALL;
        WBT_OK(wb_wrapper_new(s, err_noop_graph, NULL, &o, &w));
        wb_wrapper_free(w);
    }
    wb_spec_free(s);
}

static int err_aot_entry(const wb_env *e, const wb_arg *args, int nargs,
                         wb_value *outs, int nouts)
{
    (void)e; (void)args; (void)nargs; (void)outs; (void)nouts;
    return WB_OK;
}

/* wb_wrapper_new is built on wb_wrappers_new, and every constructor on one
   allocator; each message still names the function the caller called. */
Test(errors, constructor_messages_name_the_function_called)
{
    wb_spec *s = NULL;
    char fp[WB_FINGERPRINT_LEN + 1];
    WBT_OK(wb_spec_new("ok", &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_fingerprint(s, fp));
    wb_wrapper *w = (wb_wrapper *)(void *)&err_sentinel;
    wb_options aot = {.tier = WB_TIER_AOT}, bad = {.tier = (wb_tier)99};

    WBT_FAILS(wb_wrapper_new(s, err_noop_graph, NULL, NULL, NULL),
              WB_ERR_INVALID, "wb_wrapper_new: NULL out");
    WBT_FAILS(wb_wrapper_new(s, NULL, NULL, NULL, &w), WB_ERR_INVALID,
              "wb_wrapper_new: NULL graph");
    WBT_FAILS(wb_wrapper_new(s, err_noop_graph, NULL, &aot, &w),
              WB_ERR_INVALID, "wb_wrapper_new: aot wrappers come from "
              "wb_wrapper_new_aot");

    const wb_spec *specs[2] = {s, NULL};
    wb_graph_fn graphs[2] = {err_noop_graph, err_noop_graph};
    WBT_FAILS(wb_wrappers_new(2, specs, graphs, NULL, NULL, &w),
              WB_ERR_INVALID, "wb_wrappers_new: specs[1] is NULL");
    specs[1] = s;
    graphs[0] = NULL;
    WBT_FAILS(wb_wrappers_new(2, specs, graphs, NULL, NULL, &w),
              WB_ERR_INVALID, "wb_wrappers_new: graphs[0] is NULL");
    graphs[0] = err_noop_graph;
    WBT_FAILS(wb_wrappers_new(2, specs, graphs, NULL, &aot, &w),
              WB_ERR_INVALID, "wb_wrappers_new: aot wrappers");
    WBT_FAILS(wb_wrappers_new(2, specs, graphs, NULL, &bad, &w),
              WB_ERR_INVALID, "wb_wrappers_new: unknown tier 99");

    WBT_FAILS(wb_wrapper_new_aot(NULL, err_aot_entry, fp, err_noop_graph,
                                 NULL, &w),
              WB_ERR_INVALID, "wb_wrapper_new_aot: NULL spec");
    WBT_FAILS(wb_wrapper_new_aot(s, err_aot_entry, fp, NULL, NULL, &w),
              WB_ERR_INVALID, "wb_wrapper_new_aot: NULL graph");
    WBT_FAILS(wb_wrapper_new_aot(s, err_aot_entry, fp, err_noop_graph, NULL,
                                 NULL),
              WB_ERR_INVALID, "wb_wrapper_new_aot: NULL out");
    cr_assert_eq(w, (wb_wrapper *)(void *)&err_sentinel, "out written");

    /* The fingerprint it was given works. */
    WBT_OK(wb_wrapper_new_aot(s, err_aot_entry, fp, err_noop_graph, NULL,
                              &w));
    cr_assert_eq(wb_wrapper_tier(w), WB_TIER_AOT);
    wb_wrapper_free(w);
    wb_spec_free(s);
}

/* A stale fingerprint that agrees with the library's on its first 16
   digits or more: the message shows each up to the first digit that
   differs, so that the two shown are never the same. */
Test(errors, aot_fingerprint_message_shows_where_they_differ)
{
    wb_spec *s = NULL;
    char fp[WB_FINGERPRINT_LEN + 1], stale[WB_FINGERPRINT_LEN + 1];
    char want[WB_FINGERPRINT_LEN + 64];
    WBT_OK(wb_spec_new("ok", &s));
    WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
    WBT_OK(wb_spec_fingerprint(s, fp));
    const int at[] = {20, 16, 63, 3};
    for (size_t k = 0; k < sizeof at / sizeof *at; k++) {
        int d = at[k];
        wb_wrapper *w = (wb_wrapper *)(void *)&err_sentinel;
        memcpy(stale, fp, sizeof fp);
        stale[d] = fp[d] == '0' ? '1' : '0';
        int n = d < 16 ? 16 : d + 1;
        const char *more = n < WB_FINGERPRINT_LEN ? "..." : "";
        snprintf(want, sizeof want, "fingerprint %.*s%s, but", n, stale,
                 more);
        WBT_FAILS(wb_wrapper_new_aot(s, err_aot_entry, stale, err_noop_graph,
                                     NULL, &w),
                  WB_ERR_SPEC, want);
        snprintf(want, sizeof want, "library generates %.*s%s for the spec",
                 n, fp, more);
        cr_assert(strstr(wb_last_error(), want) != NULL,
                  "message '%s' lacks '%s'", wb_last_error(), want);
        cr_assert(strstr(wb_last_error(), "regenerate it with `wrapbake "
                         "emit --aot`") != NULL, "%s", wb_last_error());
        cr_assert_eq(w, (wb_wrapper *)(void *)&err_sentinel, "out written");
    }
    /* A fingerprint that is too short is shown whole. */
    WBT_FAILS(wb_wrapper_new_aot(s, err_aot_entry, "abc", err_noop_graph,
                                 NULL, &(wb_wrapper *){NULL}),
              WB_ERR_SPEC, "fingerprint abc, but");
    wb_spec_free(s);
}
