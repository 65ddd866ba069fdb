/*
 * Unit tests of the tensor runtime: storages, tensors, views, copies,
 * resize_, set_, detach, DLPack exchange, the per-thread header cache and
 * the status helpers.  Every test ends with every reference it took given
 * back, so that a leak shows up as a refcount assertion (or under ASan).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"

/* ---- local helpers ---------------------------------------------------- */

/* A distinct address to preset output parameters with, so that a test can
   tell that a failing call left them alone. */
static char tt_canary_byte;
#define TT_CANARY ((void *)&tt_canary_byte)

/* Records the calls of a storage deleter, so that tests can check it ran
   exactly once and with what was wrapped. */
typedef struct tt_log {
    int calls;
    void *data;
    bool free_data;  /* the deleter owns data and frees it */
} tt_log;

static void tt_deleter(void *ctx, void *data)
{
    tt_log *log = ctx;
    log->calls++;
    log->data = data;
    if (log->free_data)
        free(data);
}

/* A DLPack producer living on the test's stack: the managed tensor, its
   arrays, a buffer and a count of how often its deleter ran. */
typedef struct tt_producer {
    DLManagedTensor mt;
    int64_t shape[WB_MAX_DIMS + 1];
    int64_t strides[WB_MAX_DIMS + 1];
    union {
        double d[64];  /* also keeps every element size aligned */
        float f[128];
    } buf;
    int deletes;
} tt_producer;

static void tt_producer_delete(DLManagedTensor *mt)
{
    tt_producer *p = mt->manager_ctx;
    p->deletes++;
}

/* Fills p as a CPU tensor over its own buffer; strides NULL leaves the
   DLPack strides NULL (contiguous). */
static void tt_producer_init(tt_producer *p, DLDataType dtype, int ndim,
                             const int64_t *shape, const int64_t *strides,
                             uint64_t byte_offset)
{
    memset(p, 0, sizeof *p);
    for (int d = 0; d < ndim && d <= WB_MAX_DIMS; d++) {
        p->shape[d] = shape[d];
        if (strides)
            p->strides[d] = strides[d];
    }
    for (int i = 0; i < 64; i++)
        p->buf.d[i] = i;
    p->mt.dl_tensor.data = &p->buf;
    p->mt.dl_tensor.device = WBT_CPU;
    p->mt.dl_tensor.ndim = ndim;
    p->mt.dl_tensor.dtype = dtype;
    p->mt.dl_tensor.shape = p->shape;
    p->mt.dl_tensor.strides = strides ? p->strides : NULL;
    p->mt.dl_tensor.byte_offset = byte_offset;
    p->mt.manager_ctx = p;
    p->mt.deleter = tt_producer_delete;
}

/* A byte pattern that differs between neighbouring bytes and elements, so a
   copy that takes the wrong element or the wrong bytes of one is caught. */
static unsigned char tt_pattern(size_t i, unsigned seed)
{
    return (unsigned char)((i * 131u + seed * 29u + (i >> 8) * 7u) % 251u + 1u);
}

/* A view of a new storage of nelem elements whose bytes follow the pattern
   for seed; the view holds the only reference to the storage. */
static wb_tensor *tt_view(DLDataType dtype, int64_t nelem, unsigned seed,
                          int ndim, const int64_t *sizes,
                          const int64_t *strides, int64_t offset)
{
    size_t nbytes = (size_t)nelem * wb_dtype_size(dtype);
    wb_storage *s = NULL;
    wb_tensor *t = NULL;
    WBT_OK(wb_storage_new(WBT_CPU, nbytes, &s));
    unsigned char *p = wb_storage_data(s);
    for (size_t i = 0; i < nbytes; i++)
        p[i] = tt_pattern(i, seed);
    WBT_OK(wb_tensor_from_storage(s, dtype, ndim, sizes, strides, offset, &t));
    wb_storage_release(s);
    cr_assert_eq(wb_storage_refcount(wb_tensor_storage(t)), 1);
    return t;
}

/* The byte offset from the storage start of the element at row-major linear
   index i of t, computed from t's metadata alone, independently of the
   library's copy loop. */
static int64_t tt_elem_byte(const wb_tensor *t, int64_t i)
{
    int64_t off = wb_tensor_offset(t);
    for (int d = wb_tensor_ndim(t) - 1; d >= 0; d--) {
        int64_t n = wb_tensor_sizes(t)[d];
        off += (i % n) * wb_tensor_strides(t)[d];
        i /= n;
    }
    return off * (int64_t)wb_dtype_size(wb_tensor_dtype(t));
}

/* Checks a finished copy: every element of dst equals the same element of
   src byte for byte, and every byte of dst's storage outside dst's view
   still equals its value in before (a snapshot taken before the copy). */
static void tt_check_copy(const wb_tensor *dst, const wb_tensor *src,
                          const unsigned char *before, const char *what)
{
    size_t es = wb_dtype_size(wb_tensor_dtype(dst));
    const wb_storage *ds = wb_tensor_storage(dst);
    const unsigned char *dp = wb_storage_data(ds);
    const unsigned char *sp = wb_storage_data(wb_tensor_storage(src));
    size_t nbytes = wb_storage_nbytes(ds);
    bool *in_view = calloc(nbytes ? nbytes : 1, sizeof *in_view);
    cr_assert(in_view);
    for (int64_t i = 0; i < wb_tensor_numel(dst); i++) {
        int64_t db = tt_elem_byte(dst, i), sb = tt_elem_byte(src, i);
        cr_assert(memcmp(dp + db, sp + sb, es) == 0,
                  "%s: element %lld differs (es %zu)", what, (long long)i, es);
        for (size_t b = 0; b < es; b++)
            in_view[db + (int64_t)b] = true;
    }
    for (size_t b = 0; b < nbytes; b++)
        if (!in_view[b])
            cr_assert_eq(dp[b], before[b],
                         "%s: byte %zu outside the view was written", what, b);
    free(in_view);
}

/* Copies src into dst and checks the data, the bytes around the view and
   that only dst's version moved, by exactly one. */
static void tt_copy_and_check(wb_tensor *dst, const wb_tensor *src,
                              const char *what)
{
    const wb_storage *ds = wb_tensor_storage(dst);
    size_t nbytes = wb_storage_nbytes(ds);
    unsigned char *before = malloc(nbytes ? nbytes : 1);
    cr_assert(before);
    memcpy(before, wb_storage_data(ds), nbytes);
    uint64_t dv = wb_tensor_version(dst), sv = wb_tensor_version(src);
    WBT_OK(wb_tensor_copy_(dst, src));
    cr_assert_eq(wb_tensor_version(dst), dv + 1, "%s: dst version", what);
    cr_assert_eq(wb_tensor_version(src), sv, "%s: src version", what);
    tt_check_copy(dst, src, before, what);
    free(before);
}

/* ---- storages --------------------------------------------------------- */

Test(tensor, storage_new_is_zeroed_and_counted)
{
    wb_storage *s = NULL;
    WBT_OK(wb_storage_new(WBT_CPU, 64, &s));
    cr_assert_not_null(wb_storage_data(s));
    cr_assert_eq(wb_storage_nbytes(s), 64);
    cr_assert_eq(wb_storage_version(s), 0);
    cr_assert_eq(wb_storage_refcount(s), 1);
    cr_assert_eq(wb_storage_device(s).device_type, kDLCPU);
    cr_assert_eq(wb_storage_device(s).device_id, 0);
    const unsigned char *p = wb_storage_data(s);
    for (int i = 0; i < 64; i++)
        cr_assert_eq(p[i], 0, "byte %d is not zero", i);
    cr_assert_eq(wb_storage_retain(s), s);
    cr_assert_eq(wb_storage_refcount(s), 2);
    wb_storage_release(s);
    cr_assert_eq(wb_storage_refcount(s), 1);
    wb_storage_release(s);
}

Test(tensor, storage_new_of_zero_bytes)
{
    wb_storage *s = NULL;
    WBT_OK(wb_storage_new(WBT_CPU, 0, &s));
    cr_assert_eq(wb_storage_nbytes(s), 0);
    cr_assert_eq(wb_storage_refcount(s), 1);
    wb_storage_release(s);
}

Test(tensor, storage_new_refusals)
{
    wb_storage *s = TT_CANARY;
    DLDevice gpu = {kDLOpenCL, 0}; /* no build supports it */
    WBT_FAILS(wb_storage_new(gpu, 16, &s), WB_ERR_DEVICE, "is not supported");
    cr_assert_eq(s, TT_CANARY, "a failing call wrote its output");
    WBT_FAILS(wb_storage_new(WBT_CPU, 16, NULL), WB_ERR_INVALID, "out is NULL");
}

Test(tensor, storage_wrap_runs_the_deleter_once_at_the_last_release)
{
    tt_log log = {.free_data = true};
    void *buf = malloc(32);
    cr_assert(buf);
    wb_storage *s = NULL;
    WBT_OK(wb_storage_wrap(buf, 32, WBT_CPU, tt_deleter, &log, &s));
    cr_assert_eq(wb_storage_data(s), buf);
    cr_assert_eq(wb_storage_nbytes(s), 32);
    cr_assert_eq(wb_storage_version(s), 0);
    wb_storage_retain(s);
    wb_storage_retain(s);
    cr_assert_eq(wb_storage_refcount(s), 3);
    wb_storage_release(s);
    wb_storage_release(s);
    cr_assert_eq(log.calls, 0, "the deleter ran before the last release");
    cr_assert_eq(wb_storage_refcount(s), 1);
    wb_storage_release(s);
    cr_assert_eq(log.calls, 1);
    cr_assert_eq(log.data, buf, "the deleter got another pointer");
}

Test(tensor, storage_wrap_without_deleter_and_views_keep_it_alive)
{
    /* Memory the caller keeps: no deleter, and a tensor view keeps the
       storage object alive after the caller's own reference is gone. */
    float buf[6] = {1, 2, 3, 4, 5, 6};
    wb_storage *s = NULL;
    wb_tensor *t = NULL;
    int64_t sizes[1] = {6};
    WBT_OK(wb_storage_wrap(buf, sizeof buf, WBT_CPU, NULL, NULL, &s));
    WBT_OK(wb_tensor_from_storage(s, WBT_F32, 1, sizes, NULL, 0, &t));
    cr_assert_eq(wb_storage_refcount(s), 2);
    wb_storage_release(s);
    cr_assert_eq(wb_storage_refcount(wb_tensor_storage(t)), 1);
    cr_assert_eq(wb_tensor_data(t), (void *)buf);
    cr_assert_eq(wbt_at(t, 5), 6.0f);
    wbt_release_last(t);
    cr_assert_eq(buf[0], 1.0f, "memory without a deleter was touched");
}

Test(tensor, storage_wrap_refusals_do_not_call_the_deleter)
{
    tt_log log = {0};
    char buf[8];
    wb_storage *s = TT_CANARY;
    DLDevice gpu = {kDLOpenCL, 0}; /* no build supports it */
    WBT_FAILS(wb_storage_wrap(NULL, 8, WBT_CPU, tt_deleter, &log, &s),
              WB_ERR_INVALID, "NULL data");
    WBT_FAILS(wb_storage_wrap(buf, 8, gpu, tt_deleter, &log, &s),
              WB_ERR_DEVICE, "device type 4");
    WBT_FAILS(wb_storage_wrap(buf, 8, WBT_CPU, tt_deleter, &log, NULL),
              WB_ERR_INVALID, "out");
    cr_assert_eq(s, TT_CANARY, "a failing call wrote its output");
    cr_assert_eq(log.calls, 0, "a failed wrap called the deleter");
    /* No memory at all is fine when there are no bytes to hold. */
    WBT_OK(wb_storage_wrap(NULL, 0, WBT_CPU, tt_deleter, &log, &s));
    cr_assert_eq(wb_storage_nbytes(s), 0);
    wb_storage_release(s);
    cr_assert_eq(log.calls, 1);
}

Test(tensor, null_objects_are_harmless)
{
    wb_storage_release(NULL);
    wb_tensor_release(NULL);
    cr_assert_null(wb_storage_retain(NULL));
    cr_assert_null(wb_tensor_retain(NULL));
    cr_assert_null(wb_storage_data(NULL));
    cr_assert_eq(wb_storage_nbytes(NULL), 0);
    cr_assert_eq(wb_storage_refcount(NULL), 0);
    cr_assert_eq(wb_storage_version(NULL), 0);
    cr_assert_eq(wb_tensor_refcount(NULL), 0);
    cr_assert_eq(wb_tensor_ndim(NULL), 0);
    cr_assert_null(wb_tensor_sizes(NULL));
    cr_assert_null(wb_tensor_strides(NULL));
    cr_assert_null(wb_tensor_storage(NULL));
    cr_assert_null(wb_tensor_data(NULL));
    cr_assert_eq(wb_tensor_numel(NULL), 0);
    cr_assert_eq(wb_tensor_flags(NULL), 0);
    cr_assert_eq(wb_tensor_dynamic_dims(NULL), 0);
    cr_assert_not(wb_tensor_requires_grad(NULL));
    cr_assert_not(wb_tensor_is_contiguous(NULL));
    wb_tensor_set_requires_grad(NULL, true);
    wb_tensor_set_dynamic_dims(NULL, 1);
}

