/*
 * test_cuda.c -- tensors on CUDA devices: storages, DLPack, the batched
 * write-back of data mutations on every tier, strided copies of odd
 * layouts, aliases and versions, and the device and stream errors.
 *
 * The suite runs twice in `make test`: on the CUDA runtime the library
 * finds, where every test skips with the reason when there is no GPU; and
 * on an emulated device (tests/tools/fakecuda.c, through $WRAPBAKE_CUDART),
 * where it runs everywhere and also looks at what was submitted.  Values
 * on a device are read back after synchronizing.
 */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_helpers.h"

#ifdef WB_WITH_CUDA

/* m data-mutated float32 [4] inputs and one output. */
static wb_spec *tc_mut_spec(int m, DLDevice declared)
{
    wb_spec *s;
    WBT_OK(wb_spec_new("muts", &s));
    for (int i = 0; i < m; i++) {
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
        WBT_OK(wb_spec_declare_input(s, i, tc_f32, 1));
        if (declared.device_type)
            WBT_OK(wb_spec_declare_device(s, i, declared));
    }
    WBT_OK(wb_spec_add_output(s, "out", WB_OUT_NON_ALIAS, -1, false, 0,
                              NULL));
    return s;
}

/* One call of m mutations on tier, on stream (a created one, or NULL);
   checks values, versions, submissions and that nothing leaked. */
static void tc_writeback(int m, wb_tier tier, void *stream, DLDevice declared)
{
    tc_graph g = {.n = m + 1};
    wb_tensor *in[40];
    wb_value out;
    wb_arg args[40];
    for (int i = 0; i < m; i++) {
        in[i] = tc_vec(0, 4, 0);
        args[i].t = in[i];
        g.values[i] = tc_vec(0, 4, 100.0f * (float)(i + 1));
    }
    g.values[m] = tc_vec(0, 4, -1);
    wb_spec *s = tc_mut_spec(m, declared);
    wb_options o = {.tier = tier, .stream = stream};
    wb_wrapper *w;
    WBT_OK(wb_wrapper_new(s, tc_graph_fn, &g, &o, &w));
    uint64_t before = wb_cuda_launches();
    long kernels = cu.fake ? cu.fake->kernel_launches : 0;
    long batches = cu.fake ? cu.fake->batch_copies : 0;
    WBT_OK(wb_call(w, args, m, &out, 1));
    uint64_t submitted = wb_cuda_launches() - before;
    /* One submission for the whole write-back: a batched copy takes all
       32 a call can hold, the kernel 8 per launch on the legacy stream. */
    uint64_t expect = stream ? 1 : (uint64_t)(m + 7) / 8;
    cr_assert_eq(submitted, expect, "%d mutations on %s: %llu submissions",
                 m, wb_tier_name(tier), (unsigned long long)submitted);
    if (cu.fake) {
        cr_assert_eq(cu.fake->batch_copies - batches, stream ? 1 : 0);
        cr_assert_eq(cu.fake->kernel_launches - kernels,
                     stream ? 0 : (long)expect);
    }
    for (int i = 0; i < m; i++) {
        tc_expect(in[i], 4, 100.0f * (float)(i + 1));
        cr_assert_eq(wb_tensor_version(in[i]), 1);
        cr_assert_eq(wb_tensor_refcount(in[i]), 1);
    }
    cr_assert_eq(out.t, g.values[m]);
    cr_assert_eq(wb_tensor_refcount(g.values[0]), 1, "a value was kept");
    wb_tensor_release(out.t);
    wb_wrapper_free(w);
    wb_spec_free(s);
    for (int i = 0; i < m; i++)
        wb_tensor_release(in[i]);
    tc_graph_free(&g);
}

Test(cuda, storage_and_dlpack)
{
    tc_need_cuda();
    long live = cu.fake ? cu.fake->live_allocs : 0;
    wb_storage *s;
    unsigned char host[40];
    WBT_OK(wb_storage_new(tc_gpu(0), sizeof host, &s));
    cr_assert_eq(wb_storage_device(s).device_type, kDLCUDA);
    tc_get(s, host, sizeof host);
    for (size_t i = 0; i < sizeof host; i++)
        cr_assert_eq(host[i], 0, "byte %zu of a new storage is %d", i,
                     host[i]);
    if (cu.fake)
        cr_assert(cu.is_device(wb_storage_data(s), 0));

    /* Out through DLPack and back in: the same memory, device and view. */
    wb_tensor *t = tc_vec(0, 6, 1), *back;
    DLManagedTensor *mt;
    WBT_OK(wb_tensor_to_dlpack(t, &mt));
    cr_assert_eq(mt->dl_tensor.device.device_type, kDLCUDA);
    cr_assert_eq(mt->dl_tensor.data, wb_storage_data(wb_tensor_storage(t)));
    WBT_OK(wb_tensor_from_dlpack(mt, &back));
    cr_assert_eq(wb_tensor_device(back).device_type, kDLCUDA);
    cr_assert_eq(wb_tensor_data(back), wb_tensor_data(t));
    tc_expect(back, 6, 1);
    wb_tensor_release(back);
    wb_tensor_release(t);
    wb_storage_release(s);
    if (cu.fake)
        cr_assert_eq(cu.fake->live_allocs, live, "device memory leaked");

    /* A device that is not there. */
    WBT_FAILS(wb_storage_new(tc_gpu(cu.devices), 8, &s), WB_ERR_DEVICE,
              "does not exist");
}

Test(cuda, writeback_batched_on_every_tier)
{
    tc_need_cuda();
    static const int counts[] = {1, 3, 8, 9, 20};
    for (size_t t = 0; t < (size_t)TC_NTIERS; t++)
        for (size_t k = 0; k < sizeof counts / sizeof *counts; k++)
            tc_writeback(counts[k], tc_tiers[t], NULL, (DLDevice){0, 0});
}

Test(cuda, writeback_on_a_stream_and_declared)
{
    tc_need_cuda();
    cudaStream_t st;
    cr_assert_eq(cu.stream_create(&st), cudaSuccess);
    for (size_t t = 0; t < (size_t)TC_NTIERS; t++) {
        tc_writeback(3, tc_tiers[t], st, (DLDevice){0, 0});
        tc_writeback(30, tc_tiers[t], st, tc_gpu(0));
    }
    cu.stream_destroy(st);
}

