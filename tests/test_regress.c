/*
 * Regression tests for defects found in review: each names what went wrong.
 */
#include "helpers.h"

static wb_tensor *regress_vals[4];
static int regress_nvals;

static int regress_graph(void *ctx, const wb_arg *a, int na, wb_value *v,
                         int nv)
{
    (void)ctx; (void)a; (void)na;
    for (int i = 0; i < nv && i < regress_nvals; i++)
        v[i].t = wb_tensor_retain(regress_vals[i]);
    return regress_nvals;
}

/* Two resized views of one storage each planned growth from the old size;
   the second commit then copied the first's larger buffer into its smaller
   one.  Such calls are refused before the graph runs. */
Test(regress, resized_inputs_sharing_a_storage_are_refused)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("two_resizes", &s));
        WBT_OK(wb_spec_add_tensor(s, "a", WB_MUT_RESIZE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "b", WB_MUT_RESIZE, 0, NULL));
        wb_tensor *base = wbt_f32(0, 1, 4), *a, *b;
        WBT_OK(wb_tensor_as_strided(base, 1, (int64_t[]){2}, NULL, 0, &a));
        WBT_OK(wb_tensor_as_strided(base, 1, (int64_t[]){2}, NULL, 2, &b));
        regress_vals[0] = wbt_f32(1, 1, 100);
        regress_vals[1] = wbt_f32(1, 1, 50);
        regress_nvals = 2;
        wb_wrapper *w = wbt_wrap(s, regress_graph, NULL, tier);
        wb_arg args[2] = {{.t = a}, {.t = b}};
        WBT_FAILS(wb_call(w, args, 2, NULL, 0), WB_ERR_INVALID,
                  "input 1 'b' shares a storage with input 0 'a'");
        cr_assert_eq(wb_storage_nbytes(wb_tensor_storage(base)), 16);
        cr_assert_eq(wb_tensor_version(base), 0);
        cr_assert_eq(wb_tensor_refcount(regress_vals[0]), 1, "graph ran");
        wb_tensor_release(a);
        wb_tensor_release(b);
        wbt_release_last(base);
        wbt_release_last(regress_vals[0]);
        wbt_release_last(regress_vals[1]);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* A resized input whose bytes a DLPack export hands out, imported back
   as another input: the growth freed the bytes the other storage still
   pointed at, and the data mutation after it wrote into freed memory.
   A storage that an export holds does not grow: the call is refused in
   its check, the graph's values released, nothing written. */
Test(regress, growth_of_an_exported_storage_is_refused)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("exported", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_RESIZE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_DATA, 0, NULL));
        wb_tensor *x = wbt_f32(0, 1, 4), *y = NULL;
        DLManagedTensor *mt = NULL;
        WBT_OK(wb_tensor_to_dlpack(x, &mt));
        WBT_OK(wb_tensor_from_dlpack(mt, &y));
        regress_vals[0] = wbt_f32(1, 1, 16);
        regress_vals[1] = wbt_f32(5, 1, 4);
        regress_nvals = 2;
        wb_wrapper *w = wbt_wrap(s, regress_graph, NULL, tier);
        wb_arg args[2] = {{.t = x}, {.t = y}};
        WBT_FAILS(wb_call(w, args, 2, NULL, 0), WB_ERR_INVALID,
                  "input 0 'x': cannot grow a storage that a DLPack export");
        cr_assert_eq(wb_storage_nbytes(wb_tensor_storage(x)), 16);
        cr_assert_eq(wbt_at(y, 3), 3.0f, "a refused call wrote");
        cr_assert_eq(wb_tensor_version(x), 0);
        cr_assert_eq(wb_tensor_version(y), 0);
        cr_assert_eq(wb_tensor_refcount(regress_vals[0]), 1);
        /* Outside a call too, while the import lives; nor does the
           import itself grow, in a call or outside; then x grows. */
        WBT_FAILS(wb_tensor_resize_(x, 1, (int64_t[]){8}), WB_ERR_INVALID,
                  "DLPack export");
        wb_arg yx[2] = {{.t = y}, {.t = x}};
        WBT_FAILS(wb_call(w, yx, 2, NULL, 0), WB_ERR_INVALID,
                  "input 0 'x': cannot grow a storage imported from DLPack");
        WBT_FAILS(wb_tensor_resize_(y, 1, (int64_t[]){8}), WB_ERR_INVALID,
                  "imported from DLPack");
        cr_assert_eq(wb_storage_nbytes(wb_tensor_storage(y)), 16);
        cr_assert_eq(wb_tensor_storage(y) != wb_tensor_storage(x), true);
        cr_assert_eq(wb_storage_data(wb_tensor_storage(y)),
                     wb_storage_data(wb_tensor_storage(x)));
        cr_assert_eq(wb_tensor_version(y), 0);
        wbt_release_last(y);
        WBT_OK(wb_tensor_resize_(x, 1, (int64_t[]){8}));
        cr_assert_eq(wb_storage_nbytes(wb_tensor_storage(x)), 32);
        wbt_release_last(x);
        wbt_release_last(regress_vals[0]);
        wbt_release_last(regress_vals[1]);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

