/*
 * A plugin: a shared object that links libwrapbake.so, which a host
 * loads with dlopen.  plugin_run makes a tcc wrapper of x + 1 and calls
 * it; 0 when x[0] went from 0 to 1 and x's version to 1.
 */
#include <wrapbake.h>

static int add_one(void *ctx, const wb_arg *a, int na, wb_value *v, int nv)
{
    (void)ctx;
    (void)na;
    (void)nv;
    int64_t n = 2;
    if (wb_tensor_new(wb_tensor_dtype(a[0].t), wb_tensor_device(a[0].t), 1,
                      &n, &v[0].t) != WB_OK)
        return -1;
    const float *x = wb_tensor_data(a[0].t);
    float *y = wb_tensor_data(v[0].t);
    y[0] = x[0] + 1;
    y[1] = x[1] + 1;
    return 1;
}

__attribute__((visibility("default"))) int plugin_run(void)
{
    wb_spec *s = NULL;
    wb_wrapper *w = NULL;
    wb_tensor *x = NULL;
    int64_t n = 2;
    int ok = 0;
    wb_options o = {.tier = WB_TIER_TCC};
    if (wb_spec_parse("add_one_(Tensor(a!) x) -> ()", &s) == WB_OK &&
        wb_wrapper_new(s, add_one, NULL, &o, &w) == WB_OK &&
        wb_tensor_new((DLDataType){kDLFloat, 32, 1}, (DLDevice){kDLCPU, 0},
                      1, &n, &x) == WB_OK) {
        wb_arg args[1] = {{.t = x}};
        ok = wb_call(w, args, 1, NULL, 0) == WB_OK &&
             ((float *)wb_tensor_data(x))[0] == 1 &&
             wb_tensor_version(x) == 1 &&
             wb_wrapper_tier(w) == WB_TIER_TCC;
    }
    wb_tensor_release(x);
    wb_wrapper_free(w);
    wb_spec_free(s);
    return ok ? 0 : 1;
}