/* The batch against one copy per mutation: the same bytes land. */
Test(cuda, batch_equals_one_copy_per_mutation)
{
    tc_need_cuda();
    enum { M = 12 };
    tc_graph g = {.n = M + 1};
    wb_tensor *in[M], *ref[M];
    wb_value out;
    wb_arg args[M];
    for (int i = 0; i < M; i++) {
        in[i] = tc_vec(0, 4, 0);
        ref[i] = tc_vec(0, 4, 0);
        args[i].t = in[i];
        g.values[i] = tc_vec(0, 4, 7.0f * (float)i - 3);
        WBT_OK(wb_tensor_copy_(ref[i], g.values[i]));
    }
    g.values[M] = tc_vec(0, 4, 0);
    wb_spec *s = tc_mut_spec(M, (DLDevice){0, 0});
    wb_wrapper *w = wbt_wrap(s, tc_graph_fn, &g, WB_TIER_TCC);
    WBT_OK(wb_call(w, args, M, &out, 1));
    for (int i = 0; i < M; i++) {
        float a[4], b[4];
        tc_get(wb_tensor_storage(in[i]), a, sizeof a);
        tc_get(wb_tensor_storage(ref[i]), b, sizeof b);
        cr_assert(!memcmp(a, b, sizeof a), "input %d differs", i);
        wb_tensor_release(in[i]);
        wb_tensor_release(ref[i]);
    }
    wb_tensor_release(out.t);
    wb_wrapper_free(w);
    wb_spec_free(s);
    tc_graph_free(&g);
}

/* One tensor given for two mutated inputs: the copies keep their order
   (the later one wins, as on the CPU), on either path. */
Test(cuda, overlapping_copies_keep_their_order)
{
    tc_need_cuda();
    cudaStream_t st;
    cr_assert_eq(cu.stream_create(&st), cudaSuccess);
    wb_spec *s = tc_mut_spec(2, (DLDevice){0, 0});
    for (int k = 0; k < 2; k++) {
        wb_tensor *x = tc_vec(0, 4, 0);
        wb_value out;
        tc_graph g = {.n = 3, .values = {tc_vec(0, 4, 10), tc_vec(0, 4, 20),
                                         tc_vec(0, 4, 0)}};
        wb_options o = {.tier = WB_TIER_TCC, .stream = k ? st : NULL};
        wb_wrapper *w;
        WBT_OK(wb_wrapper_new(s, tc_graph_fn, &g, &o, &w));
        uint64_t before = wb_cuda_launches();
        WBT_OK(wb_call(w, (wb_arg[]){{.t = x}, {.t = x}}, 2, &out, 1));
        cr_assert_eq(wb_cuda_launches() - before, 2, "the second copy did "
                     "not wait for the first");
        tc_expect(x, 4, 20);
        cr_assert_eq(wb_tensor_version(x), 2);
        wb_tensor_release(out.t);
        wb_wrapper_free(w);
        tc_graph_free(&g);
        wb_tensor_release(x);
    }
    wb_spec_free(s);
    cu.stream_destroy(st);
}

/* A strided copy on the device against the same copy on the CPU. */
static void tc_strided(DLDataType dt, int ndim, const int64_t *sizes,
                       const int64_t *dst_strides, int64_t dst_off,
                       const int64_t *src_strides, int64_t src_off,
                       size_t nbytes)
{
    unsigned char init[512], want[512], got[512];
    wb_storage *ds, *ss, *hd, *hs;
    wb_tensor *dt_, *st_, *hdt, *hst;
    cr_assert(nbytes <= sizeof init);
    for (size_t i = 0; i < nbytes; i++)
        init[i] = (unsigned char)(i * 7 + 3);
    WBT_OK(wb_storage_new(tc_gpu(0), nbytes, &ds));
    WBT_OK(wb_storage_new(tc_gpu(0), nbytes, &ss));
    WBT_OK(wb_storage_new((DLDevice){kDLCPU, 0}, nbytes, &hd));
    WBT_OK(wb_storage_new((DLDevice){kDLCPU, 0}, nbytes, &hs));
    memset(wb_storage_data(hd), 0, nbytes);
    memcpy(wb_storage_data(hs), init, nbytes);
    tc_put(ss, init, nbytes);
    WBT_OK(wb_tensor_from_storage(ds, dt, ndim, sizes, dst_strides, dst_off,
                                  &dt_));
    WBT_OK(wb_tensor_from_storage(ss, dt, ndim, sizes, src_strides, src_off,
                                  &st_));
    WBT_OK(wb_tensor_from_storage(hd, dt, ndim, sizes, dst_strides, dst_off,
                                  &hdt));
    WBT_OK(wb_tensor_from_storage(hs, dt, ndim, sizes, src_strides, src_off,
                                  &hst));
    WBT_OK(wb_tensor_copy_(dt_, st_));
    WBT_OK(wb_tensor_copy_(hdt, hst));
    memcpy(want, wb_storage_data(hd), nbytes);
    tc_get(ds, got, nbytes);
    for (size_t i = 0; i < nbytes; i++)
        cr_assert_eq(got[i], want[i], "byte %zu: %d, the CPU has %d", i,
                     got[i], want[i]);
    cr_assert_eq(wb_tensor_version(dt_), 1);
    wb_tensor_release(dt_);
    wb_tensor_release(st_);
    wb_tensor_release(hdt);
    wb_tensor_release(hst);
    wb_storage_release(ds);
    wb_storage_release(ss);
    wb_storage_release(hd);
    wb_storage_release(hs);
}