static void regress_count_deletes(void *ctx, void *data)
{
    (void)data;
    ++*(int *)ctx;
}

/* A resize mutation grew an input over memory the caller wrapped
   (wb_storage_wrap) and handed the caller's block to its deleter, where
   torch refuses to grow a storage from torch.from_blob.  Such a growth is
   refused in the check phase, nothing written; a resize within the
   caller's memory goes through. */
Test(regress, growth_of_a_wrapped_storage_is_refused)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("wrapped", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_RESIZE, 0, NULL));
        float buf[4] = {1, 2, 3, 4};
        int deletes = 0;
        wb_storage *st;
        wb_tensor *x;
        WBT_OK(wb_storage_wrap(buf, sizeof buf, WBT_CPU,
                               regress_count_deletes, &deletes, &st));
        WBT_OK(wb_tensor_from_storage(st, WBT_F32, 1, (int64_t[]){4}, NULL,
                                      0, &x));
        wb_storage_release(st);
        regress_vals[0] = wbt_f32(10, 1, 8);
        regress_nvals = 1;
        wb_wrapper *w = wbt_wrap(s, regress_graph, NULL, tier);
        wb_arg args[1] = {{.t = x}};
        WBT_FAILS(wb_call(w, args, 1, NULL, 0), WB_ERR_INVALID,
                  "input 0 'x': cannot grow a storage that wraps memory of "
                  "the caller's (wb_storage_wrap)");
        cr_assert_eq(deletes, 0, "the caller's memory went to its deleter");
        cr_assert_eq(wb_tensor_data(x), (void *)buf);
        cr_assert_eq(wb_storage_nbytes(wb_tensor_storage(x)), 16);
        cr_assert_eq(wb_tensor_sizes(x)[0], 4);
        cr_assert_eq(wb_tensor_version(x), 0);
        cr_assert_eq(buf[0] + buf[1] + buf[2] + buf[3], 10.0f,
                     "a refused call wrote");
        cr_assert_eq(wb_tensor_refcount(regress_vals[0]), 1);
        wbt_release_last(regress_vals[0]);
        regress_vals[0] = wbt_f32(20, 1, 3);
        WBT_OK(wb_call(w, args, 1, NULL, 0));
        cr_assert_eq(wb_tensor_sizes(x)[0], 3);
        cr_assert_eq(wb_tensor_data(x), (void *)buf);
        cr_assert_eq(buf[2], 22.0f);
        cr_assert_eq(buf[3], 4.0f);
        cr_assert_eq(wb_tensor_version(x), 1);
        wbt_release_last(x);
        cr_assert_eq(deletes, 1);
        wbt_release_last(regress_vals[0]);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* One tensor passed for a metadata-mutated input and for another input
   would be checked against its old view and then changed under the other. */
Test(regress, reshaped_input_passed_twice_is_refused)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("twice", &s));
        WBT_OK(wb_spec_add_tensor(s, "m", WB_MUT_METADATA, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "d", WB_MUT_DATA, 0, NULL));
        wb_tensor *x = wbt_f32(0, 1, 4);
        regress_nvals = 0;
        wb_wrapper *w = wbt_wrap(s, regress_graph, NULL, tier);
        wb_arg args[2] = {{.t = x}, {.t = x}};
        WBT_FAILS(wb_call(w, args, 2, NULL, 0), WB_ERR_INVALID,
                  "input 1 'd' is the same tensor as input 0 'm', whose "
                  "metadata mutation changes it");
        cr_assert_eq(wb_tensor_version(x), 0);
        wbt_release_last(x);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* An empty view was accepted at any offset, which later overflowed
   offset * element size and let resize_ place a view outside its storage.
   It may start past the storage's end, as in PyTorch, but not where the
   byte offset overflows; a resize_ grows the storage to hold it. */
Test(regress, empty_view_past_the_storage_stays_inside_when_resized)
{
    wb_storage *st;
    wb_tensor *t = NULL;
    WBT_OK(wb_storage_new(WBT_CPU, 16, &st));
    WBT_FAILS(wb_tensor_from_storage(st, WBT_F32, 1, (int64_t[]){0}, NULL,
                                     (int64_t)1 << 62, &t),
              WB_ERR_SHAPE, "overflows");
    WBT_OK(wb_tensor_from_storage(st, WBT_F32, 1, (int64_t[]){0}, NULL, 5,
                                  &t));
    /* Still empty, it needs no byte: the storage stays as it is. */
    WBT_OK(wb_tensor_resize_(t, 2, (int64_t[]){3, 0}));
    cr_assert_eq(wb_storage_nbytes(st), 16);
    WBT_OK(wb_tensor_resize_(t, 1, (int64_t[]){4}));
    cr_assert_geq(wb_storage_nbytes(st), 36, "resize grew the storage");
    cr_assert_eq(wb_tensor_offset(t), 5);
    wbt_release_last(t);
    cr_assert_eq(wb_storage_refcount(st), 1);
    wb_storage_release(st);
}

