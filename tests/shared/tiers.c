/*
 * The README's graph through libwrapbake.so on every tier: interp, tcc,
 * cc, auto, and aot from the code `wrapbake emit --aot` wrote for the
 * spec (wb_aot.h).  Prints one line per tier; exits nonzero on a wrong
 * result.
 */
#include "add_one.h"
#include "wb_aot.h"

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
        if (wb_wrapper_new(spec, add_one, NULL, &o, &w) != WB_OK) {
            printf("%s: %s\n", wb_tier_name(tiers[t]), wb_last_error());
            bad = 1;
            continue;
        }
        bad |= add_one_run(wb_tier_name(tiers[t]), w);
        wb_wrapper_free(w);
    }
    if (wb_aot_new(g, add_one, NULL, &w) != WB_OK) {
        printf("aot: %s\n", wb_last_error());
        bad = 1;
    } else {
        bad |= add_one_run("aot", w);
        wb_wrapper_free(w);
    }
    wb_spec_free(spec);
    return bad;
}