Test(cuda, strided_copies_of_odd_layouts)
{
    tc_need_cuda();
    const DLDataType u8 = {kDLUInt, 8, 1}, i16 = {kDLInt, 16, 1},
                     f64 = {kDLFloat, 64, 1}, c3 = {kDLUInt, 8, 3};
    /* A transpose, both ways. */
    tc_strided(tc_f32, 2, (int64_t[]){3, 5}, (int64_t[]){1, 3}, 0,
               (int64_t[]){5, 1}, 0, 60);
    tc_strided(tc_f32, 2, (int64_t[]){3, 5}, (int64_t[]){5, 1}, 0,
               (int64_t[]){1, 3}, 0, 60);
    /* Offsets, every other element, bytes and shorts. */
    tc_strided(u8, 1, (int64_t[]){9}, (int64_t[]){2}, 3, (int64_t[]){1}, 1,
               40);
    tc_strided(i16, 3, (int64_t[]){2, 3, 4}, (int64_t[]){1, 2, 6}, 1,
               (int64_t[]){12, 4, 1}, 0, 120);
    /* Doubles in a 3-D permutation, with a size-1 dim. */
    tc_strided(f64, 4, (int64_t[]){2, 1, 3, 2}, (int64_t[]){1, 99, 4, 2}, 0,
               (int64_t[]){6, 6, 2, 1}, 0, 96);
    /* 3-byte elements (lanes), which no machine word holds. */
    tc_strided(c3, 2, (int64_t[]){4, 3}, (int64_t[]){1, 4}, 0,
               (int64_t[]){3, 1}, 2, 60);
    /* Dims that merge: a dense block inside a wider row. */
    tc_strided(tc_f32, 3, (int64_t[]){2, 2, 4}, (int64_t[]){16, 4, 1}, 2,
               (int64_t[]){8, 4, 1}, 0, 160);
}

Test(cuda, too_many_unmergeable_dims)
{
    tc_need_cuda();
    int64_t sizes[7] = {2, 2, 2, 2, 2, 2, 2}, a[7], b[7] = {64, 32, 16, 8, 4, 2, 1};
    for (int d = 0; d < 7; d++)
        a[d] = (int64_t)1 << (d + 1);  /* every dim interleaved */
    wb_storage *s1, *s2;
    wb_tensor *x, *y;
    WBT_OK(wb_storage_new(tc_gpu(0), 4 * 256, &s1));
    WBT_OK(wb_storage_new(tc_gpu(0), 4 * 128, &s2));
    WBT_OK(wb_tensor_from_storage(s1, tc_f32, 7, sizes, a, 0, &x));
    WBT_OK(wb_tensor_from_storage(s2, tc_f32, 7, sizes, b, 0, &y));
    WBT_FAILS(wb_tensor_copy_(x, y), WB_ERR_UNSUPPORTED, "more than 6");
    cr_assert_eq(wb_tensor_version(x), 0);
    wb_tensor_release(x);
    wb_tensor_release(y);
    wb_storage_release(s1);
    wb_storage_release(s2);
}

/* An input given as a transposed view: the write-back takes the kernel
   on every stream, and aliases and versions behave as on the CPU. */
Test(cuda, strided_input_alias_and_versions)
{
    tc_need_cuda();
    wb_spec *s;
    WBT_OK(wb_spec_parse("f(Tensor(a!) x, Tensor(b) y) -> Tensor(b)", &s));
    cudaStream_t st;
    cr_assert_eq(cu.stream_create(&st), cudaSuccess);
    for (size_t k = 0; k < (size_t)TC_NTIERS; k++) {
        wb_tensor *base = tc_vec(0, 6, 0), *x, *y = tc_vec(0, 4, 50);
        wb_value out;
        WBT_OK(wb_tensor_as_strided(base, 2, (int64_t[]){3, 2},
                                    (int64_t[]){1, 3}, 0, &x));
        tc_graph g = {.n = 2};
        wb_tensor *v = tc_vec(0, 6, 10);
        WBT_OK(wb_tensor_as_strided(v, 2, (int64_t[]){3, 2},
                                    (int64_t[]){2, 1}, 0, &g.values[0]));
        wb_tensor_release(v);
        g.values[1] = wb_tensor_retain(y);
        wb_options o = {.tier = tc_tiers[k], .stream = st};
        wb_wrapper *w;
        WBT_OK(wb_wrapper_new(s, tc_graph_fn, &g, &o, &w));
        long kernels = cu.fake ? cu.fake->kernel_launches : 0;
        WBT_OK(wb_call(w, (wb_arg[]){{.t = x}, {.t = y}}, 2, &out, 1));
        if (cu.fake)
            cr_assert_eq(cu.fake->kernel_launches - kernels, 1);
        /* x[i][j] (at j*3+i) = v[i][j] (at i*2+j = 10 + i*2+j). */
        float host[6];
        tc_get(wb_tensor_storage(base), host, sizeof host);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 2; j++)
                cr_assert_eq(host[j * 3 + i], 10.0f + (float)(i * 2 + j));
        cr_assert_eq(wb_tensor_version(base), 1);
        /* The alias of y: a new view of y's CUDA storage. */
        cr_assert_neq(out.t, y);
        cr_assert_eq(wb_tensor_storage(out.t), wb_tensor_storage(y));
        cr_assert_eq(wb_tensor_device(out.t).device_type, kDLCUDA);
        wb_tensor_release(out.t);
        wb_wrapper_free(w);
        tc_graph_free(&g);
        wb_tensor_release(x);
        wb_tensor_release(base);
        wb_tensor_release(y);
    }
    cu.stream_destroy(st);
    wb_spec_free(s);
}

/* A call that must fail before anything is mutated. */
static void tc_refused(wb_wrapper *w, wb_tensor *x, wb_status status,
                       const char *needle)
{
    float before[4], after[4];
    tc_get(wb_tensor_storage(x), before, sizeof before);
    wb_value out = {(wb_tensor *)(uintptr_t)1};
    WBT_FAILS(wb_call(w, (wb_arg[]){{.t = x}}, 1, &out, 1), status, needle);
    cr_assert_eq(out.t, (wb_tensor *)(uintptr_t)1, "an output was written");
    tc_get(wb_tensor_storage(x), after, sizeof after);
    cr_assert(!memcmp(before, after, sizeof before), "the input changed");
    cr_assert_eq(wb_tensor_version(x), 0);
    cr_assert_eq(wb_tensor_refcount(x), 1);
}

/* A resize mutation growing a device storage, on every tier and stream: the
   storage gets a new block holding the old bytes, then the value; the old
   block is freed; a view taken before sees the new data.  When the new
   block cannot be had, nothing changes. */
