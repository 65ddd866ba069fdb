/*
 * test_cuda_diff.c -- the differential generator of tests/diff_gen.h with
 * every tensor on cuda:0: random valid specs, tensors, calls and faults.
 * For each seed the compiled tiers must agree with the interpreter on the
 * device, and the device's snapshot must equal the CPU's for the same
 * seed: the same statuses and messages, bytes (read back after
 * synchronizing), views, versions, storages and references.
 *
 * In the `cuda` suite: it runs on the emulated device in `make test` and
 * skips with the reason where no device can be used.  WB_CUDA_DIFF_COUNT
 * sets how many seeds (default 1000); WB_DIFF_SEED replays one.
 */
#include <stdlib.h>
#include <string.h>

#include "cuda_helpers.h"

#ifdef WB_WITH_CUDA

#define WBD_FAIL(...) cr_assert_fail(__VA_ARGS__)
#include "diff_gen.h"

static void cd_put(wb_storage *s, const void *host, size_t n)
{
    tc_put(s, host, n);
}

static void cd_get(const wb_storage *s, void *host, size_t n)
{
    tc_get(s, host, n);
}

Test(cuda, random_specs_on_the_device_match_the_cpu, .timeout = 300)
{
    tc_need_cuda();
    const char *one = getenv("WB_DIFF_SEED");
    const char *count = getenv("WB_CUDA_DIFF_COUNT");
    uint64_t lo = 1, hi = count ? strtoull(count, NULL, 10) : 1000;
    if (one)
        lo = hi = strtoull(one, NULL, 10);
    static const wb_tier tcc[] = {WB_TIER_TCC}, both[] = {WB_TIER_TCC,
                                                          WB_TIER_CC};
    static char cpu[sizeof ((diff_obs *)0)->text];
    cudaStream_t st;
    cr_assert_eq(cu.stream_create(&st), cudaSuccess);
    diff_io = (diff_device_io){cd_put, cd_get};
    long kernels = cu.fake ? cu.fake->kernel_launches : 0;
    long batches = cu.fake ? cu.fake->batch_copies : 0;

    for (uint64_t seed = lo; seed <= hi; seed++) {
        diff_rng r = {seed * 0x9E3779B97F4A7C15ULL | 1, NULL, 0};
        /* The CPU's interpreter is the reference; test_diff.c holds the
           CPU's compiled tiers to it. */
        const diff_obs *o = diff_case_dev(r, seed, NULL, 0, WBD_CPU);
        memcpy(cpu, o->text, o->len + 1);
        /* Half the seeds on the legacy stream (the copy kernel), half on
           a created one (the batched copy where copies are dense); the
           cc tier on one seed in 25, as it costs a compiler run. */
        if (seed % 2)
            wb_set_call_stream(st);
        o = diff_case_dev(r, seed, seed % 25 ? tcc : both, seed % 25 ? 1 : 2,
                          tc_gpu(0));
        wb_clear_call_stream();
        if (strcmp(cpu, o->text))
            cr_assert_fail("seed %llu: on cuda:0 the snapshot differs from "
                           "the CPU's\ncpu:\n%s\ncuda:0:\n%s",
                           (unsigned long long)seed, cpu, o->text);
    }
    wb_set_grad_enabled(true);
    cu.stream_destroy(st);
    /* The seeds reached the write-back on both paths. */
    if (!one && cu.fake) {
        cr_assert_gt(cu.fake->kernel_launches, kernels);
        cr_assert_gt(cu.fake->batch_copies, batches);
    }
}

#else /* !WB_WITH_CUDA */

Test(cuda, diff_built_without_cuda)
{
    cr_skip_test("CUDA differential test skipped: this build has no CUDA "
                 "(WITH_CUDA=0)");
}

#endif /* WB_WITH_CUDA */
