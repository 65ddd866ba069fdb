/*
 * The README's graph through libwrapbake.so on every tier: interp, tcc,
 * cc, auto, and aot from the code `wrapbake emit --aot` wrote for the
 * spec (wb_aot.h).  Prints one line per tier; exits nonzero on a wrong
 * result.
 */
#include <stdio.h>
#include <string.h>

#include <wrapbake.h>

#include "wb_aot.h"

/* x + 1, then x itself as the output. */
static int graph(void *ctx, const wb_arg *a, int na, wb_value *v, int nv)
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

/* Three calls on a fresh x: x[0] must be 3 and its version 3. */
static int run(const char *name, wb_wrapper *w)
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
            return 1;
        }
        wb_tensor_release(out.t);
    }
    float x0 = ((float *)wb_tensor_data(x))[0];
    unsigned long long v = (unsigned long long)wb_tensor_version(x);
    printf("%-6s x[0] = %g, version %llu, served by %s\n", name, x0, v,
           wb_tier_name(wb_wrapper_tier(w)));
    wb_tensor_release(x);
    wb_wrapper_free(w);
    return !(x0 == 3 && v == 3);
}

int main(void)
{
    static const wb_tier tiers[] = {WB_TIER_INTERP, WB_TIER_TCC, WB_TIER_CC,
                                    WB_TIER_AUTO};
    int bad = 0, g = wb_aot_lookup("add_one_");
    wb_spec *spec = NULL;
    wb_wrapper *w = NULL;
    if (g < 0 || wb_aot_spec(g, &spec) != WB_OK) {
        printf("no ahead-of-time graph add_one_: %s\n", wb_last_error());
        return 1;
    }
    for (size_t t = 0; t < sizeof tiers / sizeof *tiers; t++) {
        wb_options o = {.tier = tiers[t], .promote_calls = 1};
        if (wb_wrapper_new(spec, graph, NULL, &o, &w) != WB_OK) {
            printf("%s: %s\n", wb_tier_name(tiers[t]), wb_last_error());
            bad = 1;
            continue;
        }
        bad |= run(wb_tier_name(tiers[t]), w);
    }
    if (wb_aot_new(g, graph, NULL, &w) != WB_OK) {
        printf("aot: %s\n", wb_last_error());
        bad = 1;
    } else {
        bad |= run("aot", w);
    }
    wb_spec_free(spec);
    return bad;
}