Test(cuda, resize_grows_device_storage)
{
    tc_need_cuda();
    cudaStream_t made, other;
    cr_assert_eq(cu.stream_create(&made), cudaSuccess);
    cr_assert_eq(cu.stream_create(&other), cudaSuccess);
    for (int k = 0; k < 2 * TC_NTIERS; k++) {
        wb_options o = {.tier = tc_tiers[k / 2],
                        .stream = k % 2 ? made : NULL};
        wb_spec *s;
        wb_wrapper *w;
        WBT_OK(wb_spec_parse("f(Tensor(a!) x [resize]) -> ()", &s));
        /* x: elements 2..5 of a storage of 6 holding 0..5 */
        wb_tensor *base = tc_vec(0, 6, 0), *x, *early;
        WBT_OK(wb_tensor_as_strided(base, 1, (int64_t[]){4}, NULL, 2, &x));
        WBT_OK(wb_tensor_as_strided(base, 1, (int64_t[]){2}, NULL, 0, &early));
        wb_storage *st = wb_tensor_storage(x);
        tc_graph g = {.n = 1, .values = {tc_vec(0, 8, 100)}};
        WBT_OK(wb_wrapper_new(s, tc_graph_fn, &g, &o, &w));
        long live = cu.fake ? cu.fake->live_allocs : 0;

        if (cu.fake) {
            /* No memory for the new block: refused, nothing changed. */
            cu.fake->fail_malloc = true;
            WBT_FAILS(wb_call(w, (wb_arg[]){{.t = x}}, 1, NULL, 0),
                      WB_ERR_NOMEM, "input 0 'x': cannot allocate CUDA");
            cu.fake->fail_malloc = false;
            cr_assert_eq(wb_storage_nbytes(st), 24);
            cr_assert_eq(wb_tensor_sizes(x)[0], 4);
            cr_assert_eq(wb_tensor_version(x), 0);
            cr_assert_eq(wb_tensor_refcount(g.values[0]), 1, "value leaked");
            cr_assert_eq(cu.fake->live_allocs, live, "the new block leaked");
            /* Tied to another stream: refused before a block is asked for
               (which would fail for want of memory). */
            wb_storage_set_stream(st, other);
            cu.fake->fail_malloc = true;
            WBT_FAILS(wb_call(w, (wb_arg[]){{.t = x}}, 1, NULL, 0),
                      WB_ERR_DEVICE,
                      "spec 'f': input 0 'x' is tied to stream");
            cu.fake->fail_malloc = false;
            wb_storage_unset_stream(st);
            cr_assert_eq(wb_storage_nbytes(st), 24);
            cr_assert_eq(wb_tensor_version(x), 0);
        }

        WBT_OK(wb_call(w, (wb_arg[]){{.t = x}}, 1, NULL, 0));
        cr_assert_eq(wb_tensor_storage(x), st, "the storage is kept");
        cr_assert_eq(wb_storage_nbytes(st), 40);
        cr_assert_eq(wb_tensor_sizes(x)[0], 8);
        cr_assert_eq(wb_tensor_offset(x), 2);
        cr_assert_eq(wb_tensor_version(x), 1, "resized (no bump), then "
                     "copied");
        float all[10];
        tc_get(st, all, sizeof all);
        for (int i = 0; i < 10; i++)
            cr_assert_eq(all[i], i < 2 ? (float)i : 98.0f + (float)i,
                         "element %d: %g", i, all[i]);
        /* A view taken before the call sees the grown block. */
        cr_assert_eq(wb_tensor_storage(early), st);
        tc_expect(early, 2, 0);
        if (cu.fake)
            cr_assert_eq(cu.fake->live_allocs, live, "the old block was not "
                         "freed");

        /* Outside a call, growing zero-fills past the old bytes. */
        WBT_OK(wb_tensor_resize_(early, 1, (int64_t[]){12}));
        cr_assert_eq(wb_storage_nbytes(st), 48);
        float more[12];
        tc_get(st, more, sizeof more);
        cr_assert(!memcmp(more, all, sizeof all), "the old bytes moved");
        cr_assert(more[10] == 0 && more[11] == 0,
                  "the new bytes are not zero");
        if (cu.fake) {
            /* The copy of the old bytes cannot be enqueued: early and its
               storage stay as they were. */
            cu.fake->fail_launch = true;
            WBT_FAILS(wb_tensor_resize_(early, 1, (int64_t[]){20}),
                      WB_ERR_DEVICE, "cannot launch the copy kernel");
            cu.fake->fail_launch = false;
            cr_assert_eq(wb_storage_nbytes(st), 48);
            cr_assert_eq(wb_tensor_sizes(early)[0], 12);
            float still[12];
            tc_get(st, still, sizeof still);
            cr_assert(!memcmp(still, more, sizeof more), "the bytes changed");
        }

        wb_wrapper_free(w);
        wb_spec_free(s);
        tc_graph_free(&g);
        wb_tensor_release(early);
        wb_tensor_release(x);
        wb_tensor_release(base);
        if (cu.fake)
            cr_assert_eq(cu.fake->live_allocs, live - 2, "device memory "
                         "leaked");
    }
    cr_assert_eq(cu.stream_destroy(made), cudaSuccess);
    cr_assert_eq(cu.stream_destroy(other), cudaSuccess);
}

