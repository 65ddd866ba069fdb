/*
 * A plugin: a shared object that links libwrapbake.so, which a host
 * loads with dlopen.  plugin_run makes a tcc wrapper of the README's graph
 * and calls it three times, 0 when x[0] and x's version came to 3; then
 * it calls an auto wrapper once, due for promotion in 100 ms, and frees
 * it before then.
 */
#include "add_one.h"

__attribute__((visibility("default"))) int plugin_run(void)
{
    wb_spec *s = NULL;
    wb_wrapper *w = NULL;
    wb_options o = {.tier = WB_TIER_TCC};
    int bad = wb_spec_parse(ADD_ONE_SPEC, &s) != WB_OK ||
              wb_wrapper_new(s, add_one, NULL, &o, &w) != WB_OK ||
              wb_wrapper_tier(w) != WB_TIER_TCC || add_one_run("plugin", w);
    wb_wrapper_free(w);
    w = NULL;
    o = (wb_options){.tier = WB_TIER_AUTO, .promote_ms = 100};
    bad = bad || wb_wrapper_new(s, add_one, NULL, &o, &w) != WB_OK ||
          add_one_run("auto", w);
    wb_wrapper_free(w);
    wb_spec_free(s);
    return bad;
}