static void regress_no_delete(DLManagedTensor *mt)
{
    (void)mt;
    cr_assert_fail("the deleter ran for a refused import");
}

/* A DLPack shape with a negative size reached signed overflow before it
   was looked at. */
Test(regress, dlpack_negative_size_is_refused)
{
    float data[4] = {0};
    int64_t shape[1] = {INT64_MIN};
    DLManagedTensor mt = {.dl_tensor = {.data = data, .device = {kDLCPU, 0},
                                        .ndim = 1, .dtype = {kDLFloat, 32, 1},
                                        .shape = shape},
                          .deleter = regress_no_delete};
    wb_tensor *t = NULL;
    WBT_FAILS(wb_tensor_from_dlpack(&mt, &t), WB_ERR_SHAPE, "negative");
    cr_assert_null(t);
}

/* Optional tensors (ATen's Tensor?) may be NULL; opaque scalars pass
   through untouched. */
static int regress_seen_null, regress_seen_p;

static int regress_opt_graph(void *ctx, const wb_arg *a, int na,
                             wb_value *v, int nv)
{
    (void)ctx; (void)na; (void)v; (void)nv;
    regress_seen_null = a[1].t == NULL;
    regress_seen_p = a[2].p == (const void *)&regress_seen_p;
    return 0;
}

Test(regress, optional_tensor_may_be_null)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("opt", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "bias", WB_MUT_NONE, WB_INPUT_OPTIONAL, NULL));
        WBT_OK(wb_spec_add_scalar(s, "reduction", WB_SCALAR_OPAQUE, NULL));
        WBT_OK(wb_spec_validate(s));
        cr_assert_str_eq(wb_spec_c_type(s, 2), "const void *");
        cr_assert_eq(wb_spec_direction(s, 1), WB_DIR_IN);
        wb_wrapper *w = wbt_wrap(s, regress_opt_graph, NULL, tier);
        wb_tensor *x = wbt_f32(0, 1, 2);
        wb_arg a[3] = {{.t = x}, {.t = NULL}, {.p = &regress_seen_p}};
        WBT_OK(wb_call(w, a, 3, NULL, 0));
        cr_assert(regress_seen_null && regress_seen_p);
        a[0].t = NULL;
        WBT_FAILS(wb_call(w, a, 3, NULL, 0), WB_ERR_TYPE, "input 0 'x'");
        wbt_release_last(x);
        wb_wrapper_free(w);
        WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_DATA, WB_INPUT_OPTIONAL, NULL));
        WBT_FAILS(wb_spec_validate(s), WB_ERR_SPEC,
                  "an optional tensor may be NULL");
        wb_spec_free(s);
    }
}

/* A data mutation of an input declared with 2 dims: a before-call hook
   re-viewed the input to 1 dim after the argument check, the check phase
   passed it on the generic path, and the compiled commit took the 2-dim
   copy, reading the stale second dim and writing past the storage.  The
   commit takes the generic copy too. */
static int regress_review(void *ud)
{
    return wb_tensor_as_strided_(ud, 1, (int64_t[]){4}, (int64_t[]){2}, 1);
}

Test(regress, an_input_re_viewed_by_a_hook_is_copied_as_it_lies)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_parse("f(Tensor(a!) x [dtype=float32, ndim=2]) -> ()",
                             &s));
        wb_tensor *x = wbt_f32(0, 2, 4, 2), *v = wbt_f32(100, 2, 4, 2);
        WBT_OK(wb_spec_set_before_call(s, regress_review, x));
        WBT_OK(wb_tensor_as_strided_(v, 1, (int64_t[]){4}, (int64_t[]){2},
                                     0));
        regress_vals[0] = v;
        regress_nvals = 1;
        wb_wrapper *w = wbt_wrap(s, regress_graph, NULL, tier);
        WBT_OK(wb_call(w, (wb_arg[]){{.t = x}}, 1, NULL, 0));
        /* Elements 1, 3, 5 and 7 of the storage, from 100, 102, 104, 106. */
        const float *d = wb_storage_data(wb_tensor_storage(x));
        for (int i = 0; i < 8; i++)
            cr_assert_eq(d[i], i % 2 ? 100.0f + (float)(i - 1) : (float)i,
                         "element %d: %g", i, d[i]);
        cr_assert_eq(wb_tensor_version(x), 1);
        wbt_release_last(x);
        wbt_release_last(v);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}
