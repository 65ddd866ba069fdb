/*
 * fakecuda.c -- an emulated CUDA runtime for the CUDA tests; see fakecuda.h.
 *
 * Each function keeps the contract of the real one that wrapbake relies
 * on, and refuses what the real one refuses: frees of unknown pointers,
 * cudaMemcpyBatchAsync on the legacy stream or without attributes, kernel
 * names the fatbin does not hold, launches whose grid does not match the
 * batch, a fatbin without its magic number.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "fakecuda.h"
#include "../../src/core/cuda_copy.h"

fakecuda_state fakecuda = {.devices = 2};

typedef struct fake_block {
    char *p;
    size_t n;
    int dev;
    struct fake_block *next;
} fake_block;

typedef struct fake_stream {
    int device;
} fake_stream;

static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static fake_block *fake_blocks;
static _Thread_local int fake_device;
static _Thread_local cudaError_t fake_last;
static int fake_kernel, fake_library;  /* their addresses are the handles */

static cudaError_t fake_err(cudaError_t e)
{
    if (e != cudaSuccess)
        fake_last = e;
    return e;
}

static fake_block *fake_find(const void *p)
{
    for (fake_block *b = fake_blocks; b; b = b->next)
        if ((const char *)p >= b->p && (const char *)p < b->p + b->n)
            return b;
    return NULL;
}

bool fakecuda_is_device(const void *p, int dev)
{
    pthread_mutex_lock(&fake_lock);
    fake_block *b = fake_find(p);
    bool yes = b && (dev < 0 || b->dev == dev);
    pthread_mutex_unlock(&fake_lock);
    return yes;
}

static bool fake_legacy(cudaStream_t s)
{
    return s == NULL || s == cudaStreamLegacy;
}

/* ---- devices and errors ---- */

/* The version of the headers it was built with, or the one
   $FAKECUDA_RUNTIME_VERSION gives (a test of another major version). */
cudaError_t cudaRuntimeGetVersion(int *version)
{
    const char *v = getenv("FAKECUDA_RUNTIME_VERSION");
    *version = v ? atoi(v) : CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceCount(int *count)
{
    *count = fakecuda.devices;
    return fake_err(fakecuda.devices ? cudaSuccess : cudaErrorNoDevice);
}

cudaError_t cudaGetDevice(int *device)
{
    *device = fake_device;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    if (device < 0 || device >= fakecuda.devices)
        return fake_err(cudaErrorInvalidDevice);
    fake_device = device;
    return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t error)
{
    switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorSymbolNotFound: return "named symbol not found";
    default: return "unknown error";
    }
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = fake_last;
    fake_last = cudaSuccess;
    return e;
}

cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }

/* ---- memory ---- */

cudaError_t cudaMalloc(void **p, size_t n)
{
    fake_block *b = malloc(sizeof *b);
    char *mem = fakecuda.fail_malloc ? NULL : malloc(n ? n : 1);
    if (!b || !mem) {
        free(b);
        free(mem);
        return fake_err(cudaErrorMemoryAllocation);
    }
    /* Fresh device memory is not zero: the runtime must clear it. */
    memset(mem, 0xA5, n);
    b->p = mem;
    b->n = n ? n : 1;
    b->dev = fake_device;
    pthread_mutex_lock(&fake_lock);
    b->next = fake_blocks;
    fake_blocks = b;
    fakecuda.live_allocs++;
    pthread_mutex_unlock(&fake_lock);
    *p = mem;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    if (!p)
        return cudaSuccess;
    pthread_mutex_lock(&fake_lock);
    fake_block **at = &fake_blocks;
    while (*at && (*at)->p != p)
        at = &(*at)->next;
    fake_block *b = *at;
    if (b) {
        *at = b->next;
        fakecuda.live_allocs--;
    }
    pthread_mutex_unlock(&fake_lock);
    if (!b)
        return fake_err(cudaErrorInvalidValue);
    free(b->p);
    free(b);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int value, size_t n)
{
    if (n && !fakecuda_is_device(p, -1))
        return fake_err(cudaErrorInvalidValue);
    memset(p, value, n);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n,
                       enum cudaMemcpyKind kind)
{
    (void)kind;
    memmove(dst, src, n);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n,
                            enum cudaMemcpyKind kind, cudaStream_t stream)
{
    (void)stream;
    return cudaMemcpy(dst, src, n, kind);
}

