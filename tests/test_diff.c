/*
 * The differential test: random valid specs, random tensors, random faults;
 * every compiled tier must agree with the interpreter in every observable
 * (see diff_gen.h, which fuzz/fuzz_diff.c shares).
 *
 * WB_DIFF_COUNT sets how many specs (default 10000); WB_DIFF_SEED replays
 * one seed, printed on the first difference.
 */
#include "helpers.h"

#define WBD_FAIL(...) cr_assert_fail(__VA_ARGS__)
#include "diff_gen.h"

static void diff_one(uint64_t seed)
{
    diff_case((diff_rng){seed * 0x9E3779B97F4A7C15ULL | 1, NULL, 0}, seed);
}

Test(diff, compiled_tiers_match_interp, .timeout = 600)
{
    const char *one = getenv("WB_DIFF_SEED"), *count = getenv("WB_DIFF_COUNT");
    if (one) {
        diff_one(strtoull(one, NULL, 10));
        return;
    }
    long n = count ? strtol(count, NULL, 10) : 10000;
    for (long seed = 1; seed <= n; seed++)
        diff_one((uint64_t)seed);
    wb_set_grad_enabled(true);
    /* The random specs reached success and every injected failure. */
    long calls = n * DIFF_CALLS;
    cr_assert_gt(diff_status_seen[WB_OK], calls / 4, "only %ld of %ld calls "
                 "succeeded", diff_status_seen[WB_OK], calls);
    const wb_status expect[] = {WB_ERR_ARITY, WB_ERR_TYPE, WB_ERR_SHAPE,
                                WB_ERR_GRAPH, WB_ERR_HOOK};
    for (size_t i = 0; n >= 1000 && i < sizeof expect / sizeof *expect; i++)
        cr_assert_gt(diff_status_seen[expect[i]], 0, "no call ended in %s",
                     wb_status_str(expect[i]));
    for (int i = 0; i <= WB_ERR_UNSUPPORTED; i++)
        cr_log_info("diff: %s %ld", wb_status_str((wb_status)i),
                    diff_status_seen[i]);
}
