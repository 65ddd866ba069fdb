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
    diff_case_on((diff_rng){seed * 0x9E3779B97F4A7C15ULL | 1, NULL, 0}, seed,
                 diff_tiers, DIFF_NTIERS);
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

/* The cc tier on the first seeds of the same sequence: each spec costs a
   run of the system compiler, so four tests of 100 seeds each share the
   work across Criterion's jobs.  WB_DIFF_CC_COUNT sets the seeds per
   test. */
static void diff_cc_range(long part)
{
    static const wb_tier cc[] = {WB_TIER_CC};
    const char *one = getenv("WB_DIFF_SEED");
    const char *count = getenv("WB_DIFF_CC_COUNT");
    long n = count ? strtol(count, NULL, 10) : 100;
    for (long seed = part * n + 1; seed <= (part + 1) * n; seed++) {
        uint64_t s = one ? strtoull(one, NULL, 10) : (uint64_t)seed;
        diff_case_on((diff_rng){s * 0x9E3779B97F4A7C15ULL | 1, NULL, 0}, s,
                     cc, 1);
        if (one)
            break;
    }
    wb_set_grad_enabled(true);
}

Test(diff, cc_matches_interp_0, .timeout = 600) { diff_cc_range(0); }
Test(diff, cc_matches_interp_1, .timeout = 600) { diff_cc_range(1); }
Test(diff, cc_matches_interp_2, .timeout = 600) { diff_cc_range(2); }
Test(diff, cc_matches_interp_3, .timeout = 600) { diff_cc_range(3); }
