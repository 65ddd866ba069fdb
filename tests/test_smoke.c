#include "helpers.h"

/* A graph of one data mutation and one alias of its input: returns the
   updated value of input 0 (input 0 + 100) and a view of input 1's storage
   (row 1 of it), and a new output. */
static int smoke_graph(void *ctx, const wb_arg *args, int nargs,
                       wb_value *values, int nvalues)
{
    (void)ctx; (void)nargs;
    if (nvalues != 3)
        return -1;
    values[0].t = wbt_f32(100, 2, 2, 4);
    int64_t sizes[1] = {4}, strides[1] = {1};
    if (wb_tensor_as_strided(args[1].t, 1, sizes, strides, 4, &values[1].t))
        return -2;
    values[2].t = wbt_f32(7, 1, 3);
    (void)args;
    return 3;
}

Test(smoke, both_tiers)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("smoke", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "row", WB_OUT_ALIAS_OF_INPUT, 1, true, 1, NULL));
        WBT_OK(wb_spec_add_output(s, "new", WB_OUT_NON_ALIAS, -1, false, 0, NULL));
        WBT_OK(wb_spec_validate(s));
        cr_assert_eq(wb_spec_num_values(s), 3);
        wb_wrapper *w = wbt_wrap(s, smoke_graph, NULL, tier);
        wb_tensor *x = wbt_f32(0, 2, 2, 4), *y = wbt_f32(50, 2, 2, 4);
        wb_arg a[2] = {{.t = x}, {.t = y}};
        wb_value o[2] = {{0}};
        WBT_OK(wb_call(w, a, 2, o, 2));
        cr_assert_eq(wbt_at(x, 1, 3), 107.0f);
        cr_assert_eq(wb_tensor_version(x), 1);
        cr_assert_eq(wb_tensor_storage(o[0].t), wb_tensor_storage(y));
        cr_assert_eq(wbt_at(o[0].t, 0), 54.0f);
        cr_assert(wb_tensor_requires_grad(o[0].t));
        cr_assert_eq(wb_tensor_dynamic_dims(o[0].t), 1);
        cr_assert_eq(wbt_at(o[1].t, 2), 9.0f);
        wbt_release_last(o[0].t);
        wbt_release_last(o[1].t);
        wbt_release_last(x);
        wbt_release_last(y);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}