cudaError_t cudaMemcpyBatchAsync(void *const *dsts, const void *const *srcs,
                                 const size_t *sizes, size_t count,
                                 struct cudaMemcpyAttributes *attrs,
                                 size_t *attrsIdxs, size_t numAttrs,
                                 cudaStream_t stream)
{
    if (fakecuda.old_driver)
        return fake_err(cudaErrorNotSupported);
    if (fakecuda.fail_batch)
        return fake_err(cudaErrorInvalidValue);
    if (fake_legacy(stream) || !count || !numAttrs || numAttrs > count ||
        attrsIdxs[0] != 0)
        return fake_err(cudaErrorInvalidValue);
    for (size_t a = 0; a < numAttrs; a++)
        if (attrs[a].srcAccessOrder != cudaMemcpySrcAccessOrderStream &&
            attrs[a].srcAccessOrder != cudaMemcpySrcAccessOrderDuringApiCall &&
            attrs[a].srcAccessOrder != cudaMemcpySrcAccessOrderAny)
            return fake_err(cudaErrorInvalidValue);
    for (size_t k = 0; k < count; k++)
        if (!fakecuda_is_device(dsts[k], -1) ||
            !fakecuda_is_device(srcs[k], -1))
            return fake_err(cudaErrorInvalidValue);
    /* The copies of one batch may run in any order: they are run
       backwards, so a caller relying on their order would be caught. */
    for (size_t k = count; k-- > 0;)
        memmove(dsts[k], srcs[k], sizes[k]);
    fakecuda.batch_copies++;
    return cudaSuccess;
}

/* ---- streams ---- */

cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
    fake_stream *s = malloc(sizeof *s);
    if (!s)
        return fake_err(cudaErrorMemoryAllocation);
    s->device = fake_device;
    *stream = (cudaStream_t)(void *)s;
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    if (fake_legacy(stream))
        return fake_err(cudaErrorInvalidValue);
    free((void *)stream);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    (void)stream;
    return cudaSuccess;
}

/* ---- the copy kernel ---- */

cudaError_t cudaLibraryLoadData(cudaLibrary_t *library, const void *code,
                                enum cudaJitOption *jitOptions,
                                void **jitOptionsValues,
                                unsigned int numJitOptions,
                                enum cudaLibraryOption *libraryOptions,
                                void **libraryOptionValues,
                                unsigned int numLibraryOptions)
{
    static const unsigned char magic[4] = {0x50, 0xed, 0x55, 0xba};
    (void)jitOptions; (void)jitOptionsValues; (void)numJitOptions;
    (void)libraryOptions; (void)libraryOptionValues; (void)numLibraryOptions;
    if (memcmp(code, magic, sizeof magic) != 0)
        return fake_err(cudaErrorInvalidValue);  /* not a fatbin */
    if (fakecuda.fail_load)
        return fake_err(cudaErrorMemoryAllocation);
    *library = (cudaLibrary_t)(void *)&fake_library;
    fakecuda.libraries++;
    return cudaSuccess;
}

cudaError_t cudaLibraryUnload(cudaLibrary_t library)
{
    if ((void *)library != &fake_library || fakecuda.libraries < 1)
        return fake_err(cudaErrorInvalidValue);
    fakecuda.libraries--;
    return cudaSuccess;
}

cudaError_t cudaLibraryGetKernel(cudaKernel_t *kernel, cudaLibrary_t library,
                                 const char *name)
{
    if ((void *)library != &fake_library ||
        strcmp(name, "wb_cuda_copy_kernel") != 0)
        return fake_err(cudaErrorSymbolNotFound);
    if (fakecuda.fail_kernel)
        return fake_err(cudaErrorMemoryAllocation);
    *kernel = (cudaKernel_t)(void *)&fake_kernel;
    return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block,
                             void **args, size_t shared, cudaStream_t stream)
{
    (void)shared; (void)stream;
    if (func != &fake_kernel || !args)
        return fake_err(cudaErrorInvalidValue);
    if (fakecuda.fail_launch)
        return fake_err(cudaErrorLaunchFailure);
    const wb_cuda_batch *b = args[0];
    if (b->n < 1 || b->n > WB_CUDA_BATCH || grid.y != (unsigned)b->n ||
        grid.z != 1 || block.y != 1 || block.z != 1 || !grid.x ||
        !block.x || block.x > 1024)
        return fake_err(cudaErrorInvalidValue);
    /* Every thread of the grid, the kernel's own loop; the blocks of one
       launch run in any order, here the last row first. */
    for (unsigned y = grid.y; y-- > 0;) {
        const wb_cuda_copy *c = &b->c[y];
        if (!fakecuda_is_device(c->dst, -1) ||
            !fakecuda_is_device(c->src, -1))
            return fake_err(cudaErrorLaunchFailure);  /* a bad address */
        int64_t step = (int64_t)grid.x * block.x;
        for (unsigned bx = 0; bx < grid.x; bx++)
            for (unsigned tx = 0; tx < block.x; tx++)
                for (int64_t i = (int64_t)bx * block.x + tx; i < c->numel;
                     i += step) {
                    wb_cuda_copy_elem(c, i);
                    fakecuda.elements_copied++;
                }
    }
    fakecuda.kernel_launches++;
    return cudaSuccess;
}
