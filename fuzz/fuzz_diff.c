/*
 * fuzz_diff.c -- the differential target: the input's bytes steer the
 * generator of tests/diff_gen.h (one byte per decision, then a seed made
 * from them all), which builds a random valid spec and random calls and
 * runs them through the interpreter and the compiled tiers; the first
 * difference in any observable aborts with both snapshots.
 */
#include "fuzz.h"

#define WBD_FAIL(...) wbf_fail(__VA_ARGS__)
#include "../tests/diff_gen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ULL;
    /* The cc tier runs the system compiler, some 60 ms: one input in 64
       goes through it as well. */
    static const wb_tier all[] = {WB_TIER_TCC, WB_TIER_CC};
    diff_case_on((diff_rng){h | 1, data, size}, h, all, h % 64 == 0 ? 2 : 1);
    wb_set_grad_enabled(true);
    wb_thread_cache_flush();
    return 0;
}