Test(cuda, device_and_stream_errors)
{
    tc_need_cuda();
    cudaStream_t s1, s2;
    cr_assert_eq(cu.stream_create(&s1), cudaSuccess);
    cr_assert_eq(cu.stream_create(&s2), cudaSuccess);
    for (size_t k = 0; k < (size_t)TC_NTIERS; k++) {
        wb_options o = {.tier = tc_tiers[k], .stream = s1};
        wb_tensor *x = tc_vec(0, 4, 0), *cpu;
        WBT_OK(wb_tensor_new(tc_f32, (DLDevice){kDLCPU, 0}, 1,
                             (int64_t[]){4}, &cpu));
        tc_graph g = {.n = 2, .values = {tc_vec(0, 4, 9), tc_vec(0, 4, 0)}};
        wb_spec *s = tc_mut_spec(1, (DLDevice){0, 0});
        wb_wrapper *w;
        WBT_OK(wb_wrapper_new(s, tc_graph_fn, &g, &o, &w));

        /* Tied to another stream; then on the wrapper's, per call. */
        wb_storage_set_stream(wb_tensor_storage(x), s2);
        tc_refused(w, x, WB_ERR_DEVICE,
                   "spec 'muts': input 0 'x' is tied to stream");
        wb_set_call_stream(s2);
        wb_value out;
        WBT_OK(wb_call(w, (wb_arg[]){{.t = x}}, 1, &out, 1));
        wb_tensor_release(out.t);
        tc_expect(x, 4, 9);
        wb_clear_call_stream();
        wb_storage_unset_stream(wb_tensor_storage(x));
        wb_tensor_release(x);
        x = tc_vec(0, 4, 0);

        /* The updated value on the CPU. */
        wb_tensor_release(g.values[0]);
        g.values[0] = wb_tensor_retain(cpu);
        tc_refused(w, x, WB_ERR_DEVICE, "the updated value is on cpu; "
                   "expected cuda:0");
        cr_assert_eq(wb_tensor_refcount(cpu), 2, "the value leaked");
        wb_wrapper_free(w);
        wb_spec_free(s);

        /* Declared on the CPU, given on the device, and the other way. */
        s = tc_mut_spec(1, (DLDevice){kDLCPU, 0});
        WBT_OK(wb_wrapper_new(s, tc_graph_fn, &g, &o, &w));
        tc_refused(w, x, WB_ERR_DEVICE, "on cuda:0; expected cpu");
        wb_wrapper_free(w);
        wb_spec_free(s);
        s = tc_mut_spec(1, tc_gpu(0));
        WBT_OK(wb_wrapper_new(s, tc_graph_fn, &g, &o, &w));
        WBT_FAILS(wb_call(w, (wb_arg[]){{.t = cpu}}, 1, &out, 1),
                  WB_ERR_DEVICE, "on cpu; expected cuda:0");
        wb_wrapper_free(w);
        wb_spec_free(s);

        /* Two mutated inputs on two devices. */
        if (tc_two_devices("two mutated inputs on two devices")) {
            wb_tensor *x1 = tc_vec(1, 4, 0);
            g.n = 3;
            g.values[2] = g.values[1];
            wb_tensor_release(g.values[0]);
            g.values[0] = tc_vec(0, 4, 5);
            g.values[1] = tc_vec(1, 4, 5);
            s = tc_mut_spec(2, (DLDevice){0, 0});
            WBT_OK(wb_wrapper_new(s, tc_graph_fn, &g, &o, &w));
            WBT_FAILS(wb_call(w, (wb_arg[]){{.t = x}, {.t = x1}}, 2, &out, 1),
                      WB_ERR_DEVICE, "a call writes back on one device");
            cr_assert_eq(wb_tensor_version(x), 0);
            cr_assert_eq(wb_tensor_version(x1), 0);
            wb_wrapper_free(w);
            wb_spec_free(s);
            wb_tensor_release(x1);
        }
        tc_graph_free(&g);
        wb_tensor_release(x);
        wb_tensor_release(cpu);
    }
    cu.stream_destroy(s1);
    cu.stream_destroy(s2);
}

/* Faults only an emulated device can make. */
Test(cuda, launch_and_batch_failures_and_old_driver)
{
    tc_need_cuda();
    if (!cu.fake)
        cr_skip_test("needs the emulated device (fakecuda) to inject faults");
    cudaStream_t st;
    cr_assert_eq(cu.stream_create(&st), cudaSuccess);
    wb_tensor *x = tc_vec(0, 4, 0);
    wb_value out = {NULL};
    tc_graph g = {.n = 2, .values = {tc_vec(0, 4, 3), tc_vec(0, 4, 0)}};
    wb_spec *s = tc_mut_spec(1, (DLDevice){0, 0});
    wb_wrapper *w = wbt_wrap(s, tc_graph_fn, &g, WB_TIER_TCC);

    /* The kernel fails to load: the call says so, and the next call
       loads it. */
    cu.fake->fail_load = true;
    WBT_FAILS(wb_call(w, (wb_arg[]){{.t = x}}, 1, &out, 1), WB_ERR_DEVICE,
              "cannot load the copy kernel");
    cr_assert_null(out.t, "a failed write-back left an output");
    cu.fake->fail_load = false;
    /* The kernel is not found in the library loaded: the library goes
       again. */
    cu.fake->fail_kernel = true;
    WBT_FAILS(wb_call(w, (wb_arg[]){{.t = x}}, 1, &out, 1), WB_ERR_DEVICE,
              "cannot load the copy kernel");
    cr_assert_eq(cu.fake->libraries, 0, "a library was left loaded");
    cu.fake->fail_kernel = false;
    WBT_OK(wb_call(w, (wb_arg[]){{.t = x}}, 1, &out, 1));
    cr_assert_eq(cu.fake->libraries, 1);
    tc_expect(x, 4, 3);
    wb_tensor_release(out.t);
    out.t = NULL;

    /* A launch the device refuses: the call says so and keeps nothing. */
    cu.fake->fail_launch = true;
    WBT_FAILS(wb_call(w, (wb_arg[]){{.t = x}}, 1, &out, 1), WB_ERR_DEVICE,
              "cannot launch the copy kernel");
    cr_assert_null(out.t, "a failed write-back left an output");
    cr_assert_eq(wb_tensor_refcount(g.values[0]), 1);
    cr_assert_eq(wb_tensor_refcount(g.values[1]), 1);
    cu.fake->fail_launch = false;

    wb_wrapper_free(w);
    wb_options o = {.tier = WB_TIER_TCC, .stream = st};
    WBT_OK(wb_wrapper_new(s, tc_graph_fn, &g, &o, &w));

    /* A batch the driver takes but fails: the call fails with the batch's
       own error, naming the spec, and later calls still batch. */
    cu.fake->fail_batch = true;
    WBT_FAILS(wb_call(w, (wb_arg[]){{.t = x}}, 1, &out, 1), WB_ERR_DEVICE,
              "the write-back: cannot enqueue the batched copy");
    cr_assert(strstr(wb_last_error(), "spec '"), "'%s' names no spec",
              wb_last_error());
    cr_assert_null(out.t, "a failed write-back left an output");
    cu.fake->fail_batch = false;
    WBT_OK(wb_call(w, (wb_arg[]){{.t = x}}, 1, &out, 1));
    cr_assert_eq(cu.fake->batch_copies, 1, "the batch was given up");
    tc_expect(x, 4, 3);
    wb_tensor_release(out.t);

    /* A driver without cudaMemcpyBatchAsync: the kernel does it, for
       good. */
    cu.fake->old_driver = true;
    long kernels = cu.fake->kernel_launches;
    WBT_OK(wb_call(w, (wb_arg[]){{.t = x}}, 1, &out, 1));
    cr_assert_eq(cu.fake->kernel_launches - kernels, 1);
    cr_assert_eq(cu.fake->batch_copies, 1);
    tc_expect(x, 4, 3);
    wb_tensor_release(out.t);

    /* Out of device memory. */
    cu.fake->fail_malloc = true;
    wb_storage *none = NULL;
    WBT_FAILS(wb_storage_new(tc_gpu(0), 16, &none), WB_ERR_NOMEM,
              "cannot allocate CUDA memory");
    cr_assert_null(none);
    cu.fake->fail_malloc = false;

    wb_wrapper_free(w);
    wb_spec_free(s);
    tc_graph_free(&g);
    wb_tensor_release(x);
    cu.stream_destroy(st);
}

