/*
 * cuda_copy.cu -- the gather-copy kernel of the CUDA write-back.
 *
 * Built by nvcc into a fatbin that cuda.c embeds and loads on first use;
 * blockIdx.y picks the descriptor, the x dimension strides over its
 * elements.
 */
#include "cuda_copy.h"

extern "C" __global__ void wb_cuda_copy_kernel(const wb_cuda_batch b)
{
    const wb_cuda_copy *c = &b.c[blockIdx.y];
    int64_t step = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
         i < c->numel; i += step)
        wb_cuda_copy_elem(c, i);
}
