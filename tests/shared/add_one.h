/*
 * add_one.h -- the README's graph for the programs of tests/shared, which
 * build against the installed header alone: add_one_ (ADD_ONE_SPEC) and
 * a run of three calls.
 */
#ifndef WB_TEST_ADD_ONE_H
#define WB_TEST_ADD_ONE_H

#include <stdio.h>

#include <wrapbake.h>

#define ADD_ONE_SPEC "add_one_(Tensor(a!) x) -> Tensor(a!) x"

/* x + 1 as x's new value, then x itself as the output. */
static int add_one(void *ctx, const wb_arg *a, int na, wb_value *v, int nv)
{
    (void)ctx;
    (void)na;
    (void)nv;
    int64_t n = 4;
    if (wb_tensor_new(wb_tensor_dtype(a[0].t), wb_tensor_device(a[0].t), 1,
                      &n, &v[0].t) != WB_OK)
        return -1;
    const float *x = wb_tensor_data(a[0].t);
    float *y = wb_tensor_data(v[0].t);
    for (int i = 0; i < 4; i++)
        y[i] = x[i] + 1;
    v[1].t = wb_tensor_retain(v[0].t);
    return 2;
}

/* Three calls of w on a fresh x, printed on one line under name: 0 when
   x[0] is 3 and its version 3. */
static int add_one_run(const char *name, wb_wrapper *w)
{
    int64_t n = 4;
    wb_tensor *x = NULL;
    wb_value out;
    if (wb_tensor_new((DLDataType){kDLFloat, 32, 1}, (DLDevice){kDLCPU, 0},
                      1, &n, &x) != WB_OK)
        return 1;
    wb_arg args[1] = {{.t = x}};
    for (int i = 0; i < 3; i++) {
        if (wb_call(w, args, 1, &out, 1) != WB_OK) {
            printf("%s: %s\n", name, wb_last_error());
            wb_tensor_release(x);
            return 1;
        }
        wb_tensor_release(out.t);
    }
    float x0 = ((float *)wb_tensor_data(x))[0];
    unsigned long long v = (unsigned long long)wb_tensor_version(x);
    printf("%-6s x[0] = %g, version %llu, served by %s\n", name, x0, v,
           wb_tier_name(wb_wrapper_tier(w)));
    wb_tensor_release(x);
    return !(x0 == 3 && v == 3);
}

#endif