Test(cuda, the_legacy_stream_has_two_names)
{
    /* A storage tied to NULL, the legacy default stream, takes a call on
       cudaStreamLegacy, the same stream. */
    tc_need_cuda();
    wb_tensor *x = tc_vec(0, 4, 0);
    wb_value out = {NULL};
    tc_graph g = {.n = 2, .values = {tc_vec(0, 4, 3), tc_vec(0, 4, 0)}};
    wb_spec *s = tc_mut_spec(1, (DLDevice){0, 0});
    wb_wrapper *w = wbt_wrap(s, tc_graph_fn, &g, WB_TIER_TCC);
    wb_storage_set_stream(wb_tensor_storage(x), NULL);
    wb_set_call_stream(cudaStreamLegacy);
    WBT_OK(wb_call(w, (wb_arg[]){{.t = x}}, 1, &out, 1));
    wb_clear_call_stream();
    tc_expect(x, 4, 3);
    wb_tensor_release(out.t);
    wb_wrapper_free(w);
    wb_spec_free(s);
    tc_graph_free(&g);
    wb_tensor_release(x);
}

Test(cuda, copies_outside_a_call_keep_stream_ties)
{
    /* wb_tensor_copy_ and a growing wb_tensor_resize_ write on the
       thread's call stream, and refuse a storage tied to another, as a
       call does, with nothing changed. */
    tc_need_cuda();
    cudaStream_t s2;
    cr_assert_eq(cu.stream_create(&s2), cudaSuccess);
    wb_tensor *x = tc_vec(0, 4, 0), *y = tc_vec(0, 4, 7);
    wb_storage *st = wb_tensor_storage(x);
    wb_storage_set_stream(st, s2);
    int live = cu.fake ? cu.fake->live_allocs : 0;
    WBT_FAILS(wb_tensor_copy_(x, y), WB_ERR_DEVICE,
              "wb_tensor_copy_: the storage is tied to stream");
    WBT_FAILS(wb_tensor_resize_(x, 1, (int64_t[]){8}), WB_ERR_DEVICE,
              "wb_tensor_resize_: the storage is tied to stream");
    tc_expect(x, 4, 0);
    cr_assert_eq(wb_tensor_version(x), 0);
    cr_assert_eq(wb_storage_nbytes(st), 16);
    cr_assert_eq(wb_tensor_sizes(x)[0], 4);
    if (cu.fake)
        cr_assert_eq(cu.fake->live_allocs, live, "the new block was kept");
    /* On the tied stream both go through. */
    wb_set_call_stream(s2);
    WBT_OK(wb_tensor_copy_(x, y));
    WBT_OK(wb_tensor_resize_(x, 1, (int64_t[]){8}));
    wb_clear_call_stream();
    cr_assert_eq(wb_storage_nbytes(wb_tensor_storage(x)), 32);
    tc_expect(x, 4, 7);
    cr_assert_eq(wb_tensor_version(x), 1);
    wb_storage_unset_stream(wb_tensor_storage(x));
    wb_tensor_release(y);
    wb_tensor_release(x);
    cu.stream_destroy(s2);
}

/* A call whose graph hands over a value on a storage whose deleter makes
   a call of its own: the value goes in the first call's commit, after its
   copy is recorded and before it is enqueued, or in its cleanup when its
   check failed.  An inner call that writes back on the device inside the
   outer's commit is refused (it would take the outer's copy for its
   own); one of the same wrapper whose graph fails leaves the outer's
   copy alone; one made from a failed call's cleanup runs.  The outer call
   writes back, or fails, as if nothing had run. */
typedef struct tc_inner {
    wb_wrapper *w;
    wb_tensor *x;
    wb_status st;
    char why[300];
    int runs;
} tc_inner;

static void tc_inner_deleter(void *ctx, void *data)
{
    tc_inner *in = ctx;
    wb_value out;
    if (in->runs++ == 0) {
        in->st = wb_call(in->w, (wb_arg[]){{.t = in->x}}, 1, &out, 1);
        snprintf(in->why, sizeof in->why, "%s", wb_last_error());
        if (in->st == WB_OK)
            wb_tensor_release(out.t);
    }
    free(data);
}

typedef struct tc_outer {
    wb_tensor *value;
    tc_inner *inner;
} tc_outer;

/* x's new value, then one for the output x is, whose deleter calls; a
   call made from that deleter gets no value. */
static int tc_outer_graph(void *ctx, const wb_arg *args, int nargs,
                          wb_value *values, int nvalues)
{
    tc_outer *g = ctx;
    wb_storage *s;
    (void)args; (void)nargs; (void)nvalues;
    if (g->inner->runs)
        return -1;
    values[0].t = wb_tensor_retain(g->value);
    if (wb_storage_wrap(calloc(4, sizeof(float)), 16,
                        (DLDevice){kDLCPU, 0}, tc_inner_deleter, g->inner,
                        &s) != WB_OK ||
        wb_tensor_from_storage(s, tc_f32, 1, (int64_t[]){4}, NULL, 0,
                               &values[1].t) != WB_OK)
        return -1;
    wb_storage_release(s);
    return 2;
}

enum { TC_INNER_OTHER, TC_INNER_SAME, TC_OUTER_FAILS };

