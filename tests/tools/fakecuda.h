/*
 * fakecuda.h -- an emulated CUDA runtime for the CUDA tests (internal).
 *
 * tests/tools/fakecuda.c defines the CUDA runtime functions libwrapbake.a
 * and tests/test_cuda*.c call, over host memory, with two devices: device
 * memory is malloc'ed and tracked, work runs at once on the calling
 * thread, and a launch of the copy kernel runs the kernel's own loop
 * (src/core/cuda_copy.h) over every thread of its grid.  Linked in
 * place of libcudart, it lets the CUDA tests check the write-back's logic
 * on machines without a GPU; the counters and switches below let them look
 * inside.
 */
#ifndef WB_FAKECUDA_H
#define WB_FAKECUDA_H

#include <stdbool.h>
#include <stddef.h>

typedef struct fakecuda_state {
    int devices;             /* what cudaGetDeviceCount reports */
    long live_allocs;        /* device blocks not yet freed */
    long kernel_launches;    /* copy kernel launches */
    long batch_copies;       /* cudaMemcpyBatchAsync calls that ran */
    long elements_copied;    /* by the kernel */
    bool old_driver;         /* cudaMemcpyBatchAsync: not supported */
    bool fail_batch;         /* cudaMemcpyBatchAsync: an invalid value */
    bool fail_launch;        /* cudaLaunchKernel fails */
    bool fail_load;          /* cudaLibraryLoadData fails */
    bool fail_kernel;        /* cudaLibraryGetKernel fails */
    long libraries;          /* libraries loaded and not unloaded */
    bool fail_malloc;        /* cudaMalloc fails */
} fakecuda_state;

extern fakecuda_state fakecuda;

/* Whether p lies in device memory of dev (-1: any device). */
bool fakecuda_is_device(const void *p, int dev);

#endif /* WB_FAKECUDA_H */
