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

/* The start of the snapshot line that holds text[at]. */
static size_t cd_line_start(const char *text, size_t at)
{
    while (at > 0 && text[at - 1] != '\n')
        at--;
    return at;
}

/*
 * Growing a storage on a CUDA device is refused for now (WB_ERR_UNSUPPORTED,
 * "growing a storage on a CUDA device ... is not supported"), where the
 * CPU grows it.  Whether the device's snapshot differs from the CPU's only
 * by that refusal: both agree up to the first call that differs, and that
 * call's status on the device is the refusal.  The calls after it may
 * differ too, since the CPU's input grew and the device's did not.  Delete
 * this, and its use below, once resize_ grows device storages.
 */
static bool cd_only_growth_refused(const char *cpu, const char *dev)
{
    size_t at = 0;
    while (cpu[at] && cpu[at] == dev[at])
        at++;
    /* The call whose block holds the first difference: its status line
       is the last line before it that starts a call. */
    size_t line = cd_line_start(dev, at);
    while (line > 0 && strncmp(dev + line, "call ", 5) != 0)
        line = cd_line_start(dev, line - 1);
    if (strncmp(dev + line, "call ", 5) != 0)
        return false;
    const char *end = strchr(dev + line, '\n');
    size_t n = end ? (size_t)(end - (dev + line)) : strlen(dev + line);
    char status[512];
    snprintf(status, sizeof status, "%.*s", (int)n, dev + line);
    return strstr(status, wb_status_str(WB_ERR_UNSUPPORTED)) &&
           strstr(status, "growing a storage on a CUDA device");
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
    long refused = 0, same = 0;
    long kernels = cu.fake ? cu.fake->kernel_launches : 0;
    long batches = cu.fake ? cu.fake->batch_copies : 0;
    char refused_seeds[256] = "";

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
        if (!strcmp(cpu, o->text)) {
            same++;
            continue;
        }
        if (!cd_only_growth_refused(cpu, o->text))
            cr_assert_fail("seed %llu: on cuda:0 the snapshot differs from "
                           "the CPU's\ncpu:\n%s\ncuda:0:\n%s",
                           (unsigned long long)seed, cpu, o->text);
        refused++;
        size_t n = strlen(refused_seeds);
        snprintf(refused_seeds + n, sizeof refused_seeds - n, " %llu",
                 (unsigned long long)seed);
    }
    wb_set_grad_enabled(true);
    cu.stream_destroy(st);
    cr_log_info("cuda diff: %ld of %llu seeds as on the CPU; %ld differ "
                "only where the device refused to grow a storage (the "
                "first:%s)", same, (unsigned long long)(hi - lo + 1),
                refused, refused_seeds);
    /* The seeds reached the write-back on both paths, and most agreed. */
    if (!one) {
        cr_assert_gt(same, (long)(hi - lo + 1) * 3 / 4, "only %ld seeds "
                     "agreed with the CPU", same);
        if (cu.fake) {
            cr_assert_gt(cu.fake->kernel_launches, kernels);
            cr_assert_gt(cu.fake->batch_copies, batches);
        }
    }
}

#else /* !WB_WITH_CUDA */

Test(cuda, diff_built_without_cuda)
{
    cr_skip_test("CUDA differential test skipped: this build has no CUDA "
                 "(WITH_CUDA=0)");
}

#endif /* WB_WITH_CUDA */