Test(cuda, a_call_inside_another_calls_write_back)
{
    tc_need_cuda();
    for (int k = 0; k < 3 * TC_NTIERS; k++) {
        int how = k % 3;
        wb_spec *outer, *muts = tc_mut_spec(1, (DLDevice){0, 0});
        WBT_OK(wb_spec_parse("outer(Tensor(a!) x) -> Tensor(a!)", &outer));
        tc_graph g2 = {.n = 2, .values = {tc_vec(0, 4, 50), tc_vec(0, 4, 0)}};
        tc_inner inner = {.x = tc_vec(0, 4, 0)};
        /* An updated value of 8 elements fails the outer call's check. */
        tc_outer g1 = {tc_vec(0, how == TC_OUTER_FAILS ? 8 : 4, 9), &inner};
        wb_wrapper *w = wbt_wrap(outer, tc_outer_graph, &g1, tc_tiers[k / 3]);
        wb_wrapper *other = wbt_wrap(muts, tc_graph_fn, &g2, tc_tiers[k / 3]);
        inner.w = how == TC_INNER_SAME ? w : other;
        wb_tensor *x = tc_vec(0, 4, 0);
        wb_value out;
        if (how == TC_OUTER_FAILS) {
            WBT_FAILS(wb_call(w, (wb_arg[]){{.t = x}}, 1, &out, 1),
                      WB_ERR_SHAPE, "spec 'outer'");
            tc_expect(x, 4, 0);
            cr_assert_eq(wb_tensor_version(x), 0);
        } else {
            WBT_OK(wb_call(w, (wb_arg[]){{.t = x}}, 1, &out, 1));
            cr_assert_eq(out.t, x);
            wb_tensor_release(out.t);
            tc_expect(x, 4, 9);
            cr_assert_eq(wb_tensor_version(x), 1);
        }
        cr_assert_eq(inner.runs, 1);
        if (how == TC_INNER_OTHER) {
            cr_assert_eq(inner.st, WB_ERR_INVALID, "%s", inner.why);
            cr_assert(strstr(inner.why, "inside another call"), "%s",
                      inner.why);
        } else if (how == TC_INNER_SAME) {
            cr_assert_eq(inner.st, WB_ERR_GRAPH, "%s", inner.why);
        } else {
            cr_assert_eq(inner.st, WB_OK, "%s", inner.why);
        }
        tc_expect(inner.x, 4, how == TC_OUTER_FAILS ? 50 : 0);
        /* Outside, the other wrapper runs as ever, its own copy alone. */
        WBT_OK(wb_call(other, (wb_arg[]){{.t = inner.x}}, 1, &out, 1));
        wb_tensor_release(out.t);
        tc_expect(inner.x, 4, 50);
        tc_expect(x, 4, how == TC_OUTER_FAILS ? 0 : 9);
        wb_wrapper_free(w);
        wb_wrapper_free(other);
        wb_tensor_release(g1.value);
        wb_tensor_release(inner.x);
        wb_tensor_release(x);
        tc_graph_free(&g2);
        wb_spec_free(muts);
        wb_spec_free(outer);
    }
}

Test(cuda, an_empty_copy_of_huge_sizes_copies_nothing)
{
    /* Sizes whose product overflows, with a 0 among them: no element. */
    tc_need_cuda();
    int64_t sizes[3] = {INT64_C(1) << 62, 4, 0}, strides[3] = {1, 1, 1};
    wb_tensor *base = tc_vec(0, 4, 0), *x = NULL, *v = NULL;
    WBT_OK(wb_tensor_as_strided(base, 3, sizes, strides, 0, &x));
    WBT_OK(wb_tensor_as_strided(base, 3, sizes, strides, 1, &v));
    WBT_OK(wb_tensor_copy_(x, v));
    tc_expect(base, 4, 0);
    wb_tensor_release(v);
    wb_tensor_release(x);
    wb_tensor_release(base);
}

Test(cuda, a_runtime_of_another_major_version_is_refused)
{
    /* CUDA 12's runtime has every function, some with other arguments. */
    const char *rt = getenv("WRAPBAKE_CUDART");
    if (!rt || !strstr(rt, "fakecuda"))
        cr_skip_test("needs the emulated runtime, which can say another "
                     "version");
    setenv("FAKECUDA_RUNTIME_VERSION", "12090", 1);
    int n = -1;
    WBT_FAILS(wb_cuda_devices(&n), WB_ERR_DEVICE,
              "the CUDA runtime is version 12.9; wrapbake needs CUDA 13");
    cr_assert_eq(n, -1, "a failed call wrote its output");
    /* and is not kept loaded */
    char line[512];
    FILE *maps = fopen("/proc/self/maps", "r");
    cr_assert(maps);
    while (fgets(line, sizeof line, maps))
        cr_assert(!strstr(line, "fakecuda"), "still mapped: %s", line);
    fclose(maps);
}

Test(cuda, a_runtime_path_is_shown_printable)
{
    setenv("WRAPBAKE_CUDART", "/nonexistent/cu\n\x1b[31mdart.so", 1);
    int n = -1;
    cr_assert_neq(wb_cuda_devices(&n), WB_OK);
    for (const char *p = wb_last_error(); *p; p++)
        cr_assert(*p >= 0x20 && *p <= 0x7e, "byte 0x%02x in '%s'",
                  (unsigned char)*p, wb_last_error());
    cr_assert(strstr(wb_last_error(), "cu\\x0a\\x1b[31mdart.so"),
              "'%s' does not show the path", wb_last_error());
}

/* A library standing for a CUDA runtime, which announces being loaded:
   its constructor writes a marker file.  It is no runtime, so the
   library refuses it once loaded; what matters is whether it ran. */
typedef struct tc_rt {
    char dir[64], so[128], marker[128];
} tc_rt;

static void tc_rt_make(tc_rt *r)
{
    char src[128], cmd[512];
    snprintf(r->dir, sizeof r->dir, "/tmp/wbt-cudart-XXXXXX");
    cr_assert_not_null(mkdtemp(r->dir));
    snprintf(r->marker, sizeof r->marker, "%s/loaded", r->dir);
    snprintf(src, sizeof src, "%s/rt.c", r->dir);
    snprintf(r->so, sizeof r->so, "%s/rt.so", r->dir);
    FILE *f = fopen(src, "w");
    cr_assert_not_null(f);
    fprintf(f, "#include <stdio.h>\n"
               "__attribute__((constructor)) static void loaded(void)\n"
               "{ FILE *f = fopen(\"%s\", \"w\"); if (f) fclose(f); }\n",
            r->marker);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc -shared -fPIC -o '%s' '%s'", r->so, src);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(chmod(r->so, 0755), 0);
}

