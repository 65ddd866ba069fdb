/*
 * cuda_copy.h -- the element copies of a CUDA write-back (internal).
 *
 * One descriptor is one data mutation: copy numel elements from src to dst,
 * both views of the same sizes with their own strides, dims merged where
 * both views allow (cuda.c).  A launch of the gather-copy kernel
 * (cuda_copy.cu) takes up to WB_CUDA_BATCH descriptors by value, one per
 * blockIdx.y.  The element copy is written once, here, for the kernel and
 * for the host, so that a device emulated on the host runs the same code.
 */
#ifndef WB_CUDA_COPY_H
#define WB_CUDA_COPY_H

#include <stdint.h>

#ifdef __CUDACC__
#define WB_CUDA_HD static __host__ __device__ __forceinline__
#else
#define WB_CUDA_HD static inline
#endif

#define WB_CUDA_ND 6      /* dims of a descriptor, after merging */
#define WB_CUDA_BATCH 8   /* descriptors per launch */
#define WB_CUDA_THREADS 256

typedef struct wb_cuda_copy {
    char *dst;
    const char *src;
    int64_t numel;
    int32_t esize;   /* bytes per element */
    int32_t ndim;    /* 1..WB_CUDA_ND */
    int64_t sizes[WB_CUDA_ND];
    int64_t dstrides[WB_CUDA_ND];  /* in elements */
    int64_t sstrides[WB_CUDA_ND];
} wb_cuda_copy;

/* The kernel's one parameter: 1,416 bytes, inside the 4 KiB every CUDA
   device accepts. */
typedef struct wb_cuda_batch {
    wb_cuda_copy c[WB_CUDA_BATCH];
    int32_t n;
} wb_cuda_batch;

/* Copies element i (in row-major order of the sizes) of c. */
WB_CUDA_HD void wb_cuda_copy_elem(const wb_cuda_copy *c, int64_t i)
{
    int64_t d = 0, s = 0;
    for (int k = c->ndim - 1; k > 0; k--) {
        int64_t q = i % c->sizes[k];
        i /= c->sizes[k];
        d += q * c->dstrides[k];
        s += q * c->sstrides[k];
    }
    d += i * c->dstrides[0];
    s += i * c->sstrides[0];
    char *to = c->dst + d * c->esize;
    const char *from = c->src + s * c->esize;
    /* Element addresses are aligned to the element size unless the
       storage itself is not (memory wrapped from elsewhere). */
    if (((uintptr_t)to | (uintptr_t)from) % (uintptr_t)c->esize == 0) {
        switch (c->esize) {
        case 1: *(uint8_t *)to = *(const uint8_t *)from; return;
        case 2: *(uint16_t *)to = *(const uint16_t *)from; return;
        case 4: *(uint32_t *)to = *(const uint32_t *)from; return;
        case 8: *(uint64_t *)to = *(const uint64_t *)from; return;
        default: break;
        }
    }
    for (int32_t b = 0; b < c->esize; b++)
        to[b] = from[b];
}

#endif /* WB_CUDA_COPY_H */
