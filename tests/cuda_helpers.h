/*
 * cuda_helpers.h -- what the CUDA test files share: the runtime functions
 * the tests call themselves, tensors on a device with known contents,
 * reading them back after synchronizing, and a graph that hands out
 * prepared values.
 *
 * Every test calls tc_need_cuda first, which skips it with the reason when
 * no device can be used.  On the emulated runtime (tests/tools/fakecuda.c,
 * loaded through $WRAPBAKE_CUDART) cu.fake points at its counters; on a
 * real one it is NULL.  Built without CUDA, the header holds only
 * helpers.h, and each file says why its tests are skipped.
 */
#ifndef WB_TEST_CUDA_HELPERS_H
#define WB_TEST_CUDA_HELPERS_H

#include "helpers.h"

#ifdef WB_WITH_CUDA

#include <cuda_runtime_api.h>

#include "../src/abi/abi.h"
#include "tools/fakecuda.h"

/* The runtime functions the tests call themselves, from the runtime the
   library loaded. */
static struct {
    __typeof__(cudaMemcpy) *memcpy;
    __typeof__(cudaDeviceSynchronize) *sync;
    __typeof__(cudaStreamCreate) *stream_create;
    __typeof__(cudaStreamDestroy) *stream_destroy;
    fakecuda_state *fake;   /* NULL on a real device */
    __typeof__(fakecuda_is_device) *is_device;
    int devices;
} cu;

static inline void tc_need_cuda(void)
{
    if (wb_cuda_devices(&cu.devices) != WB_OK)
        cr_skip_test("CUDA tests skipped: %s", wb_last_error());
    *(void **)&cu.memcpy = wb_rt_cuda_symbol("cudaMemcpy");
    *(void **)&cu.sync = wb_rt_cuda_symbol("cudaDeviceSynchronize");
    *(void **)&cu.stream_create = wb_rt_cuda_symbol("cudaStreamCreate");
    *(void **)&cu.stream_destroy = wb_rt_cuda_symbol("cudaStreamDestroy");
    cu.fake = wb_rt_cuda_symbol("fakecuda");
    *(void **)&cu.is_device = wb_rt_cuda_symbol("fakecuda_is_device");
    cr_assert(cu.memcpy && cu.sync && cu.stream_create && cu.stream_destroy);
}

/* Whether the cases named what can run: they need two devices.  When they
   cannot, the log says so, since the rest of the test still runs. */
static inline bool tc_two_devices(const char *what)
{
    if (cu.devices > 1)
        return true;
    cr_log_warn("%s skipped: they need two CUDA devices, and there is %d",
                what, cu.devices);
    return false;
}

static const DLDataType tc_f32 = {kDLFloat, 32, 1};

/* The tiers every CUDA test runs on: cc too, since the write-back is
   generated code the system compiler builds differently. */
static const wb_tier tc_tiers[] = {WB_TIER_INTERP, WB_TIER_TCC, WB_TIER_CC};
#define TC_NTIERS ((int)(sizeof tc_tiers / sizeof *tc_tiers))

static inline DLDevice tc_gpu(int id) { return (DLDevice){kDLCUDA, id}; }

/* n bytes from host into the start of s. */
static inline void tc_put(wb_storage *s, const void *host, size_t n)
{
    cr_assert_eq(cu.memcpy(wb_storage_data(s), host, n,
                           cudaMemcpyHostToDevice), cudaSuccess);
}

/* The first n bytes of s, once the device has finished its work. */
static inline void tc_get(const wb_storage *s, void *host, size_t n)
{
    cr_assert_eq(cu.sync(), cudaSuccess);
    cr_assert_eq(cu.memcpy(host, wb_storage_data(s), n,
                           cudaMemcpyDeviceToHost), cudaSuccess);
}

/* A contiguous float32 [n] tensor on dev holding base, base+1, ... */
static inline wb_tensor *tc_vec(int dev, int64_t n, float base)
{
    wb_tensor *t;
    float host[64];
    cr_assert(n <= 64);
    for (int64_t i = 0; i < n; i++)
        host[i] = base + (float)i;
    WBT_OK(wb_tensor_new(tc_f32, tc_gpu(dev), 1, &n, &t));
    tc_put(wb_tensor_storage(t), host, sizeof *host * (size_t)n);
    return t;
}

/* Asserts t's storage holds base, base+1, ... in its first n floats. */
static inline void tc_expect(const wb_tensor *t, int64_t n, float base)
{
    float host[64];
    cr_assert(n <= 64);
    tc_get(wb_tensor_storage(t), host, sizeof *host * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        cr_assert_eq(host[i], base + (float)i, "element %lld: %g, not %g",
                     (long long)i, host[i], base + (float)i);
}

/* A new view of base's storage, in base's dtype. */
static inline wb_tensor *tc_view(const wb_tensor *base, int ndim,
                                 const int64_t *sizes, const int64_t *strides,
                                 int64_t offset)
{
    wb_tensor *t = NULL;
    WBT_OK(wb_tensor_as_strided(base, ndim, sizes, strides, offset, &t));
    return t;
}

/* ---- the graph: hands out the values prepared in its context ---- */

typedef struct tc_graph {
    int n;
    wb_tensor *values[48];
} tc_graph;

static inline int tc_graph_fn(void *ctx, const wb_arg *args, int nargs,
                              wb_value *values, int nvalues)
{
    tc_graph *g = ctx;
    (void)args; (void)nargs;
    for (int i = 0; i < nvalues && i < g->n; i++)
        values[i].t = g->values[i] ? wb_tensor_retain(g->values[i]) : NULL;
    return g->n;
}

static inline void tc_graph_free(tc_graph *g)
{
    for (int i = 0; i < g->n; i++)
        wb_tensor_release(g->values[i]);
}

#endif /* WB_WITH_CUDA */

#endif /* WB_TEST_CUDA_HELPERS_H */