static void tc_rt_free(const tc_rt *r)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
    cr_assert_eq(system(cmd), 0);
}

/* Points WRAPBAKE_CUDART at path: the library must refuse it, saying
   why, without loading it.  The runtime is loaded once per process, and
   Criterion runs each test in its own, so each test tries one path. */
static void tc_rt_refused(const tc_rt *r, const char *path, const char *why)
{
    int n = -1;
    setenv("WRAPBAKE_CUDART", path, 1);
    WBT_FAILS(wb_cuda_devices(&n), WB_ERR_DEVICE, why);
    cr_assert(strstr(wb_last_error(), "cannot load the CUDA runtime "
                     "WRAPBAKE_CUDART names"), "%s", wb_last_error());
    cr_assert_neq(access(r->marker, F_OK), 0, "the runtime was loaded");
    tc_rt_free(r);
}

Test(cuda, a_runtime_the_checks_allow_is_loaded)
{
    /* What the refusals below stand between: this very file, kept as
       the user keeps a library, runs when loaded. */
    tc_rt r;
    int n = -1;
    tc_rt_make(&r);
    setenv("WRAPBAKE_CUDART", r.so, 1);
    WBT_FAILS(wb_cuda_devices(&n), WB_ERR_DEVICE, "has no cuda");
    cr_assert_eq(access(r.marker, F_OK), 0, "the runtime was not loaded");
    tc_rt_free(&r);
}

Test(cuda, a_runtime_through_the_users_own_link_is_loaded)
{
    /* libcudart.so is a link to its versioned name, and
       WRAPBAKE_CUDART=.../libcudart.so names the link itself. */
    tc_rt r;
    char link[160];
    int n = -1;
    tc_rt_make(&r);
    snprintf(link, sizeof link, "%s/librt.so", r.dir);
    cr_assert_eq(symlink("rt.so", link), 0);
    setenv("WRAPBAKE_CUDART", link, 1);
    WBT_FAILS(wb_cuda_devices(&n), WB_ERR_DEVICE, "has no cuda");
    cr_assert_eq(access(r.marker, F_OK), 0, "the runtime was not loaded");
    tc_rt_free(&r);
}

Test(cuda, a_runtime_through_a_final_link_of_another_user_is_not_loaded)
{
    tc_rt r;
    char link[160];
    if (geteuid() != 0)
        cr_skip_test("needs root to make a link of another user's "
                     "(uid 65534)");
    tc_rt_make(&r);
    snprintf(link, sizeof link, "%s/librt.so", r.dir);
    cr_assert_eq(symlink("rt.so", link), 0);
    cr_assert_eq(lchown(link, 65534, 65534), 0);
    tc_rt_refused(&r, link, "librt.so belongs to uid 65534");
}

Test(cuda, a_runtime_others_can_write_is_not_loaded)
{
    tc_rt r;
    tc_rt_make(&r);
    cr_assert_eq(chmod(r.so, 0666), 0);
    tc_rt_refused(&r, r.so, "it is writable by others (mode 666)");
}

Test(cuda, a_runtime_in_a_directory_others_can_write_is_not_loaded)
{
    tc_rt r;
    tc_rt_make(&r);
    cr_assert_eq(chmod(r.dir, 0777), 0);
    tc_rt_refused(&r, r.so, "is writable by others and not sticky");
}

Test(cuda, a_runtime_path_that_is_relative_is_not_loaded)
{
    tc_rt r;
    char cwd[512];
    tc_rt_make(&r);
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    cr_assert_eq(chdir(r.dir), 0);
    tc_rt_refused(&r, "rt.so", "it is not an absolute path");
    cr_assert_eq(chdir(cwd), 0);
}

Test(cuda, a_runtime_path_naming_a_fifo_is_not_opened, .timeout = 20)
{
    /* dlopen would block opening it, waiting for a writer. */
    tc_rt r;
    char fifo[160];
    tc_rt_make(&r);
    snprintf(fifo, sizeof fifo, "%s/fifo.so", r.dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    tc_rt_refused(&r, fifo, "it is not a regular file");
}

Test(cuda, a_runtime_of_another_user_is_not_loaded)
{
    tc_rt r;
    if (geteuid() != 0)
        cr_skip_test("needs root to give a file to another user "
                     "(uid 65534)");
    tc_rt_make(&r);
    cr_assert_eq(chown(r.so, 65534, 65534), 0);
    tc_rt_refused(&r, r.so, "it belongs to uid 65534");
}

Test(cuda, a_runtime_through_a_link_of_another_user_is_not_loaded)
{
    /* The user's link to a link of theirs in a sticky directory: every
       link met counts, not only the first. */
    tc_rt r;
    char sticky[160], theirs[200], mine[200];
    if (geteuid() != 0)
        cr_skip_test("needs root to make a link of another user's "
                     "(uid 65534)");
    tc_rt_make(&r);
    snprintf(sticky, sizeof sticky, "%s/sticky", r.dir);
    cr_assert_eq(mkdir(sticky, 01777), 0);
    cr_assert_eq(chmod(sticky, 01777), 0);
    snprintf(theirs, sizeof theirs, "%s/theirs.so", sticky);
    cr_assert_eq(symlink(r.so, theirs), 0);
    cr_assert_eq(lchown(theirs, 65534, 65534), 0);
    snprintf(mine, sizeof mine, "%s/mine.so", r.dir);
    cr_assert_eq(symlink(theirs, mine), 0);
    tc_rt_refused(&r, mine, "theirs.so belongs to uid 65534");
}

#else /* !WB_WITH_CUDA */

Test(cuda, built_without_cuda)
{
    int n = -1;
    WBT_FAILS(wb_cuda_devices(&n), WB_ERR_UNSUPPORTED, "no CUDA support");
    cr_assert_eq(n, -1, "a failed call wrote its output");
    cr_skip_test("CUDA tests skipped: this build has no CUDA (WITH_CUDA=0)");
}

#endif /* WB_WITH_CUDA */