/* ---- dtypes ----------------------------------------------------------- */

Test(tensor, dtype_size)
{
    static const struct {
        DLDataType dtype;
        size_t size;
    } cases[] = {
        {{kDLUInt, 8, 1}, 1},   {{kDLInt, 16, 1}, 2},
        {{kDLFloat, 16, 1}, 2}, {{kDLBfloat, 16, 1}, 2},
        {{kDLFloat, 32, 1}, 4}, {{kDLInt, 64, 1}, 8},
        {{kDLFloat, 64, 1}, 8}, {{kDLUInt, 8, 3}, 3},
        {{kDLComplex, 128, 1}, 16}, {{kDLFloat, 32, 4}, 16},
        {{kDLComplex, 64, 2}, 16},
        /* Sub-byte, zero-bit and zero-lane types are not byte-addressable. */
        {{kDLInt, 4, 1}, 0},    {{kDLUInt, 1, 8}, 0},
        {{kDLFloat, 12, 1}, 0}, {{kDLFloat, 0, 1}, 0},
        {{kDLFloat, 32, 0}, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        cr_assert_eq(wb_dtype_size(cases[i].dtype), cases[i].size,
                     "case %zu: %zu bytes, expected %zu", i,
                     wb_dtype_size(cases[i].dtype), cases[i].size);
}

/* ---- wb_tensor_new ---------------------------------------------------- */

Test(tensor, new_is_zero_filled_and_contiguous)
{
    int64_t sizes[3] = {2, 3, 4}, strides[3] = {12, 4, 1};
    wb_tensor *t = NULL;
    WBT_OK(wb_tensor_new(WBT_F32, WBT_CPU, 3, sizes, &t));
    wbt_assert_view(t, 3, sizes, strides, 0);
    cr_assert_eq(wb_tensor_numel(t), 24);
    cr_assert(wb_tensor_is_contiguous(t));
    cr_assert_eq(wb_tensor_refcount(t), 1);
    cr_assert_eq(wb_storage_refcount(wb_tensor_storage(t)), 1);
    cr_assert_eq(wb_storage_nbytes(wb_tensor_storage(t)), 96);
    cr_assert_eq(wb_tensor_data(t), wb_storage_data(wb_tensor_storage(t)));
    cr_assert_eq(wb_tensor_version(t), 0);
    cr_assert_eq(wb_tensor_flags(t), 0);
    cr_assert_not(wb_tensor_requires_grad(t));
    cr_assert_eq(wb_tensor_dynamic_dims(t), 0);
    cr_assert_eq(wb_tensor_dtype(t).code, kDLFloat);
    cr_assert_eq(wb_tensor_dtype(t).bits, 32);
    cr_assert_eq(wb_tensor_dtype(t).lanes, 1);
    cr_assert_eq(wb_tensor_device(t).device_type, kDLCPU);
    const float *p = wb_tensor_data(t);
    for (int i = 0; i < 24; i++)
        cr_assert_eq(p[i], 0.0f, "element %d is not zero", i);
    wbt_release_last(t);
}

Test(tensor, new_with_sizes_zero_and_one)
{
    static const struct {
        int ndim;
        int64_t sizes[4];
        int64_t strides[4];
        int64_t numel;
    } cases[] = {
        /* A zero-size dim counts as one for the strides outside it, as in
           PyTorch, so the strides stay those of the non-empty shape. */
        {2, {0, 3}, {3, 1}, 0},
        {3, {3, 0, 2}, {2, 2, 1}, 0},
        {2, {4, 0}, {1, 1}, 0},
        {2, {1, 1}, {1, 1}, 1},
        {3, {1, 5, 1}, {5, 1, 1}, 5},
        {4, {2, 1, 3, 1}, {3, 3, 1, 1}, 6},
        {0, {0}, {0}, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        wb_tensor *t = NULL;
        WBT_OK(wb_tensor_new(WBT_F64, WBT_CPU, cases[c].ndim, cases[c].sizes,
                             &t));
        wbt_assert_view(t, cases[c].ndim, cases[c].sizes, cases[c].strides, 0);
        cr_assert_eq(wb_tensor_numel(t), cases[c].numel, "case %zu numel", c);
        cr_assert_eq(wb_storage_nbytes(wb_tensor_storage(t)),
                     (size_t)cases[c].numel * 8, "case %zu nbytes", c);
        cr_assert(wb_tensor_is_contiguous(t), "case %zu", c);
        wbt_release_last(t);
    }
}

Test(tensor, new_with_max_dims)
{
    int64_t sizes[WB_MAX_DIMS];
    for (int d = 0; d < WB_MAX_DIMS; d++)
        sizes[d] = d % 4 == 0 ? 2 : 1;
    wb_tensor *t = NULL;
    WBT_OK(wb_tensor_new(WBT_U8, WBT_CPU, WB_MAX_DIMS, sizes, &t));
    cr_assert_eq(wb_tensor_ndim(t), WB_MAX_DIMS);
    cr_assert_eq(wb_tensor_numel(t), 16);
    cr_assert_eq(wb_tensor_strides(t)[WB_MAX_DIMS - 1], 1);
    cr_assert_eq(wb_tensor_strides(t)[0], 8);
    wbt_release_last(t);
}

Test(tensor, new_refusals)
{
    int64_t sizes[WB_MAX_DIMS + 1], neg[2] = {2, -1};
    int64_t huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
    DLDataType bad = {kDLFloat, 4, 1};
    DLDevice gpu = {kDLOpenCL, 0}; /* no build supports it */
    wb_tensor *t = TT_CANARY;
    for (int d = 0; d <= WB_MAX_DIMS; d++)
        sizes[d] = 1;
    WBT_FAILS(wb_tensor_new(WBT_F32, WBT_CPU, WB_MAX_DIMS + 1, sizes, &t),
              WB_ERR_SHAPE, "ndim 17 is outside 0..16");
    WBT_FAILS(wb_tensor_new(WBT_F32, WBT_CPU, -1, sizes, &t), WB_ERR_SHAPE,
              "ndim -1");
    WBT_FAILS(wb_tensor_new(WBT_F32, WBT_CPU, 2, neg, &t), WB_ERR_SHAPE,
              "negative");
    WBT_FAILS(wb_tensor_new(WBT_F32, WBT_CPU, 2, huge, &t), WB_ERR_SHAPE,
              "overflowing");
    WBT_FAILS(wb_tensor_new(bad, WBT_CPU, 1, sizes, &t), WB_ERR_TYPE,
              "float4 is not byte-addressable");
    WBT_FAILS(wb_tensor_new(WBT_F32, gpu, 1, sizes, &t), WB_ERR_DEVICE,
              "is not supported");
    WBT_FAILS(wb_tensor_new(WBT_F32, WBT_CPU, 2, NULL, &t), WB_ERR_INVALID,
              "NULL sizes");
    WBT_FAILS(wb_tensor_new(WBT_F32, WBT_CPU, 1, sizes, NULL), WB_ERR_INVALID,
              "out");
    cr_assert_eq(t, TT_CANARY, "a failing call wrote its output");
}

/* ---- views ------------------------------------------------------------ */

Test(tensor, from_storage_views_share_storage_not_version)
{
    wb_storage *s = NULL;
    wb_tensor *a = NULL, *b = NULL;
    int64_t sizes[2] = {2, 3}, bsizes[1] = {4}, bstrides[1] = {3};
    WBT_OK(wb_storage_new(WBT_CPU, 48, &s));
    float *p = wb_storage_data(s);
    for (int i = 0; i < 12; i++)
        p[i] = (float)i;
    /* A contiguous view that ends exactly at the storage's end. */
    WBT_OK(wb_tensor_from_storage(s, WBT_F32, 2, sizes, NULL, 6, &a));
    int64_t astrides[2] = {3, 1};
    wbt_assert_view(a, 2, sizes, astrides, 6);
    cr_assert_eq(wb_tensor_data(a), (void *)(p + 6));
    cr_assert_eq(wbt_at(a, 1, 2), 11.0f);
    WBT_OK(wb_tensor_from_storage(s, WBT_F32, 1, bsizes, bstrides, 1, &b));
    cr_assert_eq(wbt_at(b, 3), 10.0f);
    cr_assert_not(wb_tensor_is_contiguous(b));
    cr_assert_eq(wb_tensor_storage(a), s);
    cr_assert_eq(wb_tensor_storage(b), s);
    cr_assert_eq(wb_storage_refcount(s), 3);
    cr_assert_eq(wb_tensor_refcount(a), 1);

    /* Made independently, as torch.empty(0).set_(storage) twice, a and b
       have counters of their own: a write through b moves only b's.  a
       took the storage's counter, being the first tensor made on it. */
    wb_tensor *src = wbt_f32(100, 1, 4);
    WBT_OK(wb_tensor_copy_(b, src));
    cr_assert_eq(wb_tensor_version(a), 0);
    cr_assert_eq(wb_tensor_version(b), 1);
    cr_assert_eq(wb_storage_version(s), 0);
    cr_assert_eq(wbt_at(a, 1, 1), 103.0f, "a does not see b's write");
    /* A view shares the counter of the tensor it views. */
    wb_tensor *bv = NULL;
    WBT_OK(wb_tensor_as_strided(b, 1, bsizes, bstrides, 0, &bv));
    WBT_OK(wb_tensor_copy_(bv, src));
    cr_assert_eq(wb_tensor_version(b), 2);
    cr_assert_eq(wb_tensor_version(bv), 2);
    cr_assert_eq(wb_tensor_version(a), 0);
    wbt_release_last(b);
    WBT_OK(wb_tensor_copy_(bv, src));
    cr_assert_eq(wb_tensor_version(bv), 3, "the counter outlives b");
    wbt_release_last(bv);
    wbt_release_last(src);

    wbt_release_last(a);
    cr_assert_eq(wb_storage_refcount(s), 1);
    wb_storage_release(s);
}

Test(tensor, from_storage_bounds_are_checked)
{
    wb_storage *s = NULL;
    wb_tensor *t = TT_CANARY;
    int64_t sizes[2] = {2, 3}, strides[2] = {3, 1};
    int64_t negstride[2] = {-3, 1}, negsize[2] = {2, -3};
    int64_t bigstride[2] = {INT64_MAX, 1};
    int64_t many[WB_MAX_DIMS + 1];
    DLDataType bad = {kDLInt, 4, 1};
    for (int d = 0; d <= WB_MAX_DIMS; d++)
        many[d] = 1;
    WBT_OK(wb_storage_new(WBT_CPU, 48, &s));

    WBT_FAILS(wb_tensor_from_storage(s, WBT_F32, 2, sizes, strides, 7, &t),
              WB_ERR_SHAPE, "ends at byte 52, past the storage's 48 bytes");
    WBT_FAILS(wb_tensor_from_storage(s, WBT_F64, 2, sizes, NULL, 1, &t),
              WB_ERR_SHAPE, "past the storage");
    WBT_FAILS(wb_tensor_from_storage(s, WBT_F32, 2, sizes, negstride, 6, &t),
              WB_ERR_SHAPE, "stride -3 of dim 0 is negative");
    WBT_FAILS(wb_tensor_from_storage(s, WBT_F32, 2, negsize, strides, 0, &t),
              WB_ERR_SHAPE, "size -3 of dim 1 is negative");
    WBT_FAILS(wb_tensor_from_storage(s, WBT_F32, 2, sizes, strides, -1, &t),
              WB_ERR_SHAPE, "offset -1 is negative");
    WBT_FAILS(wb_tensor_from_storage(s, WBT_F32, WB_MAX_DIMS + 1, many, NULL,
                                     0, &t),
              WB_ERR_SHAPE, "ndim 17 is outside 0..16");
    WBT_FAILS(wb_tensor_from_storage(s, WBT_F32, -2, many, NULL, 0, &t),
              WB_ERR_SHAPE, "ndim -2");
    WBT_FAILS(wb_tensor_from_storage(s, WBT_F32, 2, sizes, bigstride, 0, &t),
              WB_ERR_SHAPE, "overflows");
    WBT_FAILS(wb_tensor_from_storage(s, bad, 2, sizes, NULL, 0, &t),
              WB_ERR_TYPE, "int4 is not byte-addressable");
    WBT_FAILS(wb_tensor_from_storage(NULL, WBT_F32, 2, sizes, NULL, 0, &t),
              WB_ERR_INVALID, "NULL storage");
    WBT_FAILS(wb_tensor_from_storage(s, WBT_F32, 2, NULL, NULL, 0, &t),
              WB_ERR_INVALID, "sizes");
    /* Nothing was written and no reference was taken by the failures. */
    cr_assert_eq(t, TT_CANARY, "a failing call wrote its output");
    cr_assert_eq(wb_storage_refcount(s), 1, "a failure leaked a reference");
    wb_storage_release(s);
}

Test(tensor, from_storage_contiguous_sizes_overflowing_int64)
{
    /* Contiguous strides of these sizes do not fit in 64 bits; the view must
       be refused as overflowing, with no undefined arithmetic on the way. */
    wb_storage *s = NULL;
    wb_tensor *t = TT_CANARY;
    int64_t sizes[3] = {INT64_C(1) << 32, INT64_C(1) << 32, 2};
    WBT_OK(wb_storage_new(WBT_CPU, 16, &s));
    WBT_FAILS(wb_tensor_from_storage(s, WBT_F32, 3, sizes, NULL, 0, &t),
              WB_ERR_SHAPE, "overflows");
    cr_assert_eq(t, TT_CANARY);
    /* An empty view with the same huge extents holds no element: accepted. */
    int64_t empty[3] = {INT64_C(1) << 32, 0, INT64_C(1) << 32};
    WBT_OK(wb_tensor_from_storage(s, WBT_F32, 3, empty, NULL, 0, &t));
    cr_assert_eq(wb_tensor_numel(t), 0);
    wbt_release_last(t);
    cr_assert_eq(wb_storage_refcount(s), 1);
    wb_storage_release(s);
}

/* A new tensor, or a resize, with a zero size and sizes whose product
   overflows holds no byte: accepted, as torch.empty accepts it, and
   copies between such tensors do nothing, with no undefined arithmetic
   on the way (UndefinedBehaviorSanitizer, in make test-asan, aborts on a
   signed overflow). */
Test(tensor, empty_tensors_of_huge_sizes)
{
    int64_t zero_last[2] = {INT64_MAX / 2, 0};
    int64_t zero_first[3] = {0, INT64_C(1) << 62, INT64_C(1) << 62};
    wb_tensor *a = NULL, *b = NULL;
    WBT_OK(wb_tensor_new(WBT_F32, WBT_CPU, 2, zero_last, &a));
    cr_assert_eq(wb_tensor_numel(a), 0);
    cr_assert_eq(wb_storage_nbytes(wb_tensor_storage(a)), 0);
    WBT_OK(wb_tensor_resize_(a, 3, zero_first));
    cr_assert_eq(wb_tensor_numel(a), 0);
    WBT_OK(wb_tensor_new(WBT_F32, WBT_CPU, 3, zero_first, &b));
    WBT_OK(wb_tensor_copy_(b, a));
    WBT_OK(wb_tensor_copy_(a, b));
    wbt_release_last(a);
    wbt_release_last(b);
}

/* An empty view needs no byte of its storage, wherever it starts: x[2:, 3:]
   of a 2 x 3 tensor starts at element 9 of 6, as torch.as_strided allows.
   Its start must still be a byte offset int64_t holds. */
Test(tensor, an_empty_view_may_start_past_the_end)
{
    wb_tensor *x = wbt_f32(0, 2, 2, 3), *v = NULL;
    int64_t none[2] = {0, 0}, strides[2] = {3, 1};
    WBT_OK(wb_tensor_as_strided(x, 2, none, strides, 9, &v));
    cr_assert_eq(wb_tensor_offset(v), 9);
    cr_assert_eq(wb_tensor_numel(v), 0);
    WBT_OK(wb_tensor_copy_(v, v));
    WBT_OK(wb_tensor_as_strided_(x, 2, none, strides, 9));
    cr_assert_eq(wb_tensor_offset(x), 9);
    WBT_FAILS(wb_tensor_as_strided_(x, 2, none, strides, INT64_MAX / 2),
              WB_ERR_SHAPE, "overflows");
    cr_assert_eq(wb_tensor_offset(x), 9);
    wbt_release_last(v);
    wbt_release_last(x);
}

Test(tensor, broadcast_views_whose_element_count_overflows)
{
    /* Stride 0 lets one element stand for many; a count that int64_t cannot
       hold is refused, one that it can is fine. */
    wb_tensor *one = wbt_f32(3, 0), *v = TT_CANARY;
    int64_t huge[3] = {INT64_C(1) << 32, INT64_C(1) << 32, 2};
    int64_t big[2] = {INT64_C(1) << 31, INT64_C(1) << 31};
    int64_t zero[3] = {0, 0, 0};
    WBT_FAILS(wb_tensor_as_strided(one, 3, huge, zero, 0, &v), WB_ERR_SHAPE,
              "element count overflows");
    cr_assert_eq(v, TT_CANARY);
    WBT_OK(wb_tensor_as_strided(one, 2, big, zero, 0, &v));
    cr_assert_eq(wb_tensor_numel(v), INT64_C(1) << 62);
    cr_assert_eq(wbt_at(v, 12345, 678), 3.0f);
    /* The same refusal for an in-place restride, which leaves v alone. */
    WBT_FAILS(wb_tensor_as_strided_(v, 3, huge, zero, 0), WB_ERR_SHAPE,
              "element count overflows");
    cr_assert_eq(wb_tensor_numel(v), INT64_C(1) << 62);
    /* With a zero size anywhere the view is empty, and fine. */
    int64_t empty[3] = {INT64_C(1) << 32, INT64_C(1) << 32, 0};
    WBT_OK(wb_tensor_as_strided_(v, 3, empty, zero, 0));
    cr_assert_eq(wb_tensor_numel(v), 0);
    wbt_release_last(v);
    wbt_release_last(one);
}

Test(tensor, as_strided_views_base_storage_with_base_dtype)
{
    wb_tensor *base = wbt_f32(0, 2, 3, 4);
    wb_tensor *v = NULL;
    int64_t sizes[2] = {4, 3}, strides[2] = {1, 4};
    /* The offset is absolute in the storage, not relative to base's. */
    WBT_OK(wb_tensor_as_strided(base, 2, sizes, strides, 0, &v));
    cr_assert_eq(wb_tensor_storage(v), wb_tensor_storage(base));
    cr_assert_eq(wb_tensor_dtype(v).bits, 32);
    cr_assert_eq(wb_storage_refcount(wb_tensor_storage(base)), 2);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            cr_assert_eq(wbt_at(v, i, j), wbt_at(base, j, i));
    cr_assert_not(wb_tensor_is_contiguous(v));
    /* A view of a view: still base's storage, one more reference. */
    wb_tensor *w = NULL;
    int64_t wsizes[1] = {3}, wstrides[1] = {4};
    WBT_OK(wb_tensor_as_strided(v, 1, wsizes, wstrides, 2, &w));
    cr_assert_eq(wbt_at(w, 2), 10.0f);
    cr_assert_eq(wb_storage_refcount(wb_tensor_storage(base)), 3);
    wb_tensor *src = wbt_f32(-1, 1, 3);
    WBT_OK(wb_tensor_copy_(w, src));
    cr_assert_eq(wb_tensor_version(base), 1, "views share one counter");
    cr_assert_eq(wb_tensor_version(v), 1);
    cr_assert_eq(wbt_at(base, 1, 2), 0.0f);
    cr_assert_eq(wbt_at(base, 2, 2), 1.0f);
    wbt_release_last(src);
    wbt_release_last(w);
    wbt_release_last(v);
    wbt_release_last(base);
}

Test(tensor, as_strided_bounds_are_checked)
{
    wb_tensor *base = wbt_f32(0, 1, 10);
    wb_tensor *v = TT_CANARY;
    int64_t sizes[2] = {2, 5}, strides[2] = {5, 1};
    int64_t neg[2] = {-5, 1}, many[WB_MAX_DIMS + 1];
    for (int d = 0; d <= WB_MAX_DIMS; d++)
        many[d] = 1;
    WBT_FAILS(wb_tensor_as_strided(base, 2, sizes, strides, 1, &v),
              WB_ERR_SHAPE, "past the storage");
    WBT_FAILS(wb_tensor_as_strided(base, 2, sizes, neg, 5, &v), WB_ERR_SHAPE,
              "stride -5 of dim 0 is negative");
    WBT_FAILS(wb_tensor_as_strided(base, 2, sizes, strides, -2, &v),
              WB_ERR_SHAPE, "offset -2 is negative");
    WBT_FAILS(wb_tensor_as_strided(base, WB_MAX_DIMS + 1, many, NULL, 0, &v),
              WB_ERR_SHAPE, "ndim 17");
    WBT_FAILS(wb_tensor_as_strided(NULL, 2, sizes, strides, 0, &v),
              WB_ERR_INVALID, "base is NULL");
    cr_assert_eq(v, TT_CANARY, "a failing call wrote its output");
    cr_assert_eq(wb_storage_refcount(wb_tensor_storage(base)), 1,
                 "a failure leaked a reference");
    /* The same view one element earlier fits exactly. */
    WBT_OK(wb_tensor_as_strided(base, 2, sizes, strides, 0, &v));
    cr_assert_eq(wbt_at(v, 1, 4), 9.0f);
    wbt_release_last(v);
    wbt_release_last(base);
}

Test(tensor, as_strided_in_place_moves_no_data)
{
    wb_tensor *t = wbt_f32(0, 2, 2, 3);
    wb_storage *s = wb_tensor_storage(t);
    void *data = wb_storage_data(s);
    int64_t sizes[2] = {3, 2}, strides[2] = {1, 3};
    WBT_OK(wb_tensor_as_strided_(t, 2, sizes, strides, 0));
    wbt_assert_view(t, 2, sizes, strides, 0);
    cr_assert_eq(wb_tensor_storage(t), s);
    cr_assert_eq(wb_storage_data(s), data, "the storage was reallocated");
    cr_assert_eq(wb_tensor_version(t), 0, "a restride bumped the version");
    const float *p = data;
    for (int i = 0; i < 6; i++)
        cr_assert_eq(p[i], (float)i, "a restride moved element %d", i);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++)
            cr_assert_eq(wbt_at(t, i, j), (float)(j * 3 + i));

    /* NULL strides mean contiguous; the offset moves element 0. */
    int64_t flat[1] = {4};
    WBT_OK(wb_tensor_as_strided_(t, 1, flat, NULL, 2));
    int64_t one[1] = {1};
    wbt_assert_view(t, 1, flat, one, 2);
    cr_assert_eq(wbt_at(t, 0), 2.0f);
    cr_assert_eq(wbt_at(t, 3), 5.0f);
    cr_assert(wb_tensor_is_contiguous(t));

    /* To 0-d and back. */
    WBT_OK(wb_tensor_as_strided_(t, 0, NULL, NULL, 5));
    cr_assert_eq(wb_tensor_ndim(t), 0);
    cr_assert_eq(wb_tensor_numel(t), 1);
    cr_assert_eq(*(const float *)wb_tensor_data(t), 5.0f);
    cr_assert_eq(wb_tensor_version(t), 0);
    cr_assert_eq(wb_storage_refcount(s), 1);
    wbt_release_last(t);
}

Test(tensor, as_strided_in_place_refusals_leave_the_view_alone)
{
    wb_tensor *t = wbt_f32(0, 2, 2, 3);
    int64_t sizes[2] = {3, 2}, strides[2] = {1, 3}, neg[2] = {1, -3};
    int64_t many[WB_MAX_DIMS + 1], orig[2] = {2, 3}, ostrides[2] = {3, 1};
    for (int d = 0; d <= WB_MAX_DIMS; d++)
        many[d] = 1;
    WBT_FAILS(wb_tensor_as_strided_(t, 2, sizes, strides, 1), WB_ERR_SHAPE,
              "ends at byte 28, past the storage's 24 bytes");
    WBT_FAILS(wb_tensor_as_strided_(t, 2, sizes, neg, 3), WB_ERR_SHAPE,
              "stride -3 of dim 1 is negative");
    WBT_FAILS(wb_tensor_as_strided_(t, 2, sizes, strides, -1), WB_ERR_SHAPE,
              "offset -1 is negative");
    WBT_FAILS(wb_tensor_as_strided_(t, WB_MAX_DIMS + 1, many, NULL, 0),
              WB_ERR_SHAPE, "ndim 17");
    WBT_FAILS(wb_tensor_as_strided_(NULL, 2, sizes, strides, 0),
              WB_ERR_INVALID, "NULL argument");
    WBT_FAILS(wb_tensor_as_strided_(t, 2, NULL, NULL, 0), WB_ERR_INVALID,
              "NULL argument");
    wbt_assert_view(t, 2, orig, ostrides, 0);
    cr_assert_eq(wb_tensor_version(t), 0);
    wbt_release_last(t);
}

/* ---- copy_ ------------------------------------------------------------ */

Test(tensor, copy_contiguous_bumps_dst_version_by_one)
{
    wb_tensor *dst = wbt_f32(0, 2, 2, 3), *src = wbt_f32(10, 2, 2, 3);
    tt_copy_and_check(dst, src, "contiguous");
    cr_assert_eq(wbt_at(dst, 1, 2), 15.0f);
    /* A second copy moves the version by one more. */
    WBT_OK(wb_tensor_copy_(dst, src));
    cr_assert_eq(wb_tensor_version(dst), 2);
    cr_assert_eq(wb_tensor_version(src), 0);
    wbt_release_last(dst);
    wbt_release_last(src);
}

Test(tensor, copy_transposed_sliced_and_broadcast_float32)
{
    /* dst: the transpose of a 4x3 buffer; src: contiguous 3x4. */
    int64_t s34[2] = {3, 4}, tr[2] = {1, 3};
    wb_tensor *src = wbt_f32(1, 2, 3, 4);
    wb_tensor *dst = tt_view(WBT_F32, 12, 1, 2, s34, tr, 0);
    tt_copy_and_check(dst, src, "transposed dst");
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            cr_assert_eq(wbt_at(dst, i, j), (float)(1 + i * 4 + j));
    wbt_release_last(dst);

    /* dst: every other column of a 3x8 buffer, starting at column 1. */
    int64_t step[2] = {8, 2};
    dst = tt_view(WBT_F32, 24, 2, 2, s34, step, 1);
    tt_copy_and_check(dst, src, "sliced dst");
    cr_assert_eq(wbt_at(dst, 2, 3), 12.0f);
    wbt_release_last(dst);

    /* src: one row broadcast over three (stride 0). */
    int64_t bc[2] = {0, 1};
    wb_tensor *row0 = wbt_f32(20, 1, 4), *row = NULL;
    WBT_OK(wb_tensor_as_strided(row0, 2, s34, bc, 0, &row));
    dst = wbt_f32(0, 2, 3, 4);
    tt_copy_and_check(dst, row, "broadcast src");
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            cr_assert_eq(wbt_at(dst, i, j), (float)(20 + j));
    wbt_release_last(dst);
    wbt_release_last(row);
    wbt_release_last(row0);
    wbt_release_last(src);
}

/* Layouts of equal sizes for src and dst, in elements of any size. */
typedef struct tt_layout {
    const char *what;
    int ndim;
    int64_t sizes[3];
    int64_t dstrides[3], doffset, dnelem;
    int64_t sstrides[3], soffset, snelem;
} tt_layout;

static const tt_layout tt_layouts[] = {
    {"contiguous", 2, {3, 4}, {4, 1}, 0, 12, {4, 1}, 0, 12},
    {"transposed src", 2, {3, 4}, {4, 1}, 0, 12, {1, 3}, 0, 12},
    {"transposed dst", 2, {3, 4}, {1, 3}, 0, 12, {4, 1}, 0, 12},
    {"sliced with step both", 2, {3, 4}, {9, 2}, 10, 45, {8, 2}, 1, 32},
    {"broadcast src", 2, {3, 4}, {4, 1}, 0, 12, {0, 1}, 2, 6},
    {"broadcast inner src", 2, {3, 4}, {1, 3}, 0, 12, {1, 0}, 0, 3},
    {"permuted 3-d", 3, {2, 3, 4}, {12, 1, 3}, 0, 24, {1, 2, 6}, 0, 24},
    {"size-1 dims", 3, {4, 1, 2}, {2, 99, 1}, 1, 9, {1, 0, 4}, 0, 8},
    {"0-d", 0, {0}, {0}, 2, 4, {0}, 5, 6},
    {"empty", 2, {0, 4}, {4, 1}, 0, 4, {1, 7}, 0, 4},
    {"empty inner", 3, {2, 3, 0}, {3, 1, 1}, 0, 6, {0, 0, 5}, 0, 1},
};

Test(tensor, copy_any_strides_for_every_element_size)
{
    static const DLDataType dtypes[] = {
        {kDLUInt, 8, 1},     /* 1 byte */
        {kDLInt, 16, 1},     /* 2 bytes */
        {kDLFloat, 32, 1},   /* 4 bytes */
        {kDLFloat, 64, 1},   /* 8 bytes */
        {kDLUInt, 8, 3},     /* 3 bytes: the generic path */
        {kDLFloat, 32, 3},   /* 12 bytes */
        {kDLComplex, 128, 1} /* 16 bytes */
    };
    char what[128];
    for (size_t k = 0; k < sizeof dtypes / sizeof *dtypes; k++) {
        for (size_t c = 0; c < sizeof tt_layouts / sizeof *tt_layouts; c++) {
            const tt_layout *l = &tt_layouts[c];
            snprintf(what, sizeof what, "%s, %zu-byte elements", l->what,
                     wb_dtype_size(dtypes[k]));
            wb_tensor *dst = tt_view(dtypes[k], l->dnelem, 10 + (unsigned)c,
                                     l->ndim, l->sizes, l->dstrides,
                                     l->doffset);
            wb_tensor *src = tt_view(dtypes[k], l->snelem, 50 + (unsigned)c,
                                     l->ndim, l->sizes, l->sstrides,
                                     l->soffset);
            tt_copy_and_check(dst, src, what);
            wbt_release_last(dst);
            wbt_release_last(src);
        }
    }
}

Test(tensor, copy_refusals_change_nothing)
{
    wb_tensor *f = wbt_f32(0, 2, 2, 3), *g = wbt_f32(0, 2, 3, 2);
    wb_tensor *h = wbt_f32(0, 1, 6), *d = NULL;
    int64_t sizes[2] = {2, 3};
    WBT_OK(wb_tensor_new(WBT_F64, WBT_CPU, 2, sizes, &d));
    WBT_FAILS(wb_tensor_copy_(d, f), WB_ERR_TYPE,
              "copy from float32 into float64");
    WBT_FAILS(wb_tensor_copy_(f, g), WB_ERR_SHAPE, "different sizes");
    WBT_FAILS(wb_tensor_copy_(f, h), WB_ERR_SHAPE, "different sizes");
    WBT_FAILS(wb_tensor_copy_(NULL, f), WB_ERR_INVALID, "NULL tensor");
    WBT_FAILS(wb_tensor_copy_(f, NULL), WB_ERR_INVALID, "NULL tensor");
    cr_assert_eq(wb_tensor_version(f), 0);
    cr_assert_eq(wb_tensor_version(d), 0);
    cr_assert_eq(wbt_at(f, 1, 2), 5.0f);
    wbt_release_last(f);
    wbt_release_last(g);
    wbt_release_last(h);
    wbt_release_last(d);
}

Test(tensor, copy_between_views_of_one_storage)
{
    wb_tensor *base = wbt_f32(0, 1, 10);
    wb_tensor *a = NULL, *b = NULL, *c = NULL, *same = NULL;
    int64_t six[1] = {6}, five[1] = {5}, one[1] = {1};
    /* a covers elements 0..5, b covers 4..9: they share 4 and 5. */
    WBT_OK(wb_tensor_as_strided(base, 1, six, one, 0, &a));
    WBT_OK(wb_tensor_as_strided(base, 1, six, one, 4, &b));
    WBT_FAILS(wb_tensor_copy_(a, b), WB_ERR_SHAPE, "overlapping views");
    WBT_FAILS(wb_tensor_copy_(b, a), WB_ERR_SHAPE, "overlapping views");
    cr_assert_eq(wb_tensor_version(base), 0, "a refused copy bumped");
    for (int i = 0; i < 10; i++)
        cr_assert_eq(wbt_at(base, i), (float)i, "a refused copy wrote");

    /* An in-place transpose of one square buffer overlaps itself. */
    wb_tensor *sq = wbt_f32(0, 2, 3, 3), *sqt = NULL;
    int64_t s33[2] = {3, 3}, t33[2] = {1, 3};
    WBT_OK(wb_tensor_as_strided(sq, 2, s33, t33, 0, &sqt));
    WBT_FAILS(wb_tensor_copy_(sq, sqt), WB_ERR_SHAPE, "overlapping");
    cr_assert_eq(wbt_at(sq, 0, 1), 1.0f);
    wbt_release_last(sqt);
    wbt_release_last(sq);

    /* Disjoint halves of one storage copy fine; the shared counter moves
       once. */
    wbt_release_last(a);
    wbt_release_last(b);
    WBT_OK(wb_tensor_as_strided(base, 1, five, one, 0, &a));
    WBT_OK(wb_tensor_as_strided(base, 1, five, one, 5, &c));
    WBT_OK(wb_tensor_copy_(a, c));
    cr_assert_eq(wb_tensor_version(base), 1);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(wbt_at(base, i), (float)(i < 5 ? i + 5 : i));

    /* The same view, as one object or as two, is a copy onto itself. */
    WBT_OK(wb_tensor_copy_(a, a));
    cr_assert_eq(wb_tensor_version(base), 2);
    WBT_OK(wb_tensor_as_strided(base, 1, five, one, 0, &same));
    WBT_OK(wb_tensor_copy_(same, a));
    cr_assert_eq(wb_tensor_version(base), 3);
    cr_assert_eq(wbt_at(base, 0), 5.0f);

    /* An empty view overlaps nothing. */
    int64_t zero[1] = {0};
    wb_tensor *e1 = NULL, *e2 = NULL;
    WBT_OK(wb_tensor_as_strided(base, 1, zero, one, 3, &e1));
    WBT_OK(wb_tensor_as_strided(base, 1, zero, one, 2, &e2));
    WBT_OK(wb_tensor_copy_(e1, e2));
    cr_assert_eq(wb_tensor_version(base), 4);
    wbt_release_last(e2);
    wbt_release_last(e1);
    wbt_release_last(same);
    wbt_release_last(a);
    wbt_release_last(c);
    wbt_release_last(base);
}

Test(tensor, copy_between_storages_over_the_same_memory)
{
    /* Overlap is about memory, not storage objects: a DLPack round trip
       gives a second storage over the same bytes. */
    wb_tensor *t = wbt_f32(0, 2, 2, 2), *u = NULL, *ut = NULL;
    DLManagedTensor *mt = NULL;
    int64_t sizes[2] = {2, 2}, tr[2] = {1, 2};
    WBT_OK(wb_tensor_to_dlpack(t, &mt));
    WBT_OK(wb_tensor_from_dlpack(mt, &u));
    cr_assert_neq(wb_tensor_storage(u), wb_tensor_storage(t));
    WBT_OK(wb_tensor_as_strided(u, 2, sizes, tr, 0, &ut));
    WBT_FAILS(wb_tensor_copy_(ut, t), WB_ERR_SHAPE, "overlapping");
    cr_assert_eq(wbt_at(t, 0, 1), 1.0f, "a refused copy wrote");
    cr_assert_eq(wbt_at(t, 1, 0), 2.0f, "a refused copy wrote");
    cr_assert_eq(wb_tensor_version(ut), 0, "a refused copy bumped");
    /* The same view through either storage is a copy onto itself. */
    WBT_OK(wb_tensor_copy_(u, t));
    cr_assert_eq(wb_tensor_version(u), 1);
    cr_assert_eq(wb_tensor_version(t), 0);
    cr_assert_eq(wbt_at(u, 1, 1), 3.0f);
    wbt_release_last(ut);
    wbt_release_last(u);

    /* One buffer wrapped twice: overlapping halves refused, disjoint fine. */
    float buf[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    wb_storage *s1 = NULL, *s2 = NULL;
    wb_tensor *a = NULL, *b = NULL, *c = NULL;
    int64_t five[1] = {5}, four[1] = {4};
    WBT_OK(wb_storage_wrap(buf, sizeof buf, WBT_CPU, NULL, NULL, &s1));
    WBT_OK(wb_storage_wrap(buf, sizeof buf, WBT_CPU, NULL, NULL, &s2));
    WBT_OK(wb_tensor_from_storage(s1, WBT_F32, 1, five, NULL, 0, &a));
    WBT_OK(wb_tensor_from_storage(s2, WBT_F32, 1, five, NULL, 3, &b));
    WBT_FAILS(wb_tensor_copy_(a, b), WB_ERR_SHAPE, "overlapping");
    cr_assert_eq(buf[0], 0.0f);
    wbt_release_last(a);
    WBT_OK(wb_tensor_from_storage(s1, WBT_F32, 1, four, NULL, 0, &a));
    WBT_OK(wb_tensor_from_storage(s2, WBT_F32, 1, four, NULL, 4, &c));
    WBT_OK(wb_tensor_copy_(a, c));
    cr_assert_eq(buf[0], 4.0f);
    cr_assert_eq(buf[3], 7.0f);
    wbt_release_last(a);
    wbt_release_last(b);
    wbt_release_last(c);
    wb_storage_release(s1);
    wb_storage_release(s2);
    wbt_release_last(t);
}

/* The even and the odd elements of one storage share no byte, though
   each spans the other's range: the copy runs both ways, as PyTorch's
   does.  So do column blocks of one matrix, which only a search tells
   apart. */
Test(tensor, copy_between_interleaved_views)
{
    wb_tensor *base = wbt_f32(0, 1, 8), *even = NULL, *odd = NULL;
    int64_t four[1] = {4}, two[1] = {2};
    WBT_OK(wb_tensor_as_strided(base, 1, four, two, 0, &even));
    WBT_OK(wb_tensor_as_strided(base, 1, four, two, 1, &odd));
    WBT_OK(wb_tensor_copy_(even, odd));
    for (int i = 0; i < 8; i++)
        cr_assert_eq(wbt_at(base, i), (float)(i | 1), "element %d", i);
    float *p = wb_tensor_data(base);
    for (int i = 0; i < 8; i++)
        p[i] = (float)i;
    WBT_OK(wb_tensor_copy_(odd, even));
    for (int i = 0; i < 8; i++)
        cr_assert_eq(wbt_at(base, i), (float)(i & ~1), "element %d", i);
    cr_assert_eq(wb_tensor_version(base), 2);

    /* Columns 0-1 and 2-3 of a 4x4 matrix. */
    wb_tensor *m = wbt_f32(0, 2, 4, 4), *left = NULL, *right = NULL;
    int64_t s42[2] = {4, 2}, st[2] = {4, 1};
    WBT_OK(wb_tensor_as_strided(m, 2, s42, st, 0, &left));
    WBT_OK(wb_tensor_as_strided(m, 2, s42, st, 2, &right));
    WBT_OK(wb_tensor_copy_(left, right));
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            cr_assert_eq(wbt_at(m, i, j), (float)(i * 4 + (j | 2)));
    wbt_release_last(left);
    wbt_release_last(right);
    wbt_release_last(m);
    wbt_release_last(even);
    wbt_release_last(odd);
    wbt_release_last(base);
}

/* A destination two of whose elements are one would be written twice:
   refused, as PyTorch refuses it, with nothing written.  A zero stride is
   the common case (an expanded tensor); copying such a view onto itself
   is still a copy onto itself, which PyTorch allows. */
Test(tensor, copy_into_a_zero_stride_view_is_refused)
{
    wb_tensor *one = wbt_f32(7, 1, 1), *x = NULL, *x2 = NULL;
    wb_tensor *src = wbt_f32(1, 1, 4), *src2 = wbt_f32(1, 2, 2, 3);
    int64_t four[1] = {4}, zero[1] = {0}, s23[2] = {2, 3}, r23[2] = {0, 1};
    WBT_OK(wb_tensor_as_strided(one, 1, four, zero, 0, &x));
    WBT_FAILS(wb_tensor_copy_(x, src), WB_ERR_SHAPE,
              "more than one element refers to a single memory location");
    wb_tensor *row = wbt_f32(7, 1, 3);
    WBT_OK(wb_tensor_as_strided(row, 2, s23, r23, 0, &x2));
    WBT_FAILS(wb_tensor_copy_(x2, src2), WB_ERR_SHAPE,
              "more than one element refers to");
    cr_assert_eq(wbt_at(one, 0), 7.0f, "a refused copy wrote");
    cr_assert_eq(wbt_at(row, 0), 7.0f, "a refused copy wrote");
    cr_assert_eq(wb_tensor_version(one), 0, "a refused copy bumped");
    cr_assert_eq(wb_tensor_version(row), 0, "a refused copy bumped");
    /* An expanded source is fine. */
    WBT_OK(wb_tensor_copy_(src, x));
    cr_assert_eq(wbt_at(src, 3), 7.0f);
    WBT_OK(wb_tensor_copy_(x, x));
    cr_assert_eq(wb_tensor_version(one), 1);
    wbt_release_last(x);
    wbt_release_last(x2);
    wbt_release_last(row);
    wbt_release_last(one);
    wbt_release_last(src);
    wbt_release_last(src2);
}

/* Internal overlap without a zero stride: sizes {3, 3} strides {1, 1}
   put (0, 1) and (1, 0) on one element.  PyTorch cannot tell that cheaply
   and lets such a copy through, writing some elements twice; here it is
   refused.  Sizes {3, 2} strides {2, 3} fail the simple test (3 is less
   than the 5 elements the smaller dim spans) yet share no element: the
   copy runs. */
Test(tensor, copy_into_a_view_whose_elements_overlap)
{
    wb_tensor *base = wbt_f32(0, 1, 16), *v = NULL;
    wb_tensor *src = wbt_f32(100, 2, 3, 3);
    int64_t s33[2] = {3, 3}, r11[2] = {1, 1};
    WBT_OK(wb_tensor_as_strided(base, 2, s33, r11, 0, &v));
    WBT_FAILS(wb_tensor_copy_(v, src), WB_ERR_SHAPE,
              "more than one element refers to a single memory location");
    for (int i = 0; i < 16; i++)
        cr_assert_eq(wbt_at(base, i), (float)i, "a refused copy wrote");
    cr_assert_eq(wb_tensor_version(base), 0, "a refused copy bumped");
    wbt_release_last(v);
    wbt_release_last(src);

    int64_t s32[2] = {3, 2}, r23[2] = {2, 3};
    src = wbt_f32(100, 2, 3, 2);
    WBT_OK(wb_tensor_as_strided(base, 2, s32, r23, 0, &v));
    WBT_OK(wb_tensor_copy_(v, src));
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++)
            cr_assert_eq(wbt_at(v, i, j), (float)(100 + i * 2 + j));
    wbt_release_last(v);
    wbt_release_last(src);
    wbt_release_last(base);
}

/* Dense views that share some rows: refused for certain, as PyTorch
   refuses them.  The same view is a copy onto itself and runs, and so does
   a copy from a view whose range spans a dense one but whose elements
   step over it. */
Test(tensor, copy_between_partly_overlapping_dense_views)
{
    wb_tensor *m = wbt_f32(0, 2, 4, 4), *top = NULL, *mid = NULL;
    wb_tensor *same = NULL;
    int64_t s24[2] = {2, 4}, st[2] = {4, 1};
    WBT_OK(wb_tensor_as_strided(m, 2, s24, st, 0, &top));
    WBT_OK(wb_tensor_as_strided(m, 2, s24, st, 4, &mid));
    WBT_FAILS(wb_tensor_copy_(top, mid), WB_ERR_SHAPE, "overlapping views");
    WBT_FAILS(wb_tensor_copy_(mid, top), WB_ERR_SHAPE, "overlapping views");
    cr_assert_eq(wb_tensor_version(m), 0, "a refused copy bumped");
    for (int i = 0; i < 16; i++)
        cr_assert_eq(((float *)wb_tensor_data(m))[i], (float)i,
                     "a refused copy wrote");
    WBT_OK(wb_tensor_as_strided(m, 2, s24, st, 4, &same));
    WBT_OK(wb_tensor_copy_(same, mid));
    cr_assert_eq(wb_tensor_version(m), 1);
    cr_assert_eq(wbt_at(m, 1, 0), 4.0f);

    /* Elements 6 and 7 of m, and 0 and 13, which lie either side. */
    wb_tensor *inner = NULL, *outer = NULL;
    int64_t two[1] = {2}, one[1] = {1}, far[1] = {13};
    WBT_OK(wb_tensor_as_strided(m, 1, two, one, 6, &inner));
    WBT_OK(wb_tensor_as_strided(m, 1, two, far, 0, &outer));
    WBT_OK(wb_tensor_copy_(inner, outer));
    cr_assert_eq(wbt_at(m, 1, 2), 0.0f);
    cr_assert_eq(wbt_at(m, 1, 3), 13.0f);
    wbt_release_last(inner);
    wbt_release_last(outer);
    wbt_release_last(same);
    wbt_release_last(top);
    wbt_release_last(mid);
    wbt_release_last(m);
}

/* Where the rules cannot decide in a few steps the answer stays "may
   overlap".  Strides 300 and 299, the second 280 elements on, meet at
   element 280 of each, and the 300x301 view with those strides holds one
   element twice (299 steps of 300 and 300 of 299); but in each a search
   would find that only past its budget.  PyTorch, seeing views that are
   not dense, lets both copies through. */
Test(tensor, copy_that_cannot_be_decided_cheaply_is_refused)
{
    wb_tensor *base = wbt_f32(0, 1, 180000), *a = NULL, *b = NULL;
    wb_tensor *src = wbt_f32(0, 1, 300);
    int64_t n[1] = {300}, sa[1] = {300}, sb[1] = {299};
    WBT_OK(wb_tensor_as_strided(base, 1, n, sa, 0, &a));
    WBT_OK(wb_tensor_as_strided(base, 1, n, sb, 280, &b));
    cr_assert_eq(wbt_at(a, 280), wbt_at(b, 280), "the views meet");
    WBT_FAILS(wb_tensor_copy_(a, b), WB_ERR_SHAPE,
              "copy between views of one storage that may overlap");
    cr_assert_eq(wb_tensor_version(base), 0, "a refused copy bumped");

    wb_tensor *both = NULL, *src2 = wbt_f32(0, 2, 300, 301);
    int64_t nn[2] = {300, 301}, ss[2] = {300, 299};
    WBT_OK(wb_tensor_as_strided(base, 2, nn, ss, 0, &both));
    cr_assert_eq(wbt_at(both, 299, 0), wbt_at(both, 0, 300), "one element");
    WBT_FAILS(wb_tensor_copy_(both, src2), WB_ERR_SHAPE,
              "more than one element may refer to a single memory location");
    cr_assert_eq(wb_tensor_version(base), 0, "a refused copy bumped");
    cr_assert_eq(wbt_at(base, 1), 1.0f, "a refused copy wrote");
    wbt_release_last(both);
    wbt_release_last(src2);
    wbt_release_last(a);
    wbt_release_last(b);
    wbt_release_last(src);
    wbt_release_last(base);
}

Test(tensor, copy_between_0d_tensors)
{
    wb_tensor *a = NULL, *b = NULL;
    WBT_OK(wb_tensor_new(WBT_F64, WBT_CPU, 0, NULL, &a));
    WBT_OK(wb_tensor_new(WBT_F64, WBT_CPU, 0, NULL, &b));
    *(double *)wb_tensor_data(b) = 2.5;
    WBT_OK(wb_tensor_copy_(a, b));
    cr_assert_eq(*(const double *)wb_tensor_data(a), 2.5);
    cr_assert_eq(wb_tensor_version(a), 1);
    cr_assert_eq(wb_tensor_version(b), 0);
    wbt_release_last(a);
    wbt_release_last(b);
}

/* ---- resize_ ---------------------------------------------------------- */

Test(tensor, resize_grows_the_storage_keeping_bytes)
{
    wb_tensor *t = wbt_f32(1, 2, 2, 2);
    wb_storage *s = wb_tensor_storage(t);
    wb_tensor *other = NULL;
    WBT_OK(wb_tensor_detach(t, &other));
    int64_t sizes[2] = {3, 3}, strides[2] = {3, 1};
    WBT_OK(wb_tensor_resize_(t, 2, sizes));
    wbt_assert_view(t, 2, sizes, strides, 0);
    cr_assert_eq(wb_tensor_storage(t), s, "resize_ replaced the storage");
    cr_assert_eq(wb_storage_nbytes(s), 36);
    const float *p = wb_storage_data(s);
    for (int i = 0; i < 9; i++)
        cr_assert_eq(p[i], i < 4 ? (float)(i + 1) : 0.0f, "element %d", i);
    /* Another view of the storage sees the grown buffer. */
    cr_assert_eq(wb_tensor_storage(other), s);
    cr_assert_eq(wbt_at(other, 1, 1), 4.0f);
    cr_assert(wb_tensor_is_contiguous(t));
    wbt_release_last(other);
    wbt_release_last(t);
}

Test(tensor, resize_keeps_the_offset)
{
    wb_tensor *base = wbt_f32(0, 1, 10), *t = NULL;
    int64_t two[1] = {2}, one[1] = {1}, ten[1] = {10};
    WBT_OK(wb_tensor_as_strided(base, 1, two, one, 2, &t));
    wb_storage *s = wb_tensor_storage(t);
    /* Ten elements from offset 2 need 12 elements of storage. */
    WBT_OK(wb_tensor_resize_(t, 1, ten));
    wbt_assert_view(t, 1, ten, one, 2);
    cr_assert_eq(wb_storage_nbytes(s), 48);
    cr_assert_eq(wbt_at(t, 0), 2.0f);
    cr_assert_eq(wbt_at(t, 7), 9.0f);
    cr_assert_eq(wbt_at(t, 8), 0.0f);
    cr_assert_eq(wbt_at(base, 9), 9.0f);
    wbt_release_last(t);
    wbt_release_last(base);
}

Test(tensor, resize_that_shrinks_keeps_the_storage)
{
    wb_tensor *t = wbt_f32(0, 2, 4, 4);
    wb_storage *s = wb_tensor_storage(t);
    void *data = wb_storage_data(s);
    int64_t sizes[2] = {2, 3}, strides[2] = {3, 1};
    WBT_OK(wb_tensor_resize_(t, 2, sizes));
    wbt_assert_view(t, 2, sizes, strides, 0);
    cr_assert_eq(wb_storage_nbytes(s), 64);
    cr_assert_eq(wb_storage_data(s), data);
    cr_assert_eq(wbt_at(t, 1, 2), 5.0f);
    /* A 0-d resize keeps element 0. */
    WBT_OK(wb_tensor_resize_(t, 0, NULL));
    cr_assert_eq(wb_tensor_ndim(t), 0);
    cr_assert_eq(wb_tensor_numel(t), 1);
    cr_assert_eq(wb_storage_nbytes(s), 64);
    /* Back to a non-contiguous view, then a resize to the same numel
       restores contiguous strides. */
    int64_t tsz[2] = {4, 4}, tst[2] = {1, 4};
    WBT_OK(wb_tensor_as_strided_(t, 2, tsz, tst, 0));
    int64_t cst[2] = {4, 1};
    WBT_OK(wb_tensor_resize_(t, 2, tsz));
    wbt_assert_view(t, 2, tsz, cst, 0);
    cr_assert_eq(wb_storage_data(s), data);
    wbt_release_last(t);
}

/* Memory the caller wrapped is the caller's until the last release: a
   resize within it goes through, a growth is refused (a storage from
   torch.from_blob is not resizable) and the deleter does not run.  set_
   onto a storage of the runtime's lets the tensor grow. */
Test(tensor, resize_does_not_grow_a_wrapped_storage)
{
    tt_log log = {.free_data = true};
    float *buf = malloc(4 * sizeof *buf);
    cr_assert(buf);
    for (int i = 0; i < 4; i++)
        buf[i] = (float)(i + 1);
    wb_storage *s = NULL;
    wb_tensor *t = NULL, *v = NULL;
    int64_t two[1] = {2}, three[1] = {3}, four[1] = {4}, eight[1] = {8};
    WBT_OK(wb_storage_wrap(buf, 16, WBT_CPU, tt_deleter, &log, &s));
    WBT_OK(wb_tensor_from_storage(s, WBT_F32, 1, four, NULL, 0, &t));
    WBT_OK(wb_tensor_from_storage(s, WBT_F32, 1, two, NULL, 2, &v));
    wb_storage_release(s);
    WBT_OK(wb_tensor_resize_(t, 1, three));
    WBT_OK(wb_tensor_resize_(t, 1, four));
    WBT_FAILS(wb_tensor_resize_(t, 1, eight), WB_ERR_INVALID,
              "cannot grow a storage that wraps memory of the caller's "
              "(wb_storage_wrap): it is not resizable");
    /* A view at an offset grows past the end sooner. */
    WBT_OK(wb_tensor_resize_(v, 1, two));
    WBT_FAILS(wb_tensor_resize_(v, 1, three), WB_ERR_INVALID,
              "wb_storage_wrap");
    cr_assert_eq(wb_tensor_sizes(t)[0], 4);
    cr_assert_eq(wb_tensor_sizes(v)[0], 2);
    cr_assert_eq(wb_storage_data(s), (void *)buf);
    cr_assert_eq(wb_storage_nbytes(s), 16);
    cr_assert_eq(wb_tensor_version(t), 0);
    cr_assert_eq(wbt_at(t, 3), 4.0f);
    cr_assert_eq(log.calls, 0, "the caller's buffer went to its deleter");
    wbt_release_last(v);
    wb_tensor *src = wbt_f32(7, 1, 4);
    WBT_OK(wb_tensor_set_(t, src));
    cr_assert_eq(log.calls, 1);
    cr_assert_eq(log.data, (void *)buf);
    WBT_OK(wb_tensor_resize_(t, 1, eight));
    cr_assert_eq(wbt_at(t, 3), 10.0f);
    cr_assert_eq(wbt_at(t, 7), 0.0f);
    cr_assert_eq(wb_storage_nbytes(wb_tensor_storage(src)), 32);
    wbt_release_last(src);
    wbt_release_last(t);
    cr_assert_eq(log.calls, 1, "the user deleter ran on the runtime's buffer");
}

Test(tensor, resize_does_not_grow_a_wrapped_storage_of_no_bytes)
{
    /* A storage over no memory at all (NULL data) holds empty tensors. */
    tt_log log = {0};
    wb_storage *s = NULL;
    wb_tensor *t = NULL;
    int64_t zero[1] = {0}, none[2] = {3, 0}, three[1] = {3};
    WBT_OK(wb_storage_wrap(NULL, 0, WBT_CPU, tt_deleter, &log, &s));
    WBT_OK(wb_tensor_from_storage(s, WBT_I64, 1, zero, NULL, 0, &t));
    wb_storage_release(s);
    WBT_OK(wb_tensor_resize_(t, 2, none));
    WBT_FAILS(wb_tensor_resize_(t, 1, three), WB_ERR_INVALID,
              "cannot grow a storage that wraps memory of the caller's");
    cr_assert_eq(wb_tensor_ndim(t), 2);
    cr_assert_eq(log.calls, 0);
    cr_assert_eq(wb_storage_nbytes(wb_tensor_storage(t)), 0);
    cr_assert_null(wb_tensor_data(t));
    wbt_release_last(t);
    cr_assert_eq(log.calls, 1);
    cr_assert_null(log.data);
}

Test(tensor, resize_refusals_leave_the_view_alone)
{
    wb_tensor *t = wbt_f32(0, 2, 2, 3);
    int64_t neg[2] = {2, -1}, many[WB_MAX_DIMS + 1];
    int64_t huge[2] = {INT64_C(1) << 40, INT64_C(1) << 40};
    int64_t sizes[2] = {2, 3}, strides[2] = {3, 1};
    for (int d = 0; d <= WB_MAX_DIMS; d++)
        many[d] = 1;
    WBT_FAILS(wb_tensor_resize_(t, 2, neg), WB_ERR_SHAPE, "negative");
    WBT_FAILS(wb_tensor_resize_(t, 2, huge), WB_ERR_SHAPE, "overflowing");
    WBT_FAILS(wb_tensor_resize_(t, WB_MAX_DIMS + 1, many), WB_ERR_SHAPE,
              "ndim 17");
    WBT_FAILS(wb_tensor_resize_(t, 2, NULL), WB_ERR_INVALID, "NULL argument");
    WBT_FAILS(wb_tensor_resize_(NULL, 1, sizes), WB_ERR_INVALID,
              "NULL argument");
    wbt_assert_view(t, 2, sizes, strides, 0);
    cr_assert_eq(wb_storage_nbytes(wb_tensor_storage(t)), 24);
    wbt_release_last(t);
}

/* ---- set_ ------------------------------------------------------------- */

Test(tensor, set_takes_the_source_storage_and_view)
{
    wb_tensor *t = wbt_f32(0, 1, 4);
    wb_storage *old = wb_storage_retain(wb_tensor_storage(t));
    wb_tensor *base = wbt_f32(100, 1, 12), *src = NULL;
    int64_t sizes[2] = {3, 2}, strides[2] = {1, 4};
    WBT_OK(wb_tensor_as_strided(base, 2, sizes, strides, 1, &src));
    wb_storage *ns = wb_tensor_storage(src);
    cr_assert_eq(wb_storage_refcount(ns), 2);
    cr_assert_eq(wb_storage_refcount(old), 2);

    WBT_OK(wb_tensor_set_(t, src));
    cr_assert_eq(wb_tensor_storage(t), ns);
    wbt_assert_view(t, 2, sizes, strides, 1);
    cr_assert_eq(wb_storage_refcount(ns), 3);
    cr_assert_eq(wb_storage_refcount(old), 1, "set_ kept the old storage");
    cr_assert_eq(wb_tensor_version(t), 1, "set_ bumps t's own counter");
    cr_assert_eq(wb_storage_version(ns), 0);
    cr_assert_eq(wb_storage_version(old), 1, "t's counter, which it keeps");
    cr_assert_eq(wbt_at(t, 2, 1), 107.0f);
    /* The source is untouched, its counter included. */
    wbt_assert_view(src, 2, sizes, strides, 1);
    cr_assert_eq(wb_tensor_version(src), 0);
    cr_assert_eq(wb_tensor_version(base), 0);
    cr_assert_eq(wb_tensor_refcount(src), 1);
    /* Writes through t move t's counter, not the storage owner's. */
    wb_tensor *ones = wbt_f32(1, 2, 3, 2);
    WBT_OK(wb_tensor_copy_(t, ones));
    cr_assert_eq(wb_tensor_version(t), 2);
    cr_assert_eq(wb_tensor_version(base), 0);
    wbt_release_last(ones);

    wb_storage_release(old);
    wbt_release_last(t);
    wbt_release_last(src);
    cr_assert_eq(wb_storage_refcount(ns), 1);
    wbt_release_last(base);
}

Test(tensor, set_releases_the_old_storage_when_last)
{
    tt_log log = {.free_data = true};
    void *buf = calloc(4, sizeof(float));
    cr_assert(buf);
    wb_storage *s = NULL;
    wb_tensor *t = NULL;
    int64_t four[1] = {4};
    WBT_OK(wb_storage_wrap(buf, 16, WBT_CPU, tt_deleter, &log, &s));
    WBT_OK(wb_tensor_from_storage(s, WBT_F32, 1, four, NULL, 0, &t));
    wb_storage_release(s);
    wb_tensor *src = NULL, *other = NULL;
    int64_t sz[1] = {2};
    /* A source of another dtype is refused, as torch.Tensor.set_
       refuses it, and changes nothing. */
    WBT_OK(wb_tensor_new(WBT_F64, WBT_CPU, 1, sz, &other));
    WBT_FAILS(wb_tensor_set_(t, other), WB_ERR_TYPE,
              "wb_tensor_set_: the source has dtype float64; the tensor "
              "float32");
    cr_assert_eq(wb_tensor_storage(t), s);
    cr_assert_eq(wb_tensor_version(t), 0);
    wbt_release_last(other);
    WBT_OK(wb_tensor_new(WBT_F32, WBT_CPU, 1, sz, &src));
    WBT_OK(wb_tensor_set_(t, src));
    cr_assert_eq(log.calls, 1, "the old storage was not freed");
    cr_assert_eq(wb_tensor_version(t), 1, "t's counter outlives the data "
                 "of the storage it lived in");
    cr_assert_eq(wb_tensor_version(src), 0);
    cr_assert_eq(wb_tensor_numel(t), 2);
    wbt_release_last(t);
    wbt_release_last(src);
    cr_assert_eq(log.calls, 1);
}

Test(tensor, set_onto_itself_only_bumps)
{
    wb_tensor *t = wbt_f32(0, 2, 2, 2);
    wb_storage *s = wb_tensor_storage(t);
    int64_t sizes[2] = {2, 2}, strides[2] = {2, 1};
    WBT_OK(wb_tensor_set_(t, t));
    cr_assert_eq(wb_tensor_storage(t), s);
    cr_assert_eq(wb_storage_refcount(s), 1);
    cr_assert_eq(wb_tensor_version(t), 1);
    wbt_assert_view(t, 2, sizes, strides, 0);
    WBT_FAILS(wb_tensor_set_(t, NULL), WB_ERR_INVALID, "NULL tensor");
    WBT_FAILS(wb_tensor_set_(NULL, t), WB_ERR_INVALID, "NULL tensor");
    cr_assert_eq(wb_tensor_version(t), 1);
    wbt_release_last(t);
}

/* ---- detach, flags, contiguity ---------------------------------------- */

Test(tensor, detach_is_a_new_object_over_the_same_storage)
{
    wb_tensor *base = wbt_f32(0, 1, 12), *t = NULL, *d = TT_CANARY;
    int64_t sizes[2] = {3, 2}, strides[2] = {1, 3};
    WBT_OK(wb_tensor_as_strided(base, 2, sizes, strides, 2, &t));
    wb_tensor_set_requires_grad(t, true);
    wb_tensor_set_dynamic_dims(t, 0x2);
    WBT_FAILS(wb_tensor_detach(NULL, &d), WB_ERR_INVALID, "NULL argument");
    WBT_FAILS(wb_tensor_detach(t, NULL), WB_ERR_INVALID, "NULL argument");
    cr_assert_eq(d, TT_CANARY);
    WBT_OK(wb_tensor_detach(t, &d));
    cr_assert_neq(d, t);
    cr_assert_eq(wb_tensor_refcount(d), 1);
    cr_assert_eq(wb_tensor_refcount(t), 1);
    cr_assert_eq(wb_tensor_storage(d), wb_tensor_storage(t));
    cr_assert_eq(wb_storage_refcount(wb_tensor_storage(t)), 3);
    wbt_assert_view(d, 2, sizes, strides, 2);
    cr_assert_not(wb_tensor_requires_grad(d));
    cr_assert_eq(wb_tensor_flags(d) & WB_TENSOR_REQUIRES_GRAD, 0);
    cr_assert(wb_tensor_requires_grad(t), "detach cleared the original");

    /* Restriding the detached tensor leaves the original's view alone, and
       a write through it moves the shared version. */
    int64_t flat[1] = {6};
    WBT_OK(wb_tensor_as_strided_(d, 1, flat, NULL, 0));
    wbt_assert_view(t, 2, sizes, strides, 2);
    wb_tensor *src = wbt_f32(50, 1, 6);
    WBT_OK(wb_tensor_copy_(d, src));
    cr_assert_eq(wb_tensor_version(t), 1);
    cr_assert_eq(wbt_at(t, 0, 0), 52.0f);
    wbt_release_last(src);
    wbt_release_last(d);
    wbt_release_last(t);
    wbt_release_last(base);
}

Test(tensor, flags_and_dynamic_dims)
{
    wb_tensor *t = wbt_f32(0, 1, 3);
    cr_assert_eq(wb_tensor_flags(t), 0);
    wb_tensor_set_requires_grad(t, true);
    cr_assert(wb_tensor_requires_grad(t));
    cr_assert_eq(wb_tensor_flags(t), WB_TENSOR_REQUIRES_GRAD);
    wb_tensor_set_requires_grad(t, true);
    cr_assert_eq(wb_tensor_flags(t), WB_TENSOR_REQUIRES_GRAD);
    wb_tensor_set_requires_grad(t, false);
    cr_assert_not(wb_tensor_requires_grad(t));
    cr_assert_eq(wb_tensor_flags(t), 0);
    wb_tensor_set_dynamic_dims(t, UINT64_C(0x8000000000000005));
    cr_assert_eq(wb_tensor_dynamic_dims(t), UINT64_C(0x8000000000000005));
    wb_tensor_set_dynamic_dims(t, 0);
    cr_assert_eq(wb_tensor_dynamic_dims(t), 0);
    /* Flags belong to the tensor object, not to the storage. */
    wb_tensor *v = NULL;
    int64_t sz[1] = {3};
    WBT_OK(wb_tensor_as_strided(t, 1, sz, NULL, 0, &v));
    wb_tensor_set_requires_grad(v, true);
    cr_assert_not(wb_tensor_requires_grad(t));
    /* Retain and release count references. */
    cr_assert_eq(wb_tensor_retain(t), t);
    cr_assert_eq(wb_tensor_refcount(t), 2);
    wb_tensor_release(t);
    wbt_release_last(v);
    wbt_release_last(t);
}

Test(tensor, is_contiguous)
{
    wb_tensor *base = wbt_f32(0, 1, 24);
    static const struct {
        int ndim;
        int64_t sizes[3], strides[3], offset;
        bool contiguous;
    } cases[] = {
        {2, {3, 4}, {4, 1}, 0, true},
        {2, {3, 4}, {4, 1}, 5, true},   /* the offset does not matter */
        {2, {4, 3}, {1, 4}, 0, false},  /* transposed */
        {2, {3, 4}, {8, 2}, 0, false},  /* sliced with a step */
        {2, {3, 4}, {0, 1}, 0, false},  /* broadcast */
        {3, {1, 4, 1}, {77, 1, 9}, 0, true},  /* size-1 strides are free */
        {2, {3, 1}, {1, 5}, 0, true},
        {2, {0, 4}, {3, 7}, 0, true},   /* empty */
        {0, {0}, {0}, 3, true},         /* 0-d */
        {1, {5}, {2}, 0, false},
        {1, {1}, {2}, 0, true},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        wb_tensor *v = NULL;
        WBT_OK(wb_tensor_as_strided(base, cases[c].ndim, cases[c].sizes,
                                    cases[c].strides, cases[c].offset, &v));
        cr_assert_eq(wb_tensor_is_contiguous(v), cases[c].contiguous,
                     "case %zu", c);
        wbt_release_last(v);
    }
    wbt_release_last(base);
}

/* ---- DLPack import ---------------------------------------------------- */

Test(tensor, from_dlpack_contiguous_calls_the_deleter_at_the_last_view)
{
    tt_producer p;
    int64_t shape[2] = {2, 3}, strides[2] = {3, 1};
    tt_producer_init(&p, WBT_F64, 2, shape, NULL, 0);
    wb_tensor *t = NULL, *v = NULL;
    WBT_OK(wb_tensor_from_dlpack(&p.mt, &t));
    cr_assert_eq(p.deletes, 0, "the import deleted what it took");
    wbt_assert_view(t, 2, shape, strides, 0);
    cr_assert_eq(wb_tensor_data(t), (void *)&p.buf);
    cr_assert_eq(wb_tensor_dtype(t).bits, 64);
    cr_assert_eq(wb_tensor_refcount(t), 1);
    cr_assert_eq(wb_storage_refcount(wb_tensor_storage(t)), 1);
    cr_assert_eq(*(const double *)wb_tensor_data(t), 0.0);
    cr_assert_eq(((const double *)wb_tensor_data(t))[5], 5.0);

    /* A view keeps the producer's memory after the first tensor goes. */
    int64_t one[1] = {2}, st[1] = {3};
    WBT_OK(wb_tensor_as_strided(t, 1, one, st, 1, &v));
    wbt_release_last(t);
    cr_assert_eq(p.deletes, 0, "deleted while a view remained");
    cr_assert_eq(((const double *)wb_tensor_data(v))[3], 4.0);
    wbt_release_last(v);
    cr_assert_eq(p.deletes, 1, "deleter ran %d times", p.deletes);
}

Test(tensor, from_dlpack_with_byte_offset_and_strides)
{
    tt_producer p;
    int64_t shape[2] = {3, 2}, strides[2] = {1, 3};
    /* float32 elements, starting at element 2 (byte 8). */
    tt_producer_init(&p, WBT_F32, 2, shape, strides, 8);
    float *fb = p.buf.f;
    for (int i = 0; i < 16; i++)
        fb[i] = (float)i;
    wb_tensor *t = NULL;
    WBT_OK(wb_tensor_from_dlpack(&p.mt, &t));
    wbt_assert_view(t, 2, shape, strides, 2);
    cr_assert_eq(wb_tensor_data(t), (void *)(fb + 2));
    cr_assert_eq(wb_storage_data(wb_tensor_storage(t)), (void *)fb);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 2; j++)
            cr_assert_eq(wbt_at(t, i, j), (float)(2 + i + 3 * j));
    cr_assert_not(wb_tensor_is_contiguous(t));
    /* Writes land in the producer's memory. */
    wb_tensor *src = wbt_f32(-6, 2, 3, 2);
    WBT_OK(wb_tensor_copy_(t, src));
    cr_assert_eq(fb[2 + 1 + 3], -3.0f);
    cr_assert_eq(wb_tensor_version(t), 1);
    wbt_release_last(src);
    wbt_release_last(t);
    cr_assert_eq(p.deletes, 1);
}

Test(tensor, from_dlpack_0d_and_empty)
{
    tt_producer p;
    wb_tensor *t = NULL;
    tt_producer_init(&p, WBT_F64, 0, NULL, NULL, 3 * 8);
    p.mt.dl_tensor.shape = NULL;
    WBT_OK(wb_tensor_from_dlpack(&p.mt, &t));
    cr_assert_eq(wb_tensor_ndim(t), 0);
    cr_assert_eq(wb_tensor_offset(t), 3);
    cr_assert_eq(*(const double *)wb_tensor_data(t), 3.0);
    wbt_release_last(t);
    cr_assert_eq(p.deletes, 1);

    int64_t shape[2] = {0, 5};
    tt_producer_init(&p, WBT_F32, 2, shape, NULL, 0);
    WBT_OK(wb_tensor_from_dlpack(&p.mt, &t));
    cr_assert_eq(wb_tensor_numel(t), 0);
    wbt_release_last(t);
    cr_assert_eq(p.deletes, 1);
}

Test(tensor, from_dlpack_without_a_deleter)
{
    tt_producer p;
    int64_t shape[1] = {4};
    tt_producer_init(&p, WBT_F64, 1, shape, NULL, 0);
    p.mt.deleter = NULL;
    wb_tensor *t = NULL;
    WBT_OK(wb_tensor_from_dlpack(&p.mt, &t));
    cr_assert_eq(((const double *)wb_tensor_data(t))[3], 3.0);
    wbt_release_last(t);
    cr_assert_eq(p.deletes, 0);
}

Test(tensor, from_dlpack_refusals_do_not_consume)
{
    tt_producer p;
    wb_tensor *t = TT_CANARY;
    int64_t shape[2] = {2, 2}, neg[2] = {-1, 1}, big[2] = {2, 40};
    DLDataType bad = {kDLInt, 4, 1};
    DLDevice gpu = {kDLOpenCL, 0}; /* no build supports it */

    /* A byte_offset inside an element. */
    tt_producer_init(&p, WBT_F32, 2, shape, NULL, 2);
    WBT_FAILS(wb_tensor_from_dlpack(&p.mt, &t), WB_ERR_SHAPE,
              "byte_offset 2 is not a multiple of the element size 4");
    cr_assert_eq(p.deletes, 0, "a refused import called the deleter");
    cr_assert_eq(t, TT_CANARY);
    /* Still the caller's: fixed, it imports, and is deleted once. */
    p.mt.dl_tensor.byte_offset = 4;
    WBT_OK(wb_tensor_from_dlpack(&p.mt, &t));
    cr_assert_eq(wb_tensor_offset(t), 1);
    wbt_release_last(t);
    cr_assert_eq(p.deletes, 1);
    t = TT_CANARY;

    tt_producer_init(&p, WBT_F32, 2, shape, neg, 4);
    WBT_FAILS(wb_tensor_from_dlpack(&p.mt, &t), WB_ERR_SHAPE, "negative");
    cr_assert_eq(p.deletes, 0);

    /* Strides whose extent does not fit in 64 bits. */
    int64_t huge[2] = {INT64_MAX, 1};
    tt_producer_init(&p, WBT_F32, 2, shape, huge, 0);
    WBT_FAILS(wb_tensor_from_dlpack(&p.mt, &t), WB_ERR_SHAPE, "overflows");
    cr_assert_eq(p.deletes, 0);

    tt_producer_init(&p, bad, 2, shape, NULL, 0);
    WBT_FAILS(wb_tensor_from_dlpack(&p.mt, &t), WB_ERR_TYPE,
              "not byte-addressable");
    cr_assert_eq(p.deletes, 0);

    int64_t many[WB_MAX_DIMS + 1];
    for (int d = 0; d <= WB_MAX_DIMS; d++)
        many[d] = 1;
    tt_producer_init(&p, WBT_F32, WB_MAX_DIMS + 1, many, NULL, 0);
    WBT_FAILS(wb_tensor_from_dlpack(&p.mt, &t), WB_ERR_SHAPE, "ndim 17");
    cr_assert_eq(p.deletes, 0);

    tt_producer_init(&p, WBT_F32, 2, shape, NULL, 0);
    p.mt.dl_tensor.shape = NULL;
    WBT_FAILS(wb_tensor_from_dlpack(&p.mt, &t), WB_ERR_SHAPE, "ndim 2");
    cr_assert_eq(p.deletes, 0);

    tt_producer_init(&p, WBT_F32, 2, shape, NULL, 0);
    p.mt.dl_tensor.device = gpu;
    WBT_FAILS(wb_tensor_from_dlpack(&p.mt, &t), WB_ERR_DEVICE, "is not supported");
    cr_assert_eq(p.deletes, 0);

    tt_producer_init(&p, WBT_F32, 2, shape, NULL, 0);
    p.mt.dl_tensor.data = NULL;
    WBT_FAILS(wb_tensor_from_dlpack(&p.mt, &t), WB_ERR_INVALID, "NULL data");
    cr_assert_eq(p.deletes, 0);

    WBT_FAILS(wb_tensor_from_dlpack(NULL, &t), WB_ERR_INVALID,
              "NULL argument");
    tt_producer_init(&p, WBT_F32, 2, shape, big, 0);
    WBT_FAILS(wb_tensor_from_dlpack(&p.mt, NULL), WB_ERR_INVALID,
              "NULL argument");
    cr_assert_eq(p.deletes, 0);
    cr_assert_eq(t, TT_CANARY, "a failing import wrote its output");
}

/* An import's data is the producer's: a resize within it goes through, a
   growth is refused (a storage from torch.from_dlpack is not resizable),
   and the producer's deleter runs once, at the last release. */
Test(tensor, from_dlpack_resizes_within_the_producer_buffer_alone)
{
    tt_producer p;
    int64_t shape[1] = {4}, small[1] = {3}, big[1] = {40};
    tt_producer_init(&p, WBT_F64, 1, shape, NULL, 0);
    wb_tensor *t = NULL;
    WBT_OK(wb_tensor_from_dlpack(&p.mt, &t));
    WBT_OK(wb_tensor_resize_(t, 1, small));
    WBT_FAILS(wb_tensor_resize_(t, 1, big), WB_ERR_INVALID,
              "cannot grow a storage imported from DLPack");
    cr_assert_eq(wb_tensor_sizes(t)[0], 3);
    cr_assert_eq(wb_tensor_data(t), (void *)&p.buf);
    cr_assert_eq(((const double *)wb_tensor_data(t))[2], 2.0);
    cr_assert_eq(p.deletes, 0);
    wbt_release_last(t);
    cr_assert_eq(p.deletes, 1, "deleter ran %d times", p.deletes);
}

/* ---- DLPack export ---------------------------------------------------- */

Test(tensor, to_dlpack_snapshots_the_view_and_holds_the_storage)
{
    tt_log log = {.free_data = true};
    float *buf = calloc(16, sizeof *buf);
    cr_assert(buf);
    wb_storage *s = NULL;
    wb_tensor *t = NULL;
    DLManagedTensor *mt = TT_CANARY;
    int64_t sizes[2] = {2, 2}, strides[2] = {1, 4};
    WBT_OK(wb_storage_wrap(buf, 64, WBT_CPU, tt_deleter, &log, &s));
    WBT_OK(wb_tensor_from_storage(s, WBT_F32, 2, sizes, strides, 3, &t));
    wb_storage_release(s);
    WBT_FAILS(wb_tensor_to_dlpack(NULL, &mt), WB_ERR_INVALID, "NULL argument");
    WBT_FAILS(wb_tensor_to_dlpack(t, NULL), WB_ERR_INVALID, "NULL argument");
    cr_assert_eq(mt, TT_CANARY);

    WBT_OK(wb_tensor_to_dlpack(t, &mt));
    const DLTensor *dl = &mt->dl_tensor;
    cr_assert_eq(dl->data, (void *)buf);
    cr_assert_eq(dl->byte_offset, 12);
    cr_assert_eq(dl->ndim, 2);
    cr_assert_eq(dl->dtype.code, kDLFloat);
    cr_assert_eq(dl->dtype.bits, 32);
    cr_assert_eq(dl->dtype.lanes, 1);
    cr_assert_eq(dl->device.device_type, kDLCPU);
    cr_assert_not_null(dl->shape);
    cr_assert_not_null(dl->strides);
    cr_assert_eq(dl->shape[0], 2);
    cr_assert_eq(dl->shape[1], 2);
    cr_assert_eq(dl->strides[0], 1);
    cr_assert_eq(dl->strides[1], 4);
    cr_assert_not_null(mt->deleter);
    cr_assert_eq(wb_storage_refcount(wb_tensor_storage(t)), 2);

    /* The export is a snapshot: restriding t does not change it. */
    int64_t flat[1] = {5};
    WBT_OK(wb_tensor_as_strided_(t, 1, flat, NULL, 0));
    cr_assert_eq(dl->ndim, 2);
    cr_assert_eq(dl->shape[0], 2);
    cr_assert_eq(dl->strides[1], 4);
    cr_assert_eq(dl->byte_offset, 12);

    /* The export alone keeps the memory alive; its deleter frees it. */
    wbt_release_last(t);
    cr_assert_eq(log.calls, 0, "the storage died under an export");
    cr_assert_eq(((float *)dl->data)[15], 0.0f);
    mt->deleter(mt);
    cr_assert_eq(log.calls, 1);
}

Test(tensor, to_dlpack_of_a_0d_tensor)
{
    wb_tensor *t = NULL;
    DLManagedTensor *mt = NULL;
    WBT_OK(wb_tensor_new(WBT_I64, WBT_CPU, 0, NULL, &t));
    WBT_OK(wb_tensor_to_dlpack(t, &mt));
    cr_assert_eq(mt->dl_tensor.ndim, 0);
    cr_assert_eq(mt->dl_tensor.byte_offset, 0);
    cr_assert_eq(mt->dl_tensor.dtype.bits, 64);
    cr_assert_eq(wb_storage_refcount(wb_tensor_storage(t)), 2);
    mt->deleter(mt);
    cr_assert_eq(wb_storage_refcount(wb_tensor_storage(t)), 1);
    wbt_release_last(t);
}

Test(tensor, dlpack_round_trip_shares_data)
{
    tt_log log = {.free_data = true};
    float *buf = calloc(12, sizeof *buf);
    cr_assert(buf);
    wb_storage *s = NULL;
    wb_tensor *t = NULL, *u = NULL;
    DLManagedTensor *mt = NULL;
    int64_t sizes[2] = {2, 3}, strides[2] = {1, 4};
    WBT_OK(wb_storage_wrap(buf, 48, WBT_CPU, tt_deleter, &log, &s));
    WBT_OK(wb_tensor_from_storage(s, WBT_F32, 2, sizes, strides, 2, &t));
    wb_storage_release(s);

    WBT_OK(wb_tensor_to_dlpack(t, &mt));
    WBT_OK(wb_tensor_from_dlpack(mt, &u));
    wbt_assert_view(u, 2, sizes, strides, 2);
    cr_assert_eq(wb_tensor_data(u), wb_tensor_data(t));
    cr_assert_eq(wb_storage_refcount(wb_tensor_storage(t)), 2);

    /* A write through the import is visible through the original. */
    wb_tensor *src = wbt_f32(1, 2, 2, 3);
    WBT_OK(wb_tensor_copy_(u, src));
    cr_assert_eq(wbt_at(t, 1, 2), 6.0f);
    cr_assert_eq(buf[2 + 1 + 8], 6.0f);
    wbt_release_last(src);
    /* The import is a tensor of its own, with a counter of its own, as
       torch.from_dlpack makes one. */
    cr_assert_eq(wb_tensor_version(u), 1);
    cr_assert_eq(wb_tensor_version(t), 0);

    /* The original can go first: the import keeps the memory. */
    wbt_release_last(t);
    cr_assert_eq(log.calls, 0);
    cr_assert_eq(wbt_at(u, 0, 1), 2.0f);
    wbt_release_last(u);
    cr_assert_eq(log.calls, 1, "the memory was freed %d times", log.calls);
}

/* ---- the thread cache ------------------------------------------------- */

/* Builds and drops tensors on a thread of its own, which exits with headers
   in its cache; returns the number of checks that failed. */
static void *tt_cache_thread(void *arg)
{
    wb_tensor *from_main = arg;
    intptr_t bad = 0;
    int64_t sizes[1] = {3};
    for (int round = 0; round < 3; round++) {
        wb_tensor *ts[80];
        for (int i = 0; i < 80; i++) {
            ts[i] = NULL;
            if (wb_tensor_new(WBT_F32, WBT_CPU, 1, sizes, &ts[i]) != WB_OK ||
                wb_tensor_numel(ts[i]) != 3 || wb_tensor_refcount(ts[i]) != 1)
                bad++;
        }
        for (int i = 0; i < 80; i++)
            wb_tensor_release(ts[i]);
    }
    /* A header made on another thread returns to this thread's cache. */
    if (wb_tensor_numel(from_main) != 4)
        bad++;
    wb_tensor_release(from_main);
    return (void *)bad;
}

Test(tensor, thread_cache_reuses_headers_and_flushes)
{
    wb_tensor *a = wbt_f32(0, 1, 2);
    wb_tensor *seen = a;
    wbt_release_last(a);
    /* The released header is the next one handed out, reinitialized. */
    wb_tensor *b = wbt_f32(5, 1, 3);
    cr_assert_eq(b, seen, "the cache did not hand the header back");
    cr_assert_eq(wb_tensor_refcount(b), 1);
    cr_assert_eq(wb_tensor_flags(b), 0);
    cr_assert_eq(wb_tensor_numel(b), 3);
    cr_assert_eq(wbt_at(b, 2), 7.0f);
    wb_tensor_set_requires_grad(b, true);
    wb_tensor_set_dynamic_dims(b, 3);
    wbt_release_last(b);
    b = wbt_f32(0, 1, 1);
    cr_assert_eq(wb_tensor_flags(b), 0, "a cached header kept its flags");
    cr_assert_eq(wb_tensor_dynamic_dims(b), 0, "a cached header kept dims");
    wbt_release_last(b);

    /* Flushing frees the cache; allocation goes on working after it, and
       flushing an empty cache is harmless. */
    wb_thread_cache_flush();
    wb_thread_cache_flush();
    b = wbt_f32(1, 1, 2);
    cr_assert_eq(wbt_at(b, 1), 2.0f);

    wb_tensor *c = wbt_f32(0, 1, 4);
    pthread_t th;
    void *bad = NULL;
    cr_assert_eq(pthread_create(&th, NULL, tt_cache_thread, c), 0);
    cr_assert_eq(pthread_join(th, &bad), 0);
    cr_assert_eq((intptr_t)bad, 0, "%ld checks failed on the thread",
                 (long)(intptr_t)bad);
    wbt_release_last(b);
    wb_thread_cache_flush();
}

/* ---- statuses and errors ---------------------------------------------- */

Test(tensor, status_names)
{
    static const char *const names[] = {
        "WB_OK", "WB_ERR_INVALID", "WB_ERR_SPEC", "WB_ERR_NOMEM",
        "WB_ERR_ARITY", "WB_ERR_TYPE", "WB_ERR_SHAPE", "WB_ERR_DEVICE",
        "WB_ERR_GRAPH", "WB_ERR_HOOK", "WB_ERR_COMPILE", "WB_ERR_UNSUPPORTED",
    };
    for (int i = 0; i <= (int)WB_ERR_UNSUPPORTED; i++)
        cr_assert_str_eq(wb_status_str((wb_status)i), names[i]);
    cr_assert_str_eq(wb_status_str((wb_status)(WB_ERR_UNSUPPORTED + 1)),
                     "WB_ERR_UNKNOWN");
    cr_assert_str_eq(wb_status_str((wb_status)-1), "WB_ERR_UNKNOWN");
    cr_assert_str_eq(wb_status_str((wb_status)1000), "WB_ERR_UNKNOWN");
}

/* Reports the calling thread's message before and after a failure of its
   own, copying both out. */
typedef struct tt_err_probe {
    char before[64];
    char after[256];
    wb_status st;
} tt_err_probe;

static void *tt_error_thread(void *arg)
{
    tt_err_probe *pr = arg;
    snprintf(pr->before, sizeof pr->before, "%s", wb_last_error());
    pr->st = wb_tensor_copy_(NULL, NULL);
    snprintf(pr->after, sizeof pr->after, "%s", wb_last_error());
    return NULL;
}

Test(tensor, last_error_is_per_thread_and_kept_until_the_next_failure)
{
    wb_tensor *t = TT_CANARY;
    int64_t sizes[1] = {-4};
    WBT_FAILS(wb_tensor_new(WBT_F32, WBT_CPU, 1, sizes, &t), WB_ERR_SHAPE,
              "negative");
    char mine[256];
    snprintf(mine, sizeof mine, "%s", wb_last_error());
    cr_assert_neq(mine[0], '\0');

    /* A success does not clear the message. */
    wb_tensor *u = wbt_f32(0, 1, 2);
    cr_assert_str_eq(wb_last_error(), mine);

    /* Another thread starts with no message, and its failure stays its own. */
    tt_err_probe pr = {{0}, {0}, WB_OK};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, tt_error_thread, &pr), 0);
    cr_assert_eq(pthread_join(th, NULL), 0);
    cr_assert_str_eq(pr.before, "");
    cr_assert_eq(pr.st, WB_ERR_INVALID);
    cr_assert(strstr(pr.after, "NULL tensor"), "thread message '%s'",
              pr.after);
    cr_assert_str_eq(wb_last_error(), mine, "another thread's failure "
                     "overwrote this thread's message");

    /* The next failure replaces it. */
    WBT_FAILS(wb_tensor_copy_(u, NULL), WB_ERR_INVALID, "NULL tensor");
    cr_assert_str_neq(wb_last_error(), mine);
    wbt_release_last(u);
}
